"""PettingZoo API for every SMAC map (``sc2_smac_v0``).

| Import              | ``from sc2_envs.wrappers.pettingzoo import parallel_env, env, raw_env`` |
|---------------------|-------------------------------------------------------------------------|
| Actions             | Discrete                                                                |
| Parallel API        | Yes (``parallel_env``); AEC through ``parallel_to_aec`` (``env``)       |
| Agents              | ``agents = ["agent_0", ..., "agent_{N-1}"]`` (SMAC agent ids)           |
| Action shape        | ``Discrete(6 + n_enemies)``: no-op, stop, move N/S/E/W, attack enemy k  |
| Observation         | ``Dict(observation=Box(-1, 1, (obs_size,), float32),``                  |
|                     | ``action_mask=Box(0, 1, (n_actions,), int8))``                          |
| State shape         | ``Box(-b, b, (state_size,), float32)`` (SMAC ``get_state``; ``b`` >= 1, |
|                     | see ``_common.state_bound``: SMAC's cooldown normaliser)                |

Each agent controls one allied unit; the opponent is SMAC's scripted attack-move AI. One ``step`` is
8 game loops (0.5 normal-speed game seconds). The reward is SMAC's shaped *team* reward, given to
every agent. Observation, state and action layouts are SMAC's (see ``env.unwrapped.get_env_info()``),
identical on the embedded simulator (``backend="sim"``) and on StarCraft II (``backend="sc2"``).

Agent names. ``agent_names="index"`` (default) gives ``agent_i`` for SMAC agent id ``i``: TorchRL's
``PettingZooWrapper`` and BenchMARL then put all agents in one group ``"agent"`` (their spaces are
identical, so they can be stacked). ``agent_names="unit_type"`` gives ``stalker_0, stalker_1,
zealot_0, ...`` (counted per type, in SMAC's agent id order), which TorchRL groups per unit type.

Dead agents. ``dead_agents="remove"`` (default, PettingZoo's contract): an agent whose unit dies is in
that step's five dicts with its final observation (all zeros, as SMAC's ``get_obs_agent`` gives
dead units), the team reward and ``terminations[agent] = True``, and is gone from ``env.agents``
afterwards. ``dead_agents="absorbing"`` (SMAC's own semantics, for BenchMARL / SuperSuit / SB3, which
cannot handle a shrinking agent set): dead agents stay in ``env.agents`` until the episode ends with
a zero observation, the no-op-only mask ``[1, 0, ..., 0]`` and ``terminations = False``; their only
valid action is 0 (no-op), and ``None`` is read as 0.

Episode end. A won / lost / drawn battle sets ``terminations = True`` for every agent still in
``env.agents``; the time limit (SMAC's ``episode_limit``) sets ``truncations = True`` for every such
agent (an agent that dies on that very step has both). After the last step ``env.agents == []``.

SMACv2 scenarios (``protoss_5_vs_5``, ...; ``sc2_envs.list_scenarios()``): each reset draws a new
team, so agents are always ``agent_0..N-1`` (``agent_names="unit_type"`` is refused: names would
collide and change between episodes), ``possible_agents`` never changes, and each agent's unit type
of the current episode is in ``infos[agent]["unit_kind"]``, an int: the index of the type in
``env.get_env_info()["kinds"]`` (the race's types in one-hot order, ``sc2_envs.smacv2.RaceSpec.type_bit_order``;
protoss: stalker 0, zealot 1, colossus 2), which is also where the 1 sits in the ``type_*`` one-hot of
the agent's own observation features. ``env.agent_unit_types`` maps agent -> type name for the current
episode (``None`` before the first ``reset``).

Infos (every agent, the same keys at ``reset`` and at every step): ``battle_won`` (bool),
``dead_allies``, ``dead_enemies`` (int), ``episode_limit`` (bool) (SMAC's keys and meanings),
``agent_alive`` (bool: the unit is alive), on SMACv2 scenarios ``unit_kind`` (int), in lenient mode
``invalid_action`` (bool: the action was unavailable and replaced by stop / no-op; False at reset), and
with ``info_action_mask=True`` a copy of the mask as ``action_mask`` (``(n_actions,)`` int8). Every value
is a Python ``bool`` / ``int`` or a fixed-shape NumPy array: TorchRL's ``PettingZooWrapper`` builds its
info spec from the reset's infos and converts each value with ``torch.as_tensor``, RLlib's
``ParallelPettingZooEnv`` and SuperSuit's vector envs pass the dicts on, so none needs a ``dtype``. The mask is in the
observation only by default, so library wrappers that look for it in the observation *or* the infos
work unchanged (TorchRL's ``PettingZooWrapper`` fails on a second copy, see ``SC2ParallelEnv``).
"""

