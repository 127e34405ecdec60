"""Unit specifications from the StarCraft II game data that SMAC's maps load, on the normal-speed time base.

Time base (used everywhere in ``sc2_envs``): the engine runs 16 game loops per *normal* game
second; SMAC steps the game 8 loops per env step, so 1 env step = 8 game loops = 0.5 normal
seconds. Liquipedia quotes *Faster* seconds (1 Faster s = 1.4 normal s); none of the numbers below
are Faster values.

Which data: every SMAC map archive (oxwhirl/smac ``smac/env/starcraft2/maps/SMAC_Maps/*.SC2Map``)
declares one dependency in its ``DocumentHeader``, ``Liberty.SC2Mod``, not the multiplayer balance
mods (``VoidMulti``/``BalanceMulti``) that ladder maps load. So the units are the Core + Liberty
units of the installed build, with the maps' own overrides:

* enemies are the *stock* Liberty units (``mods/liberty.sc2mod/base.sc2data/GameData/UnitData.xml``
  in SC2Mapster/SC2GameData at 949614a9 = SC2 4.6.2.69232, the build of the SMAC paper; the same
  values at 4.10.4, c97833a0); the marine maps only set the enemy ``Marine``'s ``Food`` to 0;
* allies are the maps' ``_RL`` copies (each map's ``Base.SC2Data/GameData/UnitData.xml``). They
  repeat the stock Liberty numbers for every stat below (life, armour, shields and their regen,
  speed, acceleration, radius, sight, attributes, weapons, target priority) and differ only in
  ``DefaultAcquireLevel=Passive`` and ``Response=Nothing``: allies never auto-acquire or respond
  (modelled by the enemy AI acting only for enemies). ``RL_DIFFERENCES`` records that.
  ``scripts/game_data_provenance.py`` re-derives all of this from the two repositories and
  writes ``tests/data/game_data/smac_liberty_units.json``; the tests compare this module with it.

Weapons (period, range, damage point) come from ``WeaponData.xml``, damage and bonuses from
``EffectData.xml`` (the damage effect each weapon ends in), unset fields from the ``default``
entries of ``mods/core.sc2mod/base.sc2data/GameData/{Unit,Weapon}Data.xml`` (e.g. weapon range 5,
unit radius 0.5). Periods are stored in game loops from the data's fixed-point seconds (1/4096 s
steps: the marine's 0.8608 s is 3526/4096 s = 13.7734 loops; BurnySc2/sc2-techtree
``data/data_readable.json`` gives 0.86083984375). ``PROVENANCE`` names the file and entry of every
stat of every unit; docs/deviations.md has the same table.

The only non-data numbers are SMAC's ``unit_max_cooldown`` normalisers (``smac_max_cooldown``,
``smac/env/starcraft2/starcraft2.py``), which scale the state feature and are not periods.
"""

from __future__ import annotations

from dataclasses import dataclass, field

LOOPS_PER_SECOND = 16
"""Game loops per normal-speed game second (SC2 engine constant)."""
LOOPS_PER_STEP = 8
"""Game loops per env step (SMAC ``step_mul=8``)."""


