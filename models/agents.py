"""Per-class policies, the centralized critic, and checkpoints that carry their configuration.

* :class:`ClassPolicy` holds one actor per unit class (``"stalker"``, ``"zealot"``, ...), shared by
  the agents of that class, and routes each agent's observation to its class actor.
* :class:`CentralCritic` is the value function ``V(s)`` of the global state plus its
  :class:`~models.common.ValueNorm`.
* ``save_checkpoint`` / ``load_checkpoint`` write and read a plain dict of tensors and Python
  values, loadable with ``torch.load(weights_only=True)``; the checkpoint records the map, the
  classes, the entity widths, the layouts and the training ``Args``, and loading it for an env it
  does not fit raises a ``ValueError`` that says what differs.

Both modules are built from a *spec* (the sizes their weights depend on) and then bound to an env
with ``bind(env_info)``, which computes the map-specific routing (agents of each class, parsers).
A GNN policy bound to 2s3z can be re-bound to 3s5z: only the routing changes.
"""

from __future__ import annotations

import os
import pickle
import struct
from pathlib import Path

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
from sc2_envs.units import UNITS

ACTOR_TYPES = ("gnn", "mlp")
CHECKPOINT_FORMAT = "sc2_envs.class_actor_critic/1"


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


class ClassPolicy(nn.Module):
    """One actor per unit class, shared by the agents of that class.

    Args:
        actor_type: ``"gnn"`` (count-invariant :class:`~models.gnn.GNNActor`) or ``"mlp"``.
        classes: unit class names.
        spec: ``ObsParser.dims()`` for ``"gnn"``; ``{"obs_size", "n_actions"}`` for ``"mlp"``.
        hidden, heads, layers: network sizes (``heads`` / ``layers`` only for GNN).
    """

    def __init__(self, actor_type: str, classes: list[str], spec: dict, hidden: int = 64, heads: int = 4, layers: int = 1):
        super().__init__()
        if actor_type not in ACTOR_TYPES:
            raise ValueError(f"actor_type {actor_type!r}; expected one of {ACTOR_TYPES}")
        self.actor_type, self.classes, self.spec = actor_type, list(classes), dict(spec)
        self.hparams = {"hidden": hidden, "heads": heads, "layers": layers}
        if actor_type == "gnn":
            self.actors = nn.ModuleDict(
                {
                    c: GNNActor(spec["own_dim"], spec["ally_dim"], spec["enemy_dim"], hidden, heads, layers, _is_healer(c))
                    for c in self.classes
                }
            )
        else:
            self.actors = nn.ModuleDict({c: MLPActor(spec["obs_size"], spec["n_actions"], hidden) for c in self.classes})
        self.class_agents: dict[str, list[int]] = {}

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
            storable in a ``weights_only`` checkpoint).
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
        h = config["hparams"]
        policy = cls(config["actor_type"], config["classes"], config["spec"], h["hidden"], h["heads"], h["layers"])
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

    def class_rows(self, c: str, obs: torch.Tensor, active: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The active agent-steps of class ``c`` in a batch, for running its actor on them only.

        Args:
            c: unit class of the bound env.
            obs: ``[R, N, obs_size]`` float32 observations (SMACv2: they give each agent's class now).
            active: ``[R, N]`` 0/1 (float or bool), e.g. alive agents.

        Returns:
            ``(rows, pos, flat)``, each ``[P]`` int64 in increasing ``(row, agent)`` order: the env
            step of each agent-step, its position in :meth:`agent_ids` ``(c)`` (for
            :meth:`class_logits_at`), and its index into ``obs.reshape(R * N, -1)``. An agent-step is
            included when it is active and (SMACv2) its agent is of class ``c`` at that step.
        """
        ids = self._ids[c]
        n = ids.numel()
        sel = active.index_select(1, ids).bool()
        if self.varying:  # every agent id serves every class: keep those of class c now
            sel = sel & self.class_mask(c, obs).bool()
        k = sel.reshape(-1).nonzero().squeeze(1)
        rows, pos = k // n, k % n
        return rows, pos, rows * obs.shape[1] + ids.index_select(0, pos)

    def class_logits_at(self, c: str, obs: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        """Unmasked logits ``[*, n_actions]`` of class ``c`` for a gathered set of agent-steps.

        Args:
            c: unit class.
            obs: ``[*, obs_size]`` float32, each row the observation of one agent of class ``c``.
            pos: ``[*]`` int64, each row's position in :meth:`agent_ids` ``(c)`` (the agent id in
                SMACv2 scenarios); it only matters for healers, whose heal action ``6 + t`` targets
                agent ``t`` (``entities.heal_target_rows``).

        The logits of a row equal those :meth:`class_logits` gives it in its ``[*, n_c]`` block:
        running an actor only on the rows it serves (e.g. alive agents of its class) skips no term.
        """
        lead = obs.shape[:-1]
        flat = obs.reshape(-1, obs.shape[-1])
        if self.actor_type == "mlp":
            logits = self.actors[c](flat)
        else:
            heal = self._heal[c].index_select(0, pos.reshape(-1)) if c in self._heal else None
            logits = self.actors[c](self.parser(flat), heal)
        return logits.reshape(*lead, logits.shape[-1])

    def class_dist_at(self, c: str, obs: torch.Tensor, avail: torch.Tensor, pos: torch.Tensor) -> MaskedCategorical:
        """Masked categorical of class ``c`` over gathered agent-steps (:meth:`class_logits_at`):
        ``obs [*, obs_size]``, ``avail [*, n_actions]`` bool, ``pos [*]`` int64."""
        return MaskedCategorical(self.class_logits_at(c, obs, pos), avail)

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
            ValueError: ``obs`` / ``avail`` not ``[B, N, *]`` with the bound env's ``N`` agents and
                ``n_actions`` actions (e.g. observations of another map than the one bound).
            RuntimeError: the policy is not bound to an env (:meth:`bind`).
        """
        if not self.class_agents:
            raise RuntimeError("this policy is not bound to an env; call policy.bind(env.get_env_info()) first")
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
        # Each class actor runs only on the agent-steps it serves and that have a choice: an agent
        # with one available action (SMAC: a dead agent, no-op only) takes it with log-prob 0, as
        # the masked categorical gives it. The uniform noise is drawn for the class's whole block,
        # as MaskedCategorical.sample draws it, so a seed gives the same actions as running every row.
        actions = torch.zeros(obs.shape[:2], dtype=torch.int64, device=obs.device)  # no class (SMACv2 dead): no-op
        logprobs = torch.zeros(obs.shape[:2], dtype=obs.dtype, device=obs.device)
        determined = avail.sum(-1) == 1
        only = avail.to(torch.int8).argmax(-1)
        for c, ids in self._ids.items():
            if self.varying:  # SMACv2: each agent acts with the actor of its class in this episode
                o, a, member, det, one = obs, avail, self.class_mask(c, obs).bool(), determined, only
            else:
                o, a = obs.index_select(1, ids), avail.index_select(1, ids)
                member, det, one = None, determined.index_select(1, ids), only.index_select(1, ids)
            n = o.shape[1]
            u = None if greedy else torch.rand(a.shape, device=obs.device)
            run = ~det if member is None else member & ~det
            rows = run.reshape(-1).nonzero().squeeze(1)
            act_c = one.clone() if member is None else torch.where(member, one, actions)
            logp_c = torch.zeros_like(logprobs[:, :n]) if member is None else logprobs.masked_fill(member, 0.0)
            if rows.numel():
                d = self.class_dist_at(c, o.reshape(-1, o.shape[-1])[rows], a.reshape(-1, a.shape[-1])[rows], rows % n)
                s = d.mode() if greedy else d.sample(uniform=u.reshape(-1, u.shape[-1])[rows])
                act_c.view(-1)[rows] = s
                logp_c.view(-1)[rows] = d.log_prob(s)
            if member is None:
                actions[:, ids], logprobs[:, ids] = act_c, logp_c
            else:
                actions, logprobs = act_c, logp_c
        return actions, logprobs

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
) -> tuple[ClassPolicy, CentralCritic]:
    """Build :class:`ClassPolicy` and :class:`CentralCritic` of type ``actor_type`` on ``device``, bound to an env."""
    classes = list(unit_classes(env_info))
    if actor_type == "gnn":
        pspec = ObsParser(env_info).dims()
    elif actor_type == "mlp":
        pspec = {"obs_size": int(env_info["obs_shape"]), "n_actions": int(env_info["n_actions"])}
    else:
        raise ValueError(f"actor_type {actor_type!r}; expected one of {ACTOR_TYPES}")
    policy = ClassPolicy(actor_type, classes, pspec, hidden, heads, actor_layers).to(device).bind(env_info)
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
        actor_type, hidden, heads, actor_layers, critic_layers, device: as :func:`build_models`.

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
    policy = ClassPolicy(actor_type, classes, pspec, hidden, heads, actor_layers).to(device).bind(env_infos[0])
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
            diff = "; ".join(dict_diffs(_plain(train_info.get("obs_layout") or {}), _plain(info.get("obs_layout") or {})))
            raise ValueError(f"{name}: an MLP reads its inputs by position and the observation layouts differ ({diff})")
    return views