from __future__ import annotations

import operator
from collections.abc import Mapping

import gymnasium
import numpy as np
import torch
from pettingzoo import ParallelEnv
from pettingzoo.utils import parallel_to_aec, wrappers

from sc2_envs.sim.rng import unwrap_scalar_seed
from sc2_envs.wrappers._common import OBS_BOUND, SimRenderMixin, as_numpy, make_backend, state_bound

__all__ = ["SC2ParallelEnv", "env", "parallel_env", "raw_env"]

DEAD_AGENT_MODES = ("remove", "absorbing")
AGENT_NAMINGS = ("index", "unit_type")
SPACE_SPAWN_KEY = 0x73706163
"""Spawn-key word (ASCII "spac") of the action-space seeds that ``reset(seed)`` sets."""


class SC2ParallelEnv(SimRenderMixin, ParallelEnv):
    """A SMAC battle as a PettingZoo ``ParallelEnv`` (see the module docstring for the full contract).

    Args:
        map_name: SMAC map name (``sc2_envs.maps.list_maps()``).
        backend: ``"sim"`` (embedded batched simulator, default) or ``"sc2"`` (real StarCraft II via
            ``sc2_envs.backends.smac_sc2``).
        dead_agents: ``"remove"`` or ``"absorbing"``.
        agent_names: ``"index"`` (``agent_i``) or ``"unit_type"`` (``stalker_0``, ...).
        render_mode: ``None``, ``"rgb_array"`` (top-down HxWx3 uint8 frames) or ``"human"`` (a
            matplotlib window).
        device: torch device of the simulator.
        seed: seed of the first episode when ``reset`` gets none.
        lenient_actions: replace unavailable actions by stop (living unit) / no-op (dead unit) and flag
            them in ``infos[agent]["invalid_action"]``, instead of raising ``ValueError``.
        info_action_mask: also put a copy of the mask in ``infos[agent]["action_mask"]`` (default
            ``False``). TorchRL's ``PettingZooWrapper`` (0.14.1) fails with both copies: it takes the
            mask from the observation and then finds no spec for the one left in the infos
            (``TypeError: 'NoneType' object does not support item assignment`` in its ``_reset``).
        **smac_options: SMAC's ``StarCraft2Env`` keyword arguments (``obs_last_action``,
            ``state_last_action``, ``reward_sparse``, ``reward_only_positive``, ...).

    Raises:
        ValueError: unknown map, backend, mode or option.
    """

    metadata = {"name": "sc2_smac_v0", "render_modes": ["human", "rgb_array"], "render_fps": 2, "is_parallelizable": True}

    def __init__(
        self,
        map_name: str = "3m",
        *,
        backend: str = "sim",
        dead_agents: str = "remove",
        agent_names: str = "index",
        render_mode: str | None = None,
        device: str | torch.device = "cpu",
        seed: int | None = None,
        lenient_actions: bool = False,
        info_action_mask: bool = False,
        **smac_options,
    ):
        if dead_agents not in DEAD_AGENT_MODES:
            raise ValueError(f"dead_agents={dead_agents!r}; expected one of {DEAD_AGENT_MODES}")
        if agent_names not in AGENT_NAMINGS:
            raise ValueError(f"agent_names={agent_names!r}; expected one of {AGENT_NAMINGS}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode={render_mode!r}; expected None or one of {self.metadata['render_modes']}")
        if not isinstance(info_action_mask, (bool, np.bool_)):  # "yes" or 0 would be read as truthy / falsy
            raise TypeError(f"info_action_mask must be a bool, got {info_action_mask!r}")
        self.map_name = map_name
        self.dead_agents = dead_agents
        self.render_mode = render_mode
        self.lenient_actions = lenient_actions
        self.info_action_mask = info_action_mask
        self.sim = make_backend(map_name, backend, device, seed, lenient_actions, smac_options)
        if render_mode is not None and not hasattr(self.sim, "render_data"):
            raise ValueError(f"backend {backend!r} has no render_data(); use render_mode=None")
        n, a = self.sim.n_agents, self.sim.n_actions
        self._varying = getattr(self.sim, "scenario", None) is not None
        if self._varying:
            if agent_names != "index":
                raise ValueError(
                    f"agent_names={agent_names!r} is not available for the SMACv2 scenario {map_name!r}: unit types "
                    "change at every reset, so type-based names would collide and change; agents are agent_0..N-1 "
                    "and each agent's unit type is in infos[agent]['unit_kind'] (an index into "
                    "get_env_info()['kinds']) and env.agent_unit_types"
                )
            types = [None] * n
            bound = state_bound(self.sim.scenario.kinds)
        else:
            types = list(self.sim.agent_unit_types)
            bound = state_bound(types)
        if agent_names == "index":
            self.possible_agents = [f"agent_{i}" for i in range(n)]
        else:
            self.possible_agents = [f"{t}_{types[:i].count(t)}" for i, t in enumerate(types)]
        self.agent_ids = {name: i for i, name in enumerate(self.possible_agents)}
        self.agent_unit_types = dict(zip(self.possible_agents, types, strict=False))
        self._unit_kind = np.zeros(n, np.int64)  # SMACv2: each agent's kind index in this episode
        # One space object per agent, built once: parallel_api_test checks identity, and spaces are seeded
        # per agent.
        self.observation_spaces = {
            ag: gymnasium.spaces.Dict(
                {
                    "observation": gymnasium.spaces.Box(-OBS_BOUND, OBS_BOUND, (self.sim.obs_size,), np.float32),
                    "action_mask": gymnasium.spaces.Box(0, 1, (a,), np.int8),
                }
            )
            for ag in self.possible_agents
        }
        self.action_spaces = {ag: gymnasium.spaces.Discrete(a) for ag in self.possible_agents}
        self.state_space = gymnasium.spaces.Box(-bound, bound, (self.sim.state_size,), np.float32)
        self.agents: list[str] = []
        self._state = np.zeros(self.sim.state_size, np.float32)
        self._unit_alive = np.zeros(n, bool)
        self._steps = 0
        self._viewer = None
        self._has_reset = False

    def _known(self, agent: str) -> str:
        if agent not in self.observation_spaces:
            raise KeyError(f"agent {agent!r}: expected one of possible_agents {self.possible_agents}")
        return agent

    def observation_space(self, agent: str) -> gymnasium.spaces.Dict:
        """The observation space of ``agent`` (one of ``possible_agents``; KeyError naming it otherwise)."""
        return self.observation_spaces[self._known(agent)]

    def action_space(self, agent: str) -> gymnasium.spaces.Discrete:
        """The action space of ``agent`` (one of ``possible_agents``; KeyError naming it otherwise)."""
        return self.action_spaces[self._known(agent)]

    def reset(self, seed: int | None = None, options: dict | None = None):
        """Start a new battle.

        Args:
            seed: seed of this episode (same seed -> same episode for the same actions); ``None`` continues
                the backend's random stream. An int seed also seeds each agent's action space
                (agent ``i`` with child ``i`` of ``SeedSequence(seed, spawn_key=(SPACE_SPAWN_KEY,))``), so
                ``env.action_space(agent).sample(mask)`` repeats after ``reset(seed)`` too.
            options: accepted for API compatibility (``parallel_api_test`` passes arbitrary keys); none is read.

        Returns:
            ``(observations, infos)``, keyed by every agent.
        """
        seed = unwrap_scalar_seed(seed)  # a 0-d int tensor / array seeds the action spaces like its int
        out = self.sim.reset(seed=seed)
        if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            for i, ag in enumerate(self.possible_agents):
                child = np.random.SeedSequence(int(seed), spawn_key=(SPACE_SPAWN_KEY, i))
                self.action_spaces[ag].seed(int(child.generate_state(1, np.uint32)[0]))
        self.agents = list(self.possible_agents)
        self._steps = 0
        self._has_reset = True
        if self._varying:  # this episode's roster (SMACv2 draws one per reset)
            self.agent_unit_types = dict(zip(self.possible_agents, self.sim.unit_types(0)[0], strict=True))
            self._unit_kind = as_numpy(out["unit_kind"][0], np.int64)
        avail = as_numpy(out["avail_actions"][0], np.int8)
        self._unit_alive = avail[:, 0] == 0  # SMAC: no-op is available exactly to dead units
        self._state = as_numpy(out["state"][0], np.float32)
        obs = as_numpy(out["obs"][0], np.float32)
        info = {"battle_won": False, "dead_allies": 0, "dead_enemies": 0, "episode_limit": False}
        # the step's keys at reset too: TorchRL's PettingZooWrapper builds its info spec from the reset's infos
        invalid = np.zeros(len(self.possible_agents), bool) if self.lenient_actions else None
        return self._pack(obs, avail, info, self._unit_alive, invalid)

    def step(self, actions: dict):
        """Advance the battle by one env step (8 game loops).

        Args:
            actions: ``{agent: int}`` for every agent in ``env.agents`` (in absorbing mode a dead agent may
                be left out or given ``None``, both meaning no-op). Entries for agents that already left
                ``env.agents`` this episode are ignored: their units are dead and can only take the no-op
                (TorchRL's ``PettingZooWrapper`` sends an action for every agent of a group); such an
                entry must still be ``None`` or an int in ``[0, n_actions)``.

        Returns:
            ``(observations, rewards, terminations, truncations, infos)``, each keyed by the agents that
            were in ``env.agents`` before the step.

        Raises:
            RuntimeError: the episode is over (call ``reset``).
            TypeError: ``actions`` is not a mapping.
            ValueError: an action for a name not in ``possible_agents``, a missing action for a
                living agent, a value outside ``[0, n_actions)`` (also for an agent already removed), or (unless
                ``lenient_actions``) an action the mask says is unavailable.
        """
        if not self._has_reset:
            raise RuntimeError("step() called before reset(); call reset() first")
        if not self.agents:
            raise RuntimeError("step() called after the episode ended (env.agents is empty); call reset()")
        if not isinstance(actions, Mapping):
            raise TypeError(
                f"actions must be a dict {{agent name: int action}} for the agents {self.agents}, "
                f"got {type(actions).__name__} {actions!r}"
            )
        unknown = set(actions) - set(self.possible_agents)
        if unknown:
            raise ValueError(
                f"actions given for unknown agents {sorted(unknown, key=repr)}; expected names from {self.possible_agents}"
            )
        joint = np.zeros(len(self.possible_agents), np.int64)  # no-op for units already dead
        for ag in self.agents:
            i = self.agent_ids[ag]
            act = actions.get(ag)
            if act is None:
                if self._unit_alive[i]:
                    raise ValueError(f"no action for living agent {ag!r}; expected an int in [0, {self.sim.n_actions})")
                continue
            joint[i] = self._check_action(ag, act)
        for ag in set(actions) - set(self.agents):
            if actions[ag] is not None:  # ignored, but a wrong value is still a caller's bug worth naming
                self._check_action(ag, actions[ag])
        out = self.sim.step(torch.as_tensor(joint, device=self.sim.device).unsqueeze(0))
        self._steps += 1
        # final_* is the observation at the end of this step, before any auto-reset of the backend.
        obs = as_numpy(out["final_obs"][0], np.float32)
        avail = as_numpy(out["final_avail_actions"][0], np.int8)
        self._state = as_numpy(out["final_state"][0], np.float32)
        alive = as_numpy(out["agent_alive"][0], bool)
        terminated, truncated = bool(out["terminated"][0]), bool(out["truncated"][0])
        info = {
            "battle_won": bool(out["battle_won"][0]),
            "dead_allies": int(out["dead_allies"][0]),
            "dead_enemies": int(out["dead_enemies"][0]),
            "episode_limit": bool(out["episode_limit"][0]),
        }
        invalid = as_numpy(out["invalid_actions"][0], bool) if self.lenient_actions else None
        observations, infos = self._pack(obs, avail, info, alive, invalid)
        reward = float(out["reward"][0])
        rewards = {ag: reward for ag in self.agents}
        died = self._unit_alive & ~alive
        remove = self.dead_agents == "remove"
        terminations = {ag: terminated or (remove and bool(died[self.agent_ids[ag]])) for ag in self.agents}
        truncations = {ag: truncated for ag in self.agents}
        self._unit_alive = alive
        self.agents = [ag for ag in self.agents if not (terminations[ag] or truncations[ag])]
        return observations, rewards, terminations, truncations, infos

    def _check_action(self, agent: str, act) -> int:
        if isinstance(act, (bool, np.bool_)) or isinstance(act, torch.Tensor) and act.dtype == torch.bool:
            raise ValueError(f"action for {agent!r} is {act!r} (a bool); expected an int in [0, {self.sim.n_actions})")
        if isinstance(act, (torch.Tensor, np.ndarray)) and act.ndim != 0:  # torch would index with a 1-element tensor
            raise ValueError(
                f"action for {agent!r} is {act!r} of shape {list(act.shape)}; expected an int in [0, {self.sim.n_actions})"
            )
        try:
            a = operator.index(act)
        except TypeError:
            raise ValueError(f"action for {agent!r} is {act!r}; expected an int in [0, {self.sim.n_actions})") from None
        if not 0 <= a < self.sim.n_actions:
            raise ValueError(f"action for {agent!r} is {a}; expected an int in [0, {self.sim.n_actions})")
        return a

    def _pack(self, obs, avail, info, alive, invalid):
        observations, infos = {}, {}
        for ag in self.agents:
            i = self.agent_ids[ag]
            observations[ag] = {"observation": obs[i], "action_mask": avail[i]}
            infos[ag] = dict(info, agent_alive=bool(alive[i]))
            if self._varying:
                infos[ag]["unit_kind"] = int(self._unit_kind[i])
            if self.info_action_mask:
                infos[ag]["action_mask"] = avail[i].copy()
            if invalid is not None:
                infos[ag]["invalid_action"] = bool(invalid[i])
        return observations, infos

    def state(self) -> np.ndarray:
        """SMAC's global state at the current step: ``(state_size,)`` float32 (a fresh copy).

        Raises:
            RuntimeError: before the first ``reset()`` (there is no battle, so no state).
        """
        if not self._has_reset:
            raise RuntimeError("state() called before reset(); call reset() first")
        return self._state.copy()

    def get_env_info(self) -> dict:
        """SMAC's ``get_env_info()`` of the backend (shapes, layouts, feature names)."""
        return self.sim.get_env_info()