@dataclass(frozen=True)
class UnitSpec:
    """Static data of one unit type.

    Attributes:
        name: our name for the type (``"stalker"``).
        sc2_type_id: the stock SC2 unit type id (``UnitTypeId``), used for SMAC's enemy type bits.
        health, shield: maximum hit points and shields.
        armor: HP armour (shield armour is 0 without upgrades).
        damage: damage per hit before attribute bonus and armour; 0 for units without a weapon.
        attacks: hits per attack (zealot 2, colossus 2), each reduced by armour separately.
        bonus_attribute, bonus_damage: extra damage per hit against that attribute.
        cooldown: weapon period in game loops (normal seconds x 16).
        range: weapon range, edge to edge (weapon range + both radii is the centre distance).
        speed: movement speed in distance units per normal second.
        radius: collision radius in distance units.
        attributes: SC2 attributes (``"light"``, ``"armored"``, ``"biological"``, ...).
        is_air: True for air units (medivac); air units do not collide with ground units.
        hits_air: the weapon can target air units.
        life_regen: HP per game loop (zerg units).
        energy_start, energy_max, energy_regen: energy (medivac), regen per game loop.
        heal_rate, heal_energy_cost, heal_range: medivac heal, HP per loop, energy per HP, range.
        splash: ``"none"``, ``"line"`` (colossus beam) or ``"suicide"`` (baneling).
        splash_radius: baneling explosion radius (centre to target edge).
        smac_max_cooldown: SMAC's normaliser for ``weapon_cooldown`` in the state
            (``unit_max_cooldown``; the medivac's is its max energy).
        no_collision: ignores collisions with ground units (colossus walks over small units).
        static: structures (spine crawler) never move.
        sight: sight range (``Sight``); SMAC itself uses 9 for every unit.
        acceleration: ``Acceleration`` in distance per normal second squared (1000: top speed
            within one loop; the medivac's 2.3125 takes ~19 loops).
        attack_target_priority: ``AttackTargetPriority``; automatic targeting prefers higher values
            (sc2_envs.sim.rules.enemy_ai).
        tags: free-form labels.
    """

    name: str
    sc2_type_id: int
    health: float
    shield: float
    armor: float
    damage: float
    attacks: int
    cooldown: float
    range: float
    speed: float
    radius: float
    attributes: tuple[str, ...]
    smac_max_cooldown: float
    bonus_attribute: str | None = None
    bonus_damage: float = 0.0
    is_air: bool = False
    hits_air: bool = False
    life_regen: float = 0.0
    energy_start: float = 0.0
    energy_max: float = 0.0
    energy_regen: float = 0.0
    heal_rate: float = 0.0
    heal_energy_cost: float = 0.0
    heal_range: float = 0.0
    splash: str = "none"
    splash_radius: float = 0.0
    no_collision: bool = False
    static: bool = False
    sight: float = 9.0
    acceleration: float = 1000.0
    attack_target_priority: float = 20.0
    tags: tuple[str, ...] = field(default=())

    @property
    def is_healer(self) -> bool:
        return self.heal_rate > 0

    @property
    def is_armed(self) -> bool:
        return self.damage > 0


_ZERG_REGEN = 0.2734 / LOOPS_PER_SECOND


def _period(seconds: float) -> float:
    """A weapon period in game loops from the data's seconds, on the engine's 1/4096 s grid."""
    return round(seconds * 4096) / 4096 * LOOPS_PER_SECOND