def checkpoint_maps(config: dict) -> list[str]:
    """The training maps recorded in a checkpoint's ``config``: ``train_maps`` of a multi-map
    checkpoint, else ``[map_name]``."""
    return list(config.get("train_maps") or [config["map_name"]])


def save_checkpoint(
    path: str,
    policy: ClassPolicy,
    critic: CentralCritic,
    env_info: dict,
    args: dict,
    global_step: int = 0,
    maps: list[str] | None = None,
    extra: dict | None = None,
    algorithm: str | None = None,
) -> None:
    """Write a checkpoint readable with ``torch.load(path, weights_only=True)``, atomically (a crash
    mid-write leaves the previous file, not a truncated one: ``sc2_envs.runs.save_atomic``).

    Keys: ``format``, ``config`` (map, actor type, classes and agent ids, network sizes, entity
    widths, obs/state sizes and layouts, n_actions), ``args`` (the training ``Args`` as a dict),
    ``global_step`` (env steps), ``actors`` / ``critic`` (state dicts, CPU tensors), and, when
    ``algorithm`` is given, ``algorithm``: the training script's name (``"happo_gnn"``,
    ``"hatrpo_gnn"``, ``"a3c_upgo"``, ``"bc_reweight"``), which a fine-tune's lineage records
    (:func:`lineage_after`; files written before 2026-12-05 have none).

    Multi-map training (``maps`` with two or more names): ``config["train_maps"]`` lists every
    training map; ``map_name``, the agent ids and the sizes are those of the first map
    (``env_info``), whose layout every other map shares (:func:`build_multi_map_models` checked it).
    With ``maps`` None or one map the checkpoint has no ``train_maps`` key (the single-map format).
    ``extra``: more top-level records written in the same file (e.g. behaviour cloning's ``bc``), so a
    reader never sees the checkpoint without them.

    Raises:
        ValueError: a weight holds NaN or inf (a diverged run is not saved as if it were trained),
            ``maps[0]`` is not ``env_info``'s map, an ``extra`` key would replace a standard one, or
            ``algorithm`` is given but is not a non-empty string.
    """
    if algorithm is not None and (not isinstance(algorithm, str) or not algorithm):
        raise ValueError(f"save_checkpoint algorithm={algorithm!r}: expected the training script's name, e.g. 'happo_gnn'")

    def cpu(sd: dict) -> dict:
        return {k: v.detach().cpu() for k, v in sd.items()}

    config = {
        "map_name": env_info.get("map_name"),
        "actor_type": policy.actor_type,
        "classes": list(policy.classes),
        "class_agents": {c: list(ids) for c, ids in policy.class_agents.items()},
        "policy_spec": policy.spec,
        "policy_hparams": policy.hparams,
        "critic_spec": critic.spec,
        "critic_hparams": critic.hparams,
        "obs_shape": int(env_info["obs_shape"]),
        "state_shape": int(env_info["state_shape"]),
        "n_actions": int(env_info["n_actions"]),
        "n_agents": int(env_info["n_agents"]),
        "n_enemies": int(env_info["n_enemies"]),
        "obs_layout": env_info.get("obs_layout"),
        "state_layout": env_info.get("state_layout"),
        "feature_options": env_info.get("feature_options"),
    }
    if maps is not None and len(maps) > 1:
        if maps[0] != env_info.get("map_name"):
            raise ValueError(f"maps {list(maps)}: the first must be env_info's map {env_info.get('map_name')!r}")
        config["train_maps"] = list(maps)
    ckpt = {
        "format": CHECKPOINT_FORMAT,
        "config": config,
        "args": dict(args),
        "global_step": int(global_step),
        "actors": cpu(policy.state_dict()),
        "critic": cpu(critic.state_dict()),
    }
    if algorithm is not None:
        ckpt["algorithm"] = algorithm
    clash = sorted(set(extra or {}) & (set(ckpt) | {"algorithm"}))  # algorithm= is checked; an extra would bypass it
    if clash:
        raise ValueError(f"save_checkpoint extra keys {clash} would replace the checkpoint's own records")
    if extra:
        _check_weights_only(extra)
        ckpt.update(extra)
    _check_finite_weights(f"save_checkpoint({path!r}) at {int(global_step)} env steps", ckpt)
    from sc2_envs.runs import save_atomic

    save_atomic(ckpt, path)


