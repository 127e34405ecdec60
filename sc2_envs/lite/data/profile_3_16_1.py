"""Data profile "3.16.1": units, weapons and economy of the build the mini-AlphaStar Simple64 replays use.

Which data: Simple64's ``DocumentHeader`` declares the multiplayer mods (Liberty, Swarm, Void and
VoidMulti), unlike SMAC's maps, which load Liberty only (``sc2_envs.units``). So a Simple64 game
uses the catalogs merged in load order Core -> Liberty -> LibertyMulti -> Swarm -> SwarmMulti ->
Void -> VoidMulti (the order BurnySc2/sc2-techtree's README gives; BalanceMulti, a balance-test mod,
is not part of the live merge). The values are read from the public game-data dumps
SC2Mapster/SC2GameData at commit f597e0572c3bebd08686189a35929d1ebded70d8 (2017-09-28, the last
pre-4.0 dump; its structure build times equal the 3.16.1.55958 replays' UnitInit -> UnitDone
intervals for 1,462 of 1,463 structures). ``scripts/lite_game_data.py`` re-derives every unit stat
from a clone of that repository and diffs it against this module (``--check``).

Units of measure (as everywhere in ``sc2_envs``): time in game loops, 16 loops per *normal-speed*
second (the XML's seconds); distances in game units (cells); speed in game units per normal
second; costs in minerals / vespene; supply in food. ``PROVENANCE[unit][stat]`` names the public
file, entry and mod each value comes from, or the replay measurement.

Replay measurements (mini-AlphaStar's 80 Simple64 replays, 3.16.1.55958: liuruoze/HierNet-SC2
``data/replay/`` at 3966460 and liuruoze/Useful-Big-Resources ``replays/simple64_replays.7z`` at
8877161, Apache-2.0; decoded with s2protocol tracker events): every Probe is born 236 loops after
the previous one from the same Nexus (280 of 560 gaps), not 272. The 2017 VoidMulti data sets the
Nexus's ``TimeWarpProduction`` buff to TimeScale 1.15 with no duration (272 / 1.15 = 236.5), and
no Chrono Boost command appears in the replays: the profile models it as a permanent x1.15 on
Nexus production (``ECONOMY.nexus_train_time_scale``): a Probe takes ceil(272 / 1.15) = 237 loops
and, like every unit trained back to back (SCV 271, Zealot 607, Stalker 671 measured), is born one
loop less after the previous one: 236, as measured (``BIRTH_GAP_MEASURED``).

Where 4.10.0.75689 (SC2GameData db03e82a, the last Linux package) differs, ``DIFFERENCES_4_10``
says so; ``profile_4_10`` applies them, and ``profiles.check_same_profile`` keeps profiles apart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

PROFILE = "3.16.1"
"""This profile's name; every record below carries it in its ``profile`` field."""

LOOPS_PER_SECOND = 16
"""Game loops per normal-speed game second (SC2 engine constant)."""

GAME_DATA_REPO = "https://github.com/SC2Mapster/SC2GameData"
GAME_DATA_COMMIT = "f597e0572c3bebd08686189a35929d1ebded70d8"
GAME_DATA_COMMIT_4_10 = "db03e82a9e091888d904a43245fc56fd6d0bbedb"
MOD_ORDER = ("core", "liberty", "libertymulti", "swarm", "swarmmulti", "void", "voidmulti")
"""Mods merged in this order (later overrides earlier, field by field)."""

REPLAY_SOURCE = (
    "mini-AlphaStar Simple64 replays (80, 3.16.1.55958): github.com/liuruoze/HierNet-SC2 data/replay/ "
    "@396646056dbe and github.com/liuruoze/Useful-Big-Resources replays/simple64_replays.7z @887716128423, "
    "Apache-2.0; s2protocol tracker events"
)


def _loops(seconds: float) -> int:
    """Normal-speed seconds -> game loops (exact for every build time in this profile)."""
    loops = seconds * LOOPS_PER_SECOND
    if abs(loops - round(loops)) > 1e-9:
        raise ValueError(f"{seconds} s is not a whole number of game loops")
    return int(round(loops))


def _period_loops(seconds: float) -> float:
    """A weapon period in game loops, on the engine's 1/4096 s fixed-point grid (as ``sc2_envs.units``)."""
    return round(seconds * 4096) / 4096 * LOOPS_PER_SECOND


@dataclass(frozen=True)
class Weapon:
    """One weapon of a unit type.

    Attributes:
        name: the game-data weapon id (``"PsiBlades"``).
        range: weapon range in game units, edge to edge (add both radii for the centre distance).
        damage: damage per hit before the attribute bonus and armour.
        attacks: hits per attack, each reduced by armour separately (Zealot 2, Marauder 2 here).
        cooldown_s: weapon period in normal-speed seconds (the XML's ``Period``).
        damage_point_s: time from the start of the attack to the hit, normal seconds
            (``DamagePoint``; the Core default 0.167 where the weapon leaves it unset).
        targets: ``"ground"`` or ``"ground_air"`` (from ``TargetFilters``).
        bonus_attribute: lower-case attribute the bonus applies to, or ``None``.
        bonus_damage: extra damage per hit against ``bonus_attribute``.
        missile: True when the damage arrives by a launched missile (``CEffectLaunchMissile``).
        profile: the data profile's name.
    """

    name: str
    range: float
    damage: float
    attacks: int
    cooldown_s: float
    damage_point_s: float
    targets: str
    bonus_attribute: str | None = None
    bonus_damage: float = 0.0
    missile: bool = False
    profile: str = PROFILE

    @property
    def cooldown(self) -> float:
        """Weapon period in game loops (1/4096 s grid: the Marine's 0.8608 s is 13.7734 loops)."""
        return _period_loops(self.cooldown_s)

    @property
    def damage_point(self) -> float:
        """Damage point in game loops."""
        return _period_loops(self.damage_point_s)

    @property
    def hits_air(self) -> bool:
        return self.targets == "ground_air"


