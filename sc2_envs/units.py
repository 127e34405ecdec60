"""Unit specifications from StarCraft II game data, on the normal-speed time base.

Time base (used everywhere in ``sc2_envs``): the engine runs 16 game loops per *normal* game
second; SMAC steps the game 8 loops per env step, so 1 env step = 8 game loops = 0.5 normal
seconds. Liquipedia quotes *Faster* seconds (1 Faster s = 1.4 normal s); none of the numbers below
are Faster values.

Sources:
    * SC2 game data dumped from the game API: BurnySc2/sc2-techtree ``data/data.json`` (commits
      1680199, aee1488, c92eaf8; identical values for these units): HP, shields, armour, speed,
      radius, attributes, weapon damage/attacks/range/cooldown/bonus.
    * SMAC's ``_RL`` unit overrides in each SMAC map's ``Base.SC2Data/GameData/UnitData.xml``
      (oxwhirl/smac d6aab33): Medivac_RL speed 2.75, Hydralisk_RL 80 HP on 6h_vs_8z, shield regen
      delay 10 s and rate 2/s, zerg life regen 0.2734/s, medivac energy 50/200 and 0.5625/s.
    * SMAC's hard-coded ``unit_max_cooldown`` normalisers (``starcraft2.py``), ``smac_max_cooldown``.
    * Baneling damage is patch dependent; we use SC2 4.10 (the version SMAC's README recommends):
      16 (+19 vs Light), i.e. 35 vs Light in every patch.
    * Medivac heal: 12.6 HP per Faster second = 9 HP per normal second, 1 energy per 3 HP, range 4.
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
    tags: tuple[str, ...] = field(default=())

    @property
    def is_healer(self) -> bool:
        return self.heal_rate > 0

    @property
    def is_armed(self) -> bool:
        return self.damage > 0


_ZERG_REGEN = 0.2734 / LOOPS_PER_SECOND

UNITS: dict[str, UnitSpec] = {
    "marine": UnitSpec(
        "marine", 48, health=45, shield=0, armor=0, damage=6, attacks=1, cooldown=0.8608 * 16,
        range=5, speed=2.25, radius=0.375, attributes=("light", "biological"), smac_max_cooldown=15,
        hits_air=True, sight=9,
    ),
    "marauder": UnitSpec(
        "marauder", 51, health=125, shield=0, armor=1, damage=10, attacks=1, cooldown=1.5 * 16,
        range=6, speed=2.25, radius=0.5625, attributes=("armored", "biological"), smac_max_cooldown=25,
        bonus_attribute="armored", bonus_damage=10, sight=10,
    ),
    "medivac": UnitSpec(
        "medivac", 54, health=150, shield=0, armor=1, damage=0, attacks=0, cooldown=0,
        range=0, speed=2.75, radius=0.75, attributes=("armored", "mechanical"), smac_max_cooldown=200,
        is_air=True, energy_start=50, energy_max=200, energy_regen=0.5625 / LOOPS_PER_SECOND,
        heal_rate=9.0 / LOOPS_PER_SECOND, heal_energy_cost=1.0 / 3.0, heal_range=4.0, no_collision=True,
        sight=11,
    ),
    "stalker": UnitSpec(
        "stalker", 74, health=80, shield=80, armor=1, damage=13, attacks=1, cooldown=1.87 * 16,
        range=6, speed=2.9531, radius=0.625, attributes=("armored", "mechanical"), smac_max_cooldown=35,
        bonus_attribute="armored", bonus_damage=5, hits_air=True, sight=10,
    ),
    "zealot": UnitSpec(
        "zealot", 73, health=100, shield=50, armor=1, damage=8, attacks=2, cooldown=1.2 * 16,
        range=0.1, speed=2.25, radius=0.5, attributes=("light", "biological"), smac_max_cooldown=22,
        sight=9,
    ),
    "colossus": UnitSpec(
        "colossus", 4, health=200, shield=150, armor=1, damage=10, attacks=2, cooldown=1.5 * 16,
        range=7, speed=2.25, radius=1.0, attributes=("armored", "mechanical", "massive"),
        smac_max_cooldown=24, bonus_attribute="light", bonus_damage=5, splash="line", no_collision=True,
        sight=10,
    ),
    "hydralisk": UnitSpec(
        "hydralisk", 107, health=90, shield=0, armor=0, damage=12, attacks=1, cooldown=0.825 * 16,
        range=5, speed=2.25, radius=0.625, attributes=("light", "biological"), smac_max_cooldown=10,
        hits_air=True, life_regen=_ZERG_REGEN, sight=9,
    ),
    "zergling": UnitSpec(
        "zergling", 105, health=35, shield=0, armor=0, damage=5, attacks=1, cooldown=0.696 * 16,
        range=0.1, speed=2.9531, radius=0.375, attributes=("light", "biological"), smac_max_cooldown=11,
        life_regen=_ZERG_REGEN, sight=8,
    ),
    "baneling": UnitSpec(
        "baneling", 9, health=30, shield=0, armor=0, damage=16, attacks=1, cooldown=0,
        range=0.25, speed=2.5, radius=0.375, attributes=("biological",), smac_max_cooldown=1,
        bonus_attribute="light", bonus_damage=19, life_regen=_ZERG_REGEN, splash="suicide",
        splash_radius=2.2, sight=8,
    ),
    "spine_crawler": UnitSpec(
        "spine_crawler", 98, health=300, shield=0, armor=2, damage=25, attacks=1, cooldown=1.85 * 16,
        range=7, speed=0.0, radius=1.125, attributes=("armored", "biological", "structure"),
        smac_max_cooldown=15, bonus_attribute="armored", bonus_damage=5, static=True, sight=11,
    ),
}
"""All unit types the simulator knows, keyed by name."""

HYDRALISK_RL_HEALTH = 80.0
"""Hydralisk_RL on 6h_vs_8z has 80 HP (SMAC map UnitData.xml), not the stock 90."""


def get_unit(name: str) -> UnitSpec:
    """Return the spec of unit type ``name``.

    Raises:
        KeyError: if ``name`` is not a known unit type; the message lists the valid names.
    """
    try:
        return UNITS[name]
    except KeyError:
        raise KeyError(f"unknown unit type {name!r}; expected one of {sorted(UNITS)}") from None