def _check_weights_only(extra: dict) -> None:
    """Raise ValueError naming the first ``extra`` record that ``torch.load(weights_only=True)`` could not read
    back (a NumPy value, a Path, ...), before anything is written: the file would replace a good
    checkpoint with one no reader of this project opens."""
    import io

    for key, value in extra.items():
        buf = io.BytesIO()
        try:
            torch.save(value, buf)
            buf.seek(0)
            torch.load(buf, weights_only=True)
        except Exception as e:
            raise ValueError(
                f"save_checkpoint extra[{key!r}] cannot be read back with torch.load(weights_only=True) "
                f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}); use tensors, Python numbers, "
                f"strings, lists and dicts"
            ) from None


def _check_finite_weights(where: str, ckpt: dict, with_critic: bool = True) -> None:
    """Raise ValueError naming the first tensor of ``ckpt``'s actors (and critic) with a NaN or inf:
    such weights act as a uniform or broken policy, and would be scored as if they were trained."""
    for part in ("actors", *(("critic",) if with_critic else ())):
        for name, t in ckpt.get(part, {}).items():
            if torch.is_tensor(t) and t.is_floating_point() and not bool(torch.isfinite(t).all()):
                raise ValueError(
                    f"{where}: {part}.{name} holds {int((~torch.isfinite(t)).sum())} non-finite values (NaN or inf); "
                    "the training diverged (check its losses, e.g. --ent-coef, --learning-rate)"
                )