def parallel_env(map_name: str = "3m", **kwargs) -> SC2ParallelEnv:
    """The parallel env (``SC2ParallelEnv(map_name, **kwargs)``); the class lists the keyword arguments."""
    return SC2ParallelEnv(map_name, **kwargs)


def raw_env(map_name: str = "3m", **kwargs):
    """The AEC view of ``parallel_env`` (``parallel_to_aec``): agents act in turn, then the battle steps."""
    return parallel_to_aec(parallel_env(map_name, **kwargs))


class _CheckActionWrapper(wrappers.BaseWrapper):
    """Checks the selected agent's action when it is given, with the parallel env's messages.

    ``parallel_to_aec`` only passes the actions on once every agent has acted, and PettingZoo's
    ``AssertOutOfBoundsWrapper`` says only "action is not in action space"; this names the agent,
    the value and what was expected. An action the agent's ``action_mask`` marks unavailable is
    refused too (``ValueError`` naming the agent, the action and the available ones; not with
    ``lenient_actions=True``), without moving ``agent_selection``. Checked actions go on as Python
    ints; ``None`` for a dead unit in absorbing mode goes on as its no-op ``0``.
    """

    def step(self, action) -> None:
        agent = self.agent_selection
        par = self.unwrapped
        if self.terminations[agent] or self.truncations[agent]:
            if action is not None:
                raise ValueError(f"action for {agent!r} is {action!r}, but the agent is done; its last step takes None")
        elif action is None:
            if par._unit_alive[par.agent_ids[agent]]:
                raise ValueError(f"no action for living agent {agent!r}; expected an int in [0, {par.sim.n_actions})")
            action = 0  # absorbing mode: a dead unit's None is its no-op
        else:
            action = par._check_action(agent, action)
            # parallel_to_aec only steps the battle once every agent has acted: an unavailable action found
            # then would blame the whole round and leave the AEC env unable to go on
            mask = self.observe(agent)["action_mask"]
            if not par.lenient_actions and not mask[action]:
                raise ValueError(
                    f"action for {agent!r} is {action}, which is unavailable; available actions: "
                    f"{np.flatnonzero(mask).tolist()} (pass lenient_actions=True to replace it by stop / no-op)"
                )
        super().step(action)

    def __str__(self) -> str:
        return str(self.env)


def env(map_name: str = "3m", **kwargs):
    """``raw_env`` with PettingZoo's validation wrappers (action bounds, call order).

    A bad action (out of range, not an int, or unavailable by the agent's ``action_mask`` unless
    ``lenient_actions=True``) is refused when it is given, with a ``ValueError`` naming the agent and
    the value; ``agent_selection`` stays on that agent.
    """
    return wrappers.OrderEnforcingWrapper(_CheckActionWrapper(wrappers.AssertOutOfBoundsWrapper(raw_env(map_name, **kwargs))))
