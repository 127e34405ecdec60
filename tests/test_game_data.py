"""The simulator's unit stats against the game data SMAC's maps load.

Reference: ``tests/data/game_data/smac_liberty_units.json``, written by
``scripts/game_data_provenance.py`` from oxwhirl/smac's map archives (``DocumentHeader``,
``Base.SC2Data/GameData/UnitData.xml``) and SC2Mapster/SC2GameData@949614a9 (SC2 4.6.2.69232)
``mods/{core,liberty}.sc2mod/base.sc2data/GameData/{Unit,Weapon,Effect,Abil}Data.xml``.
"""

import dataclasses
import json
from pathlib import Path

import pytest
import torch

from sc2_envs.maps import MAPS
from sc2_envs.sim.state import UnitTable
from sc2_envs.units import LOOPS_PER_SECOND, PROVENANCE, RL_DIFFERENCES, UNITS, stock_stat_table

DATA = json.loads((Path(__file__).parent / "data" / "game_data" / "smac_liberty_units.json").read_text())


def test_every_smac_map_depends_on_liberty_only():
    """Each SMAC map's DocumentHeader lists Liberty.SC2Mod as its only dependency (no ladder balance mod)."""
    assert len(DATA["dependencies"]) == 23
    assert all(deps == ["Liberty.SC2Mod"] for deps in DATA["dependencies"].values()), DATA["dependencies"]


def test_units_py_equals_stock_liberty_data_for_every_stat():
    """Every data-backed stat of every unit in units.py equals the Liberty unit/weapon/effect data."""
    checked = 0
    for name, spec in UNITS.items():
        for stat, (ours, key, scale) in stock_stat_table(spec).items():
            ref = DATA["stock"][name][key]
            if scale is not None and not isinstance(ref, bool):
                assert float(ours) == pytest.approx(ref * scale, abs=1e-6), (name, stat, ours, ref)
            else:
                assert ours == ref, (name, stat, ours, ref)
            checked += 1
    assert checked > 150


def test_rl_units_differ_from_stock_only_in_acquire_behaviour():
    """SMAC's _RL copies (every map) repeat the stock Liberty stats; only DefaultAcquireLevel/Response differ."""
    seen = 0
    for m, units in DATA["rl"].items():
        for name, rl in units.items():
            stock = DATA["stock"][name]
            diff = {k for k in rl if k in stock and k != "file" and rl[k] != stock[k]}
            assert diff == set(RL_DIFFERENCES), (m, name, diff)
            assert (rl["acquire_level"], rl["response"]) == ("Passive", "Nothing")
            seen += 1
    assert seen == 36  # _RL unit definitions over the 23 archives


def test_every_unit_stat_has_a_provenance_entry():
    """PROVENANCE names a public file for each stat the simulator reads from units.py."""
    used = {
        "health",
        "shield",
        "armor",
        "damage",
        "attacks",
        "cooldown",
        "range",
        "speed",
        "radius",
        "attributes",
        "bonus_attribute",
        "bonus_damage",
        "is_air",
        "hits_air",
        "life_regen",
        "energy_start",
        "energy_max",
        "energy_regen",
        "heal_rate",
        "heal_energy_cost",
        "heal_range",
        "splash_radius",
        "sight",
        "acceleration",
        "attack_target_priority",
        "smac_max_cooldown",
        "sc2_type_id",
    }
    assert used <= {f.name for f in dataclasses.fields(next(iter(UNITS.values())))}
    for name in UNITS:
        missing = {s for s in used if s not in PROVENANCE[name]} - {"heal_rate", "heal_energy_cost", "heal_range"}
        assert not missing, (name, missing)
        assert all(
            ("SC2GameData" in v) or ("oxwhirl/smac" in v) or ("s2client" in v) or v.startswith("0:")
            for v in PROVENANCE[name].values()
        ), PROVENANCE[name]


@pytest.mark.parametrize("map_name", sorted(MAPS))
def test_enemy_units_get_the_stock_liberty_unit_stats(map_name):
    """Defect 6: enemies are the stock units of the loaded data (Liberty), allies the map's _RL copies.

    Checks the simulator's per-unit tables (what the dynamics read) against the extracted data, for
    every enemy and every ally of the map: life, shields, armour, weapon period/range/damage/bonus per
    target, speed, acceleration, radius, regeneration, energy, target priority.
    """
    spec = MAPS[map_name]
    t = UnitTable.build(spec, torch.device("cpu"))
    n = spec.n_agents
    rl = DATA["rl"].get(map_name, {})
    for u, name in enumerate(t.names):
        ref = DATA["stock"][name] if u >= n else rl.get(name, DATA["stock"][name])
        if u < n:
            assert name in rl, f"{map_name}: ally {name} has no _RL unit in the map's UnitData.xml"
        got = {
            "health": t.max_health[u],
            "shield": t.max_shield[u],
            "armor": t.armor[u],
            "speed": t.speed[u] * LOOPS_PER_SECOND,
            "radius": t.radius[u],
            "acceleration": t.acceleration[u],
            "attack_target_priority": t.attack_target_priority[u],
            "life_regen_per_s": t.life_regen[u] * LOOPS_PER_SECOND,
            "energy_max": t.energy_max[u],
            "energy_start": t.energy_start[u],
            "energy_regen_per_s": t.energy_regen[u] * LOOPS_PER_SECOND,
        }
        if "weapon" in ref:
            got |= {"range": t.weapon_range[u], "attacks": t.attacks[u]}
            if ref["weapon"] != "VolatileBurst":
                got["cooldown_loops"] = t.weapon_cooldown[u]
        for key, value in got.items():
            assert float(value) == pytest.approx(ref[key], abs=1e-5), (map_name, u, name, key)
        # damage per hit against every opponent = Amount + AttributeBonus if the target has the attribute
        for v, target in enumerate(t.names):
            if (u < n) == (v < n) or "weapon" not in ref:
                continue
            bonus = ref["bonus_damage"] if ref["bonus_attribute"] in DATA["stock"][target]["attributes"] else 0.0
            assert float(t.damage_vs[u, v]) == pytest.approx(ref["damage"] + bonus), (map_name, name, target)