def _plain(x):
    """``x`` with tuples as lists (a layout read back from a checkpoint holds lists)."""
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    return [_plain(v) for v in x] if isinstance(x, (list, tuple)) else x


def read_checkpoint(path: str) -> dict:
    """The checkpoint dict of :func:`save_checkpoint` (``torch.load(weights_only=True)`` onto the CPU), to
    read its ``config`` without building models.

    Raises:
        FileNotFoundError: no such file.
        ValueError: a directory, a file torch cannot read, or not a checkpoint of this format (e.g. a
            ``resume.pt`` or an AlphaStar model); the message names the path.
    """
    if os.path.isdir(path):
        inside = sorted(p.name for p in Path(path).glob("*.pt") if p.name != "resume.pt")
        hint = f" (its checkpoints: {', '.join(inside)})" if inside else ""
        raise ValueError(f"checkpoint {path!r} is a directory, not a checkpoint file{hint}")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"checkpoint {path!r} does not exist")
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # any unreadable file: bad pickle / zip / truncation / foreign bytes
        if isinstance(e, MemoryError):
            raise
        raise ValueError(
            f"checkpoint {path!r} could not be read as a torch file with weights_only=True ({type(e).__name__}); "
            "expected a file written by models.save_checkpoint (happo_gnn.py --save-model, bc_reweight.py)"
        ) from None
    if not isinstance(ckpt, dict) or ckpt.get("format") != CHECKPOINT_FORMAT or not isinstance(ckpt.get("config"), dict):
        found = ckpt.get("format") if isinstance(ckpt, dict) else type(ckpt).__name__
        beside = ""
        if isinstance(found, str) and found.startswith("sc2_envs.resume"):  # a run's resume state, not its model
            models = sorted(p.name for p in Path(path).parent.glob("*.pt") if p.name != Path(path).name)
            beside = f"; the run's model checkpoints beside it: {', '.join(models)}" if models else ""
        raise ValueError(
            f"checkpoint {path!r} is not a {CHECKPOINT_FORMAT!r} checkpoint (found {found!r}); expected a file written "
            f"by models.save_checkpoint (happo_gnn.py --save-model, bc_reweight.py){beside}"
        )
    return ckpt


def env_steps(ckpt: dict) -> int:
    """The env steps a checkpoint dict was trained for: its ``global_step``, or 0 for a behaviour-cloning
    checkpoint (one with a ``bc`` record, ``algos/bc_reweight.py``), which learnt from replays only (files
    written before this rule stored the epoch in ``global_step``)."""
    return 0 if "bc" in ckpt else int(ckpt.get("global_step", 0))


def training_amount(ckpt: dict) -> str:
    """How much training a checkpoint dict holds, for start-up lines: ``"691,200 env steps"``, or for a
    behaviour-cloning checkpoint ``"3 epochs of behaviour cloning on replays, no env steps"`` (the
    epoch of its ``bc`` record; an average of such checkpoints says so instead)."""
    if "bc" in ckpt:
        if ckpt.get("averaged_from"):  # average_checkpoints keeps the first file's bc record
            return f"behaviour cloning on replays, the average of {len(ckpt['averaged_from'])} checkpoints, no env steps"
        epochs = (ckpt["bc"] or {}).get("epoch")
        if epochs is None:
            return "behaviour cloning on replays (epochs not recorded), no env steps"
        return f"{int(epochs):,} epoch{'' if int(epochs) == 1 else 's'} of behaviour cloning on replays, no env steps"
    return f"{env_steps(ckpt):,} env steps"