UNITS: dict[str, UnitSpec] = {
    "marine": UnitSpec(
        "marine",
        48,
        health=45,
        shield=0,
        armor=0,
        damage=6,
        attacks=1,
        cooldown=_period(0.8608),
        range=5,
        speed=2.25,
        radius=0.375,
        attributes=("light", "biological"),
        smac_max_cooldown=15,
        hits_air=True,
        sight=9,
    ),
    "marauder": UnitSpec(
        "marauder",
        51,
        health=125,
        shield=0,
        armor=1,
        damage=10,
        attacks=1,
        cooldown=_period(1.5),
        range=6,
        speed=2.25,
        radius=0.5625,
        attributes=("armored", "biological"),
        smac_max_cooldown=25,
        bonus_attribute="armored",
        bonus_damage=10,
        sight=10,
    ),
    "medivac": UnitSpec(
        "medivac",
        54,
        health=150,
        shield=0,
        armor=1,
        damage=0,
        attacks=0,
        cooldown=0,
        range=0,
        speed=2.75,
        radius=0.75,
        attributes=("armored", "mechanical"),
        smac_max_cooldown=200,
        is_air=True,
        energy_start=50,
        energy_max=200,
        energy_regen=0.5625 / LOOPS_PER_SECOND,
        heal_rate=9.0 / LOOPS_PER_SECOND,
        heal_energy_cost=0.33,
        heal_range=4.0,
        no_collision=True,
        sight=11,
        acceleration=2.3125,
    ),
    "stalker": UnitSpec(
        "stalker",
        74,
        health=80,
        shield=80,
        armor=1,
        damage=10,
        attacks=1,
        cooldown=_period(1.44),
        range=6,
        speed=2.9531,
        radius=0.625,
        attributes=("armored", "mechanical"),
        smac_max_cooldown=35,
        bonus_attribute="armored",
        bonus_damage=4,
        hits_air=True,
        sight=10,
    ),
    "zealot": UnitSpec(
        "zealot",
        73,
        health=100,
        shield=50,
        armor=1,
        damage=8,
        attacks=2,
        cooldown=_period(1.2),
        range=0.1,
        speed=2.25,
        radius=0.5,
        attributes=("light", "biological"),
        smac_max_cooldown=22,
        sight=9,
    ),
    "colossus": UnitSpec(
        "colossus",
        4,
        health=200,
        shield=150,
        armor=1,
        damage=20,
        attacks=2,
        cooldown=_period(2.2),
        range=6,
        speed=2.25,
        radius=1.0,
        attributes=("armored", "mechanical", "massive"),
        smac_max_cooldown=24,
        splash="line",
        no_collision=True,
        sight=10,
    ),
    "hydralisk": UnitSpec(
        "hydralisk",
        107,
        health=80,
        shield=0,
        armor=0,
        damage=12,
        attacks=1,
        cooldown=_period(0.83),
        range=5,
        speed=2.25,
        radius=0.625,
        attributes=("light", "biological"),
        smac_max_cooldown=10,
        hits_air=True,
        life_regen=_ZERG_REGEN,
        sight=9,
    ),
    "zergling": UnitSpec(
        "zergling",
        105,
        health=35,
        shield=0,
        armor=0,
        damage=5,
        attacks=1,
        cooldown=_period(0.696),
        range=0.1,
        speed=2.9531,
        radius=0.375,
        attributes=("light", "biological"),
        smac_max_cooldown=11,
        life_regen=_ZERG_REGEN,
        sight=8,
    ),
    "baneling": UnitSpec(
        "baneling",
        9,
        health=30,
        shield=0,
        armor=0,
        damage=20,
        attacks=1,
        cooldown=0,
        range=0.25,
        speed=2.5,
        radius=0.375,
        attributes=("biological",),
        smac_max_cooldown=1,
        bonus_attribute="light",
        bonus_damage=15,
        life_regen=_ZERG_REGEN,
        splash="suicide",
        splash_radius=2.2,
        sight=8,
    ),
    "spine_crawler": UnitSpec(
        "spine_crawler",
        98,
        health=300,
        shield=0,
        armor=2,
        damage=25,
        attacks=1,
        cooldown=_period(1.6),
        range=7,
        speed=0.0,
        radius=0.875,
        attributes=("armored", "biological", "structure"),
        smac_max_cooldown=15,
        bonus_attribute="armored",
        bonus_damage=5,
        static=True,
        sight=11,
        life_regen=_ZERG_REGEN,
        acceleration=0.0,
    ),
}
"""All unit types the simulator knows, keyed by name: stock Liberty values (see the module docstring)."""