@dataclass(frozen=True)
class UnitType:
    """Static data of one unit or structure type in this profile.

    Attributes:
        name: the SC2 unit name (``"Probe"``), as in ``stableid.json`` and pysc2's ``units``.
        type_id: the SC2 API unit type id (s2client-proto ``stableid.json`` ``Units``).
        race: ``"Protoss"``, ``"Terran"`` or ``"Neutral"``.
        minerals, gas: the price paid when the order is issued. For a morph (Orbital Command) this is
            the *extra* price; ``minerals_total`` / ``gas_total`` are the catalog totals.
        supply_cost: food used (``-Food`` in the data), 0 for structures.
        supply_provided: food provided (``Food`` > 0 in the data).
        build_time: game loops to train, build or morph (the ability's ``Time`` x 16).
        hp, shield, armor: maximum life, maximum shields, life armour.
        speed: movement speed, game units per normal-speed second (0 for structures).
        sight: sight range, game units.
        radius: collision radius, game units.
        footprint: structure footprint (width, height) in cells, or ``None`` for units.
        weapons: the unit's weapons (empty when unarmed).
        attributes: lower-case SC2 attributes (``"light"``, ``"armored"``, ``"structure"``, ...).
        requirements: unit names that must exist (completed) for this type to be started.
        producer: the unit name that trains, builds or morphs into this type, or ``None``.
        ability_id: the SC2 API ability id of that command (``stableid.json`` ``Abilities``).
        ability_name: the game-data ability link and command index, e.g. ``"NexusTrain,Train1"``.
        energy_start, energy_max: energy (Orbital Command), 0 when the type has none.
        energy_regen: energy per game loop.
        needs_power: a Protoss structure that works only inside a Pylon's power field.
        power_radius: radius of the power field this type projects, game units (Pylon), else 0.
        is_worker: harvests (Probe, SCV; the MULE harvests but is not a worker for supply or counts).
        lifetime: game loops until the unit expires (MULE), 0 for none.
        acceleration: game units per normal second squared (1000: full speed within a loop;
            workers 2.5); 0 for structures.
        attack_target_priority: ``AttackTargetPriority``; automatic targeting prefers higher values
            (units 20, structures 11, Photon Cannon 20, resources 0).
        shield_regen: shields per game loop once regeneration starts (Protoss: 2 per normal s).
        shield_regen_delay: game loops without damage before shields regenerate (Protoss: 10 s).
        xml_id: the id of the entry in the game data's ``UnitData.xml``.
        profile: the data profile's name.
    """

    name: str
    type_id: int
    race: str
    minerals: int
    gas: int
    supply_cost: float
    supply_provided: float
    build_time: int
    hp: float
    shield: float
    armor: float
    speed: float
    sight: float
    radius: float
    footprint: tuple[int, int] | None
    weapons: tuple[Weapon, ...]
    attributes: tuple[str, ...]
    requirements: tuple[str, ...]
    producer: str | None
    ability_id: int | None
    ability_name: str | None
    minerals_total: int = -1
    gas_total: int = -1
    energy_start: float = 0.0
    energy_max: float = 0.0
    energy_regen: float = 0.0
    needs_power: bool = False
    power_radius: float = 0.0
    is_worker: bool = False
    lifetime: int = 0
    acceleration: float = 0.0
    attack_target_priority: int = 20
    shield_regen: float = 0.0
    shield_regen_delay: int = 0
    xml_id: str = ""
    profile: str = PROFILE

    def __post_init__(self) -> None:
        # Totals default to the order price; only morphs differ.
        if self.minerals_total < 0:
            object.__setattr__(self, "minerals_total", self.minerals)
        if self.gas_total < 0:
            object.__setattr__(self, "gas_total", self.gas)
        if not self.xml_id:
            object.__setattr__(self, "xml_id", self.name)

    @property
    def is_structure(self) -> bool:
        return "structure" in self.attributes


_ENERGY_REGEN = 0.5625 / LOOPS_PER_SECOND  # EnergyRegenRate 0.5625 per normal s (liberty UnitData)

