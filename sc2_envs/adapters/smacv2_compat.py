"""SMACv2's ``StarCraftCapabilityEnvWrapper`` interface on the embedded simulator.

Code written against SMACv2 (oxwhirl/smacv2 ``smacv2/env/starcraft2/wrapper.py``, used by its
``examples`` and by EPyMARL / pymarl2 forks) runs after swapping the import::

    from sc2_envs.adapters.smacv2_compat import StarCraftCapabilityEnvWrapper
    env = StarCraftCapabilityEnvWrapper(
        map_name="10gen_protoss",
        capability_config={
            "n_units": 5, "n_enemies": 5,
            "team_gen": {"dist_type": "weighted_teams", "unit_types": ["stalker", "zealot", "colossus"],
                         "weights": [0.45, 0.45, 0.1], "observe": True},
            "start_positions": {"dist_type": "surrounded_and_reflect", "p": 0.5, "map_x": 32, "map_y": 32},
        },
        use_unit_ranges=True, min_attack_range=2, obs_own_pos=True, conic_fov=False, seed=0,
    )
    obs, state = env.reset()
    reward, terminated, info = env.step(actions)

Semantics are SMACv2's (``StarCraft2Env`` of smacv2 with the wrapper): each ``reset`` draws a team
and start positions (here from the env's seeded stream, so a seed reproduces every episode);
``terminated`` covers battle end and the time limit; ``get_env_info()`` has SMACv2's keys, with
``agent_features`` = ally state names + the capability names (``type_0..2``);
``get_capabilities()`` / ``get_capabilities_agent(i)`` return the unit-type one-hots. The keyword
``capability_config`` accepts what the simulator implements and raises ``ValueError`` naming
anything else: ``team_gen`` ``weighted_teams`` with the race's unit types and SMACv2's weights
(``sc2_envs.smacv2.RACE_SPECS``), ``start_positions`` ``surrounded_and_reflect`` (any ``p``),
``surrounded`` or ``reflect_position`` on the 32x32 map; no ``attack`` / ``health`` / ``enemy_mask``
(SMACv2's optional stochastic capabilities). ``reset(episode_config)`` accepts SMACv2's explicit
``team_gen`` ``ally_team`` / ``enemy_team`` and ``ally_start_positions`` / ``enemy_start_positions``
items for that one episode (agents in the given order).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from sc2_envs import smacv2 as v2
from sc2_envs.adapters.smac_compat import (
    SMAC_FEATURE_DEFAULTS,
    SMAC_PROCESS_OPTIONS,
    action_ids,
    pop_smac_keywords,
    render_battle,
)
from sc2_envs.adapters.stored_features import StoredFeatures
from sc2_envs.sim.env import make_batched
from sc2_envs.wrappers._common import as_numpy

__all__ = ["SMACV2_MAPS", "StarCraftCapabilityEnvWrapper", "scenario_from_capability_config"]

SMACV2_MAPS = {"10gen_protoss": "protoss", "10gen_terran": "terran", "10gen_zerg": "zerg"}
"""SMACv2's procedural maps (``smacv2/env/starcraft2/maps/smac_maps.py``) and their race."""

_P_ALWAYS_SURROUNDED = -1.0  # u > -1 always
_P_ALWAYS_REFLECT = 1.0  # u in [0, 1) is always <= 1


_TEAM_GEN_KEYS = frozenset(
    {"dist_type", "unit_types", "weights", "exception_unit_types", "observe", "n_units", "n_enemies", "env_key"}
)
_START_POSITION_KEYS = frozenset({"dist_type", "p", "map_x", "map_y", "n_units", "n_enemies", "env_key"})
"""The keys SMACv2's ``weighted_teams`` and start-position distributions read
(``smacv2/env/starcraft2/distributions.py``; its wrapper copies ``n_units``, ``n_enemies`` and
``env_key`` in)."""

_EPISODE_CONFIG_KEYS = frozenset({"team_gen", "ally_start_positions", "enemy_start_positions"})


