"""SMAC's ``StarCraft2Env`` interface on the embedded simulator, for pymarl / EPyMARL-style code.

``StarCraft2Env`` here has the methods, return types and keyword arguments of
``smac.env.StarCraft2Env`` (oxwhirl/smac ``smac/env/starcraft2/starcraft2.py`` and
``smac/env/multiagentenv.py``), so a codebase written against SMAC runs unchanged after swapping
the import::

    from sc2_envs.adapters import StarCraft2Env      # instead of: from smac.env import StarCraft2Env
    env = StarCraft2Env(map_name="3m", seed=0)
    env.reset()
    while True:
        reward, terminated, info = env.step(actions)   # actions: N ints, each available
        if terminated:
            break

Semantics (SMAC's, checked against ``StarCraft2Env.step``):

* ``step(actions) -> (reward, terminated, info)``; ``reward`` is SMAC's shaped (or sparse) team
  reward as a Python float; ``terminated`` is True when the battle is won, lost or drawn **or** the
  time limit (``episode_limit`` env steps) is reached; the first death of an agent never ends the
  episode: dead agents stay, with an all-zero observation and the avail mask ``[1, 0, ..., 0]``
  (only no-op).
* ``info`` has ``battle_won``, ``dead_allies`` and ``dead_enemies`` on every step and
  ``episode_limit: True`` on a time-limit step **only if** ``continuing_episode=True`` (SMAC sets the
  key only then; pymarl's runners read ``info.get("episode_limit", False)`` to bootstrap at the limit).
  A battle decided on the limit step counts as decided (``terminated`` without ``episode_limit``),
  as in SMAC, where the game-end check comes before the limit check.
* ``reset() -> (obs, state)``: ``obs`` is a list of ``N`` float32 arrays ``(obs_size,)``, ``state`` a
  float32 array ``(state_size,)``; ``get_avail_actions()`` is a list of ``N`` lists of ``n_actions``
  0/1 ints, as SMAC returns.
* After the terminal ``step``, ``get_obs`` / ``get_state`` / ``get_avail_actions`` return the final
  observation of that episode (pymarl stores it as the last transition) until ``reset``.
* ``get_stats()``: SMAC's ``battles_won``, ``battles_game``, ``battles_draw`` (= timeouts),
  ``win_rate``, ``timeouts``, ``restarts`` (always 0: the simulator never needs a game restart).
* An unavailable action raises ``ValueError`` naming the agent and action (SMAC asserts), unless
  ``lenient_actions=True``. Actions may be shaped ``(N,)`` or ``(N, 1)`` (lists, NumPy, torch), of an
  integer dtype or a float dtype holding whole numbers (SMAC converts with ``int(a)``; ``1.5`` is refused).
* Every public name of SMAC's class exists with SMAC's meaning (the list pinned from oxwhirl/smac
  d6aab33 in ``tests/data/smac_starcraft2env_public_names.json``): ``agents`` / ``enemies`` are dicts of
  raw unit records (``sc2_envs.sc2api.raw.RawUnit``: ``tag``, ``unit_type``, ``pos.x/.y``,
  ``health``, ``health_max``, ``shield``, ``shield_max``, ``energy``, ``weapon_cooldown``, ...);
  ``last_action``, ``death_tracker_*``, ``previous_*_units``, ``battles_*``, ``timeouts``,
  ``max_reward``, ``shield_bits_*``, ``unit_type_bits``, ``map_type``, the options and the helper
  methods (``get_state_dict``, ``get_obs_*_size``, ``get_visibility_matrix``, ``unit_max_shield``,
  ``reward_battle``, ...) come from ``sc2_envs.sc2api.smac_rules.SMACUnitRules``, SMAC's rules on
  those records, which give the same vectors as the simulator's tensor path.
* ``save_replay()`` writes a replay of ours (``.npz``) and returns / prints its path;
  ``python -m sc2_envs.render FILE --out battle.gif`` plays it back. ``render(mode="human")`` (SMAC's
  default) opens a pygame window or says why it cannot.

Time base: one ``step`` = 8 game loops (SMAC's ``step_mul``) = 0.5 normal-speed game seconds.

Keyword arguments: every ``StarCraft2Env`` keyword is accepted. The observation / state / reward
options (``obs_*``, ``state_*``, ``reward_*``) and ``continuing_episode`` act as in SMAC. The
simulator models SMAC's defaults for ``step_mul=8``, ``move_amount=2``, ``difficulty="7"``,
``heuristic_ai=False`` and ``heuristic_rest=False``; any other value of those raises ``ValueError``
(it would change the game and cannot be honoured). ``replay_dir`` and ``replay_prefix`` name the files
of ``save_replay``. ``game_version``, ``window_size_x``, ``window_size_y`` and ``debug`` only concern
the StarCraft II process: the simulator keeps them as attributes, and a value other than SMAC's
default gives a ``UserWarning`` saying it has no effect on the embedded simulator. Every keyword's
type is checked (``TypeError`` naming the value: ``step_mul`` a plain int, ``replay_dir`` a str or
path, window sizes positive ints, ``debug`` and ``continuing_episode`` bools, ``game_version`` None or
a str, ...). ``backend="sc2"`` runs the same interface on real StarCraft II through
``sc2_envs.backends.smac_sc2`` (all keywords passed on).

pymarl / EPyMARL registration (their ``src/envs/__init__.py``)::

    from functools import partial
    from sc2_envs.adapters.smac_compat import StarCraft2Env
    REGISTRY["sc2"] = partial(env_fn, env=StarCraft2Env)      # pymarl: env_fn(env, **kw) = env(**kw)

EPyMARL wraps SMAC's class in ``SMACWrapper`` (``src/envs/smac_wrapper.py``); replacing its
``from smac.env import StarCraft2Env`` with the import above is the only change.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from collections.abc import Sequence
from copy import deepcopy
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import torch

from sc2_envs.adapters.stored_features import StoredFeatures
from sc2_envs.maps import MAP_SIZE, MapSpec, get_map, pathing_grid, terrain_grids
from sc2_envs.sc2api.raw import raw_units_from_snapshot, sim_snapshot
from sc2_envs.sc2api.smac_rules import SMAC_FEATURE_DEFAULTS, SMACUnitRules
from sc2_envs.validation import check_out_dir, contains_bool
from sc2_envs.wrappers._common import as_numpy, make_backend

_log = logging.getLogger(__name__)

__all__ = ["MAX_REPLAY_STEPS", "SMAC_FEATURE_DEFAULTS", "SMAC_GAME_OPTIONS", "SMAC_PROCESS_OPTIONS", "StarCraft2Env"]

SMAC_GAME_OPTIONS: dict[str, Any] = {
    "step_mul": 8,
    "move_amount": 2,
    "difficulty": "7",
    "heuristic_ai": False,
    "heuristic_rest": False,
}
"""SMAC keywords that change the game; the simulator implements only these values (SMAC's defaults)."""

SMAC_PROCESS_OPTIONS: dict[str, Any] = {
    "game_version": None,
    "replay_dir": "",
    "replay_prefix": "",
    "window_size_x": 1920,
    "window_size_y": 1200,
    "debug": False,
}
"""SMAC keywords about the StarCraft II process (binary version, replay files, window, logging), with
SMAC's defaults; on the simulator only ``replay_dir`` and ``replay_prefix`` count (``save_replay``)."""

_NO_EFFECT_ON_SIM = ("game_version", "window_size_x", "window_size_y", "debug")
"""Process keywords the simulator ignores: a value other than SMAC's default gives a UserWarning."""


def _is_bool(v) -> bool:
    return isinstance(v, (bool, np.bool_))


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not _is_bool(v)


_KEYWORD_TYPES: dict[str, tuple[Any, str]] = {
    "step_mul": (_is_int, "an int"),
    "move_amount": (lambda v: isinstance(v, (int, float, np.integer, np.floating)) and not _is_bool(v), "a number"),
    # a str, as SMAC's own table keys it ("1" ... "9", "A"): an int 7 raises KeyError in oxwhirl SMAC
    "difficulty": (lambda v: isinstance(v, str), "a str such as '7' (SMAC's difficulty keys are strings)"),
    "heuristic_ai": (_is_bool, "a bool"),
    "heuristic_rest": (_is_bool, "a bool"),
    "game_version": (lambda v: v is None or isinstance(v, str), "None or a str such as '4.10'"),
    "replay_dir": (lambda v: isinstance(v, (str, os.PathLike)), "a str or os.PathLike"),
    "replay_prefix": (lambda v: isinstance(v, str), "a str"),
    "window_size_x": (_is_int, "a positive int"),
    "window_size_y": (_is_int, "a positive int"),
    "debug": (_is_bool, "a bool"),
}
"""What each SMAC game / process keyword must be (SMAC's ``StarCraft2Env`` defaults are of these types)."""


def _check_keyword_types(options: dict) -> None:
    """TypeError naming the value when a SMAC game or process keyword has the wrong type."""
    for key, (ok, expected) in _KEYWORD_TYPES.items():
        if key in options and not ok(options[key]):
            raise TypeError(f"{key} must be {expected}, got {options[key]!r}")
    for key in ("window_size_x", "window_size_y"):
        if key in options and options[key] <= 0:
            raise ValueError(f"{key} must be a positive int, got {options[key]!r}")


MAX_REPLAY_STEPS = 20_000
"""Env steps ``save_replay`` keeps (the oldest are dropped beyond this; about 3 KB per step at 57 units)."""


class StarCraft2Env(StoredFeatures, SMACUnitRules):
    """SMAC's ``StarCraft2Env`` API on the embedded simulator (see the module docstring for semantics).

    Args:
        map_name: SMAC map name (``sc2_envs.list_maps()``), or a ``MapSpec`` (simulator only; e.g. a
            map with a shorter ``episode_limit`` for tests). SMAC's default is ``"8m"``.
        seed: seed of the first episode; later episodes continue the env's random stream, as SMAC's
            game seed does (``seed()`` returns it).
        continuing_episode: SMAC's flag: report ``info["episode_limit"] = True`` at the time limit.
        backend: ``"sim"`` (embedded batched simulator at one env) or ``"sc2"`` (real StarCraft II).
        device: torch device of the simulator's tensors (outputs are NumPy / Python either way).
        lenient_actions: replace an unavailable action by stop (living unit) / no-op (dead unit) and
            set ``info["invalid_actions"]`` instead of raising ``ValueError``.
        **kwargs: SMAC's ``StarCraft2Env`` keywords (``obs_last_action``, ``reward_sparse``, ...) and the
            simulator's own (``spawn_jitter``, ``loops_per_tick``; see ``sc2_envs.sim.env.SMACSim``).

    Raises:
        ValueError: unknown map or keyword, or a game keyword (``step_mul``, ``difficulty``, ...) with a
            value the simulator does not implement.
    """

    def __init__(
        self,
        map_name: str | MapSpec = "8m",
        seed: int | None = None,
        continuing_episode: bool = False,
        *,
        backend: str = "sim",
        device: str | torch.device = "cpu",
        lenient_actions: bool = False,
        **kwargs,
    ):
        from sc2_envs.smacv2 import is_scenario

        if is_scenario(map_name):
            raise ValueError(
                f"map_name={map_name!r} is a SMACv2 scenario; SMAC v1's StarCraft2Env serves the v1 maps. Use "
                "sc2_envs.adapters.StarCraftCapabilityEnvWrapper(map_name='10gen_<race>', capability_config=...) "
                "(SMACv2's wrapper API) or sc2_envs.make_batched / parallel_env with the scenario name"
            )
        if not _is_bool(continuing_episode):  # "no" or NaN would be read as True
            raise TypeError(f"continuing_episode must be a bool, got {continuing_episode!r}")
        self.continuing_episode = bool(continuing_episode)
        self._seed = seed
        self.backend = backend
        self.lenient_actions = lenient_actions
        options = dict(kwargs)
        _check_keyword_types(options)
        game = {k: options.get(k, v) for k, v in SMAC_GAME_OPTIONS.items()}
        process = {k: options.get(k, v) for k, v in SMAC_PROCESS_OPTIONS.items()}
        feats = {k: options.get(k, v) for k, v in SMAC_FEATURE_DEFAULTS.items()}
        if backend == "sim":
            pop_smac_keywords(options, _NO_EFFECT_ON_SIM, "; use backend='sc2' for other values")
        # The sc2 backend always reports the time limit as truncation; continuing_episode only shapes ``info``.
        self.sim = make_backend(map_name, backend, device, seed, lenient_actions, options)
        self.map_name = self.sim.map_name
        spec = map_name if isinstance(map_name, MapSpec) else get_map(self.map_name)
        self._spec = spec
        self.n_agents: int = self.sim.n_agents
        self.n_enemies: int = self.sim.n_enemies
        self.n_actions: int = self.sim.n_actions
        self.episode_limit: int = self.sim.episode_limit
        # SMAC's attributes, same names and meaning (smac/env/starcraft2/starcraft2.py __init__).
        self._move_amount = game["move_amount"]
        self._step_mul = game["step_mul"]
        self.difficulty = game["difficulty"]
        self.heuristic_ai = game["heuristic_ai"]
        self.heuristic_rest = game["heuristic_rest"]
        self.game_version = process["game_version"]
        self.replay_dir = process["replay_dir"]
        self.replay_prefix = process["replay_prefix"]
        self.window_size = (process["window_size_x"], process["window_size_y"])
        self.debug = process["debug"]
        for key, value in feats.items():
            setattr(self, key, value)
        if self.obs_all_health:
            self.obs_own_health = True
        self.n_obs_pathing = 8
        self.n_obs_height = 9
        self.n_actions_no_attack = 6
        self.n_actions_move = 4
        self._agent_race, self._bot_race = spec.a_race, spec.b_race
        self.shield_bits_ally = 1 if spec.a_race == "P" else 0
        self.shield_bits_enemy = 1 if spec.b_race == "P" else 0
        self.unit_type_bits = spec.unit_type_bits
        self.map_type = spec.map_type
        self._unit_types = None
        self.max_reward = self.n_enemies * self.reward_death_value + self.reward_win
        self.ally_state_attr_names, self.enemy_state_attr_names = self._state_attr_names()
        # The simulator's maps are 32 x 32 with a 32 x 32 playable area (SMAC reads both from game_info).
        self.map_x = self.map_y = MAP_SIZE
        self.max_distance_x = self.max_distance_y = MAP_SIZE
        self.pathing_grid = pathing_grid(spec.terrain).astype(bool)
        # SMAC's terrain_height: the API height bytes flipped in y, / 255 ([x, y] float64), as in the simulator's
        # obs_terrain_height (oxwhirl/smac smac/env/starcraft2/starcraft2.py, _launch).
        self.terrain_height = terrain_grids(spec.terrain).height[:, ::-1] / 255.0
        self._reset_type_ids()
        self._episode_count = 0
        self._seed_pending = True  # the next reset starts the stream from self._seed; later ones continue it
        self._episode_steps = 0
        self._total_steps = 0
        self._obs = self._state = self._avail = None  # StoredFeatures: kept by _keep_features
        self._terminated = False
        self.timed_out = False
        """True after a step that ended the episode at the time limit (not a battle end); ours."""
        self.battles_won = 0
        self.battles_game = 0
        self.timeouts = 0
        self.force_restarts = 0
        self.last_stats = None
        self.reward = 0
        self.win_counted = False
        self.defeat_counted = False
        self.heuristic_targets = None
        self.death_tracker_ally = np.zeros(self.n_agents)
        self.death_tracker_enemy = np.zeros(self.n_enemies)
        self.previous_ally_units = None
        self.previous_enemy_units = None
        self.last_action = np.zeros((self.n_agents, self.n_actions))
        self.renderer = None
        self._run_config = self._sc2_proc = self._controller = None
        self._snap: dict | None = None
        self._units: tuple[dict, dict] | None = None
        self._replay: list[dict] = []
        self._replay_dropped = 0

    # ------------------------------------------------------------------ units (SMAC's agents / enemies)
    def _refresh_units(self, record: bool = True) -> None:
        """Take a cheap NumPy snapshot of the units (kept for ``save_replay`` when ``record``); the
        records are built only when read."""
        if self.backend == "sim":
            self._snap = sim_snapshot(self.sim, 0)
            if record:
                self._replay.append(dict(self._snap))
            if len(self._replay) > MAX_REPLAY_STEPS:
                del self._replay[0]
                self._replay_dropped += 1
        self._units = None

    def _build_units(self) -> tuple[dict, dict]:
        if self._units is None:
            if self.backend != "sim":
                env = self.sim._env
                self._units = (env.agents, env.enemies)
            elif self._snap is None:
                self._units = ({}, {})
            else:
                units = raw_units_from_snapshot(self.sim, self._snap, include_dead=True)
                N = self.n_agents
                self._units = ({i: u for i, u in enumerate(units[:N])}, {j: u for j, u in enumerate(units[N:])})
        return self._units

    @property
    def agents(self) -> dict:
        """SMAC's ``agents``: agent id -> unit record (``sc2_envs.sc2api.raw.RawUnit``: ``tag``,
        ``unit_type`` (``*_RL`` id), ``owner``, ``pos.x/.y``, ``health`` (0 once dead), ``health_max``,
        ``shield``, ``shield_max``, ``energy``, ``weapon_cooldown`` (game loops), ``orders``). Agent
        ``i`` is the simulator's agent ``i``. Empty before the first ``reset``."""
        return self._build_units()[0]

    @agents.setter
    def agents(self, value: dict) -> None:
        self._units = (value, self._build_units()[1])

    @property
    def enemies(self) -> dict:
        """SMAC's ``enemies``: enemy id -> unit record (stock type ids), as ``agents``."""
        return self._build_units()[1]

    @enemies.setter
    def enemies(self, value: dict) -> None:
        self._units = (self._build_units()[0], value)

    def init_units(self) -> None:
        """SMAC's ``init_units``: (re)build ``agents`` / ``enemies`` from the current battle."""
        self._units = None
        self._unit_types = [u.unit_type for u in self.agents.values()] + [u.unit_type for u in self.enemies.values()]

    def update_units(self):
        """SMAC's ``update_units``: keep the previous records, refresh from the current battle and
        return the end code (-1 lost, 1 won, 0 draw, ``None`` ongoing). ``step`` already does this."""
        self.previous_ally_units, self.previous_enemy_units = deepcopy(self.agents), deepcopy(self.enemies)
        if self.backend == "sim":
            self._refresh_units(record=False)
        n_a = sum(u.health > 0 for u in self.agents.values())
        n_e = sum(u.health > 0 for u in self.enemies.values())
        if (n_a == 0 and n_e > 0) or self.only_medivac_left(ally=True):
            return -1
        if (n_a > 0 and n_e == 0) or self.only_medivac_left(ally=False):
            return 1
        if n_a == 0 and n_e == 0:
            return 0
        return None

    def get_state_dict(self) -> dict[str, np.ndarray]:
        """SMAC's ``get_state_dict`` (``SMACUnitRules``). Raises RuntimeError before the first ``reset()``."""
        self._require_reset()
        return super().get_state_dict()

    def reward_battle(self) -> float:
        """SMAC's ``reward_battle`` (``SMACUnitRules``). Raises RuntimeError before the first ``reset()``."""
        self._require_reset()
        return super().reward_battle()

    def get_unit_types(self) -> list[int] | None:
        """Type ids of the agents then the enemies (``None`` before the first ``reset``, as SMAC warns)."""
        return self._unit_types

    # ------------------------------------------------------------------ episode
    def reset(self) -> tuple[list[np.ndarray], np.ndarray]:
        """Start a new episode.

        The first reset uses the constructor's ``seed`` (or the one given to ``seed(s)``); later resets
        continue the random stream, so a seeded run is reproducible as a whole.

        Returns:
            ``(get_obs(), get_state())``: ``N`` float32 arrays ``(obs_size,)`` and ``(state_size,)`` float32.
        """
        # _episode_count counts only terminated episodes: an abandoned first episode must not replay the seed
        out = self.sim.reset(seed=self._seed if self._seed_pending else None)
        self._seed_pending = False
        self._keep_features(out["obs"], out["state"], out["avail_actions"])
        self._episode_steps = 0
        self._terminated = False
        self.timed_out = False
        self.death_tracker_ally = np.zeros(self.n_agents)
        self.death_tracker_enemy = np.zeros(self.n_enemies)
        self.previous_ally_units = None
        self.previous_enemy_units = None
        self.win_counted = False
        self.defeat_counted = False
        self.last_action = np.zeros((self.n_agents, self.n_actions))
        self._refresh_units()
        if self._unit_types is None or self._episode_count == 0:
            self.init_units()
            if self.agents:
                self._init_ally_unit_types(min(u.unit_type for u in self.agents.values()))
            if hasattr(self.sim, "features"):
                self.max_reward = float(self.sim.features.max_reward)
        return self.get_obs(), self.get_state()

    def step(self, actions: Sequence[int] | np.ndarray | torch.Tensor) -> tuple[float, bool, dict]:
        """Advance the battle by one env step (8 game loops) with one action per agent.

        Args:
            actions: ``N`` action ids, agent ``i``'s at index ``i``: a list, NumPy array or torch tensor
                of shape ``(N,)`` or ``(N, 1)`` (pymarl-family runners pass a column), of any integer
                dtype or a float dtype holding whole numbers (``action_ids``). Each must be available
                (``get_avail_agent_actions(i)``).

        Returns:
            ``(reward, terminated, info)`` with SMAC's meaning (module docstring).

        Raises:
            RuntimeError: ``step`` before ``reset`` or after the episode terminated.
            ValueError: wrong number or shape of actions, a non-integer (``1.5``, a bool), an action outside
                ``[0, n_actions)``, or an unavailable action.
        """
        if self._obs is None or self._terminated:
            raise RuntimeError("step() called before reset() or after the episode terminated; call reset()")
        acts = action_ids(actions, self.n_agents, self.n_actions)
        if self.backend == "sim":
            prev = self._build_units()
        out = self.sim.step(torch.as_tensor(acts, device=self.sim.device).unsqueeze(0))
        self._keep_features(out["final_obs"], out["final_state"], out["final_avail_actions"])
        self._episode_steps += 1
        self._total_steps += 1
        truncated = bool(out["truncated"][0])
        self.timed_out = truncated
        won = bool(out["battle_won"][0])
        self._terminated = bool(out["terminated"][0]) or truncated
        info: dict[str, Any] = {
            "battle_won": won,
            "dead_allies": int(out["dead_allies"][0]),
            "dead_enemies": int(out["dead_enemies"][0]),
        }
        if truncated and self.continuing_episode:
            info["episode_limit"] = True
        if self.lenient_actions:
            info["invalid_actions"] = as_numpy(out["invalid_actions"][0], bool)
            if self.backend == "sim":  # the action the simulator carried out: stop (alive) or no-op (dead)
                alive = np.array([u.health > 0 for u in prev[0].values()], dtype=bool)
                acts = np.where(info["invalid_actions"], np.where(alive, 1, 0), acts)
        self.last_action = np.eye(self.n_actions)[acts]
        if self.backend == "sim":
            self.previous_ally_units, self.previous_enemy_units = prev
            self._refresh_units()
            if not self.reward_sparse:
                self.death_tracker_ally = np.array([float(u.health == 0) for u in self.agents.values()])
                self.death_tracker_enemy = np.array([float(u.health == 0) for u in self.enemies.values()])
        self.reward = float(out["reward"][0])
        if self._terminated:
            self._episode_count += 1
            self.battles_game += 1
            if won:
                self.battles_won += 1
                self.win_counted = True
            elif truncated:
                self.timeouts += 1
            elif self.backend == "sim" and self._lost():
                self.defeat_counted = True
        return self.reward, self._terminated, info

    def _lost(self) -> bool:
        n_a = sum(u.health > 0 for u in self.agents.values())
        n_e = sum(u.health > 0 for u in self.enemies.values())
        return (n_a == 0 and n_e > 0) or self.only_medivac_left(ally=True)

    # ------------------------------------------------------------------ observations (StoredFeatures)
    def get_env_info(self) -> dict:
        """SMAC's ``state_shape``, ``obs_shape``, ``n_actions``, ``n_agents``, ``episode_limit``, plus the
        simulator's layout keys (``n_enemies``, ``obs_layout``, ``state_layout``, ``agent_unit_types``, ...)."""
        info = dict(self.sim.get_env_info())
        info.update(
            state_shape=self.get_state_size(),
            obs_shape=self.get_obs_size(),
            n_actions=self.get_total_actions(),
            n_agents=self.n_agents,
            episode_limit=self.episode_limit,
        )
        return info

    # ------------------------------------------------------------------ misc
    def seed(self, seed: int | None = None) -> int | None:
        """SMAC's ``seed()`` returns the env's seed; with an argument (EPyMARL's ``SMACWrapper`` passes one)
        it also sets the seed of the next ``reset``, which restarts the random stream from it."""
        if seed is not None:
            self._check_seed(seed)
            self._seed = seed
            self._episode_count = 0
            self._seed_pending = True
        return self._seed

    def _check_seed(self, seed) -> None:
        """The error ``reset`` would give for ``seed``, raised now (TypeError / ValueError naming it)."""
        if self.backend == "sim":
            from sc2_envs.sim.rng import env_keys

            env_keys(seed, self.sim.num_envs)
        else:
            from sc2_envs.backends.smac_sc2 import game_seed

            game_seed(seed, "an int, a numpy.random.SeedSequence, a list of one of these, or None")

    def render(self, mode: str = "human") -> np.ndarray | None:
        """Draw the battle top-down (``sc2_envs.render.render_frame``), as SMAC's ``render(mode)``.

        Args:
            mode: ``"human"`` (SMAC's default): show the frame in a pygame window and return ``None``;
                ``"rgb_array"``: return the frame ``(H, W, 3)`` uint8. SMAC requires one mode per env;
                here both may be mixed.

        Raises:
            ValueError: another ``mode``, or a backend without render data (``backend="sc2"``).
            RuntimeError: before the first ``reset()`` (there is no battle to draw, as for ``get_state``);
                ``"human"`` without a display (no ``DISPLAY`` / ``WAYLAND_DISPLAY`` on Linux,
                or SDL's ``dummy`` video driver); the message says why and what to use instead.
            ImportError: ``"human"`` without pygame (``pip install pygame``).
        """
        if not hasattr(self.sim, "render_data"):
            raise ValueError(f"backend {self.backend!r} has no render_data(); render with backend='sim'")
        if self._obs is None:
            raise RuntimeError("render() called before reset(); call reset() first")
        title = f"{self.map_name}  step {self._episode_steps}/{self.episode_limit}"
        frame, self.renderer = render_battle(self.sim, mode, title, self.renderer)
        return frame

    def _replay_static(self) -> dict:
        t = self.sim.table
        return {
            "map_name": self.map_name,
            "names": list(t.names),
            "is_ally": t.is_ally.cpu().numpy(),
            "radius": t.radius.cpu().numpy(),
            "max_health": t.max_health.cpu().numpy(),
            "max_shield": t.max_shield.cpu().numpy(),
            "pathing": self.sim.pathing.cpu().numpy(),
        }

    def save_replay(self) -> Path:
        """Save a replay of every env step since construction (at most ``MAX_REPLAY_STEPS``) and say where.

        SMAC saves the game's ``.SC2Replay`` (all episodes since launch); the simulator writes its own
        format instead: ``<replay_dir>/<replay_prefix or map_name>_<UTC time>.npz`` (``replay_dir``
        defaults to ``./replays``), which ``python -m sc2_envs.render FILE --out battle.gif`` (or
        ``sc2_envs.render.replay_to_video``) plays back to a GIF or MP4. The path is logged (as SMAC
        does), printed and returned.

        Returns:
            The replay file's path.

        Raises:
            RuntimeError: nothing recorded yet (no ``reset``).
            ValueError: ``replay_dir`` (or ``./replays``) is a file, lies inside one, or is not writable.
        """
        if self.backend != "sim":
            return self.sim._env.save_replay()
        if not self._replay:
            raise RuntimeError("save_replay(): nothing recorded yet; call reset() and step() first")
        from sc2_envs.render import write_replay

        folder = Path(self.replay_dir) if self.replay_dir else Path.cwd() / "replays"
        check_out_dir(folder, "replay_dir")  # a file in the way: its name, not a FileExistsError from mkdir
        stamp = datetime.now(UTC).strftime("%Y-%m-%d-%H-%M-%S")
        base = folder / f"{self.replay_prefix or self.map_name}_{stamp}"
        path, k = base.with_name(base.name + ".npz"), 1
        while path.exists():
            path, k = base.with_name(f"{base.name}_{k}.npz"), k + 1
        path = write_replay(path, self._replay_static(), self._replay).resolve()
        note = f" (the oldest {self._replay_dropped} steps were dropped)" if self._replay_dropped else ""
        _log.info("Replay saved at: %s", path)
        print(
            f"Replay saved at: {path}{note}; play it back with: python -m sc2_envs.render {path} --out replay.gif",
            file=sys.stderr,
        )
        return path

    def close(self) -> None:
        """Close the render window and release the backend (closes StarCraft II for ``backend="sc2"``);
        safe to call twice."""
        if self.renderer is not None:
            self.renderer.close()
            self.renderer = None
        close = getattr(self.sim, "close", None)
        if close is not None:
            close()

    def full_restart(self) -> None:
        """SMAC restarts the game after a connection error; the simulator only needs a new episode."""
        self.reset()


def actions_as_array(actions, n_agents: int) -> np.ndarray:
    """``actions`` (list, NumPy array or torch tensor) as a NumPy array; shape and dtype are left to check.

    Raises:
        ValueError: a ragged list (rows of different lengths), naming the expected shape; a list holding a
            bool among numbers (NumPy would read ``True`` as the action 1).
    """
    if isinstance(actions, torch.Tensor):
        return actions.detach().cpu().numpy()
    if not isinstance(actions, np.ndarray) and contains_bool(actions):
        raise ValueError(f"actions must be integers, got {actions!r}, which holds a bool")
    try:
        return np.asarray(actions)
    except ValueError:  # numpy: "inhomogeneous shape"
        raise ValueError(
            f"expected {n_agents} actions (one per agent), shaped ({n_agents},) or ({n_agents}, 1); "
            f"got a ragged sequence {actions!r}"
        ) from None


def action_ids(actions, n_agents: int, n_actions: int) -> np.ndarray:
    """``actions`` for ``step`` as ``(n_agents,)`` int64, checked.

    SMAC's own ``step`` converts with ``[int(a) for a in actions]``, so a float array of whole numbers
    (a buffer of actions stored as floats, as MAPPO / HARL-style buffers do) is taken as those ints;
    a fractional value, which ``int`` would truncate, is refused.

    Args:
        actions: a list, NumPy array or torch tensor, ``(n_agents,)`` or ``(n_agents, 1)``, of an integer
            dtype or a float dtype holding whole numbers.
        n_agents: number of agents.
        n_actions: actions per agent.

    Raises:
        ValueError: a ragged sequence, another shape, another dtype (bool, str, ...), a fractional value,
            or a value outside ``[0, n_actions)`` (named as given, never as its int64-wrapped value).
    """
    acts = actions_as_array(actions, n_agents)
    if acts.shape == (n_agents, 1):
        acts = acts[:, 0]
    if acts.shape != (n_agents,):
        raise ValueError(
            f"expected {n_agents} actions (one per agent), shaped ({n_agents},) or ({n_agents}, 1); got shape {acts.shape}"
        )
    if not np.issubdtype(acts.dtype, np.integer) and (
        not np.issubdtype(acts.dtype, np.floating) or not np.all(acts == np.round(acts))
    ):
        raise ValueError(f"actions must be integers (or floats holding whole numbers), got {actions!r}")
    # a value the int64 cast would wrap (inf, 1e20, 2**64 - 1 as uint64) is named as given, not as its wrapped value
    outside = np.flatnonzero((acts < 0) | (acts >= n_actions))
    if outside.size:
        i = int(outside[0])
        raise ValueError(f"agent {i}: action {acts.tolist()[i]!r} is out of range; expected an int in [0, {n_actions})")
    return acts.astype(np.int64)


def pop_smac_keywords(options: dict, no_effect: Sequence[str], hint: str = "") -> None:
    """Check and remove SMAC's game and process keywords from ``options`` (for the simulator backend).

    Game keywords must have SMAC's default value (``ValueError`` otherwise, ``hint`` appended); a
    process keyword in ``no_effect`` with a value other than SMAC's default gives a ``UserWarning``
    saying it has no effect on the embedded simulator. Types are checked as ``_check_keyword_types``.
    """
    _check_keyword_types(options)
    for key, supported in SMAC_GAME_OPTIONS.items():
        value = options.pop(key, supported)
        if value != supported:
            raise ValueError(
                f"{key}={value!r} is not implemented by the simulator (it models SMAC's {key}={supported!r}){hint}"
            )
    for key, default in SMAC_PROCESS_OPTIONS.items():
        value = options.pop(key, default)
        if key in no_effect and value != default:
            warnings.warn(
                f"{key}={value!r} has no effect on the embedded simulator (SMAC's default is {default!r})",
                UserWarning,
                stacklevel=3,
            )


def _display_problem() -> str | None:
    """Why no window can open here, or ``None`` if a display looks available."""
    if os.environ.get("SDL_VIDEODRIVER", "").lower() in ("dummy", "offscreen"):
        return f"SDL_VIDEODRIVER={os.environ['SDL_VIDEODRIVER']} draws off-screen"
    from sc2_envs.render import no_display_reason

    return no_display_reason()


class _PygameWindow:
    """A pygame window showing ``(H, W, 3)`` uint8 frames (``StarCraft2Env.render(mode="human")``)."""

    def __init__(self, title: str, width: int, height: int):
        problem = _display_problem()
        if problem:
            raise RuntimeError(
                f"render(mode='human') cannot open a window: {problem}. Use render(mode='rgb_array') "
                "for frames, or save_replay() and play the file back with python -m sc2_envs.render"
            )
        try:
            import pygame
        except ImportError as e:
            raise ImportError("render(mode='human') needs pygame: pip install pygame") from e
        self._pg = pygame
        pygame.display.init()
        try:
            self._screen = pygame.display.set_mode((width, height))
        except pygame.error as e:
            pygame.display.quit()
            raise RuntimeError(f"render(mode='human') cannot open a window: pygame says {e}") from e
        pygame.display.set_caption(title)

    def show(self, frame: np.ndarray) -> None:
        pg = self._pg
        pg.event.pump()  # keeps the window responsive
        surface = pg.surfarray.make_surface(np.ascontiguousarray(frame.transpose(1, 0, 2)))
        self._screen.blit(surface, (0, 0))
        pg.display.flip()

    def close(self) -> None:
        self._pg.display.quit()


def render_battle(sim, mode: str, title: str, window: _PygameWindow | None) -> tuple[np.ndarray | None, _PygameWindow | None]:
    """Draw env 0 of ``sim`` top-down (``sc2_envs.render.render_frame``) for a SMAC-style ``render(mode)``.

    Args:
        sim: a simulator with ``render_data(env_index)``.
        mode: ``"human"`` (show the frame in ``window``, opened on first use) or ``"rgb_array"``.
        title: caption drawn on the frame.
        window: the caller's pygame window, or ``None``.

    Returns:
        ``(frame (H, W, 3) uint8 for "rgb_array" else None, the window to keep)``.

    Raises:
        ValueError: another ``mode``.
        RuntimeError / ImportError: ``"human"`` without a display or without pygame (see ``_PygameWindow``).
    """
    if mode not in ("human", "rgb_array"):
        raise ValueError(f"render(mode={mode!r}); expected 'human' or 'rgb_array'")
    from sc2_envs.render import render_frame

    frame = render_frame(sim.render_data(0), title=title)
    if mode == "rgb_array":
        return frame, window
    if window is None:
        window = _PygameWindow(f"sc2_envs {title.split()[0]}", frame.shape[1], frame.shape[0])
    window.show(frame)
    return None, window
