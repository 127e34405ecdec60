"""The simulator's options: type and range checks, and the names the unknown-option error suggests from.

SMAC's options keep SMAC's keyword names and defaults (``FeatureConfig``, ``RewardConfig``); the checks
here raise a clear error naming the value and what was expected (``SMACSim`` calls them at construction).
"""

from __future__ import annotations

import math
from dataclasses import fields, replace

import numpy as np

from sc2_envs import smacv2 as v2
from sc2_envs.maps import MapSpec, get_map, list_maps
from sc2_envs.sim.rules.features import FeatureConfig, RewardConfig
from sc2_envs.smacv2 import ScenarioSpec
from sc2_envs.validation import did_you_mean

FEATURE_OPTIONS = {f.name for f in fields(FeatureConfig)}
REWARD_OPTIONS = {f.name for f in fields(RewardConfig)}


def is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def is_real(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def plain(v):
    """A bool / int / float option as the Python value (NumPy scalars compare and pickle as plain values)."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    return int(v) if isinstance(v, (int, np.integer)) else float(v)


WRAPPER_KEYWORDS = ("render_mode", "dead_agents", "agent_names", "info_action_mask", "backend")
"""Keywords of the PettingZoo / Gymnasium wrappers that reach no simulator (named in the unknown-option error, for typos)."""

REWARD_OPTION_RANGE = (1e-15, 1e15)
"""Magnitudes a nonzero numeric reward option may have. SMAC's scaled reward is ``r * reward_scale_rate /
max_reward`` with ``max_reward`` at least a unit's HP (~35), so two options at the upper bound stay
below ~3e28, far from float32's 3.4e38 (1e30 each overflowed to inf), and one at the lower bound is
not flushed to 0."""


def check_options(options: dict) -> None:
    """SMAC options must have the type of their default (bools stay bools, numbers numbers); numeric
    (reward) options must be 0 or within :data:`REWARD_OPTION_RANGE` in magnitude."""
    defaults = {f.name: f.default for f in fields(FeatureConfig) + fields(RewardConfig)}
    for name, value in options.items():
        want = defaults[name]
        if isinstance(want, bool):
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"option {name} must be a bool, got {value!r}")
        elif not is_real(value) or not math.isfinite(float(value)):
            raise TypeError(f"option {name} must be a finite number, got {value!r}")
        elif value != 0 and not REWARD_OPTION_RANGE[0] <= abs(float(value)) <= REWARD_OPTION_RANGE[1]:
            # the rewards are float32 sums and ratios of these with unit HP: beyond this they overflow to inf/NaN or vanish
            lo, hi = REWARD_OPTION_RANGE
            raise ValueError(
                f"option {name}={value!r}: expected 0 or a magnitude in [{lo:g}, {hi:g}], which the simulator's float32 "
                "reward arithmetic holds without overflow or underflow"
            )
    if "reward_scale_rate" in options and options["reward_scale_rate"] <= 0:
        raise ValueError(f"option reward_scale_rate must be > 0, got {options['reward_scale_rate']!r}")


def unsupported(name: str, value, what: str):
    raise ValueError(f"option {name}={value!r}: the simulator supports {what}")


def resolve_map(map_name) -> tuple[ScenarioSpec | None, MapSpec | ScenarioSpec]:
    """``(scenario, spec)`` of ``map_name``: a SMACv2 scenario (then ``spec`` is it too), a ``MapSpec``, or a
    SMAC v1 map name (``scenario`` None).

    Raises:
        ValueError: an unknown name (with the nearest names and the lists of maps and scenarios).
    """
    if v2.is_scenario(map_name):
        scenario = v2.get_scenario(map_name)
        return scenario, scenario
    if isinstance(map_name, MapSpec):
        return None, map_name
    if not isinstance(map_name, str) or map_name not in list_maps():
        hint = did_you_mean(map_name, [*list_maps(), *v2.list_scenarios()])
        raise ValueError(
            f"unknown map or scenario {map_name!r}{hint}; SMAC v1 maps: {', '.join(list_maps())}; "
            f"SMACv2 scenarios: {', '.join(v2.list_scenarios())} (or a MapSpec)"
        )
    return None, get_map(map_name)


def pop_scenario_options(options: dict, scenario: ScenarioSpec) -> tuple[dict[str, bool], ScenarioSpec]:
    """Take SMACv2's own options out of ``options`` (in place): ``(v2_opts, scenario)``, with ``v2_opts`` the
    bools ``conic_fov``, ``use_unit_ranges``, ``obs_own_pos`` and ``scenario`` with ``min_attack_range`` applied.

    Raises:
        TypeError / ValueError: an option of the wrong type or range; ``prob_obs_enemy`` other than 1.0 or
            ``action_mask`` other than True (SMACv2's defaults, the only values simulated).
    """
    v2_opts = {}
    for name, default in (("conic_fov", False), ("use_unit_ranges", True), ("obs_own_pos", True)):
        v = options.pop(name, default)
        if not isinstance(v, (bool, np.bool_)):
            raise TypeError(f"option {name} must be a bool, got {v!r}")
        v2_opts[name] = bool(v)
    mar = options.pop("min_attack_range", 2)
    if not is_real(mar) or not math.isfinite(float(mar)) or mar < 0:
        raise ValueError(f"option min_attack_range must be a finite number >= 0, got {mar!r}")
    if float(mar) != scenario.min_attack_range:
        scenario = replace(scenario, min_attack_range=float(mar))
    poe = options.pop("prob_obs_enemy", 1.0)
    if isinstance(poe, (bool, np.bool_)):  # True == 1.0 would pass the check below
        raise TypeError(f"option prob_obs_enemy must be a probability (a float), got {poe!r}")
    poe == 1.0 or unsupported("prob_obs_enemy", poe, "only 1.0 (SMACv2's default)")
    mask = options.pop("action_mask", True)
    (isinstance(mask, (bool, np.bool_)) and bool(mask)) or unsupported("action_mask", mask, "only True (SMACv2's default)")
    return v2_opts, scenario


def check_keywords(autoreset, lenient_actions, compile, loops_per_tick, spawn_jitter, num_envs) -> None:
    """Types and ranges of ``SMACSim``'s own keywords (see its docstring).

    Raises:
        TypeError / ValueError: naming the keyword, the value and what was expected.
    """
    for name, value in (("autoreset", autoreset), ("lenient_actions", lenient_actions), ("compile", compile)):
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be a bool, got {value!r}")
    if not is_int(loops_per_tick):
        raise TypeError(f"loops_per_tick must be an int (1, 2, 4 or 8), got {loops_per_tick!r}")
    if not (is_real(spawn_jitter) and 0.0 <= spawn_jitter <= 2.0):
        raise ValueError(f"spawn_jitter must be a number in [0, 2] world units, got {spawn_jitter!r}")
    if not is_int(num_envs) or num_envs < 1:
        raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")


def check_unknown_options(options: dict, is_scenario: bool, sim_keywords: tuple[str, ...]) -> None:
    """Refuse options that are neither SMAC's (``FeatureConfig``, ``RewardConfig``) nor taken already,
    suggesting the nearest name among those and the simulator's and wrappers' keywords (a typo of
    ``render_mode`` lands here too).

    Raises:
        ValueError: the unknown names, the hints, and every valid name.
    """
    unknown = set(options) - FEATURE_OPTIONS - REWARD_OPTIONS
    if not unknown:
        return
    extra = {"conic_fov", "use_unit_ranges", "obs_own_pos", "min_attack_range", "scenario"} if is_scenario else set()
    valid = FEATURE_OPTIONS | REWARD_OPTIONS | {"continuing_episode"} | extra
    near = [*valid, *sim_keywords, *WRAPPER_KEYWORDS]

    def hint(name: str) -> str:
        if name in WRAPPER_KEYWORDS:  # a wrapper's keyword given to the batched simulator: no typo to suggest
            return f"; {name!r} is a keyword of the PettingZoo / Gymnasium wrappers, not of make_batched"
        return f"; {name!r}{did_you_mean(name, near)}" if did_you_mean(name, near) else ""

    hints = "".join(hint(name) for name in sorted(unknown))
    raise ValueError(
        f"unknown option(s) {sorted(unknown)}{hints}; valid SMAC options: {sorted(valid)}; the simulator's own "
        f"keywords: {list(sim_keywords)}; the PettingZoo / Gymnasium wrappers add {list(WRAPPER_KEYWORDS)}"
    )


def snapshot_options(
    fcfg: FeatureConfig,
    rcfg: RewardConfig,
    lenient_actions: bool,
    loops_per_tick: int,
    spawn_jitter: float,
    v2_opts: dict[str, bool],
    scenario: ScenarioSpec | None,
) -> dict:
    """The options that change the game, as plain Python values: what ``state_dict`` records and
    ``load_state_dict`` compares."""
    out = {
        **{f.name: plain(getattr(fcfg, f.name)) for f in fields(FeatureConfig)},
        **{f.name: plain(getattr(rcfg, f.name)) for f in fields(RewardConfig)},
        "lenient_actions": bool(lenient_actions),
        "loops_per_tick": int(loops_per_tick),
        "spawn_jitter": float(spawn_jitter),
        **{k: bool(v) for k, v in v2_opts.items()},
    }
    if scenario is not None:
        out["min_attack_range"] = float(scenario.min_attack_range)
    return out