def _check_section(name: str, section: Any, allowed: frozenset, n_units: int, n_enemies: int) -> None:
    """A ``capability_config`` section must be a dict of known keys whose team sizes, if given, are
    the top-level ones: an unknown key (a typo) or a second team size is refused, not ignored.

    Raises:
        TypeError: ``section`` is not a dict.
        ValueError: an unknown key, or ``n_units`` / ``n_enemies`` other than the top-level values.
    """
    if not isinstance(section, dict):
        raise TypeError(f"capability_config[{name!r}] must be a dict, got {section!r}")
    unknown = sorted(set(section) - allowed)
    if unknown:
        raise ValueError(f"capability_config[{name!r}] keys {unknown} are unknown; expected some of {sorted(allowed)}")
    for key, top in (("n_units", n_units), ("n_enemies", n_enemies)):
        if key in section and section[key] != top:
            raise ValueError(
                f"capability_config[{name!r}][{key!r}] = {section[key]!r} but capability_config[{key!r}] = {top}; "
                "expected the same team size (or leave it out)"
            )


def _check_bool(name: str, value: Any) -> bool:
    """``value`` if it is a bool (NumPy's included); a TypeError naming it otherwise, since ``bool("no")`` is True."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {value!r}")
    return bool(value)


def scenario_from_capability_config(map_name: str, capability_config: dict) -> v2.ScenarioSpec:
    """The ``ScenarioSpec`` a SMACv2 ``capability_config`` describes, or a ``ValueError`` naming what the
    simulator does not implement.

    Raises:
        TypeError: ``capability_config`` or a section of it is not a dict; ``team_gen`` ``observe`` is
            not a bool (NumPy's included).
        ValueError: not a ``10gen_*`` map; missing or non-positive ``n_units`` / ``n_enemies``; a
            ``team_gen`` other than ``weighted_teams`` with the race's types and weights (one weight
            per unit type) and exception types, or with ``observe=False``; a
            ``start_positions`` other than the three position distributions on a 32x32 map; an
            unknown capability key (``attack``, ``health``, ``enemy_mask``, ...).
    """
    if map_name not in SMACV2_MAPS:
        raise ValueError(f"map_name={map_name!r}; SMACv2's procedural maps are {sorted(SMACV2_MAPS)}")
    race = SMACV2_MAPS[map_name]
    rs = v2.RACE_SPECS[race]
    if not isinstance(capability_config, dict):
        raise TypeError(f"capability_config must be a dict, got {capability_config!r}")
    cfg = dict(capability_config)
    n, e = cfg.pop("n_units", None), cfg.pop("n_enemies", None)
    for name, v in (("n_units", n), ("n_enemies", e)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
            raise ValueError(f"capability_config[{name!r}] must be a positive int, got {v!r}")
    if n < 2:
        raise ValueError(f"capability_config['n_units'] must be >= 2 (SMAC's ally block), got {n}")
    team = cfg.pop("team_gen", None)
    if team is None:
        raise ValueError("capability_config needs 'team_gen' (the simulator draws SMACv2's weighted_teams)")
    _check_section("team_gen", team, _TEAM_GEN_KEYS, n, e)
    if team.get("dist_type") != "weighted_teams":
        raise ValueError(f"team_gen dist_type {team.get('dist_type')!r}: the simulator implements 'weighted_teams'")
    types, weights = team.get("unit_types", []), team.get("weights", [])
    config = (
        f"the simulator implements SMACv2's {race} config, unit_types {list(rs.unit_types)} with weights {list(rs.weights)}"
    )
    if isinstance(types, str) or not isinstance(types, (Sequence, np.ndarray)):
        raise ValueError(f"team_gen unit_types {types!r}: expected a list of unit type names; {config}")
    if list(types) != list(rs.unit_types):  # names, but not this race's config (another race's, or reordered)
        raise ValueError(f"team_gen unit_types {list(types)!r}: expected {list(rs.unit_types)} in that order; {config}")
    try:
        w = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError):  # None, names, ragged lists: not a vector of numbers
        w = None
    if w is None or w.shape != (len(types),):
        raise ValueError(f"team_gen weights {weights!r}: expected {len(types)} numbers, one per unit type; {config}")
    if not np.allclose(w, rs.weights):
        raise ValueError(f"team_gen weights {weights!r}: {config}")
    exc = team.get("exception_unit_types", [])
    try:
        same = not isinstance(exc, str) and sorted(exc) == sorted(rs.exception_unit_types)
    except TypeError:  # None, a number, or entries that do not compare with names
        same = False
    if not same:
        raise ValueError(
            f"team_gen exception_unit_types {exc!r}: expected a list of unit type names; the simulator implements "
            f"SMACv2's {list(rs.exception_unit_types)}"
        )
    if not _check_bool("team_gen observe", team.get("observe", True)):
        raise ValueError("team_gen observe=False (zero-padded unit types) is not implemented; use observe=True")
    pos = cfg.pop("start_positions", None)
    if pos is None:
        raise ValueError("capability_config needs 'start_positions' (surrounded_and_reflect, surrounded or reflect_position)")
    _check_section("start_positions", pos, _START_POSITION_KEYS, n, e)
    kind = pos.get("dist_type")
    if (pos.get("map_x", 32), pos.get("map_y", 32)) != (32, 32):
        raise ValueError(f"start_positions map_x/map_y {pos.get('map_x')}/{pos.get('map_y')}: the 32x32_flat map is 32 x 32")
    if kind == "surrounded_and_reflect":
        p = pos.get("p")
        # NumPy scalars (np.float32 from a config loaded with NumPy) are numbers too; bools are not
        if isinstance(p, (bool, np.bool_)) or not isinstance(p, numbers.Real) or not 0.0 <= p <= 1.0:
            raise ValueError(f"start_positions p must be a number in [0, 1], got {p!r}")
    elif kind == "surrounded":
        p = _P_ALWAYS_SURROUNDED
    elif kind == "reflect_position":
        p = _P_ALWAYS_REFLECT
    else:
        raise ValueError(
            f"start_positions dist_type {kind!r}: the simulator implements 'surrounded_and_reflect', 'surrounded', "
            "'reflect_position'"
        )
    if cfg:
        raise ValueError(
            f"capability_config keys {sorted(cfg)} are not implemented by the simulator "
            "(it implements n_units, n_enemies, team_gen, start_positions)"
        )
    name = f"{race}_{int(n)}_vs_{int(e)}"
    base = v2.SCENARIOS.get(name) or v2.ScenarioSpec(name, race, int(n), int(e))
    return replace(base, p_reflect=float(p))


def _episode_items(episode_config: Any) -> tuple[dict, Any, Any]:
    """``(team_gen, ally positions or None, enemy positions or None)`` of a ``reset(episode_config)``.

    Raises:
        TypeError: ``episode_config`` or an item of it is not a dict.
        ValueError: an unknown key at the top, in ``team_gen`` or in a position item, or no ``team_gen``
            with both teams; the message names the key path.
    """
    if not isinstance(episode_config, dict):
        raise TypeError(f"episode_config must be a dict, got {episode_config!r}")
    unknown = sorted(set(episode_config) - _EPISODE_CONFIG_KEYS)
    if unknown:
        raise ValueError(f"episode_config keys {unknown} are unknown; expected some of {sorted(_EPISODE_CONFIG_KEYS)}")
    team = episode_config.get("team_gen")
    if not isinstance(team, dict) or not {"ally_team", "enemy_team"} <= set(team):
        raise ValueError(
            f"episode_config['team_gen'] = {team!r}: expected a dict with 'ally_team' and 'enemy_team' (unit type names)"
        )
    if sorted(set(team) - {"ally_team", "enemy_team", "id"}):
        raise ValueError(
            f"episode_config['team_gen'] keys {sorted(set(team) - {'ally_team', 'enemy_team', 'id'})} are unknown"
        )
    items = []
    for key in ("ally_start_positions", "enemy_start_positions"):
        item = episode_config.get(key)
        if item is None:
            items.append(None)
            continue
        if not isinstance(item, dict) or "item" not in item or sorted(set(item) - {"item", "id"}):
            raise ValueError(f"episode_config[{key!r}] = {item!r}: expected {{'item': [[x, y], ...]}}")
        items.append(item["item"])
    return team, items[0], items[1]


class StarCraftCapabilityEnvWrapper(StoredFeatures):
    """SMACv2's ``StarCraftCapabilityEnvWrapper`` on the simulator (see the module docstring).

    Args:
        map_name: ``"10gen_protoss"``, ``"10gen_terran"`` or ``"10gen_zerg"``.
        capability_config: SMACv2's dict (``n_units``, ``n_enemies``, ``team_gen``, ``start_positions``).
        seed: seed of the first episode; later episodes continue the env's stream.
        continuing_episode: report ``info["episode_limit"] = True`` at the time limit (SMAC's flag).
        conic_fov, use_unit_ranges, min_attack_range, obs_own_pos: SMACv2's options.
        num_fov_actions: must be 12 (SMACv2's value). prob_obs_enemy must be 1.0, action_mask True,
            fully_observable False (the values of the example configs).
        device: torch device of the simulator.
        lenient_actions: replace unavailable actions by stop / no-op instead of raising.
        **kwargs: SMAC's observation / reward keywords; SMAC's game keywords at their defaults and the
            StarCraft II process keywords (without effect: a value other than SMAC's default gives a
            ``UserWarning``); ``obs_starcraft`` must be True (SMACv2's default; False is refused).

    Raises:
        ValueError: anything the simulator does not implement, named.
    """

    def __init__(
        self,
        map_name: str = "10gen_protoss",
        capability_config: dict | None = None,
        seed: int | None = None,
        continuing_episode: bool = False,
        *,
        conic_fov: bool = False,
        use_unit_ranges: bool = False,
        min_attack_range: float = 2,
        obs_own_pos: bool = False,
        num_fov_actions: int = 12,
        prob_obs_enemy: float = 1.0,
        action_mask: bool = True,
        fully_observable: bool = False,
        device: str | torch.device = "cpu",
        lenient_actions: bool = False,
        **kwargs,
    ):
        if capability_config is None:
            raise ValueError("StarCraftCapabilityEnvWrapper needs capability_config (SMACv2's wrapper reads it)")
        self.scenario = scenario_from_capability_config(map_name, capability_config)
        conic_fov, use_unit_ranges = _check_bool("conic_fov", conic_fov), _check_bool("use_unit_ranges", use_unit_ranges)
        obs_own_pos, continuing_episode = (
            _check_bool("obs_own_pos", obs_own_pos),
            _check_bool("continuing_episode", continuing_episode),
        )
        if isinstance(num_fov_actions, bool) or not isinstance(num_fov_actions, (int, np.integer)):
            raise TypeError(f"num_fov_actions must be an int, got {num_fov_actions!r}")
        if isinstance(prob_obs_enemy, bool):
            raise TypeError(f"prob_obs_enemy must be a probability (a float), got {prob_obs_enemy!r}")
        if num_fov_actions != v2.N_FOV_ACTIONS:
            raise ValueError(f"num_fov_actions={num_fov_actions!r}: the simulator implements SMACv2's {v2.N_FOV_ACTIONS}")
        if prob_obs_enemy != 1.0 or action_mask is not True or fully_observable:
            raise ValueError(
                f"prob_obs_enemy={prob_obs_enemy!r}, action_mask={action_mask!r}, fully_observable={fully_observable!r}: "
                "the simulator implements SMACv2's example-config values 1.0, True, False"
            )
        options = dict(kwargs)
        pop_smac_keywords(options, tuple(SMAC_PROCESS_OPTIONS))  # no save_replay here: all of them without effect
        obs_starcraft = _check_bool("obs_starcraft", options.pop("obs_starcraft", True))
        if not obs_starcraft:
            raise ValueError(
                "obs_starcraft=False is not supported: the simulator's observations always hold SMACv2's "
                "StarCraft features (obs_starcraft=True, SMACv2's default)"
            )
        self.map_name = map_name
        self.capability_config = capability_config
        self.continuing_episode = bool(continuing_episode)
        self._seed = seed
        self.lenient_actions = lenient_actions
        self.sim = make_batched(
            self.scenario,
            num_envs=1,
            device=device,
            seed=seed,
            autoreset=False,
            lenient_actions=lenient_actions,
            conic_fov=bool(conic_fov),
            use_unit_ranges=bool(use_unit_ranges),
            min_attack_range=min_attack_range,
            obs_own_pos=bool(obs_own_pos),
            **options,
        )
        for key, default in SMAC_FEATURE_DEFAULTS.items():
            setattr(self, key, options.get(key, default))
        self.conic_fov, self.use_unit_ranges, self.obs_own_pos = bool(conic_fov), bool(use_unit_ranges), bool(obs_own_pos)
        self.min_attack_range = min_attack_range
        self.n_agents, self.n_enemies = self.sim.n_agents, self.sim.n_enemies
        self.n_actions = self.sim.n_actions
        self.n_actions_no_attack = self.sim.features.n_actions_no_attack
        self.n_fov_actions = self.sim.features.n_fov
        self.episode_limit = self.sim.episode_limit
        self.unit_type_bits = self.sim.features.utb
        self.map_type = self.scenario.map_type
        info = self.sim.features.env_info()
        self.capability_attr_names = [f"type_{k}" for k in range(self.unit_type_bits)]
        self.ally_state_attr_names = [n for n in info["agent_features"] if not n.startswith("type_")]
        self.enemy_state_attr_names = list(info["enemy_features"])
        self._episode_count = 0
        self._seed_pending = True  # the next reset starts the stream from self._seed; later ones continue it
        self._episode_steps = 0
        self._window = None  # render()'s pygame window, opened on first use
        self._total_steps = 0
        self.battles_won = self.battles_game = self.timeouts = self.force_restarts = 0
        self._obs = self._state = self._avail = None
        self._terminated = False
        self.last_action = np.zeros((self.n_agents, self.n_actions))

    # ------------------------------------------------------------------ episode
    def reset(self, episode_config: dict | None = None) -> tuple[list[np.ndarray], np.ndarray]:
        """Start an episode with a freshly drawn team and start positions (``(obs, state)``).

        Args:
            episode_config: SMACv2's per-episode items, to pin this episode: ``{"team_gen":
                {"ally_team": [...], "enemy_team": [...]}, "ally_start_positions": {"item": [N, 2]},
                "enemy_start_positions": {"item": [E, 2]}}`` (positions optional). ``None``: draw.

        Raises:
            TypeError: ``episode_config`` or one of its items is not a dict.
            ValueError: an unknown key (a typo would otherwise draw the item at random), a missing
                ``team_gen`` team, or a team or position the scenario cannot hold (named).
        """
        if episode_config:
            team, ap, ep = _episode_items(episode_config)
            self.sim.pin_scenario(team["ally_team"], team["enemy_team"], ap, ep)
        try:
            # _episode_count counts only terminated episodes: an abandoned first episode must not replay the seed
            out = self.sim.reset(seed=self._seed if self._seed_pending else None)
            self._seed_pending = False
        finally:
            if episode_config:
                self.sim.unpin_scenario()
        self._store(out)
        self._episode_steps = 0
        self._terminated = False
        self.last_action = np.zeros((self.n_agents, self.n_actions))
        return self.get_obs(), self.get_state()

    def step(self, actions: Sequence[int] | np.ndarray | torch.Tensor) -> tuple[float, bool, dict]:
        """One env step (8 game loops): ``(reward, terminated, info)`` with SMACv2's meaning.

        Args:
            actions: ``N`` action ids as ``StarCraft2Env.step`` takes them: a list, NumPy array or torch
                tensor, ``(N,)`` or ``(N, 1)``, of an integer dtype or a float dtype holding whole numbers
                (SMACv2, like SMAC, converts with ``int(a)``).

        Raises:
            RuntimeError: before ``reset`` or after the episode terminated.
            ValueError: wrong number or shape of actions, non-integers (``1.5``, bools), an action outside
                ``[0, n_actions)``, or an unavailable action.
        """
        if self._obs is None or self._terminated:
            raise RuntimeError("step() called before reset() or after the episode terminated; call reset()")
        acts = action_ids(actions, self.n_agents, self.n_actions)
        dead = self._avail[:, 0] == 1  # SMAC: no-op is available exactly to dead units
        out = self.sim.step(torch.as_tensor(acts, device=self.sim.device).unsqueeze(0))
        self._store(out, final=True)
        if self.lenient_actions:  # the action the simulator carried out: stop (alive) or no-op (dead)
            acts = np.where(as_numpy(out["invalid_actions"][0], bool), np.where(dead, 0, 1), acts)
        self.last_action = np.eye(self.n_actions)[acts]
        self._episode_steps += 1
        self._total_steps += 1
        truncated = bool(out["truncated"][0])
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
        if self._terminated:
            self._episode_count += 1
            self.battles_game += 1
            self.battles_won += int(won)
            self.timeouts += int(truncated)
        return float(out["reward"][0]), self._terminated, info

    def _store(self, out: dict, final: bool = False) -> None:
        p = "final_" if final else ""
        self._keep_features(out[p + "obs"], out[p + "state"], out[p + "avail_actions"])
        self._kind = self.sim.st.unit_kind[0].tolist()

    # ------------------------------------------------------------------ MultiAgentEnv API (and StoredFeatures)
    def get_capabilities_agent(self, agent_id: int) -> np.ndarray:
        """SMACv2 ``get_capabilities_agent``: the agent's unit-type one-hot, ``(3,)`` float32."""
        self._require_reset()
        cap = np.zeros(self.unit_type_bits, np.float32)
        cap[self._kind[self._agent_index(agent_id)]] = 1.0
        return cap

    def get_capabilities(self) -> np.ndarray:
        """SMACv2 ``get_capabilities``: every agent's one-hot, concatenated, ``(N * 3,)`` float32."""
        return np.concatenate([self.get_capabilities_agent(i) for i in range(self.n_agents)])

    def get_unit_types(self) -> tuple[list[str], list[str]]:
        """The current episode's (agent, enemy) unit type names (ours; SMACv2 returns SC2 type ids)."""
        return self.sim.unit_types(0)

    def get_obs_feature_names(self) -> list[str]:
        lay = self.sim.features.env_info()["obs_layout"]
        names = [f"move_{d}" for d in ("north", "south", "east", "west")][: lay["move_feats"]]
        names += [f"move_extra_{k}" for k in range(lay["move_feats"] - len(names))]
        names += [f"enemy_{j}_{n}" for j in range(self.n_enemies) for n in lay["enemy_feature_names"]]
        names += [f"ally_{i}_{n}" for i in range(self.n_agents - 1) for n in lay["ally_feature_names"]]
        names += [f"own_{n}" for n in lay["own_feature_names"]]
        return names + (["timestep"] if lay["timestep_feats"] else [])

    def get_state_feature_names(self) -> list[str]:
        lay = self.sim.features.env_info()["state_layout"]
        names = [f"ally_{i}_{n}" for i in range(self.n_agents) for n in lay["ally_state_feature_names"]]
        names += [f"enemy_{j}_{n}" for j in range(self.n_enemies) for n in lay["enemy_state_feature_names"]]
        if lay["last_action_feats"]:
            names += [f"last_action_{i}_{a}" for i in range(self.n_agents) for a in range(self.n_actions)]
        return names + (["timestep"] if lay["timestep_feats"] else [])

    def get_env_info(self) -> dict:
        """SMACv2's ``get_env_info``: ``state_shape``, ``obs_shape``, ``n_actions``, ``n_agents``,
        ``episode_limit``, ``agent_features`` (ally state names + capability names),
        ``enemy_features``, plus the simulator's layout keys."""
        info = dict(self.sim.get_env_info())
        info.update(
            state_shape=self.get_state_size(),
            obs_shape=self.get_obs_size(),
            n_actions=self.get_total_actions(),
            n_agents=self.n_agents,
            episode_limit=self.episode_limit,
            agent_features=self.ally_state_attr_names + self.capability_attr_names,
            enemy_features=list(self.enemy_state_attr_names),
            cap_shape=self.unit_type_bits,
        )
        return info

    def get_stats(self) -> dict:
        return {
            "battles_won": self.battles_won,
            "battles_game": self.battles_game,
            "battles_draw": self.timeouts,
            "win_rate": self.battles_won / self.battles_game if self.battles_game else 0.0,
            "timeouts": self.timeouts,
            "restarts": self.force_restarts,
        }

    def seed(self) -> int | None:
        return self._seed

    def full_restart(self) -> None:
        """SMAC's full restart; the simulator has no game process, so this only resets."""
        self.reset()

    def render(self, mode: str = "human") -> np.ndarray | None:
        """Draw the current battle top-down, as SMAC's ``render(mode)`` (``"human"``: a pygame window,
        returns ``None``; ``"rgb_array"``: returns the frame ``(H, W, 3)`` uint8).

        Raises:
            ValueError: another ``mode``.
            RuntimeError: before the first ``reset()`` (there is no battle to draw).
            RuntimeError / ImportError: ``"human"`` without a display or without pygame.
        """
        if self._obs is None:
            raise RuntimeError("render() called before reset(); call reset() first")
        title = f"{self.map_name}  step {self._episode_steps}/{self.sim.spec.episode_limit}"
        frame, self._window = render_battle(self.sim, mode, title, self._window)
        return frame

    def save_replay(self) -> None:
        """Not available for SMACv2 scenarios: the simulator's ``.npz`` replay format stores one unit
        roster per file, and SMACv2 draws a new roster every episode. Record frames with ``render("rgb_array")``.

        Raises:
            NotImplementedError: always, with that alternative.
        """
        raise NotImplementedError("replays of SMACv2 scenarios are not implemented; use the PettingZoo env's render()")

    def close(self) -> None:
        """Close the render window, if one was opened; safe to call twice."""
        window, self._window = self._window, None
        if window is not None:
            window.close()
