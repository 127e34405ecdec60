"""Which game data SMAC's maps load, and every unit stat of ``sc2_envs.units`` checked against it.

Reads two public sources and writes what they say about the nine SMAC unit types to
``tests/data/game_data/smac_liberty_units.json`` (the tests compare the simulator against that file):

* SMAC's map archives, ``smac/env/starcraft2/maps/SMAC_Maps/*.SC2Map`` in oxwhirl/smac (MPQ, read with
  ``mpyq``): ``DocumentHeader`` (the map's dependencies) and ``Base.SC2Data/GameData/UnitData.xml``
  (the ``_RL`` ally units and the enemy ``Marine`` ``Food`` override).
* The SC2 game data of the build SMAC was published on, SC2Mapster/SC2GameData at commit 949614a9
  (SC2 4.6.2.69232; the Liberty values are unchanged at 4.10.4, c97833a0):
  ``mods/{core,liberty}.sc2mod/base.sc2data/GameData/{Unit,Weapon,Effect,Abil}Data.xml``.

Then it prints, per unit and stat, the value in ``sc2_envs.units`` next to the data's, and exits
non-zero on any mismatch. Usage (the two folders are checkouts of the repositories above)::

    pip install mpyq
    python scripts/game_data_provenance.py --smac ../smac --gamedata ../SC2GameData
    python scripts/game_data_provenance.py --check-only   # compare units.py with the committed JSON

``--gamedata`` may also be a bare git directory; then ``--gamedata-rev`` (default 949614a9) is read.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "game_data" / "smac_liberty_units.json"

STOCK_ID = {  # our name -> stock Liberty unit id (the enemies)
    "marine": "Marine",
    "marauder": "Marauder",
    "medivac": "Medivac",
    "stalker": "Stalker",
    "zealot": "Zealot",
    "colossus": "Colossus",
    "hydralisk": "Hydralisk",
    "zergling": "Zergling",
    "baneling": "Baneling",
    "spine_crawler": "SpineCrawler",
}
RL_ID = {f"{v}_RL": k for k, v in STOCK_ID.items()} | {"Colosus_RL": "colossus"}  # 1c3s5z spells it so
# The CEffectDamage that deals each weapon's damage (the launch-missile / persistent / set effects
# between weapon and damage carry no numbers we use; their names are listed for the reader).
DAMAGE_EFFECT = {
    "GuassRifle": "GuassRifle",
    "PunisherGrenades": "PunisherGrenadesU",  # via PunisherGrenadesLM
    "ParticleDisruptors": "ParticleDisruptorsU",  # via launch missile ParticleDisruptors
    "PsiBlades": "PsiBlades",  # via persistent PsiBladesBurst (2 periods: 0 and 0.28 s)
    "ThermalLances": "ThermalLancesMU",  # via set ThermalLances = Forward + Reverse sweeps
    "NeedleSpines": "NeedleSpinesDamage",  # via NeedleSpinesLaunchMissile
    "Claws": "Claws",
    "VolatileBurst": "VolatileBurstU",  # set VolatileBurst: U (units) + U2 (structures)
    "ImpalerTentacle": "ImpalerTentacleU",  # via ImpalerTentacleLM
}


class GameData:
    """Core + Liberty catalogs (later files override earlier ones, as the engine layers mods)."""

    def __init__(self, read):
        self.cat: dict[str, dict[str, ET.Element]] = {}
        self.defaults: dict[str, ET.Element] = {}
        for kind in ("Unit", "Weapon", "Effect", "Abil"):
            for mod in ("core", "liberty"):
                root = ET.fromstring(read(f"mods/{mod}.sc2mod/base.sc2data/GameData/{kind}Data.xml"))
                for el in root:
                    if el.get("default") == "1" and el.get("id") is None:
                        self.defaults[el.tag] = el
                    elif el.get("id"):
                        self.cat.setdefault(kind, {})[el.get("id")] = el

    def get(self, kind: str, ident: str) -> ET.Element:
        return self.cat[kind][ident]


def _val(el: ET.Element | None, tag: str, default=None):
    if el is None:
        return default
    for c in el:
        if c.tag == tag and c.get("index") is None:
            return c.get("value")
    return default


def _indexed(el: ET.Element, tag: str) -> dict[str, str]:
    return {c.get("index"): c.get("value") for c in el if c.tag == tag and c.get("index") is not None}


def _fixed(x: float) -> float:
    """Game data times are fixed point with 1/4096 s steps (BurnySc2/sc2-techtree: 0.8608 -> 3526/4096)."""
    return round(x * 4096) / 4096


def unit_stats(unit: ET.Element, gd: GameData) -> dict:
    """Our stats of one CUnit element (stock or ``_RL``), resolving its weapon in Liberty data."""
    core = gd.defaults.get("CUnit")
    f = lambda tag, d=None: _val(unit, tag, _val(core, tag, d))  # noqa: E731
    attrs = sorted(k.lower() for k, v in _indexed(unit, "Attributes").items() if v == "1")
    planes = {k for k, v in _indexed(unit, "PlaneArray").items() if v == "1"}
    s = {
        "health": float(f("LifeMax")),
        "shield": float(f("ShieldsMax", 0)),
        "armor": float(f("LifeArmor", 0)),
        "shield_armor": float(f("ShieldArmor", 0)),
        "life_regen_per_s": float(f("LifeRegenRate", 0)),
        "shield_regen_per_s": float(f("ShieldRegenRate", 0)),
        "shield_regen_delay_s": float(f("ShieldRegenDelay", 0)),
        "speed": float(f("Speed", 0)),
        "acceleration": float(f("Acceleration", 0)),
        "radius": float(f("Radius", 0.5)),
        "sight": float(f("Sight", 0)),
        "attack_target_priority": float(f("AttackTargetPriority", 0)),
        "energy_start": float(f("EnergyStart", 0)),
        "energy_max": float(f("EnergyMax", 0)),
        "energy_regen_per_s": float(f("EnergyRegenRate", 0)),
        "attributes": attrs,
        "is_air": "Air" in planes and "Ground" not in planes,
        "planes": sorted(planes),
        "mover": f("Mover", "Ground"),
        "acquire_level": f("DefaultAcquireLevel", "Offensive"),
        "response": f("Response", "Acquire"),
    }
    weapons = [c.get("Link") for c in unit if c.tag == "WeaponArray" and c.get("Link") not in (None, "None")]
    weapons = [w for w in weapons if w in DAMAGE_EFFECT]  # HydraliskMelee: hidden, shares the cooldown
    if weapons:
        wid = weapons[0]
        w, wd, wl = gd.get("Weapon", wid), gd.defaults.get("CWeapon"), gd.defaults.get("CWeaponLegacy")
        g = lambda tag, d=None: _val(w, tag, _val(wl, tag, _val(wd, tag, d)))  # noqa: E731
        eff = gd.get("Effect", DAMAGE_EFFECT[wid])
        bonus = {k.lower(): float(v) for k, v in _indexed(eff, "AttributeBonus").items()}
        filters = (g("TargetFilters") or "").split(";")[0].split(",")
        s.update(
            {
                "weapon": wid,
                "damage_effect": DAMAGE_EFFECT[wid],
                "damage": float(_val(eff, "Amount", 0)),
                "attacks": int(g("DisplayAttackCount", 1)),
                "bonus_attribute": next(iter(bonus), None),
                "bonus_damage": next(iter(bonus.values()), 0.0),
                "period_s": float(g("Period")),
                "cooldown_loops": _fixed(float(g("Period"))) * 16,
                "range": float(g("Range")),
                "min_scan_range": float(g("MinScanRange")),
                "damage_point_s": float(g("DamagePoint")),
                "random_delay_min_s": float(g("RandomDelayMin")),
                "random_delay_max_s": float(g("RandomDelayMax")),
                "hits_air": "Ground" not in filters,
            }
        )
        area = [c for c in eff if c.tag == "AreaArray"]
        if area:
            s["splash_radius"] = float(area[0].get("Radius"))
    if any(c.tag == "AbilArray" and c.get("Link") == "MedivacHeal" for c in unit):
        heal, abil = gd.get("Effect", "MedivacHeal"), gd.get("Abil", "MedivacHeal")
        s.update(
            {
                "heal_per_s": float(_val(heal, "RechargeVitalRate")),
                "heal_energy_per_hp": float(_val(heal, "DrainVitalCostFactor")),
                "heal_range": float(_val(abil, "Range")),
                "heal_autocast_range": float(_val(abil, "AutoCastRange")),
            }
        )
    return s


def extract(smac: Path, read_gd) -> dict:
    import mpyq

    gd = GameData(read_gd)
    out = {"stock": {}, "rl": {}, "dependencies": {}, "other_overrides": {}}
    for name, uid in STOCK_ID.items():
        out["stock"][name] = unit_stats(gd.get("Unit", uid), gd)
        out["stock"][name]["file"] = "mods/liberty.sc2mod/base.sc2data/GameData/UnitData.xml: " + uid
    for path in sorted((smac / "smac/env/starcraft2/maps/SMAC_Maps").glob("*.SC2Map")):
        arc = mpyq.MPQArchive(str(path))
        m = path.stem
        out["dependencies"][m] = sorted(
            {d.decode() for d in re.findall(rb"[A-Za-z]+\.SC2Mod", arc.read_file("DocumentHeader"))}
        )
        root = ET.fromstring(arc.read_file("Base.SC2Data\\GameData\\UnitData.xml"))
        for el in root:
            if el.get("id") in RL_ID:
                out["rl"].setdefault(m, {})[RL_ID[el.get("id")]] = unit_stats(el, gd) | {"id": el.get("id")}
            else:
                out["other_overrides"].setdefault(m, {})[el.get("id")] = {c.tag: c.get("value") for c in el}
    return out


def compare(data: dict) -> int:
    """Print units.py against the data; return the number of mismatches."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from sc2_envs.units import UNITS, stock_stat_table

    bad = 0
    for name, spec in UNITS.items():
        for stat, (ours, data_key, scale) in stock_stat_table(spec).items():
            ref = data["stock"][name].get(data_key)
            if scale is not None and isinstance(ref, (int, float)) and not isinstance(ref, bool):
                ref = ref * scale
                ok = abs(float(ours) - ref) < 1e-4
            else:
                ok = ours == ref
            bad += not ok
            print(f"{name:14s} {stat:24s} units.py={ours!s:22s} liberty={ref!s:22s} {'ok' if ok else 'MISMATCH'}")
    for m, units in data["rl"].items():
        for name, rl in units.items():
            stock = data["stock"][name]
            diff = {k: (rl[k], stock[k]) for k in rl if k in stock and k != "file" and rl[k] != stock[k]}
            print(f"{m:14s} {rl['id']:12s} differs from stock {STOCK_ID[name]} in: {diff}")
    print(
        "dependencies:", sorted({d for v in data["dependencies"].values() for d in v}), f"({len(data['dependencies'])} maps)"
    )
    return bad