# ---------------------------------------------------------------- provenance
_GD = "SC2Mapster/SC2GameData@949614a9 mods/liberty.sc2mod/base.sc2data/GameData/"
_CORE = "SC2Mapster/SC2GameData@949614a9 mods/core.sc2mod/base.sc2data/GameData/"
_SMAC_PY = "oxwhirl/smac smac/env/starcraft2/starcraft2.py unit_max_cooldown"
_DATA_IDS = {  # our name -> (CUnit id, weapon id, damage effect id)
    "marine": ("Marine", "GuassRifle", "GuassRifle"),
    "marauder": ("Marauder", "PunisherGrenades", "PunisherGrenadesU"),
    "medivac": ("Medivac", None, None),
    "stalker": ("Stalker", "ParticleDisruptors", "ParticleDisruptorsU"),
    "zealot": ("Zealot", "PsiBlades", "PsiBlades"),
    "colossus": ("Colossus", "ThermalLances", "ThermalLancesMU"),
    "hydralisk": ("Hydralisk", "NeedleSpines", "NeedleSpinesDamage"),
    "zergling": ("Zergling", "Claws", "Claws"),
    "baneling": ("Baneling", "VolatileBurst", "VolatileBurstU"),
    "spine_crawler": ("SpineCrawler", "ImpalerTentacle", "ImpalerTentacleU"),
}
# Stats whose value is the ``default`` entry of Core data because the Liberty entry leaves them unset.
_FROM_CORE_DEFAULT = {
    ("marine", "range"): "WeaponData.xml CWeapon default Range 5",
    ("hydralisk", "range"): "WeaponData.xml CWeapon default Range 5",
    ("zealot", "radius"): "UnitData.xml CUnit default Radius 0.5",
}
_UNIT_FIELDS = {  # our stat -> CUnit field
    "health": "LifeMax",
    "shield": "ShieldsMax",
    "armor": "LifeArmor",
    "speed": "Speed",
    "radius": "Radius",
    "attributes": "Attributes",
    "is_air": "PlaneArray",
    "life_regen": "LifeRegenRate",
    "sight": "Sight",
    "acceleration": "Acceleration",
    "attack_target_priority": "AttackTargetPriority",
    "energy_start": "EnergyStart",
    "energy_max": "EnergyMax",
    "energy_regen": "EnergyRegenRate",
}
_WEAPON_FIELDS = {"cooldown": "Period", "range": "Range", "attacks": "DisplayAttackCount", "hits_air": "TargetFilters"}
_EFFECT_FIELDS = {
    "damage": "Amount",
    "bonus_attribute": "AttributeBonus",
    "bonus_damage": "AttributeBonus",
    "splash_radius": "AreaArray Radius",
}


def _provenance(name: str) -> dict[str, str]:
    unit_id, weapon, effect = _DATA_IDS[name]
    src: dict[str, str] = {}
    for stat, fld in _UNIT_FIELDS.items():
        src[stat] = f"{_GD}UnitData.xml CUnit id={unit_id} {fld}"
    if weapon is not None:
        for stat, fld in _WEAPON_FIELDS.items():
            src[stat] = f"{_GD}WeaponData.xml CWeaponLegacy id={weapon} {fld}"
        for stat, fld in _EFFECT_FIELDS.items():
            src[stat] = f"{_GD}EffectData.xml CEffectDamage id={effect} {fld}"
    else:
        for stat in ("cooldown", "range", "attacks", "hits_air", "damage", "bonus_attribute", "bonus_damage", "splash_radius"):
            src[stat] = f"{_GD}UnitData.xml CUnit id={unit_id}: no WeaponArray (unarmed)"
    if name == "medivac":
        src["heal_rate"] = f"{_GD}EffectData.xml CEffectCreateHealer id=MedivacHeal RechargeVitalRate"
        src["heal_energy_cost"] = f"{_GD}EffectData.xml CEffectCreateHealer id=MedivacHeal DrainVitalCostFactor"
        src["heal_range"] = f"{_GD}AbilData.xml CAbilEffectTarget id=MedivacHeal Range"
    if name == "colossus":
        src["splash"] = f"{_GD}EffectData.xml CEffectCreatePersistent ThermalLancesForward/Reverse (line sweep)"
    if name == "baneling":
        src["splash"] = f"{_GD}EffectData.xml CEffectSet id=VolatileBurst (suicide + area damage)"
        src["cooldown"] = "0: the baneling dies on its one attack (EffectData.xml CEffectSet id=VolatileBurst, Suicide)"
    for (n, stat), text in _FROM_CORE_DEFAULT.items():
        if n == name:
            src[stat] = _CORE + text
    src["smac_max_cooldown"] = _SMAC_PY
    src["sc2_type_id"] = "Blizzard/s2client-api include/sc2api/sc2_typeenums.h UNIT_TYPEID"
    return src