# Weapons. Period, range, damage point: WeaponData.xml; damage and bonus: the EffectData.xml damage
# effect the weapon's effect chain ends in; unset fields: Core CWeapon defaults (Range 5, Period
# 0.8332, DamagePoint 0.167).
_PARTICLE_BEAM = Weapon("ParticleBeam", range=0.1, damage=5, attacks=1, cooldown_s=1.5, damage_point_s=0.167, targets="ground")
_FUSION_CUTTER = Weapon("FusionCutter", range=0.1, damage=5, attacks=1, cooldown_s=1.5, damage_point_s=0.167, targets="ground")
_PSI_BLADES = Weapon("PsiBlades", range=0.1, damage=8, attacks=2, cooldown_s=1.2, damage_point_s=0.0, targets="ground")
_PARTICLE_DISRUPTORS = Weapon(
    "ParticleDisruptors",
    range=6,
    damage=10,
    attacks=1,
    cooldown_s=1.44,
    damage_point_s=0.167,
    targets="ground_air",
    bonus_attribute="armored",
    bonus_damage=4,
    missile=True,
)
_GAUSS_RIFLE = Weapon("GuassRifle", range=5, damage=6, attacks=1, cooldown_s=0.8608, damage_point_s=0.05, targets="ground_air")
# VoidMulti (3.8 balance) splits the grenade into two missiles (PunisherGrenadesLaunchSet,
# DisplayAttackCount 2) of 5 (+5 armoured) each; Liberty's single 10 (+10) returns in 4.10.
_PUNISHER_GRENADES = Weapon(
    "PunisherGrenades",
    range=6,
    damage=5,
    attacks=2,
    cooldown_s=1.5,
    damage_point_s=0.0,
    targets="ground",
    bonus_attribute="armored",
    bonus_damage=5,
    missile=True,
)
_PHOTON_CANNON = Weapon(
    "PhotonCannon", range=7, damage=20, attacks=1, cooldown_s=1.25, damage_point_s=0.167, targets="ground_air", missile=True
)

_P, _T, _N = "Protoss", "Terran", "Neutral"
_STRUCT_P = ("armored", "structure")
_STRUCT_T = ("armored", "mechanical", "structure")