def markdown() -> str:
    """The per-unit, per-stat provenance table of ``sc2_envs.units`` (docs/game_data.md)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from sc2_envs.units import PROVENANCE, UNITS

    rows = ["| unit | stat | value | source (file: entry field) |", "|---|---|---|---|"]
    for name, spec in UNITS.items():
        for stat, src in sorted(PROVENANCE[name].items()):
            value = getattr(spec, stat) if hasattr(spec, stat) else ""
            if isinstance(value, float):
                value = f"{value:.6g}"
            src = src.replace("SC2Mapster/SC2GameData@949614a9 mods/liberty.sc2mod/base.sc2data/GameData/", "L:")
            src = src.replace("SC2Mapster/SC2GameData@949614a9 mods/core.sc2mod/base.sc2data/GameData/", "C:")
            rows.append(f"| {name} | {stat} | {value} | {src} |")
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--smac", type=Path, help="checkout of oxwhirl/smac")
    ap.add_argument("--gamedata", type=Path, help="checkout (or bare git dir) of SC2Mapster/SC2GameData")
    ap.add_argument("--gamedata-rev", default="949614a9", help="commit read from a bare git dir")
    ap.add_argument("--check-only", action="store_true", help="only compare units.py with the committed JSON")
    ap.add_argument("--markdown", action="store_true", help="print the provenance table of units.py and exit")
    a = ap.parse_args()
    if a.markdown:
        print(markdown())
        return
    if not a.check_only:
        if a.smac is None or a.gamedata is None:
            ap.error("--smac and --gamedata are required unless --check-only")
        if (a.gamedata / "mods").is_dir():
            read = lambda p: (a.gamedata / p).read_bytes()  # noqa: E731
        else:

            def read(p):
                return subprocess.run(
                    ["git", "--git-dir", str(a.gamedata), "show", f"{a.gamedata_rev}:{p}"],  # noqa: E731
                    check=True,
                    capture_output=True,
                ).stdout

        data = extract(a.smac, read)
        data["sources"] = {
            "smac": "oxwhirl/smac smac/env/starcraft2/maps/SMAC_Maps/*.SC2Map",
            "gamedata": f"SC2Mapster/SC2GameData@{a.gamedata_rev} mods/{{core,liberty}}.sc2mod",
        }
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        print(f"wrote {OUT}")
    data = json.loads(OUT.read_text())
    bad = compare(data)
    print(f"{bad} mismatches")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
