"""Re-derive the lite engine's "3.16.1" unit data from SC2's public game-data XML and compare it.

Reads a local clone of SC2Mapster/SC2GameData (https://github.com/SC2Mapster/SC2GameData, the
game-data dumps; nothing from it is stored in this repository) at one commit with ``git show``,
merges the mods in the order a melee map that declares the multiplayer dependencies loads them
(Core, Liberty, LibertyMulti, Swarm, SwarmMulti, Void, VoidMulti; the order BurnySc2/sc2-techtree's
README gives; BalanceMulti is a balance-test mod and is left out), and prints, per unit of a data
profile (``--profile``, default "3.16.1"), every stat the profile holds together with the mod that
set it. With ``--check`` it exits non-zero when any profile value differs from the merged data.

Usage:
    git clone https://github.com/SC2Mapster/SC2GameData /tmp/SC2GameData
    python scripts/lite_game_data.py /tmp/SC2GameData --commit f597e057 --check
    python scripts/lite_game_data.py /tmp/SC2GameData --commit db03e82a --profile 4.10 --check

Merge rules (how the editor layers catalog entries): a later mod's entry with the same id
overrides field by field; a field with an ``index`` attribute overrides that index only; an entry
with ``parent=`` starts from its parent's merged fields; unset fields take the ``default="1"``
entry of the same catalog class. Only the fields listed in ``UNIT_FIELDS`` are read.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

MODS = ("core", "liberty", "libertymulti", "swarm", "swarmmulti", "void", "voidmulti")
CATALOGS = ("Unit", "Weapon", "Effect", "Abil")

UNIT_FIELDS = (
    "LifeMax",
    "ShieldsMax",
    "LifeArmor",
    "Speed",
    "Sight",
    "Radius",
    "Food",
    "EnergyMax",
    "EnergyStart",
    "Acceleration",
    "AttackTargetPriority",
    "ShieldRegenRate",
    "ShieldRegenDelay",
)


class Catalog:
    """Merged entries of one catalog (UnitData, WeaponData, ...) over ``MODS``.

    ``fields(id)`` returns ``{(tag, index): (attrib, children, mod)}`` for the merged entry.
    """

    def __init__(self, read, kind: str) -> None:
        self.raw: dict[str, list[tuple[str, ET.Element]]] = {}
        self.defaults: dict[str, list[tuple[str, ET.Element]]] = {}
        for mod in MODS:
            text = read(f"mods/{mod}.sc2mod/base.sc2data/GameData/{kind}Data.xml")
            if text is None:
                continue
            for el in ET.fromstring(text):
                if el.get("default") == "1" and el.get("id") is None:
                    self.defaults.setdefault(el.tag, []).append((mod, el))
                elif el.get("id") is not None:
                    self.raw.setdefault(el.get("id"), []).append((mod, el))

    def fields(self, ident: str, _seen: tuple = ()) -> dict:
        chain = self.raw.get(ident)
        if not chain:
            raise KeyError(f"no entry {ident!r}")
        out: dict = {}
        tag = chain[0][1].tag
        for mod, el in self.defaults.get(tag, []):
            _layer(out, mod, el)
        parent = next((el.get("parent") for _, el in chain if el.get("parent")), None)
        if parent and parent not in _seen:
            out.update(self.fields(parent, _seen + (ident,)))
        for mod, el in chain:
            _layer(out, mod, el)
        return out


def _layer(out: dict, mod: str, el: ET.Element) -> None:
    counters: dict[str, int] = {}
    for child in el:
        index = child.get("index")
        if index is None and child.get("Link") is None and child.get("value") is not None and child.tag.endswith("Array"):
            index = f"#{counters.get(child.tag, 0)}"  # unindexed array entries are positional
            counters[child.tag] = counters.get(child.tag, 0) + 1
        if child.get("Link") is not None:
            index = child.get("Link")
        key = (child.tag, index)
        prev = out.get(key)
        attrib = dict(prev[0]) if prev else {}
        attrib.update(child.attrib)
        out[key] = (attrib, list(child) or (prev[1] if prev else []), mod)


def value(fields: dict, tag: str, index: str | None = None, default=None):
    """The ``value`` attribute of a merged field and the mod that set it."""
    hit = fields.get((tag, index))
    if hit is None or "value" not in hit[0]:
        return default, None
    return hit[0]["value"], hit[2]


def damage_chain(effects: Catalog, effect: str, hits: int = 1, depth: int = 0) -> tuple[str, int]:
    """Follow launch-missile / set / persistent effects to the damage effect; returns (id, hits)."""
    if depth > 8:
        raise RuntimeError(f"effect chain too deep at {effect}")
    f = effects.fields(effect)
    kind = effects.raw[effect][0][1].tag
    if kind == "CEffectDamage":
        return effect, hits
    if kind == "CEffectLaunchMissile":
        return damage_chain(effects, value(f, "ImpactEffect")[0], hits, depth + 1)
    if kind == "CEffectCreatePersistent":
        count = int(value(f, "PeriodCount", default="1")[0])
        periodic = [k[1] for k in f if k[0] == "PeriodicEffectArray"]
        inner = f[("PeriodicEffectArray", periodic[0])][0]["value"]
        return damage_chain(effects, inner, hits * count, depth + 1)
    if kind == "CEffectSet":
        members = [a["value"] for (t, _), (a, _, _) in f.items() if t == "EffectArray" and a.get("value")]
        found = []
        for m in members:
            try:
                found.append(damage_chain(effects, m, hits, depth + 1))
            except (RuntimeError, KeyError):
                continue
        if not found:
            raise RuntimeError(f"no damage effect under set {effect}")
        return found[0][0], sum(h for _, h in found)
    raise RuntimeError(f"effect {effect} of kind {kind} has no damage")


def derive(read, prof) -> dict:
    """Merged stats of every unit in the profile module ``prof`` (our stat names, its units)."""

    cats = {k: Catalog(read, k) for k in CATALOGS}
    out = {}
    for spec in prof.UNITS.values():
        f = cats["Unit"].fields(spec.xml_id)
        row: dict = {}
        for tag in UNIT_FIELDS:
            v, mod = value(f, tag)
            row[tag] = (float(v) if v is not None else None, mod)
        row["minerals"] = _num(value(f, "CostResource", "Minerals"))
        row["gas"] = _num(value(f, "CostResource", "Vespene"))
        row["attributes"] = sorted(k[1] for k, (a, _, _) in f.items() if k[0] == "Attributes" and a.get("value") == "1")
        weapons = [k[1] for k in f if k[0] == "WeaponArray" and k[1]]  # Link="" clears a slot
        row["weapons"] = []
        for w in weapons:
            wf = cats["Weapon"].fields(w)
            effect = value(wf, "Effect")[0]
            if effect == "##id##":
                effect = w
            dmg_id, hits = damage_chain(cats["Effect"], effect)
            df = cats["Effect"].fields(dmg_id)
            bonus = {k[1]: float(a["value"]) for k, (a, _, _) in df.items() if k[0] == "AttributeBonus"}
            count = value(wf, "DisplayAttackCount")[0]
            row["weapons"].append(
                {
                    "id": w,
                    "range": float(value(wf, "Range", default="5")[0]),
                    "period": float(value(wf, "Period", default="0.8332")[0]),
                    "damage": float(value(df, "Amount", default="0")[0]),
                    "bonus": bonus,
                    "hits": hits if count is None else max(hits, int(count)),
                    "damage_mod": value(df, "Amount")[1],
                }
            )
        row["build_time_s"] = (None, None)
        if spec.ability_name and spec.ability_name.split(",")[1].startswith(("Train", "Build")):
            abil, cmd = spec.ability_name.split(",")
            hit = cats["Abil"].fields(abil).get(("InfoArray", cmd))
            if hit is not None and "Time" in hit[0]:
                row["build_time_s"] = (float(hit[0]["Time"]), hit[2])
        out[spec.name] = row
    return out


def _num(vm):
    v, mod = vm
    return (float(v) if v is not None else 0.0, mod)


def compare(merged: dict, prof) -> list[str]:
    """Every difference between the profile module ``prof`` and the merged XML, as readable lines."""

    bad = []
    for name, row in merged.items():
        spec = prof.UNITS[name]
        pairs = {
            "hp": ("LifeMax", spec.hp),
            "shield": ("ShieldsMax", spec.shield),
            "armor": ("LifeArmor", spec.armor),
            "speed": ("Speed", spec.speed),
            "sight": ("Sight", spec.sight),
            "radius": ("Radius", spec.radius),
            "acceleration": ("Acceleration", spec.acceleration),
            "attack_target_priority": ("AttackTargetPriority", spec.attack_target_priority),
            "shield_regen": ("ShieldRegenRate", spec.shield_regen * 16),
            "shield_regen_delay": ("ShieldRegenDelay", spec.shield_regen_delay / 16),
        }
        for stat, (tag, ours) in pairs.items():
            theirs = row[tag][0]
            if theirs is None:
                continue  # unset in every mod: the profile documents the Core default it uses
            if abs(theirs - ours) > 1e-6:
                bad.append(f"{name}.{stat}: profile {ours} vs XML {theirs} ({row[tag][1]})")
        food = row["Food"][0] or 0.0
        if food < 0 and abs(-food - spec.supply_cost) > 1e-6:
            bad.append(f"{name}.supply_cost: profile {spec.supply_cost} vs XML {-food}")
        if food > 0 and abs(food - spec.supply_provided) > 1e-6:
            bad.append(f"{name}.supply_provided: profile {spec.supply_provided} vs XML {food}")
        if row["build_time_s"][0] is not None and abs(row["build_time_s"][0] * 16 - spec.build_time) > 1e-6:
            bad.append(f"{name}.build_time: profile {spec.build_time} loops vs XML {row['build_time_s'][0]} s")
        # The MULE's CostResource (50) only scores it; it is called down for Orbital energy.
        if name != "MULE" and (row["minerals"][0] != spec.minerals_total or row["gas"][0] != spec.gas_total):
            bad.append(
                f"{name}.cost: profile {spec.minerals_total}/{spec.gas_total} vs XML {row['minerals'][0]}/{row['gas'][0]}"
            )
        if sorted(a.lower() for a in row["attributes"]) != sorted(spec.attributes):
            bad.append(f"{name}.attributes: profile {spec.attributes} vs XML {row['attributes']}")
        for ours, theirs in zip(spec.weapons, row["weapons"], strict=False):
            checks = {
                "range": (ours.range, theirs["range"]),
                "cooldown_s": (ours.cooldown_s, theirs["period"]),
                "damage": (ours.damage, theirs["damage"]),
                "attacks": (ours.attacks, theirs["hits"]),
            }
            for stat, (a, b) in checks.items():
                if abs(a - b) > 1e-6:
                    bad.append(f"{name}.{ours.name}.{stat}: profile {a} vs XML {b}")
            ob = {ours.bonus_attribute.capitalize(): ours.bonus_damage} if ours.bonus_damage else {}
            if ob != theirs["bonus"]:
                bad.append(f"{name}.{ours.name}.bonus: profile {ob} vs XML {theirs['bonus']}")
        if len(spec.weapons) != len(row["weapons"]) and not (spec.is_worker and len(row["weapons"]) == 1):
            bad.append(f"{name}.weapons: profile {len(spec.weapons)} vs XML {len(row['weapons'])}")
    return bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("gamedata", type=Path, help="local clone of SC2Mapster/SC2GameData")
    ap.add_argument("--commit", default="f597e057", help="commit to read (default: f597e057, the 3.16-era data)")
    ap.add_argument("--check", action="store_true", help="exit 1 if the profile differs from the merged XML")
    ap.add_argument(
        "--profile", default="3.16.1", help="the data profile to compare (3.16.1 with f597e057, 4.10 with db03e82a)"
    )
    args = ap.parse_args()
    from sc2_envs.lite.data import get_profile

    prof = get_profile(args.profile)

    def read(path: str) -> bytes | None:
        r = subprocess.run(["git", "-C", str(args.gamedata), "show", f"{args.commit}:{path}"], capture_output=True)
        return r.stdout if r.returncode == 0 else None

    merged = derive(read, prof)
    for name, row in merged.items():
        stats = " ".join(f"{t}={v[0]:g}({v[1]})" for t, v in row.items() if isinstance(v, tuple) and v[0] is not None)
        print(f"{name:18s} {stats} attrs={','.join(row['attributes'])}")
        for w in row["weapons"]:
            print(
                f"{'':18s} weapon {w['id']}: range {w['range']:g} period {w['period']:g} s damage {w['damage']:g}"
                f" x{w['hits']} bonus {w['bonus']} (damage set in {w['damage_mod']})"
            )
    if args.check:
        bad = compare(merged, prof)
        for line in bad:
            print("DIFF", line)
        print(f"CHECK units={len(merged)} differences={len(bad)}")
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