UNITS: dict[str, UnitType] = {
    # ---- Protoss
    "Probe": UnitType(
        "Probe", 84, _P, 50, 0, 1, 0, _loops(17), 20, 20, 0, 2.8125, 8, 0.375, None,
        (_PARTICLE_BEAM,), ("light", "mechanical"), (), "Nexus", 1006, "NexusTrain,Train1", is_worker=True,
    ),
    "Zealot": UnitType(
        "Zealot", 73, _P, 100, 0, 2, 0, _loops(38), 100, 50, 1, 2.25, 9, 0.5, None,
        (_PSI_BLADES,), ("light", "biological"), (), "Gateway", 916, "GatewayTrain,Train1",
    ),
    "Stalker": UnitType(
        "Stalker", 74, _P, 125, 50, 2, 0, _loops(42), 80, 80, 1, 2.9531, 10, 0.625, None,
        (_PARTICLE_DISRUPTORS,), ("armored", "mechanical"), ("CyberneticsCore",), "Gateway", 917, "GatewayTrain,Train2",
    ),
    "Nexus": UnitType(
        "Nexus", 59, _P, 400, 0, 0, 15, _loops(100), 1000, 1000, 1, 0, 11, 2, (5, 5),
        (), _STRUCT_P, (), "Probe", 880, "ProtossBuild,Build1",
    ),
    "Pylon": UnitType(
        "Pylon", 60, _P, 100, 0, 0, 8, _loops(25), 200, 200, 1, 0, 9, 1, (2, 2),
        (), _STRUCT_P, (), "Probe", 881, "ProtossBuild,Build2", power_radius=6.5,
    ),
    "Gateway": UnitType(
        "Gateway", 62, _P, 150, 0, 0, 0, _loops(65), 500, 500, 1, 0, 9, 1.75, (3, 3),
        (), _STRUCT_P, ("Nexus",), "Probe", 883, "ProtossBuild,Build4", needs_power=True,
    ),
    "Assimilator": UnitType(
        "Assimilator", 61, _P, 75, 0, 0, 0, _loops(30), 450, 450, 1, 0, 9, 1.5, (3, 3),
        (), _STRUCT_P, (), "Probe", 882, "ProtossBuild,Build3",
    ),
    "CyberneticsCore": UnitType(
        "CyberneticsCore", 72, _P, 150, 0, 0, 0, _loops(50), 550, 550, 1, 0, 9, 1.5, (3, 3),
        (), _STRUCT_P, ("Gateway",), "Probe", 894, "ProtossBuild,Build15", needs_power=True,
    ),
    "Forge": UnitType(
        "Forge", 63, _P, 150, 0, 0, 0, _loops(45), 400, 400, 1, 0, 9, 1.5, (3, 3),
        (), _STRUCT_P, ("Nexus",), "Probe", 884, "ProtossBuild,Build5", needs_power=True,
    ),
    "PhotonCannon": UnitType(
        "PhotonCannon", 66, _P, 150, 0, 0, 0, _loops(40), 150, 150, 1, 0, 11, 1, (2, 2),
        (_PHOTON_CANNON,), _STRUCT_P, ("Forge",), "Probe", 887, "ProtossBuild,Build8", needs_power=True,
    ),
    # ---- Terran
    "SCV": UnitType(
        "SCV", 45, _T, 50, 0, 1, 0, _loops(17), 45, 0, 0, 2.8125, 8, 0.375, None,
        (_FUSION_CUTTER,), ("light", "biological", "mechanical"), (), "CommandCenter", 524, "CommandCenterTrain,Train1",
        is_worker=True,
    ),
    "Marine": UnitType(
        "Marine", 48, _T, 50, 0, 1, 0, _loops(25), 45, 0, 0, 2.25, 9, 0.375, None,
        (_GAUSS_RIFLE,), ("light", "biological"), (), "Barracks", 560, "BarracksTrain,Train1",
    ),
    "Marauder": UnitType(
        "Marauder", 51, _T, 100, 25, 2, 0, _loops(30), 125, 0, 1, 2.25, 10, 0.5625, None,
        (_PUNISHER_GRENADES,), ("armored", "biological"), ("BarracksTechLab",), "Barracks", 563, "BarracksTrain,Train4",
    ),
    "MULE": UnitType(
        "MULE", 268, _T, 0, 0, 0, 0, 0, 60, 0, 0, 2.8125, 8, 0.375, None,
        (), ("light", "mechanical"), (), "OrbitalCommand", 171, "CalldownMULE,Execute", lifetime=_loops(90),
    ),
    "CommandCenter": UnitType(
        "CommandCenter", 18, _T, 400, 0, 0, 15, _loops(100), 1500, 0, 1, 0, 11, 2.5, (5, 5),
        (), _STRUCT_T, (), "SCV", 318, "TerranBuild,Build1",
    ),
    "OrbitalCommand": UnitType(
        "OrbitalCommand", 132, _T, 150, 0, 0, 15, _loops(35), 1500, 0, 1, 0, 11, 2.5, (5, 5),
        (), _STRUCT_T, ("Barracks",), "CommandCenter", 1516, "UpgradeToOrbital,Execute",
        minerals_total=550, gas_total=0, energy_start=50, energy_max=200, energy_regen=_ENERGY_REGEN,
    ),
    "SupplyDepot": UnitType(
        "SupplyDepot", 19, _T, 100, 0, 0, 8, _loops(30), 400, 0, 1, 0, 9, 1.25, (2, 2),
        (), _STRUCT_T, (), "SCV", 319, "TerranBuild,Build2",
    ),
    # The lowered depot: a morph of the finished depot (SupplyDepotLower, no price, no Abils-section
    # delay: the type changes when the order runs), Food 8 and 400 life as the raised one; its
    # Footprint2x2Underground still blocks placement but not ground units (the engine's
    # navigation ignores every structure's footprint; see docs/full_game.md).
    "SupplyDepotLowered": UnitType(
        "SupplyDepotLowered", 47, _T, 0, 0, 0, 8, 0, 400, 0, 1, 0, 9, 1.25, (2, 2),
        (), _STRUCT_T, (), "SupplyDepot", 556, "SupplyDepotLower,Execute", minerals_total=100, gas_total=0,
    ),
    "Barracks": UnitType(
        "Barracks", 21, _T, 150, 0, 0, 0, _loops(65), 1000, 0, 1, 0, 9, 1.75, (3, 3),
        (), _STRUCT_T, ("SupplyDepot",), "SCV", 321, "TerranBuild,Build4",
    ),
    "BarracksTechLab": UnitType(
        "BarracksTechLab", 37, _T, 50, 25, 0, 0, _loops(25), 400, 0, 1, 0, 9, 1, (2, 2),
        (), _STRUCT_T, (), "Barracks", 421, "BarracksAddOns,Build1",
    ),
    "Refinery": UnitType(
        "Refinery", 20, _T, 75, 0, 0, 0, _loops(30), 500, 0, 1, 0, 9, 1.5, (3, 3),
        (), _STRUCT_T, (), "SCV", 320, "TerranBuild,Build3",
    ),
    "Factory": UnitType(
        "Factory", 27, _T, 150, 100, 0, 0, _loops(60), 1250, 0, 1, 0, 9, 1.625, (3, 3),
        (), _STRUCT_T, ("Barracks",), "SCV", 328, "TerranBuild,Build11",
    ),
    "Starport": UnitType(
        "Starport", 28, _T, 150, 100, 0, 0, _loops(50), 1300, 0, 1, 0, 9, 1.625, (3, 3),
        (), _STRUCT_T, ("Factory",), "SCV", 329, "TerranBuild,Build12",
    ),
    # ---- Neutral resources (sight 0: the Core default; they reveal nothing)
    "MineralField": UnitType(
        "MineralField", 341, _N, 0, 0, 0, 0, 0, 10000, 0, 10, 0, 0, 0.75, (2, 1),
        (), ("structure",), (), None, None, None,
    ),
    "MineralField750": UnitType(
        "MineralField750", 483, _N, 0, 0, 0, 0, 0, 10000, 0, 10, 0, 0, 0.75, (2, 1),
        (), ("structure",), (), None, None, None,
    ),
    "VespeneGeyser": UnitType(
        "VespeneGeyser", 342, _N, 0, 0, 0, 0, 0, 10000, 0, 10, 0, 0, 1.5, (3, 3),
        (), ("structure",), (), None, None, None,
    ),
}  # fmt: skip
"""Unit name -> ``UnitType``. Protoss, Terran and neutral types of the lite engine's scope."""