PROVENANCE: dict[str, dict[str, str]] = {name: _provenance(name) for name in UNITS}
"""``PROVENANCE[unit][stat]``: the public file and entry each stat of ``UNITS`` comes from."""

RL_DIFFERENCES: dict[str, str] = {
    "acquire_level": "_RL: DefaultAcquireLevel=Passive (stock: Core default Offensive)",
    "response": "_RL: Response=Nothing (stock: Core default Acquire)",
}
"""How SMAC's ally ``_RL`` units differ from the stock Liberty units (each map's
``Base.SC2Data/GameData/UnitData.xml``): only in acquire behaviour; every stat in ``UNITS`` is equal."""

_STAT_TO_DATA = {  # our stat -> (key in tests/data/game_data/smac_liberty_units.json, scale to our units)
    "health": ("health", 1.0),
    "shield": ("shield", 1.0),
    "armor": ("armor", 1.0),
    "speed": ("speed", 1.0),
    "radius": ("radius", 1.0),
    "sight": ("sight", 1.0),
    "acceleration": ("acceleration", 1.0),
    "attack_target_priority": ("attack_target_priority", 1.0),
    "attributes": ("attributes", None),
    "is_air": ("is_air", None),
    "life_regen": ("life_regen_per_s", 1.0 / LOOPS_PER_SECOND),
    "energy_start": ("energy_start", 1.0),
    "energy_max": ("energy_max", 1.0),
    "energy_regen": ("energy_regen_per_s", 1.0 / LOOPS_PER_SECOND),
    "damage": ("damage", 1.0),
    "attacks": ("attacks", 1.0),
    "bonus_attribute": ("bonus_attribute", None),
    "bonus_damage": ("bonus_damage", 1.0),
    "cooldown": ("cooldown_loops", 1.0),
    "range": ("range", 1.0),
    "hits_air": ("hits_air", None),
    "splash_radius": ("splash_radius", 1.0),
    "heal_rate": ("heal_per_s", 1.0 / LOOPS_PER_SECOND),
    "heal_energy_cost": ("heal_energy_per_hp", 1.0),
    "heal_range": ("heal_range", 1.0),
}


def stock_stat_table(spec: UnitSpec) -> dict[str, tuple[object, str, float | None]]:
    """``{stat: (our value, data key, scale)}`` for every data-backed stat of ``spec``.

    ``data value * scale`` (or the data value itself when ``scale`` is None) must equal our value;
    used by ``scripts/game_data_provenance.py`` and the tests. Weapon and heal stats are listed
    only for units that have them.
    """
    out: dict[str, tuple[object, str, float | None]] = {}
    for stat, (key, scale) in _STAT_TO_DATA.items():
        if (
            stat in ("damage", "attacks", "bonus_attribute", "bonus_damage", "cooldown", "range", "hits_air")
            and not spec.is_armed
        ):
            continue
        if stat == "splash_radius" and spec.splash != "suicide":
            continue
        if stat == "cooldown" and spec.splash == "suicide":
            continue  # the baneling dies on its one attack: VolatileBurst's Period 0.833 s never elapses
        if stat.startswith("heal_") and not spec.is_healer:
            continue
        value = getattr(spec, stat)
        if stat == "attributes":
            value = sorted(value)
        if stat == "bonus_damage" and spec.bonus_attribute is None:
            value = 0.0
        out[stat] = (value, key, scale)
    return out


def get_unit(name: str) -> UnitSpec:
    """Return the spec of unit type ``name``.

    Raises:
        KeyError: if ``name`` is not a known unit type; the message lists the valid names.
    """
    try:
        return UNITS[name]
    except KeyError:
        raise KeyError(f"unknown unit type {name!r}; expected one of {sorted(UNITS)}") from None