def ancestors(ckpt: dict) -> list[dict]:
    """The checkpoints a fine-tuned checkpoint dict started from, nearest first.

    Each entry is a dict (:func:`lineage_after`): ``path`` (the file as its run was given it),
    ``training`` (:func:`training_amount` text), and, in records written from 2026-12 on,
    ``resolved`` (absolute path), ``global_step`` (int env steps), ``maps`` (training maps) and
    ``sha256`` (of the file when the run started), and from 2026-12-05 on ``algorithm`` (the script
    that trained it, None when its file did not record one) and ``seed`` (its run's ``--seed``, None
    when its ``args`` hold none). A checkpoint written before the chain was
    recorded gives only its nearest start, from ``args["init_from"]`` (HAPPO, HATRPO) or A3C's
    ``args["init"]``, with ``training`` None. Empty for a checkpoint trained from scratch.
    """
    chain = ckpt.get("lineage")
    if chain:
        return [dict(e) for e in reversed(chain)]
    args = ckpt.get("args") or {}
    parent = args.get("init_from") or args.get("init") or ""
    return [{"path": str(parent), "training": None}] if parent else []


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes (read in 1 MiB blocks)."""
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def lineage_after(path: str, ckpt: dict) -> list[dict]:
    """The ``lineage`` record of a run that starts from checkpoint ``path`` (its dict ``ckpt``): its
    ancestors, then itself, oldest first (entries as :func:`ancestors` describes); saved in every
    checkpoint of that run (``save_checkpoint(..., extra={"lineage": ...})``) and carried through
    ``--resume``, so a chain of fine-tunes names every starting point and its training.

    Raises:
        OSError: ``path`` cannot be read (it was just loaded, so only if it vanished meanwhile).
    """
    me = {
        "path": str(path),
        "resolved": str(Path(path).resolve()),
        "training": training_amount(ckpt),
        "global_step": env_steps(ckpt),
        "maps": checkpoint_maps(ckpt["config"]) if "config" in ckpt else [],
        "sha256": file_sha256(path),
        "algorithm": ckpt.get("algorithm"),
        "seed": _recorded_seed(ckpt),
    }
    return [*reversed(ancestors(ckpt)), me]


def trained_by(ckpt: dict) -> str:
    """The script and seed that trained a checkpoint dict, as text for listings: ``"happo_gnn seed 1"``;
    ``"seed 1"`` for a file that recorded no script (written before 2026-12-05), ``""`` with neither."""
    return trainer_text(ckpt.get("algorithm"), _recorded_seed(ckpt))


def trainer_text(algorithm: str | None, seed: int | None) -> str:
    """``"happo_gnn seed 1"`` from a script name and a seed, leaving out what is None (a lineage
    entry's ``algorithm`` / ``seed``, :func:`lineage_after`)."""
    algorithm = algorithm if isinstance(algorithm, str) else None  # a hand-edited record must not break a listing
    return " ".join(x for x in (algorithm, None if seed is None else f"seed {seed}") if x)


def _recorded_seed(ckpt: dict) -> int | None:
    """The ``--seed`` of the run that wrote a checkpoint dict (``args["seed"]``), None if not recorded."""
    seed = (ckpt.get("args") or {}).get("seed")
    return int(seed) if isinstance(seed, int) and not isinstance(seed, bool) else None


def ancestry_text(chain: list[dict]) -> str:
    """``ancestors``' list as text, nearest first: ``"b.pt (230,400 env steps on 3m, happo_gnn seed 2),
    itself fine-tuned from a.pt (102,400 env steps on 3m+8m, happo_gnn seed 1)"``; an entry without a
    recorded amount shows its path only (and without a recorded script or seed, no script or seed),
    and one whose file now holds other bytes than when it was recorded says so (:func:`changed_since`)."""

    def one(e: dict) -> str:
        what = [e["training"] + (f" on {'+'.join(e['maps'])}" if e.get("maps") else "")] if e.get("training") else []
        who = trainer_text(e.get("algorithm"), e.get("seed"))
        if who:
            what = [f"{what[0]}, {who}"] if what else [who]
        if changed_since(e):
            what.append("the file has changed since")
        return e["path"] + (f" ({'; '.join(what)})" if what else "")

    return ", itself fine-tuned from ".join(one(e) for e in chain)


def changed_since(entry: dict) -> bool:
    """Whether a lineage entry's file exists but no longer holds the bytes it had when recorded (e.g. a
    run's ``<exp_name>.pt`` that the run, resumed, has overwritten). False when no digest was recorded
    or the file is gone (nothing to compare)."""
    want, where = entry.get("sha256"), entry.get("resolved") or entry.get("path")
    if not want or not where or not Path(where).is_file():
        return False
    try:
        return file_sha256(where) != want
    except OSError:
        return False


def init_weights(path: str, policy: ClassPolicy, critic: CentralCritic) -> dict:
    """Copy a checkpoint's actor and critic weights into freshly built models (fine-tuning from it).

    The models must be the same networks: the same actor type, classes, widths and critic (e.g.
    built by :func:`build_multi_map_models` for the checkpoint's training maps, or for other maps
    whose classes and entity widths are the same). Weights only: no optimiser state or env step
    count carries over.

    Returns:
        The checkpoint dict (:func:`read_checkpoint`), e.g. for its ``global_step``.

    Raises:
        FileNotFoundError / ValueError: as :func:`read_checkpoint`; weights holding NaN or inf; a
            checkpoint of another actor type, other classes (or the same in another order), inputs of
            another layout (its ``policy_spec`` / ``critic_spec``: entity widths, type vocabulary,
            observation or state size), or weights of other names or shapes (the message names the
            path and what differs).
    """
    ckpt = read_checkpoint(path)
    cfg = ckpt["config"]
    _check_finite_weights(f"checkpoint {path!r}", ckpt)
    if cfg.get("actor_type") != policy.actor_type:
        raise ValueError(f"checkpoint {path!r} holds {cfg.get('actor_type')} actors; expected {policy.actor_type}")
    trained = "+".join(checkpoint_maps(cfg)) if cfg.get("map_name") or cfg.get("train_maps") else "unknown maps"
    if list(cfg.get("classes", [])) != list(policy.classes):
        order = ""
        if sorted(cfg.get("classes", [])) == sorted(policy.classes):  # the order follows the training maps'
            order = f" (the same classes in another order: give --map in its order, {trained})"
        raise ValueError(
            f"checkpoint {path!r} (trained on {trained}) has the classes {cfg.get('classes')}; "
            f"expected {list(policy.classes)}{order}"
        )
    for part, model, key in (("actors", policy, "policy_spec"), ("critic", critic, "critic_spec")):
        # same shapes are not enough: a type vocabulary of the same size in another order would load silently
        want, have = _plain(cfg.get(key)), _plain(getattr(model, "spec", None))
        if isinstance(want, dict) and isinstance(have, dict) and want != have:
            raise ValueError(
                f"checkpoint {path!r} (trained on {trained}): its {part} read inputs of another layout "
                f"({'; '.join(dict_diffs(want, have))}: checkpoint vs this run); expected maps whose observations "
                "and states have its layout"
            )
    for part, model, key in (("actors", policy, "policy_hparams"), ("critic", critic, "critic_hparams")):
        try:
            model.load_state_dict(ckpt[part])
        except RuntimeError as e:  # missing / unexpected keys, or shapes that differ
            first = str(e).strip().splitlines()
            sizes = "the same network sizes (--hidden, --actor-layers)"
            if cfg.get(key) is not None and cfg.get(key) != getattr(model, "hparams", None):
                sizes = f"networks of its sizes {cfg.get(key)} (this run's: {getattr(model, 'hparams', None)}; --hidden, --actor-layers)"
            raise ValueError(
                f"checkpoint {path!r} (trained on {trained}): its {part} do not fit this run's networks "
                f"({' '.join(first[:3])}); expected {sizes} and maps whose observations and states have its layout"
            ) from None
    return ckpt


def dict_diffs(want: dict, have: dict) -> list[str]:
    """``"key: a vs b"`` for every key whose values differ between two dicts (a missing key is None), sorted."""
    return [f"{k}: {want.get(k)} vs {have.get(k)}" for k in sorted(set(want) | set(have)) if want.get(k) != have.get(k)]


def _check_flat_layouts(path, cfg: dict, env_info: dict, with_critic: bool) -> None:
    """An MLP reads columns by position: raise ValueError if the env's observation (and, with the critic,
    state) layout differs from the training one, naming the keys that differ. Checkpoints without a
    layout (written before it was saved) are not checked."""
    for key in ("obs_layout", *(("state_layout",) if with_critic else ())):
        want, have = cfg.get(key), env_info.get(key)
        if not isinstance(want, dict) or not isinstance(have, dict):
            continue
        diff = dict_diffs(_plain(want), _plain(have))
        if diff:
            raise ValueError(
                f"checkpoint {path} (trained on {cfg['map_name']}, actor mlp) does not fit {env_info.get('map_name')}: "
                f"the sizes match but the {key} differs (checkpoint vs env: {'; '.join(diff)}); a flat MLP reads its "
                "inputs by position, so other SMAC feature options (obs_pathing_grid, obs_all_health, ...) are refused"
            )


def _check_feature_options(path, cfg: dict, env_info: dict) -> None:
    """SMACv2's ``use_unit_ranges`` and ``min_attack_range`` change what distances and visibility mean
    without changing the layout: raise ValueError if the checkpoint's ``feature_options`` differ from
    the env's, naming them. Checkpoints without the record (SMAC v1 maps, or written before it) and
    envs without it (SMAC v1 maps) are not checked."""
    want, have = cfg.get("feature_options"), env_info.get("feature_options")
    if not isinstance(want, dict) or not isinstance(have, dict):
        return
    diff = dict_diffs(want, have)
    if diff:
        raise ValueError(
            f"checkpoint {path} (trained on {cfg['map_name']}) does not fit {env_info.get('map_name')}: it was trained "
            f"with other SMACv2 feature options (checkpoint vs env: {'; '.join(diff)}); the features would mean "
            "other things (sight and shoot ranges), so build the env with the checkpoint's options"
        )


def load_checkpoint(path: str, env_info: dict, device: str | torch.device = "cpu", with_critic: bool = True):
    """Rebuild the models of a checkpoint and bind them to ``env_info`` (possibly another map).

    Any map whose unit classes all have an actor in the checkpoint and whose entity widths equal
    the training ones can be served by a GNN checkpoint, single- or multi-map (the count-invariant
    actors and critic do not depend on team sizes); an MLP checkpoint only its training sizes.

    Returns:
        ``(policy, critic_or_None, checkpoint_dict)``.
    Raises:
        ValueError: ``path`` is not a path, ``device`` is not ``'cpu'`` or a visible CUDA device, the file cannot be read (missing, a folder, truncated, not a
            torch file, or saved on a device that ``device`` cannot map), it is not a checkpoint of this
            format, its weights hold NaN or inf, or the models cannot serve this env (the message
            names the checkpoint's map and what differs; an MLP also needs the training observation and
            state layouts, not just their sizes; a SMACv2 checkpoint needs the training
            ``feature_options``, e.g. ``use_unit_ranges``).
    """
    if not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"checkpoint path {path!r}: expected a file path (str or os.PathLike)")
    from sc2_envs.sim.env import _as_device

    device = _as_device(device)  # 'meta', 'mps', 'cpu:1', ...: a ValueError naming it, as make_batched gives
    try:
        ckpt = torch.load(path, map_location=device, weights_only=True)
    except (KeyError, IndexError, ValueError, struct.error) as e:
        # what torch's legacy (non-zip) reader raises on some text files, e.g. "hello" -> KeyError: 101
        raise ValueError(
            f"cannot read checkpoint {path}: not a torch file ({type(e).__name__}: {e} while unpickling it); "
            "expected a file written by models.save_checkpoint (algos/happo_gnn.py --save-model)"
        ) from None
    except (OSError, RuntimeError, pickle.UnpicklingError, EOFError) as e:
        # torch's own message for a text file advises weights_only=False (unpickling arbitrary code): not repeated here
        first = " ".join(str(e).split())[:200]
        raise ValueError(
            f"cannot read checkpoint {path} onto device {device!r}: {type(e).__name__}: {first}; expected a file "
            "written by models.save_checkpoint (algos/happo_gnn.py --save-model)"
        ) from None
    if not isinstance(ckpt, dict) or ckpt.get("format") != CHECKPOINT_FORMAT:
        found = ckpt.get("format") if isinstance(ckpt, dict) else type(ckpt)
        raise ValueError(f"{path} is not a {CHECKPOINT_FORMAT} checkpoint (format={found})")
    missing = [k for k in ("config", "actors", *(("critic",) if with_critic else ())) if k not in ckpt]
    cfg = ckpt.get("config", {})
    missing += [
        f"config.{k}"
        for k in ("actor_type", "classes", "policy_spec", "policy_hparams", "critic_spec", "critic_hparams", "map_name")
        if isinstance(cfg, dict) and k not in cfg
    ]
    if missing or not isinstance(cfg, dict):
        raise ValueError(
            f"{path} says format={CHECKPOINT_FORMAT} but lacks {', '.join(missing) or 'a config dict'}: it was not written "
            f"by models.save_checkpoint (or was edited); expected the keys config, actors, critic"
        )
    if not isinstance(cfg["classes"], list) or not all(isinstance(c, str) for c in cfg["classes"]):
        raise ValueError(f"{path}: config.classes = {cfg['classes']!r}; expected a list of unit class names")
    _check_finite_weights(path, ckpt, with_critic)
    ch = cfg["critic_hparams"]
    policy = ClassPolicy.from_config(
        {
            "actor_type": cfg["actor_type"],
            "classes": cfg["classes"],
            "spec": cfg["policy_spec"],
            "hparams": cfg["policy_hparams"],
        }
    )
    policy.load_state_dict(ckpt["actors"])
    policy.to(device)
    try:
        policy.bind(env_info)
    except ValueError as e:
        raise ValueError(
            f"checkpoint {path} (trained on {cfg['map_name']}, actor {cfg['actor_type']}) does not fit "
            f"{env_info.get('map_name')}: {e}"
        ) from None
    if cfg["actor_type"] == "mlp":  # same sizes are not the same columns (e.g. pathing grid vs health + timestep)
        _check_flat_layouts(path, cfg, env_info, with_critic)
    _check_feature_options(path, cfg, env_info)
    critic = None
    if with_critic:
        critic = CentralCritic(cfg["actor_type"], cfg["classes"], cfg["critic_spec"], ch["hidden"], ch["heads"], ch["layers"])
        critic.load_state_dict(ckpt["critic"])
        critic.to(device)
        try:
            critic.bind(env_info)
        except ValueError as e:
            raise ValueError(
                f"checkpoint {path} (trained on {cfg['map_name']}): critic does not fit {env_info.get('map_name')}: {e}"
            ) from None
    return policy, critic, ckpt