def _motion_and_regen(u: UnitType) -> UnitType:
    # Liberty UnitData: Acceleration 2.5 for workers and the MULE, 1000 for the army units, unset
    # (Core 0) for structures; AttackTargetPriority 11 on structures but the armed Photon Cannon
    # (20), 20 on units, unset on resources; Protoss ShieldRegenRate 2 after ShieldRegenDelay 10 s.
    if u.race == _N:
        accel, prio = 0.0, 0
    elif u.is_structure:
        accel, prio = 0.0, (20 if u.weapons else 11)
    else:
        accel, prio = (2.5 if u.name in ("Probe", "SCV", "MULE") else 1000.0), 20
    protoss = u.race == _P
    return replace(
        u,
        acceleration=accel,
        attack_target_priority=prio,
        shield_regen=2.0 / LOOPS_PER_SECOND if protoss else 0.0,
        shield_regen_delay=_loops(10) if protoss else 0,
    )


UNITS = {name: _motion_and_regen(u) for name, u in UNITS.items()}


@dataclass(frozen=True)
class Economy:
    """Economy constants of this profile (times in game loops unless the name says ``_s``).

    Attributes:
        start_minerals, start_gas, start_workers, start_food_cap: each player's loop-0 state.
        supply_max: the food cap's ceiling.
        minerals_per_trip: minerals a worker carries back (``HarvestAmount``).
        mineral_harvest_time_s: normal seconds a worker holds a patch to mine (``HarvestTime``).
        mineral_return_delay_s: ``ReturnDelay`` of the mineral field behaviour, normal seconds.
        ideal_mineral_harvesters: workers per patch the game counts as saturated (``IdealHarvesterCount``).
        gas_per_trip: vespene per trip from a Refinery / Assimilator.
        gas_harvest_time_s: normal seconds a worker spends inside the gas building.
        ideal_gas_harvesters: workers per gas building counted as saturated.
        mineral_field_contents, mineral_field_750_contents, geyser_contents: starting contents.
        mule_minerals_per_trip: minerals a MULE returns per trip (``ResourceAmountRequest``).
        mule_harvest_time_s: a MULE's mining time per trip (``HarvestTime`` x ``ResourceTimeMultiplier``).
        mule_shares_patch: False: the MULE uses its own resource queue (``ResourceQueueIndex`` 1),
            so it mines a patch beside the workers on it.
        mule_energy_cost: Orbital Command energy for one MULE.
        nexus_train_time_scale: production speed of a Nexus (``TimeWarpProduction`` TimeScale in
            VoidMulti); a Probe takes ceil(272 / 1.15) = 237 loops, born 236 apart back to back.
        nexus_probe_interval_measured: loops between Probe births at one Nexus in the replays.
        power_radius: Pylon power field radius (``PowerSource`` Radius).
        worker_speed: Probe / SCV speed, game units per normal second.
        collection_rate_window: PlayerStats' collection rates count the resources delivered in the
            last this many game loops (fewer before loop 240), scaled to a real minute.
        chrono_energy_cost: Nexus energy for one Chrono Boost; 0 where the build has none (3.16.1:
            the permanent ``nexus_train_time_scale`` instead).
        chrono_duration: game loops a Chrono Boost lasts (0: none).
        chrono_rate: production speed under Chrono Boost (1.0: none).
        profile: the data profile's name.
    """

    start_minerals: int = 50
    start_gas: int = 0
    start_workers: int = 12
    start_food_cap: int = 15
    supply_max: int = 200
    minerals_per_trip: int = 5
    mineral_harvest_time_s: float = 2.786
    mineral_return_delay_s: float = 0.5
    ideal_mineral_harvesters: int = 2
    gas_per_trip: int = 4
    gas_harvest_time_s: float = 1.981
    ideal_gas_harvesters: int = 3
    mineral_field_contents: int = 1500
    mineral_field_750_contents: int = 900
    geyser_contents: int = 2000
    mule_minerals_per_trip: int = 25
    mule_harvest_time_s: float = 2.786 * 2.05
    mule_shares_patch: bool = False
    mule_energy_cost: int = 50
    nexus_train_time_scale: float = 1.15
    nexus_probe_interval_measured: int = 236
    power_radius: float = 6.5
    worker_speed: float = 2.8125
    collection_rate_window: int = 240
    chrono_energy_cost: int = 0
    chrono_duration: int = 0
    chrono_rate: float = 1.0
    profile: str = PROFILE

    @property
    def mineral_harvest_time(self) -> float:
        """Mining time per trip in game loops (2.786 s = 44.576 loops)."""
        return self.mineral_harvest_time_s * LOOPS_PER_SECOND

    @property
    def gas_harvest_time(self) -> float:
        """Time inside a gas building per trip, game loops (1.981 s = 31.696 loops)."""
        return self.gas_harvest_time_s * LOOPS_PER_SECOND

    @property
    def mule_harvest_time(self) -> float:
        """A MULE's mining time per trip, game loops."""
        return self.mule_harvest_time_s * LOOPS_PER_SECOND

    def collection_rate(self, delivered: int, loop: int) -> int:
        """PlayerStats' ``m_scoreValue{Minerals,Vespene}CollectionRate`` from recent deliveries.

        Args:
            delivered: minerals (or vespene) delivered in the last
                ``min(collection_rate_window, loop)`` game loops.
            loop: the current game loop, >= 1.

        Returns:
            Resources per real minute (1344 loops), truncated as the game reports it: 120 minerals
            in 240 loops -> 671, 25 in the first 160 loops -> 209.

        Raises:
            ValueError: ``loop`` < 1 or ``delivered`` < 0.
        """
        if loop < 1 or delivered < 0:
            raise ValueError(f"collection_rate needs loop >= 1 and delivered >= 0, got loop={loop}, delivered={delivered}")
        window = min(self.collection_rate_window, loop)
        # The scale is fixed point (1/4096), truncated: 1344 / 240 = 5.6 is 22937/4096.
        scale = (1344 * 4096) // window
        return (delivered * scale) // 4096

    def train_time(self, unit: UnitType, producer: str) -> int:
        """Loops to train ``unit`` at a ``producer`` of this profile (Nexus production scaled).

        Args:
            unit: the unit type being trained.
            producer: the producing structure's name.

        Returns:
            Game loops until the unit is done: the first loop at which progress at the producer's
            time scale reaches the data time (Probe at a Nexus: ceil(272 / 1.15) = 237). Units
            trained back to back are born one loop less apart (``BIRTH_GAP_MEASURED``).

        Raises:
            ProfileMismatchError: ``unit`` is from another profile.
        """
        from sc2_envs.lite.data.profiles import check_same_profile

        check_same_profile(self, unit)
        if producer == "Nexus":
            return math.ceil(unit.build_time / self.nexus_train_time_scale - 1e-9)
        return unit.build_time


