"""Per-class policies and the centralized critic.

* :class:`ClassPolicy` holds one actor per unit class (``"stalker"``, ``"zealot"``, ...), shared by
  the agents of that class, and routes each agent's observation to its class actor.
* :class:`CentralCritic` is the value function ``V(s)`` of the global state plus its
  :class:`~models.common.ValueNorm`.

Both modules are built from a *spec* (the sizes their weights depend on) and then bound to an env
with ``bind(env_info)``, which computes the map-specific routing (agents of each class, parsers).
A GNN policy bound to 2s3z can be re-bound to 3s5z: only the routing changes. Checkpoints of these
modules are written and read by ``sc2_envs.training.checkpoints``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from models.common import MaskedCategorical, ValueNorm
from models.entities import (
    N_ACTIONS_NO_ATTACK,
    ObsParser,
    StateParser,
    heal_target_rows,
)
from models.gnn import GNNActor, GNNCritic
from models.mlp import MLPActor, MLPCritic
from sc2_envs.smac_actions import alive_mask
from sc2_envs.units import UNITS

ACTOR_TYPES = ("gnn", "mlp")


def unit_classes(env_info: dict) -> dict[str, list[int]]:
    """Unit class -> agent ids of that class, in first-seen order (``env_info["agent_unit_types"]``).

    SMACv2 scenarios (``env_info["unit_types_vary"]``) draw the types per env and per episode, so
    every class of the race (``env_info["kinds"]``) maps to every agent id; which class an agent
    belongs to at a given step is read from its observation (:meth:`ClassPolicy.class_mask`).
    """
    if not isinstance(env_info, dict):
        raise TypeError(f"env_info must be the dict of env.get_env_info(), got {type(env_info).__name__}")
    if env_info.get("unit_types_vary"):
        return {k: list(range(int(env_info["n_agents"]))) for k in env_info["kinds"]}
    types = env_info.get("agent_unit_types")
    if not types or len(types) != env_info.get("n_agents"):
        raise ValueError(
            f"env_info['agent_unit_types'] = {types!r}; expected one unit type name per agent "
            f"(n_agents={env_info.get('n_agents')})"
        )
    out: dict[str, list[int]] = {}
    for i, t in enumerate(types):
        out.setdefault(t, []).append(i)
    return out


def describe_classes(env_info: dict) -> str:
    """The unit classes of a map for a run's first screen: ``"stalker x2, zealot x3"`` (agents per
    class) on a SMAC v1 map; on a SMACv2 scenario, whose types are drawn per env and per episode,
    ``"stalker, zealot, colossus (drawn per episode for each of the 5 agents)"``, so that a class's
    count is not read as agents (every class maps to every agent id, :func:`unit_classes`)."""
    classes = unit_classes(env_info)
    if env_info.get("unit_types_vary"):
        return ", ".join(classes) + f" (drawn per episode for each of the {int(env_info['n_agents'])} agents)"
    return ", ".join(f"{c} x{len(ids)}" for c, ids in classes.items())


def _is_healer(unit: str) -> bool:
    return unit in UNITS and bool(UNITS[unit].is_healer)


@dataclass(frozen=True)
class RolloutMemory:
    """What a recurrent policy needs to replay a rollout of ``T`` env steps of ``B`` envs (CleanRL
    ``ppo_atari_lstm.py``'s ``initial_lstm_state`` and ``dones``).

    Attributes:
        initial_hidden: ``[B, N, hidden]`` float32, each agent's GRU state before the rollout's first step.
        episode_starts: ``[T, B]`` bool, True where the observation of step ``t`` opens an episode.
    """

    initial_hidden: torch.Tensor
    episode_starts: torch.Tensor


def _check_tensor_types(obs: object, avail: object) -> None:
    """ValueError unless ``obs`` and ``avail`` are torch tensors and ``avail`` is bool (NumPy arrays from PettingZoo or
    Gymnasium are named, with the conversion)."""
    if not (isinstance(obs, torch.Tensor) and isinstance(avail, torch.Tensor)):
        raise ValueError(
            f"obs and avail must be torch tensors, got {type(obs).__name__} and {type(avail).__name__}; convert "
            "with torch.as_tensor(obs, dtype=torch.float32) and torch.as_tensor(avail, dtype=torch.bool)"
        )
    if avail.dtype != torch.bool:
        raise ValueError(f"avail must be a bool tensor (True: available), got {avail.dtype}")


class ClassPolicy(nn.Module):
    """One actor per unit class, shared by the agents of that class.

    Args:
        actor_type: ``"gnn"`` (count-invariant :class:`~models.gnn.GNNActor`) or ``"mlp"``.
        classes: unit class names.
        spec: ``ObsParser.dims()`` for ``"gnn"``; ``{"obs_size", "n_actions"}`` for ``"mlp"``.
        hidden, heads, layers: network sizes (``heads`` / ``layers`` only for GNN).
        recurrent: GNN only: each class actor carries a GRU state per agent (:meth:`act_recurrent`), reset to
            zeros at every episode start. A dead agent's state is left as it was (its actor no longer runs
            on it: it takes the no-op) until its episode ends.

    Raises:
        ValueError: an unknown ``actor_type``, or ``recurrent`` with the MLP actor.
    """

    def __init__(
        self,
        actor_type: str,
        classes: list[str],
        spec: dict,
        hidden: int = 64,
        heads: int = 4,
        layers: int = 1,
        recurrent: bool = False,
    ):
        super().__init__()
        if actor_type not in ACTOR_TYPES:
            raise ValueError(f"actor_type {actor_type!r}; expected one of {ACTOR_TYPES}")
        if recurrent and actor_type != "gnn":
            raise ValueError(f"recurrent=True needs the gnn actor; got actor_type {actor_type!r}")
        self.actor_type, self.classes, self.spec = actor_type, list(classes), dict(spec)
        self.hparams = {"hidden": hidden, "heads": heads, "layers": layers, "recurrent": bool(recurrent)}
        if actor_type == "gnn":
            dims = spec["own_dim"], spec["ally_dim"], spec["enemy_dim"]
            self.actors = nn.ModuleDict(
                {c: GNNActor(*dims, hidden, heads, layers, _is_healer(c), recurrent) for c in self.classes}
            )
        else:
            self.actors = nn.ModuleDict({c: MLPActor(spec["obs_size"], spec["n_actions"], hidden) for c in self.classes})
        self.class_agents: dict[str, list[int]] = {}

    @property
    def recurrent(self) -> bool:
        """Whether the class actors carry a hidden state per agent (:meth:`act_recurrent`)."""
        return self.hparams["recurrent"]

    def bind(self, env_info: dict) -> ClassPolicy:
        """Set the routing for an env; raises ``ValueError`` if the actors cannot serve it."""
        classes = unit_classes(env_info)
        missing = [c for c in classes if c not in self.actors]
        if missing:
            raise ValueError(
                f"this env ({env_info.get('map_name')}) has unit classes {missing} for which the policy "
                f"has no actor; it has actors for {self.classes}"
            )
        if self.actor_type == "gnn":  # types are read into the policy's vocabulary (its training maps' union)
            parser = ObsParser(env_info, vocab=self.spec.get("type_vocab"))
            dims = parser.dims()
            if dims != self.spec:
                raise ValueError(
                    f"entity widths of {env_info.get('map_name')} {dims} differ from the policy's {self.spec} "
                    "(different feature flags or unit-type vocabulary)"
                )
            self.parser = parser
        else:
            have = {"obs_size": int(env_info["obs_shape"]), "n_actions": int(env_info["n_actions"])}
            if have != self.spec:
                raise ValueError(
                    f"an MLP actor needs the exact sizes it was trained with {self.spec}; "
                    f"{env_info.get('map_name')} has {have} (use --actor gnn to transfer across team sizes)"
                )
        self.class_agents = classes
        self.n_agents, self.n_actions = int(env_info["n_agents"]), int(env_info["n_actions"])
        self.varying = bool(env_info.get("unit_types_vary"))
        if self.varying:  # SMACv2: the own block ends with the type one-hot (then the optional timestep)
            lay = env_info["obs_layout"]
            end = int(env_info["obs_shape"]) - int(lay["timestep_feats"])
            self._kinds = list(env_info["kinds"])
            self._type_cols = slice(end - len(self._kinds), end)
        device = next(self.parameters()).device
        self._ids = {c: torch.tensor(ids, dtype=torch.int64, device=device) for c, ids in classes.items()}
        self._heal = {
            c: heal_target_rows(self._ids[c], self.n_agents, self.n_actions - N_ACTIONS_NO_ATTACK)
            for c in classes
            if _is_healer(c)
        }
        return self

    def view(self, env_info: dict) -> ClassPolicy:
        """A policy bound to ``env_info`` that shares this policy's actors (the same parameters).

        Multi-map training binds one view per map: the routing (agents of each class, entity
        parser, heal targets) is per map, the class actors and their optimiser state are shared, so
        a gradient step through any view changes every view. ``state_dict`` of a view equals this
        policy's.

        Raises:
            ValueError: the actors cannot serve ``env_info`` (see :meth:`bind`).
        """
        other = ClassPolicy.__new__(ClassPolicy)
        nn.Module.__init__(other)
        other.actor_type, other.classes, other.spec = self.actor_type, list(self.classes), dict(self.spec)
        other.hparams = dict(self.hparams)
        other.actors = self.actors
        other.class_agents = {}
        return other.bind(env_info)

    def config(self) -> dict:
        """What :meth:`from_config` needs to rebuild this policy (then load its ``state_dict``).

        Returns:
            ``{"actor_type", "classes", "spec", "hparams"}``: plain Python values (picklable, and
            storable in a ``weights_only`` checkpoint); ``hparams`` holds ``hidden``, ``heads``,
            ``layers`` and ``recurrent``.
        """
        return {
            "actor_type": self.actor_type,
            "classes": list(self.classes),
            "spec": dict(self.spec),
            "hparams": dict(self.hparams),
        }

    @classmethod
    def from_config(cls, config: dict, env_info: dict | None = None) -> ClassPolicy:
        """A freshly initialised policy of ``config`` (from :meth:`config`), bound to ``env_info`` if given.

        Raises:
            ValueError: the policy cannot serve ``env_info`` (see :meth:`bind`).
        """
        h = config["hparams"]  # written before the recurrent option existed: feed-forward
        policy = cls(
            config["actor_type"],
            config["classes"],
            config["spec"],
            h["hidden"],
            h["heads"],
            h["layers"],
            h.get("recurrent", False),
        )
        return policy.bind(env_info) if env_info is not None else policy

    def agent_ids(self, c: str) -> torch.Tensor:
        """``[n_c]`` int64 agent ids of class ``c`` in the bound env (every agent in SMACv2 scenarios)."""
        return self._ids[c]

    def class_mask(self, c: str, obs: torch.Tensor) -> torch.Tensor:
        """``[*, n]`` float32: 1 where the agent of ``obs [*, n, obs_size]`` belongs to class ``c`` now.

        Fixed rosters (SMAC v1): all ones (``agent_ids(c)`` already selects the class). SMACv2
        scenarios: the agent's own unit-type one-hot in its observation; a dead agent (all-zero
        observation) belongs to no class (it can only take the no-op).
        """
        if not self.varying:
            return torch.ones(obs.shape[:-1], dtype=torch.float32, device=obs.device)
        return obs[..., self._type_cols][..., self._kinds.index(c)].to(torch.float32)

    def class_logits(self, c: str, obs: torch.Tensor) -> torch.Tensor:
        """Unmasked logits ``[*, n_c, n_actions]`` of class ``c`` from its agents' obs ``[*, n_c, obs_size]``."""
        lead = obs.shape[:-1]
        flat = obs.reshape(-1, obs.shape[-1])
        if self.actor_type == "mlp":
            logits = self.actors[c](flat)
        else:
            heal = None
            if c in self._heal:
                heal = self._heal[c].repeat(flat.shape[0] // self._heal[c].shape[0], 1)
            logits = self.actors[c](self.parser(flat), heal)
        return logits.reshape(*lead, logits.shape[-1])

    def class_rows(self, c: str, obs: torch.Tensor, alive: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The alive agent-steps of class ``c`` in a batch, for running its actor on them only.

        Args:
            c: unit class of the bound env.
            obs: ``[R, N, obs_size]`` float32 observations (SMACv2: they give each agent's class now).
            alive: ``[R, N]`` 0/1 (float or bool), the agents that count (SMAC: those with more than the no-op).

        Returns:
            ``(rows, pos, flat)``, each ``[P]`` int64 in increasing ``(row, agent)`` order: the env
            step of each agent-step, its position in :meth:`agent_ids` ``(c)`` (for
            :meth:`class_logits_at`), and its index into ``obs.reshape(R * N, -1)``. An agent-step is
            included when it is alive and (SMACv2) its agent is of class ``c`` at that step.
        """
        ids = self._ids[c]
        n = ids.numel()
        sel = alive.index_select(1, ids).bool()
        if self.varying:  # every agent id serves every class: keep those of class c now
            sel = sel & self.class_mask(c, obs).bool()
        k = sel.reshape(-1).nonzero().squeeze(1)
        rows, pos = k // n, k % n
        return rows, pos, rows * obs.shape[1] + ids.index_select(0, pos)

    def class_logits_at(
        self,
        c: str,
        obs: torch.Tensor,
        pos: torch.Tensor,
        rows: torch.Tensor | None = None,
        memory: RolloutMemory | None = None,
    ) -> torch.Tensor:
        """Unmasked logits ``[*, n_actions]`` of class ``c`` for a gathered set of agent-steps.

        Args:
            c: unit class.
            obs: ``[*, obs_size]`` float32, each row the observation of one agent of class ``c``.
            pos: ``[*]`` int64, each row's position in :meth:`agent_ids` ``(c)`` (the agent id in
                SMACv2 scenarios); it only matters for healers, whose heal action ``6 + t`` targets
                agent ``t`` (``entities.heal_target_rows``).
            rows, memory: recurrent policies only (ignored otherwise): ``rows [*]`` int64, each row's env
                step ``t * B + b`` in a rollout of ``T`` steps of ``B`` envs, and that rollout's
                :class:`RolloutMemory`. The rows must hold every alive agent-step of class ``c`` of the
                envs they cover (whole sequences, :meth:`class_rows` of those envs): the actor replays
                them from ``memory.initial_hidden``, as :meth:`act_recurrent` played them.

        The logits of a row equal those :meth:`class_logits` gives it in its ``[*, n_c]`` block:
        running an actor only on the rows it serves (e.g. alive agents of its class) skips no term.

        Raises:
            ValueError: a recurrent policy without ``rows`` and ``memory``, or ``rows`` past the rollout.
        """
        lead = obs.shape[:-1]
        flat = obs.reshape(-1, obs.shape[-1])
        if self.actor_type == "mlp":
            logits = self.actors[c](flat)
        else:
            pos = pos.reshape(-1)
            heal = self._heal[c].index_select(0, pos) if c in self._heal else None
            if not self.recurrent:
                logits = self.actors[c](self.parser(flat), heal)
            else:
                logits = self._replay_logits(c, self.parser(flat), heal, pos, rows, memory)
        return logits.reshape(*lead, logits.shape[-1])

    def _replay_logits(self, c: str, ent, heal, pos, rows, memory: RolloutMemory | None) -> torch.Tensor:
        """:meth:`class_logits_at` of a recurrent policy: one GRU sequence per (env, agent of class ``c``) of the envs of
        ``rows``."""
        if rows is None or memory is None:
            raise ValueError("a recurrent policy's logits need the agent-steps' rollout rows and its RolloutMemory")
        T, B = memory.episode_starts.shape
        rows = rows.reshape(-1)
        if rows.numel() and int(rows.max()) >= T * B:
            raise ValueError(f"rows up to {int(rows.max())}; expected env steps t * B + b < {T * B} (T={T}, B={B})")
        ids = self._ids[c]
        n = ids.numel()
        envs, env_of_row = torch.unique(rows % B, return_inverse=True)  # the sequences' envs, each row's among them
        hidden = memory.initial_hidden.index_select(0, envs).index_select(1, ids)  # [E, n, H]
        starts = memory.episode_starts.index_select(1, envs).repeat_interleave(n, dim=1)  # [T, E * n]
        logits, _ = self.actors[c].unroll(
            ent, heal, hidden.reshape(-1, hidden.shape[-1]), starts, env_of_row * n + pos, rows // B
        )
        return logits

    def class_dist_at(
        self,
        c: str,
        obs: torch.Tensor,
        avail: torch.Tensor,
        pos: torch.Tensor,
        rows: torch.Tensor | None = None,
        memory: RolloutMemory | None = None,
    ) -> MaskedCategorical:
        """Masked categorical of class ``c`` over gathered agent-steps (:meth:`class_logits_at`):
        ``obs [*, obs_size]``, ``avail [*, n_actions]`` bool, ``pos [*]`` int64 (``rows``, ``memory``: recurrent)."""
        return MaskedCategorical(self.class_logits_at(c, obs, pos, rows, memory), avail)

    def logits(self, obs: torch.Tensor) -> torch.Tensor:
        """Unmasked logits of every agent, each routed to the actor of its unit class.

        Args:
            obs: ``[B, N, obs_size]`` float32 (``N = n_agents`` of the bound env).

        Returns:
            ``[B, N, n_actions]`` float32; row ``i`` comes from the actor of agent ``i``'s class.
        """
        if self.varying:  # every agent through every class actor, then each agent's own class
            out = torch.zeros(*obs.shape[:-1], self.n_actions, dtype=obs.dtype, device=obs.device)
            for c in self.class_agents:
                out = out + self.class_logits(c, obs) * self.class_mask(c, obs).unsqueeze(-1)
            return out
        parts, order = [], []
        for c in self.classes:
            if c not in self.class_agents:
                continue
            ids = self.agent_ids(c)
            parts.append(self.class_logits(c, obs.index_select(1, ids)))
            order.append(ids)
        inverse = torch.argsort(torch.cat(order))
        return torch.cat(parts, dim=1).index_select(1, inverse)

    def class_dist(self, c: str, obs: torch.Tensor, avail: torch.Tensor) -> MaskedCategorical:
        """Masked categorical of class ``c``: ``obs [*, n_c, obs_size]``, ``avail [*, n_c, n_actions]`` bool."""
        return MaskedCategorical(self.class_logits(c, obs), avail)

    def act(self, obs: torch.Tensor, avail: torch.Tensor, greedy: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """Actions and their log-probs for all agents.

        Args:
            obs: ``[B, N, obs_size]`` float32. avail: ``[B, N, n_actions]`` bool.
            greedy: argmax instead of sampling.
        Returns:
            actions ``[B, N]`` int64, logprobs ``[B, N]`` float32.

        Raises:
            ValueError: ``obs`` / ``avail`` not torch tensors (``avail`` bool), not ``[B, N, *]`` with the bound env's
                ``N`` agents and ``n_actions`` actions (e.g. observations of another map than the one bound), an agent
                with no available action, a non-finite observation, or the policy is recurrent (it acts with
                :meth:`act_recurrent`).
            RuntimeError: the policy is not bound to an env (:meth:`bind`).
        """
        if self.recurrent:
            raise ValueError(
                "this policy is recurrent: act with act_recurrent(obs, avail, hidden, episode_start), carrying each "
                "agent's hidden state from initial_hidden(num_envs)"
            )
        actions, logprobs, _ = self._act(obs, avail, greedy, None)
        return actions, logprobs

    def initial_hidden(self, num_envs: int) -> torch.Tensor:
        """Every agent's GRU state at an episode start: ``[num_envs, N, hidden]`` float32 zeros (recurrent policies).

        Raises:
            ValueError: the policy is not recurrent. RuntimeError: it is not bound to an env (:meth:`bind`).
        """
        if not self.recurrent:
            raise ValueError("initial_hidden: this policy is feed-forward (recurrent=False); it has no hidden state")
        if not self.class_agents:
            raise RuntimeError("this policy is not bound to an env; call policy.bind(env.get_env_info()) first")
        device = next(self.parameters()).device
        return torch.zeros(num_envs, self.n_agents, self.hparams["hidden"], dtype=torch.float32, device=device)

    def act_recurrent(
        self, obs: torch.Tensor, avail: torch.Tensor, hidden: torch.Tensor, episode_start: torch.Tensor, greedy: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Actions, log-probs and the next hidden state of a recurrent policy (CleanRL ``ppo_atari_lstm.py``'s
        ``get_action_and_value`` with its ``lstm_state`` and ``done``).

        Args:
            obs, avail, greedy: as :meth:`act`.
            hidden: ``[B, N, hidden]`` float32, each agent's state after the previous step (:meth:`initial_hidden`
                at the first); the team size ``N`` is the bound env's, so a checkpoint plays any team size.
            episode_start: ``[B]`` bool, True where ``obs`` opens an episode (an autoreset env whose last step
                ended one, or the first observation): those envs' states are zeroed first.

        Returns:
            ``(actions [B, N] int64, logprobs [B, N] float32, hidden [B, N, hidden])``: the state after this
            step, moved by the GRU for every alive agent (dead agents keep theirs until the episode ends).
            Outside ``torch.no_grad()`` the state carries the autograd graph of every earlier step, so a
            rollout or evaluation loop should run under it (memory otherwise grows with the steps played).

        Raises:
            ValueError: a feed-forward policy, or shapes other than the above (besides :meth:`act`'s).
            RuntimeError: the policy is not bound to an env (:meth:`bind`).
        """
        if not self.recurrent:
            raise ValueError("act_recurrent: this policy is feed-forward (recurrent=False); use act(obs, avail)")
        _check_tensor_types(obs, avail)
        B = obs.shape[0] if obs.dim() == 3 else -1
        if hidden.shape != (B, getattr(self, "n_agents", -1), self.hparams["hidden"]) or episode_start.shape != (B,):
            raise ValueError(
                f"hidden {tuple(hidden.shape)} and episode_start {tuple(episode_start.shape)} for obs {tuple(obs.shape)}; "
                f"expected [B, n_agents, {self.hparams['hidden']}] (initial_hidden) and [B] bool"
            )
        hidden = torch.where(episode_start.reshape(-1, 1, 1), 0.0, hidden)
        return self._act(obs, avail, greedy, hidden)

    def _act(self, obs, avail, greedy: bool, hidden: torch.Tensor | None):
        """:meth:`act` (``hidden`` None) or :meth:`act_recurrent` (``hidden [B, N, H]``, already zeroed at episode starts)."""
        if not self.class_agents:
            raise RuntimeError("this policy is not bound to an env; call policy.bind(env.get_env_info()) first")
        _check_tensor_types(obs, avail)
        if (
            obs.dim() != 3
            or avail.dim() != 3
            or obs.shape[1] != self.n_agents
            or avail.shape[:2] != obs.shape[:2]
            or avail.shape[2] != self.n_actions
        ):
            raise ValueError(
                f"obs {tuple(obs.shape)} and avail {tuple(avail.shape)}; expected [B, {self.n_agents}, "
                f"obs_size] and [B, {self.n_agents}, {self.n_actions}] (the env this policy is bound to)"
            )
        # an agent with no available action has nothing to take (SMAC gives a dead agent its no-op), and a non-finite
        # observation would give actions without a word: one reduction and one host sync (on CUDA) for both
        if not bool(avail.any(-1).all() & torch.isfinite(obs).all()):
            if not bool(avail.any(-1).all()):
                b, i = (~avail.any(-1)).nonzero()[0].tolist()
                raise ValueError(
                    f"avail[{b}, {i}] has no available action; expected at least one per agent (a dead agent: no-op)"
                )
            raise ValueError("obs holds NaN or inf; expected finite observations")
        # Each class actor runs only on the agent-steps it serves and that have a choice: an agent
        # with one available action (SMAC: a dead agent, no-op only) takes it with log-prob 0, as
        # the masked categorical gives it. The uniform noise is drawn for the class's whole block,
        # as MaskedCategorical.sample draws it, so a seed gives the same actions as running every row.
        # A recurrent actor runs on every alive agent, with a choice or not, so that its state moves at
        # exactly the agent-steps the update replays (class_rows: the alive agents of the class).
        actions = torch.zeros(obs.shape[:2], dtype=torch.int64, device=obs.device)  # no class (SMACv2 dead): no-op
        logprobs = torch.zeros(obs.shape[:2], dtype=obs.dtype, device=obs.device)
        determined = avail.sum(-1) == 1
        stepping = ~determined if hidden is None else alive_mask(avail)
        only = avail.to(torch.int8).argmax(-1)
        for c, ids in self._ids.items():
            if self.varying:  # SMACv2: each agent acts with the actor of its class in this episode
                o, a, member, step, one = obs, avail, self.class_mask(c, obs).bool(), stepping, only
            else:
                o, a = obs.index_select(1, ids), avail.index_select(1, ids)
                member, step, one = None, stepping.index_select(1, ids), only.index_select(1, ids)
            n = o.shape[1]
            u = None if greedy else torch.rand(a.shape, device=obs.device)
            run = step if member is None else member & step
            rows = run.reshape(-1).nonzero().squeeze(1)
            act_c = one.clone() if member is None else torch.where(member, one, actions)
            logp_c = torch.zeros_like(logprobs[:, :n]) if member is None else logprobs.masked_fill(member, 0.0)
            if rows.numel():
                o_r, a_r = o.reshape(-1, o.shape[-1])[rows], a.reshape(-1, a.shape[-1])[rows]
                if hidden is None:
                    d = self.class_dist_at(c, o_r, a_r, rows % n)
                else:  # one GRU step of the class's block of states (SMACv2: all N, moved only for its members)
                    h_c = hidden if member is not None else hidden.index_select(1, ids)
                    heal = self._heal[c].index_select(0, rows % n) if c in self._heal else None
                    logits, h_c = self.actors[c].unroll(
                        self.parser(o_r), heal, h_c.reshape(-1, h_c.shape[-1]), None, rows, torch.zeros_like(rows)
                    )
                    h_c = h_c.reshape(obs.shape[0], n, -1)
                    hidden = h_c if member is not None else hidden.index_copy(1, ids, h_c)
                    d = MaskedCategorical(logits, a_r)
                s = d.mode() if greedy else d.sample(uniform=u.reshape(-1, u.shape[-1])[rows])
                act_c.view(-1)[rows] = s
                logp_c.view(-1)[rows] = d.log_prob(s)
            if member is None:
                actions[:, ids], logprobs[:, ids] = act_c, logp_c
            else:
                actions, logprobs = act_c, logp_c
        return actions, logprobs, hidden

    def n_params(self) -> dict[str, int]:
        return {c: sum(p.numel() for p in a.parameters()) for c, a in self.actors.items()}


class CentralCritic(nn.Module):
    """Centralized value ``V(s)`` (normalised output) plus its ``ValueNorm``.

    Args:
        critic_type: ``"gnn"`` (class-factored :class:`~models.gnn.GNNCritic`) or ``"mlp"``.
        classes: unit class names.
        spec: ``StateParser.dims()`` for ``"gnn"``, ``{"state_size"}`` for ``"mlp"``.
    """

    def __init__(self, critic_type: str, classes: list[str], spec: dict, hidden: int = 64, heads: int = 4, layers: int = 1):
        super().__init__()
        if critic_type not in ACTOR_TYPES:
            raise ValueError(f"critic_type {critic_type!r}; expected one of {ACTOR_TYPES}")
        self.critic_type, self.classes, self.spec = critic_type, list(classes), dict(spec)
        self.hparams = {"hidden": hidden, "heads": heads, "layers": layers}
        if critic_type == "gnn":
            self.net = GNNCritic(spec["ally_dim"], spec["enemy_dim"], spec["glob_dim"], self.classes, hidden, heads, layers)
        else:
            self.net = MLPCritic(spec["state_size"], hidden)
        self.value_norm = ValueNorm()

    def bind(self, env_info: dict) -> CentralCritic:
        """Set the routing for an env; raises ``ValueError`` if the critic cannot serve it."""
        classes = unit_classes(env_info)
        if self.critic_type == "gnn":
            missing = [c for c in classes if c not in self.classes]
            if missing:
                raise ValueError(f"critic has no encoder for unit classes {missing}; it was built for {self.classes}")
            parser = StateParser(env_info, vocab=self.spec.get("type_vocab"))
            if parser.dims() != self.spec:
                raise ValueError(f"state entity widths {parser.dims()} differ from the critic's {self.spec}")
            self.parser = parser
        elif int(env_info["state_shape"]) != self.spec["state_size"]:
            raise ValueError(
                f"an MLP critic needs state_shape {self.spec['state_size']}; this env has {env_info['state_shape']}"
            )
        device = next(self.parameters()).device
        self._slots = {c: torch.tensor(ids, dtype=torch.int64, device=device) for c, ids in classes.items()}
        self.varying = bool(env_info.get("unit_types_vary"))
        if self.varying:  # SMACv2: the ally state rows end with the type one-hot
            lay = env_info["state_layout"]
            self._n, self._af, self._kinds = int(lay["n_agents"]), int(lay["ally_state_feats"]), list(env_info["kinds"])
        return self

    def view(self, env_info: dict) -> CentralCritic:
        """A critic bound to ``env_info`` sharing this critic's network and ``ValueNorm`` (same parameters
        and statistics; see :meth:`ClassPolicy.view`).

        Raises:
            ValueError: the critic cannot serve ``env_info`` (see :meth:`bind`).
        """
        other = CentralCritic.__new__(CentralCritic)
        nn.Module.__init__(other)
        other.critic_type, other.classes, other.spec = self.critic_type, list(self.classes), dict(self.spec)
        other.hparams = dict(self.hparams)
        other.net, other.value_norm = self.net, self.value_norm
        return other.bind(env_info)

    def _class_masks(self, state: torch.Tensor) -> dict[str, torch.Tensor]:
        """SMACv2: class -> ``[*, N]`` float mask of the allies of that class in ``state [*, state_size]``."""
        rows = state[..., : self._n * self._af].reshape(*state.shape[:-1], self._n, self._af)
        bits = rows[..., -len(self._kinds) :]
        return {c: bits[..., k] for k, c in enumerate(self._kinds)}

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        """Normalised value ``[*]`` of ``state [*, state_size]``."""
        if self.critic_type == "mlp":
            return self.net(state)
        if self.varying:
            return self.net(self.parser(state), self._class_masks(state))
        return self.net(self.parser(state), self._slots)


def build_critic(
    env_info: dict,
    critic_type: str = "gnn",
    hidden: int = 64,
    heads: int = 4,
    layers: int = 1,
    device: str | torch.device = "cpu",
) -> CentralCritic:
    """A freshly initialised :class:`CentralCritic` of type ``critic_type`` for ``env_info``, on ``device``, bound.

    Raises:
        ValueError: unknown ``critic_type`` (expected one of ``ACTOR_TYPES``).
    """
    classes = list(unit_classes(env_info))
    if critic_type == "gnn":
        cspec = StateParser(env_info).dims()
    elif critic_type == "mlp":
        cspec = {"state_size": int(env_info["state_shape"])}
    else:
        raise ValueError(f"critic_type {critic_type!r}; expected one of {ACTOR_TYPES}")
    return CentralCritic(critic_type, classes, cspec, hidden, heads, layers).to(device).bind(env_info)


def build_models(
    env_info: dict,
    actor_type: str = "gnn",
    hidden: int = 64,
    heads: int = 4,
    actor_layers: int = 1,
    critic_layers: int = 1,
    device: str | torch.device = "cpu",
    recurrent: bool = False,
) -> tuple[ClassPolicy, CentralCritic]:
    """Build :class:`ClassPolicy` (``recurrent``: GNN actors with a GRU) and :class:`CentralCritic` of type
    ``actor_type`` on ``device``, bound to an env."""
    classes = list(unit_classes(env_info))
    if actor_type == "gnn":
        pspec = ObsParser(env_info).dims()
    elif actor_type == "mlp":
        pspec = {"obs_size": int(env_info["obs_shape"]), "n_actions": int(env_info["n_actions"])}
    else:
        raise ValueError(f"actor_type {actor_type!r}; expected one of {ACTOR_TYPES}")
    policy = ClassPolicy(actor_type, classes, pspec, hidden, heads, actor_layers, recurrent).to(device).bind(env_info)
    critic = build_critic(env_info, actor_type, hidden, heads, critic_layers, device)
    return policy, critic


def type_vocab_union(env_infos: list[dict]) -> list[str] | None:
    """One unit-type vocabulary for several SMAC v1 maps: each map's (its ally order, then enemy-only
    types) in turn, new names appended in first-seen order. ``None`` (each map keeps its own) when
    the maps already agree, or when a SMACv2 scenario is among them (its bits are its race's kinds).

    Maps without type bits (one unit type per side) contribute their sides' types
    (``agent_unit_types``, ``enemy_unit_types``) so that they can be read with the union.
    """
    if any(info.get("unit_types_vary") for info in env_infos):
        return None
    names, owns = [], []
    for info in env_infos:
        owns.append(ObsParser(info).dims()["type_vocab"])
        bits = int(info.get("unit_type_bits", 0))
        names.append(owns[-1] if bits else [*info["agent_unit_types"], *info["enemy_unit_types"]])
    if all(o == owns[0] for o in owns) and all(set(n) == set(names[0]) for n in names):
        return None  # read alike and the same unit types (3m + 8m, 2s3z + 3s5z): each map reads its own
    out: list[str] = []
    for n in names:
        out += [t for t in dict.fromkeys(n) if t not in out]
    return out


def _model_specs(env_info: dict, actor_type: str, vocab: list[str] | None = None) -> tuple[dict, dict]:
    """(policy spec, critic spec) of ``env_info``: the sizes the weights of ``actor_type`` models depend on
    (GNN: read with the type vocabulary ``vocab``, default the map's own)."""
    if actor_type == "gnn":
        return ObsParser(env_info, vocab).dims(), StateParser(env_info, vocab).dims()
    if actor_type == "mlp":
        return (
            {"obs_size": int(env_info["obs_shape"]), "n_actions": int(env_info["n_actions"])},
            {"state_size": int(env_info["state_shape"])},
        )
    raise ValueError(f"actor_type {actor_type!r}; expected one of {ACTOR_TYPES}")


def _check_mlp_reads_alike(first: dict, other: dict) -> None:
    """Refuse two maps whose flat vectors have equal sizes but mean different things.

    A flat MLP reads column ``j`` as one feature on every map, and its one critic reads the states
    of all maps. terran_5_vs_5 and zerg_5_vs_5 have the same obs, action and state sizes, but type
    bit 0 is a marine on one and a zergling on the other, so one set of weights would read two
    games as one. (The GNN's spec already holds the type names, so it refuses such pairs itself.)

    Raises:
        ValueError: the unit-type names or the obs/state layouts differ; the message names both maps.
    """
    a, b = first.get("map_name"), other.get("map_name")
    types_a, types_b = ObsParser(first).dims()["type_vocab"], ObsParser(other).dims()["type_vocab"]
    if types_a != types_b:
        raise ValueError(
            f"maps {a} and {b} cannot share mlp models: their sizes are equal, but their unit-type bits name "
            f"other units ({types_a} vs {types_b}), so one flat MLP would read two games as one; "
            "train one run per race or unit set"
        )
    for key in ("obs_layout", "state_layout"):
        if first.get(key) != other.get(key):
            raise ValueError(
                f"maps {a} and {b} cannot share mlp models: equal sizes but a different {key} "
                f"({first.get(key)} vs {other.get(key)})"
            )


def build_multi_map_models(
    env_infos: list[dict],
    actor_type: str = "gnn",
    hidden: int = 64,
    heads: int = 4,
    actor_layers: int = 1,
    critic_layers: int = 1,
    device: str | torch.device = "cpu",
    recurrent: bool = False,
) -> tuple[ClassPolicy, CentralCritic, list[ClassPolicy], list[CentralCritic]]:
    """One set of class actors and one critic for several maps (multi-map training).

    The actors and the critic have one encoder per unit class of the union of the maps' classes
    (first-seen order) and are bound to each map through a view (:meth:`ClassPolicy.view`,
    :meth:`CentralCritic.view`) that shares their parameters. GNN models read unit types into one
    vocabulary (:func:`type_vocab_union`), so maps with other type lists (2s3z's stalker/zealot
    and 1c3s5z's colossus/stalker/zealot, or 3s_vs_5z without type bits) share the same weights.
    With one map this builds exactly what :func:`build_models` builds (same classes, same
    initialisation order).

    Args:
        env_infos: ``get_env_info()`` of each map, in training order (at least one).
        actor_type, hidden, heads, actor_layers, critic_layers, device, recurrent: as :func:`build_models`.

    Returns:
        ``(policy, critic, policies, critics)``: the models bound to ``env_infos[0]`` and the list
        of per-map views (``policies[0] is policy``, ``critics[0] is critic``).

    Raises:
        ValueError: no map, or maps whose entity widths / unit-type vocabulary (GNN) or flat
            obs/action/state sizes, unit-type names or layouts (MLP) differ, so that no one set of
            weights reads all of them; the message names the maps and the sizes.
    """
    if not env_infos:
        raise ValueError("build_multi_map_models needs at least one env_info")
    classes = list(dict.fromkeys(c for info in env_infos for c in unit_classes(info)))
    vocab = type_vocab_union(env_infos) if actor_type == "gnn" else None
    pspec, cspec = _model_specs(env_infos[0], actor_type, vocab)
    for info in env_infos[1:]:
        p, c = _model_specs(info, actor_type, vocab)
        if (p, c) != (pspec, cspec):
            hint = " (a flat MLP needs identical sizes on every map; use --actor gnn)" if actor_type == "mlp" else ""
            raise ValueError(
                f"maps {env_infos[0].get('map_name')} and {info.get('map_name')} cannot share {actor_type} models: "
                f"actor sizes {pspec} vs {p}, critic sizes {cspec} vs {c}{hint}"
            )
        if actor_type == "mlp":
            _check_mlp_reads_alike(env_infos[0], info)
    policy = ClassPolicy(actor_type, classes, pspec, hidden, heads, actor_layers, recurrent).to(device).bind(env_infos[0])
    critic = CentralCritic(actor_type, classes, cspec, hidden, heads, critic_layers).to(device).bind(env_infos[0])
    policies = [policy] + [policy.view(info) for info in env_infos[1:]]
    critics = [critic] + [critic.view(info) for info in env_infos[1:]]
    return policy, critic, policies, critics


def zero_shot_views(policy: ClassPolicy, train_info: dict, env_infos: list[dict]) -> list[ClassPolicy]:
    """Views of ``policy``'s actors bound to maps it is not trained on, for zero-shot evaluation.

    Each view shares the actors' parameters (:meth:`ClassPolicy.view`), so it plays the current
    weights at every call, as ``load_checkpoint`` would bind a checkpoint of them to that map.

    Args:
        policy: the training policy (bound to ``train_info``).
        train_info: ``get_env_info()`` of a training map (the MLP's observation layout is read from it).
        env_infos: ``get_env_info()`` of each zero-shot map.

    Returns:
        one :class:`ClassPolicy` view per entry of ``env_infos``.

    Raises:
        ValueError: a map the actors cannot play, naming it: a unit class without an actor, other
            entity widths or type vocabulary (GNN), other sizes, or equal sizes but another
            observation layout (an MLP reads its inputs by position).
    """
    views = []
    for info in env_infos:
        name = info.get("map_name")
        try:
            views.append(policy.view(info))  # its error names the classes or sizes that do not fit
        except ValueError as e:
            raise ValueError(f"{name}: {e}") from None
        if policy.actor_type == "mlp" and info.get("obs_layout") != train_info.get("obs_layout"):
            diff = "; ".join(dict_diffs(plain(train_info.get("obs_layout") or {}), plain(info.get("obs_layout") or {})))
            raise ValueError(f"{name}: an MLP reads its inputs by position and the observation layouts differ ({diff})")
    return views


def dict_diffs(want: dict, have: dict) -> list[str]:
    """``"key: a vs b"`` for every key whose values differ between two dicts (a missing key is None), sorted."""
    return [f"{k}: {want.get(k)} vs {have.get(k)}" for k in sorted(set(want) | set(have)) if want.get(k) != have.get(k)]


def plain(x):
    """``x`` with tuples as lists (a layout read back from a checkpoint holds lists)."""
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    return [plain(v) for v in x] if isinstance(x, (list, tuple)) else x