def _weights_part(ckpt: dict) -> list[str]:
    """Keys of a checkpoint dict that hold state dicts (SMAC ``actors``/``critic``; AlphaStar ``model``)."""
    return [k for k in ("actors", "critic", "model") if k in ckpt]


def average_checkpoints(paths: list[str], out: str | None = None) -> dict:
    """Element-wise mean of the floating-point tensors of checkpoints of one run.

    Args:
        paths: two or more checkpoint files of the same format and configuration (``models`` SMAC
            checkpoints or ``models.alphastar`` checkpoints).
        out: write the averaged checkpoint here (None: only return it). It keeps the first file's
            metadata and records ``averaged_from``.

    Returns:
        the averaged checkpoint dict.

    Raises:
        ValueError: fewer than two paths, a file given twice (it would weigh double), ``out`` naming
            one of the inputs (it would be overwritten), different formats or configs, different tensor
            names or shapes, or a non-float tensor (e.g. a counter buffer) that differs between the files.
    """
    if len(paths) < 2:
        raise ValueError(f"average_checkpoints needs at least two checkpoints, got {len(paths)}: {paths}")
    real = [os.path.realpath(p) for p in paths]
    twice = sorted({str(p) for p, r in zip(paths, real, strict=True) if real.count(r) > 1})
    if twice:  # a file given twice would silently weigh double in the mean
        raise ValueError(f"average_checkpoints: {twice} name the same file more than once; expected distinct checkpoints")
    if out is not None and os.path.realpath(out) in real:
        raise ValueError(f"average_checkpoints: out={str(out)!r} is one of the input checkpoints; expected a new file")
    ckpts = [torch.load(p, map_location="cpu", weights_only=True) for p in paths]
    first = ckpts[0]
    for p, c in zip(paths[1:], ckpts[1:], strict=True):
        if c.get("format") != first.get("format"):
            raise ValueError(f"{p} has format {c.get('format')!r}, {paths[0]} has {first.get('format')!r}")
        if c.get("config") != first.get("config"):
            diff = sorted(k for k in set(c["config"]) | set(first["config"]) if c["config"].get(k) != first["config"].get(k))
            raise ValueError(f"{p} and {paths[0]} have different configs (keys {diff}); average only checkpoints of one run")
    parts = _weights_part(first)
    if not parts:
        raise ValueError(f"{paths[0]} holds no state dict (expected 'actors'/'critic' or 'model')")
    avg = dict(first)
    for part in parts:
        sds = [c[part] for c in ckpts]
        for p, sd in zip(paths[1:], sds[1:], strict=True):
            if set(sd) != set(sds[0]):
                raise ValueError(f"{p}[{part!r}] has tensors {sorted(set(sd) ^ set(sds[0]))} that {paths[0]} lacks or has")
            for k, v in sd.items():
                if v.shape != sds[0][k].shape:
                    raise ValueError(
                        f"{p}[{part!r}][{k!r}] has shape {tuple(v.shape)}; {paths[0]} has {tuple(sds[0][k].shape)}"
                    )
        merged = {}
        for k, v in sds[0].items():
            if v.is_floating_point():
                merged[k] = torch.stack([sd[k].float() for sd in sds]).mean(0).to(v.dtype)
            else:
                for p, sd in zip(paths[1:], sds[1:], strict=True):
                    if not torch.equal(sd[k], v):
                        raise ValueError(f"non-float tensor {part}.{k} differs between {paths[0]} and {p}; cannot average")
                merged[k] = v
        avg[part] = merged
    avg["averaged_from"] = [str(p) for p in paths]
    if out is not None:
        torch.save(avg, out)
    return avg