ECONOMY = Economy()
"""The economy constants of this profile."""

BIRTH_GAP_MEASURED: dict[str, int] = {"Probe": 236, "SCV": 271, "Zealot": 607, "Stalker": 671}
"""Most common loops between births of one type from one producer in the replays (Probe 280 of 560
gaps, SCV 674 of 918, Zealot 357 of 657, Stalker 39 of 75). Each is the train time minus one loop
(237, 272, 608, 672): the queue starts the next unit in the loop the previous one finishes."""

OPENING_COLLECTION_MEASURED: dict[int, int] = {160: 209, 320: 671, 480: 699}
"""The AI player's minerals collection rate (PlayerStats, per real minute) at loops 160, 320 and
480 with its 12 starting workers: the same in 79, 80 and 63 of the 80 replays (the human's is 209
at loop 160 in 65 of 80). By ``ECONOMY.collection_rate`` that is 25 minerals
delivered by loop 160 and 120 in loops 80-320: a calibration target for a worker model's opening
(walk to the patch, mine, return), from tracker PlayerStats of the replays in ``REPLAY_SOURCE``."""

TECHLAB_OFFSET = (2.5, -0.5)
"""Add-on centre minus its Barracks' centre, game units (x, y): the 2x2 add-on sits flush right of
the 3x3 building (``Footprint3x3AddOn2x2``, liberty FootprintData)."""


def _xml(mod: str, catalog: str, entry: str, fld: str) -> str:
    # "a+b": both mods set the same value (the later one repeats it).
    paths = " and ".join(f"mods/{m}.sc2mod/base.sc2data/GameData/{catalog}Data.xml" for m in mod.split("+"))
    return f"{GAME_DATA_REPO}@{GAME_DATA_COMMIT[:8]} {paths} {entry} {fld}"


# Stats whose value is set by a mod other than Liberty (read with scripts/lite_game_data.py).
_MOD_OVERRIDES: dict[tuple[str, str], str] = {
    ("Nexus", "hp"): "swarm",
    ("Nexus", "shield"): "swarm",
    ("Nexus", "supply_provided"): "voidmulti",
    ("CommandCenter", "supply_provided"): "voidmulti",
    ("OrbitalCommand", "supply_provided"): "voidmulti",
    ("Forge", "hp"): "swarm",
    ("Forge", "shield"): "swarm",
    ("SupplyDepot", "hp"): "swarm",
    ("SupplyDepotLowered", "hp"): "swarm",
    ("Zealot", "build_time"): "libertymulti+swarm",
    ("Forge", "build_time"): "libertymulti+swarm",
    ("Barracks", "build_time"): "libertymulti+swarm",
    ("Barracks", "requirements"): "libertymulti+swarm",
    ("Marauder", "weapons"): "voidmulti",
    ("Zealot", "radius"): "core",
}

_UNIT_STATS = {
    "hp": "LifeMax",
    "shield": "ShieldsMax",
    "armor": "LifeArmor",
    "speed": "Speed",
    "sight": "Sight",
    "radius": "Radius",
    "minerals": "CostResource[Minerals]",
    "gas": "CostResource[Vespene]",
    "supply_cost": "-Food",
    "supply_provided": "Food",
    "attributes": "Attributes",
    "footprint": "PlacementFootprint",
    "acceleration": "Acceleration",
    "attack_target_priority": "AttackTargetPriority",
    "shield_regen": "ShieldRegenRate (per normal s) / 16",
    "shield_regen_delay": "ShieldRegenDelay x 16",
}


def _provenance(u: UnitType) -> dict[str, str]:
    src: dict[str, str] = {}
    for stat, fld in _UNIT_STATS.items():
        mod = _MOD_OVERRIDES.get((u.name, stat), "liberty")
        src[stat] = _xml(mod, "Unit", f"CUnit id={u.xml_id}", fld)
    if u.ability_name:
        abil, cmd = u.ability_name.split(",")
        mod = _MOD_OVERRIDES.get((u.name, "build_time"), "liberty")
        src["build_time"] = _xml(mod, "Abil", f"id={abil} InfoArray[{cmd}]", "Time x 16 loops/s")
        src["ability_id"] = (
            "github.com/Blizzard/s2client-proto stableid.json @dd91ad39 Abilities "
            f"name={abil} (command {cmd}); shipped as sc2_envs/replays/data/stableid.json.gz"
        )
        mod = _MOD_OVERRIDES.get((u.name, "requirements"), "liberty")
        src["requirements"] = _xml(mod, "Abil", f"id={abil} InfoArray[{cmd}] Button", "Requirements")
    src["type_id"] = "github.com/Blizzard/s2client-proto stableid.json @dd91ad39 Units name=" + u.name
    for w in u.weapons:
        mod = _MOD_OVERRIDES.get((u.name, "weapons"), "liberty")
        src[f"weapon.{w.name}"] = (
            _xml("liberty", "Weapon", f"CWeaponLegacy id={w.name}", "Range, Period, DamagePoint, TargetFilters")
            + "; damage and AttributeBonus: "
            + _xml(mod, "Effect", "damage effect at the end of the weapon's Effect chain", "Amount, AttributeBonus")
        )
    if u.name == "OrbitalCommand":
        src["minerals"] = _xml("liberty", "Unit", "CUnit id=OrbitalCommand minus CUnit id=CommandCenter", "CostResource")
        src["energy"] = _xml("liberty", "Unit", "CUnit id=OrbitalCommand", "EnergyStart, EnergyMax, EnergyRegenRate")
        src["build_time"] = _xml("liberty", "Abil", "CAbilMorph id=UpgradeToOrbital InfoArray", "DurationArray[Delay]")
        src["requirements"] = _xml("liberty", "Abil", "CAbilMorph id=UpgradeToOrbital CmdButtonArray[Execute]", "Requirements")
    if u.name == "SupplyDepotLowered":
        src["minerals"] = _xml("liberty", "Unit", "CUnit id=SupplyDepotLowered minus CUnit id=SupplyDepot", "CostResource")
        src["build_time"] = (
            _xml("liberty", "Abil", "CAbilMorph id=SupplyDepotLower InfoArray", "SectionArray[Abils]")
            + " (no Delay: the type changes when the order runs; the Collide and Stats sections' Delay 1.3 s, when "
            "ground units may cross it and its stats switch, is not modelled); the replays' UnitTypeChange comes 3-13 "
            f"loops after the first depot's UnitDone in all 80 of {REPLAY_SOURCE}"
        )
        src["footprint"] = _xml("liberty", "Unit", "CUnit id=SupplyDepotLowered", "Footprint Footprint2x2Underground")
        src["tech_alias"] = _xml("liberty", "Unit", "CUnit id=SupplyDepotLowered", "TechAliasArray Alias_SupplyDepot")
    if u.name == "MULE":
        src["lifetime"] = _xml("liberty", "Behavior", "CBehaviorBuff id=MULETimedLife", "Duration")
        src["ability_id"] = "github.com/Blizzard/s2client-proto stableid.json @dd91ad39 Abilities name=CalldownMULE"
        src["minerals"] = "called down with Orbital Command energy (ECONOMY.mule_energy_cost), no mineral price"
    if u.name == "Pylon":
        src["power_radius"] = _xml("libertymulti+swarm", "Behavior", "CBehaviorPowerSource id=PowerSource", "Radius")
    if u.needs_power:
        src["needs_power"] = _xml("liberty", "Unit", f"CUnit id={u.xml_id}", "BehaviorArray PowerUser*")
    if u.name == "Probe":
        src["build_time_at_nexus"] = (
            _xml("voidmulti", "Behavior", "CBehaviorBuff id=TimeWarpProduction", "Modification TimeScale=1.15")
            + f"; measured 236 loops between Probe births (280 of 560 gaps) in {REPLAY_SOURCE}"
        )
    if u.race == _N:
        src["sight"] = "Core CUnit default (unset in every mod)"
    return src


PROVENANCE: dict[str, dict[str, str]] = {name: _provenance(u) for name, u in UNITS.items()}
"""``PROVENANCE[unit][stat]``: the public source of each value of ``UNITS``."""

ECONOMY_PROVENANCE: dict[str, str] = {
    "start_minerals": f"PlayerStats at loop 1 in all 80 replays: 50 minerals, 12 workers, food 12 of 15; {REPLAY_SOURCE}",
    "start_workers": "UnitBorn events at loop 0: 12 workers per player in all 80 replays; " + REPLAY_SOURCE,
    "start_food_cap": _xml("voidmulti", "Unit", "CUnit id=Nexus / CommandCenter", "Food 15"),
    "minerals_per_trip": _xml("liberty", "Behavior", "CBehaviorResource id=MineralFieldMinerals", "HarvestAmount"),
    "mineral_harvest_time_s": _xml("liberty", "Behavior", "CBehaviorResource id=MineralFieldMinerals", "HarvestTime"),
    "mineral_return_delay_s": _xml("liberty", "Behavior", "CBehaviorResource id=MineralFieldMinerals", "ReturnDelay"),
    "ideal_mineral_harvesters": _xml(
        "libertymulti+voidmulti", "Behavior", "CBehaviorResource id=MineralFieldMinerals", "IdealHarvesterCount"
    ),
    "gas_per_trip": _xml("liberty", "Behavior", "CBehaviorResource id=HarvestableVespeneGeyserGas", "HarvestAmount"),
    "gas_harvest_time_s": _xml("liberty", "Behavior", "CBehaviorResource id=HarvestableVespeneGeyserGas", "HarvestTime"),
    "ideal_gas_harvesters": _xml(
        "liberty", "Behavior", "CBehaviorResource id=HarvestableVespeneGeyserGas", "IdealHarvesterCount"
    ),
    "mineral_field_contents": _xml("liberty", "Behavior", "CBehaviorResource id=MineralFieldMinerals", "Contents"),
    "mineral_field_750_contents": _xml("void", "Behavior", "CBehaviorResource id=MineralFieldMinerals750", "Contents"),
    "geyser_contents": _xml("voidmulti", "Behavior", "CBehaviorResource id=RawVespeneGeyserGas", "Contents"),
    "mule_minerals_per_trip": _xml("voidmulti", "Abil", "CAbilHarvest id=MULEGather", "ResourceAmountRequest[Minerals]"),
    "mule_harvest_time_s": _xml("liberty", "Abil", "CAbilHarvest id=MULEGather", "ResourceTimeMultiplier[Minerals] 2.05")
    + " x the field's HarvestTime",
    "mule_shares_patch": _xml("voidmulti", "Abil", "CAbilHarvest id=MULEGather", "ResourceQueueIndex 1"),
    "mule_energy_cost": _xml("liberty", "Abil", "CAbilEffectTarget id=CalldownMULE", "Cost Vital[Energy]"),
    "nexus_train_time_scale": _xml("voidmulti", "Behavior", "CBehaviorBuff id=TimeWarpProduction", "Modification TimeScale"),
    "nexus_probe_interval_measured": "mode of Probe birth gaps at one Nexus, 280 of 560: " + REPLAY_SOURCE,
    "power_radius": _xml("libertymulti+swarm", "Behavior", "CBehaviorPowerSource id=PowerSource", "Radius"),
    "worker_speed": _xml("liberty", "Unit", "CUnit id=Probe / SCV", "Speed"),
    "supply_max": "game rule: food cap 200 (not in the catalogs)",
    "chrono_energy_cost": "no ChronoBoostEnergyCost ability or behaviour in the 3.16-era data (" + GAME_DATA_COMMIT[:8] + "); "
    "the void TimeWarp ability costs 0 energy and no Chrono command appears in the replays",
    "chrono_duration": "as chrono_energy_cost",
    "chrono_rate": "as chrono_energy_cost",
    "collection_rate_window": "measured: PlayerStats collection rates are multiples of 5 (minerals) and 4 (vespene) "
    "x 1344/240 (mean distance to the nearest multiple 0.036 and 0.030 of a step for window 240; 0.23-0.33 for "
    "160, 200, 224, 256, 280, 320) over 20 replays from loop 480 on; " + REPLAY_SOURCE,
}
"""``ECONOMY_PROVENANCE[field]``: the source of each ``ECONOMY`` value."""

DIFFERENCES_4_10: dict[str, str] = {
    "Stalker.ParticleDisruptors": "4.10: 13 (+5 armoured), period 1.87 s (voidmulti); 3.16-era: Liberty's 10 (+4), 1.44 s",
    "Marauder.PunisherGrenades": "4.10: one grenade of 10 (+10 armoured) (Liberty; the LaunchSet is no longer the weapon's "
    "effect); 3.16-era: two of 5 (+5)",
    "Assimilator": "4.10: 300 HP / 300 shields (voidmulti); 3.16-era: 450 / 450",
    "Nexus.energy": "4.10: 50 of 200 energy and Chrono Boost (50 energy, x1.5 for 20 real s); 3.16-era: no energy "
    "(void EnergyMax 0) and TimeWarpProduction x1.15 with no duration",
    "MineralField/VespeneGeyser": "4.10: 1800 / 900 minerals, 2250 gas; 3.16-era: 1500 / 900, 2000",
    "Adept": "4.10: 42 s train; 3.16-era: 38 s (not in this profile's scope)",
}
"""Where SC2GameData db03e82a (4.10.0.75689) differs from this profile (``profile_4_10`` applies them)."""


__all__ = [
    "BIRTH_GAP_MEASURED",
    "DIFFERENCES_4_10",
    "ECONOMY",
    "ECONOMY_PROVENANCE",
    "GAME_DATA_COMMIT",
    "OPENING_COLLECTION_MEASURED",
    "Economy",
    "LOOPS_PER_SECOND",
    "PROFILE",
    "PROVENANCE",
    "TECHLAB_OFFSET",
    "UNITS",
    "UnitType",
    "Weapon",
]
