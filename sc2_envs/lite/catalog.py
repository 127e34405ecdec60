"""The engine's unit-type tables, built from one data profile (``sc2_envs.lite.data``).

Kernels read unit data from two dense tables indexed by an *engine type id* (the position of the
type in the profile's ``UNITS``): ``ti[T, NTI]`` int32 and ``tf[T, NTF]`` float32, with the
columns named below, and the economy constants from ``ec[NEC]`` float64. ``Catalog`` holds them
together with name <-> id maps. Nothing here is a game fact of its own: every number is the
profile's (and carries the profile's provenance), converted to the engine's units (game loops,
cells per game loop).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sc2_envs.lite.data.profiles import get_profile

# ---------------------------------------------------------------- int columns  ti[T, NTI]
TI_GAME_ID = 0  # SC2 API unit type id
TI_RACE = 1  # RACE_*
TI_STRUCTURE = 2
TI_WORKER = 3  # Probe / SCV
TI_RESOURCE = 4  # RES_*
TI_FOOTPRINT_W = 5
TI_FOOTPRINT_H = 6
TI_PRODUCER = 7  # engine type id of the producer (-1 none)
TI_REQUIRES = 8  # engine type id of the (single) requirement (-1 none)
TI_NEEDS_POWER = 9
TI_TOWNHALL = 10  # drop-off for resources
TI_ARMORED = 11
TI_LIGHT = 12
TI_HITS = 13  # weapon hits per attack (0 unarmed)
TI_MINERALS = 14  # price when ordered (morphs: the extra price)
TI_GAS = 15
TI_BUILD_TIME = 16  # game loops of progress (a producer adds TF_PROD_RATE per loop)
TI_MORPH = 17  # 1: the type replaces its producer (Orbital Command)
TI_ADDON = 18  # 1: the type is an add-on built by its producer (Tech Lab)
TI_MULE = 19
TI_BUILT_BY_WORKER = 20  # structures placed by a worker
TI_ABILITY_ID = 21  # SC2 API ability id of the train / build / morph command
TI_ARMY = 22  # counted in army_count / food_army
TI_CAN_MOVE = 23
TI_GAS_BUILDING = 24  # Assimilator / Refinery
TI_TERRAN_BUILD = 25  # the builder stays until the structure is done (Terran)
TI_RALLY = 26  # a producer with a rally point
TI_TRAINS_AS = 27  # the producer type whose units this type trains (Orbital Command trains as a Command Center)
TI_TECH_ALIAS = 28  # the type this one counts as for requirements (a morph: its producer; SC2's TechAliasArray)
NTI = 29

# ---------------------------------------------------------------- float columns  tf[T, NTF]
TF_HP = 0
TF_SHIELD = 1
TF_ARMOR = 2
TF_SPEED = 3  # cells per game loop
TF_SIGHT = 4
TF_RADIUS = 5
TF_DAMAGE = 6  # per hit
TF_BONUS_ARMORED = 7  # extra damage per hit against armoured targets
TF_BONUS_LIGHT = 8
TF_RANGE = 9  # edge to edge, cells
TF_PERIOD = 10  # weapon cooldown, game loops
TF_FOOD = 11  # supply used
TF_FOOD_PROVIDED = 12
TF_ENERGY_START = 13
TF_ENERGY_MAX = 14
TF_ENERGY_REGEN = 15  # per game loop
TF_LIFETIME = 16  # game loops, 0 = none
TF_POWER_RADIUS = 17
TF_PROD_RATE = 18  # production speed of this type as a producer (Nexus 1.15 in 3.16.1)
TF_VALUE = 19  # minerals + gas (total price), for killed / lost value
TF_ACCEL = 20  # cells per game loop per game loop; 0: full speed at once
NTF = 21

# ---------------------------------------------------------------- economy  ec[NEC]
EC_MINERALS_PER_TRIP = 0
EC_MINERAL_HARVEST = 1  # game loops holding a patch
EC_RETURN_DELAY = 2  # game loops at the town hall dropping off
EC_GAS_PER_TRIP = 3
EC_GAS_HARVEST = 4  # game loops inside a gas building
EC_MULE_PER_TRIP = 5
EC_MULE_HARVEST = 6
EC_MULE_ENERGY = 7
EC_POWER_RADIUS = 8
EC_SUPPLY_MAX = 9
EC_SHIELD_REGEN_DELAY = 10  # game loops without damage before shields regenerate
EC_SHIELD_REGEN = 11  # shield points per game loop
EC_ACQUIRE_PERIOD = 12  # game loops between target scans of an idle / attack-moving unit
EC_CANCEL_REFUND = 13  # share of a structure's price refunded when its construction is cancelled
EC_ADDON_DX = 14  # add-on centre minus its producer's centre, cells (the profile's TECHLAB_OFFSET)
EC_ADDON_DY = 15
EC_IDEAL_MINERAL_HARVESTERS = 16  # workers a mineral field's harvest queue takes (IdealHarvesterCount)
NEC = 17

RACE_NEUTRAL, RACE_TERRAN, RACE_PROTOSS = 0, 1, 3  # s2clientprotocol Race values (Terran 1, Protoss 3)
RES_NONE, RES_MINERAL, RES_GEYSER = 0, 1, 2

_RACES = {"Neutral": RACE_NEUTRAL, "Terran": RACE_TERRAN, "Protoss": RACE_PROTOSS}
_TOWNHALLS = frozenset({"Nexus", "CommandCenter", "OrbitalCommand"})
_MINERALS = frozenset({"MineralField", "MineralField750"})
_GEYSERS = frozenset({"VespeneGeyser"})
_GAS_BUILDINGS = frozenset({"Assimilator", "Refinery"})

# Shield regeneration, the game's defaults for every shielded unit (normal-speed seconds): after
# 10 s without damage, 2 shield points per second. Source: SC2GameData liberty UnitData.xml
# CUnit default ShieldRegenDelay 10 / ShieldRegenRate 2 (the values ``sc2_envs.sim.state`` uses).
SHIELD_REGEN_DELAY_S = 10.0
SHIELD_REGEN_RATE_PER_S = 2.0
# Share refunded when a structure under construction is cancelled: 75 % (Liquipedia, "Resources";
# the game's CAbilBuild ``CancelRefundFraction`` is 0.75 for every race).
CANCEL_REFUND = 0.75
# Idle and attack-moving units look for targets every 8 game loops (half a normal second): a
# modelling choice of the lite engine (the game scans continuously); it bounds the O(U^2) scans.
ACQUIRE_PERIOD = 8


@dataclass(frozen=True)
class Catalog:
    """Unit-type tables of one data profile.

    Attributes:
        profile: the profile's name (``"3.16.1"``).
        names: engine type id -> unit name.
        ids: unit name -> engine type id.
        ti: ``(T, NTI)`` int32 integer columns (``TI_*``).
        tf: ``(T, NTF)`` float32 float columns (``TF_*``).
        ec: ``(NEC,)`` float64 economy constants (``EC_*``).
        game_ids: ``(T,)`` int64 SC2 API unit type ids.
        game_to_engine: dense ``(max game id + 1,)`` int32 table, -1 for types outside the profile.
    """

    profile: str
    names: tuple[str, ...]
    ids: dict[str, int]
    ti: np.ndarray
    tf: np.ndarray
    ec: np.ndarray
    game_ids: np.ndarray
    game_to_engine: np.ndarray

    def type_id(self, name: str) -> int:
        """Engine type id of a unit name.

        Raises:
            ValueError: the name is not a type of this profile; the message lists the served ones.
        """
        if name not in self.ids:
            raise ValueError(f"unit type {name!r} is not in data profile {self.profile!r}; served: {list(self.names)}")
        return self.ids[name]


def build_catalog(profile: str = "3.16.1") -> Catalog:
    """Tables of one data profile.

    Args:
        profile: a profile name served by ``sc2_envs.lite.data.profiles``.

    Returns:
        A ``Catalog``.

    Raises:
        ValueError: unknown profile, or a type with more than one requirement (the engine holds
            one; none in the 3.16.1 scope has two).
    """
    mod = get_profile(profile)
    units = mod.UNITS
    eco = mod.ECONOMY
    lps = float(mod.LOOPS_PER_SECOND)
    names = tuple(units)
    ids = {n: i for i, n in enumerate(names)}
    nt = len(names)
    ti = np.zeros((nt, NTI), dtype=np.int32)
    tf = np.zeros((nt, NTF), dtype=np.float32)
    for name, u in units.items():
        t = ids[name]
        ti[t, TI_GAME_ID] = u.type_id
        ti[t, TI_RACE] = _RACES[u.race]
        ti[t, TI_STRUCTURE] = int(u.is_structure)
        ti[t, TI_WORKER] = int(u.is_worker)
        ti[t, TI_RESOURCE] = RES_MINERAL if name in _MINERALS else RES_GEYSER if name in _GEYSERS else RES_NONE
        fw, fh = u.footprint if u.footprint else (0, 0)
        ti[t, TI_FOOTPRINT_W], ti[t, TI_FOOTPRINT_H] = fw, fh
        ti[t, TI_PRODUCER] = ids[u.producer] if u.producer in ids else -1
        if len(u.requirements) > 1:
            raise ValueError(f"{name} needs {u.requirements}; the engine holds one requirement per type")
        ti[t, TI_REQUIRES] = ids[u.requirements[0]] if u.requirements else -1
        ti[t, TI_NEEDS_POWER] = int(u.needs_power)
        ti[t, TI_TOWNHALL] = int(name in _TOWNHALLS)
        ti[t, TI_ARMORED] = int("armored" in u.attributes)
        ti[t, TI_LIGHT] = int("light" in u.attributes)
        ti[t, TI_MINERALS], ti[t, TI_GAS] = u.minerals, u.gas
        producer = u.producer or ""
        ti[t, TI_BUILD_TIME] = u.build_time  # a producer's TF_PROD_RATE scales progress per loop
        ti[t, TI_MORPH] = int(u.minerals_total != u.minerals)
        ti[t, TI_ADDON] = int(u.is_structure and producer in units and units[producer].is_structure and not ti[t, TI_MORPH])
        ti[t, TI_MULE] = int(name == "MULE")
        ti[t, TI_BUILT_BY_WORKER] = int(u.is_structure and producer in units and units[producer].is_worker)
        ti[t, TI_ABILITY_ID] = u.ability_id or 0
        ti[t, TI_ARMY] = int(not u.is_structure and not u.is_worker and u.supply_cost > 0)
        ti[t, TI_CAN_MOVE] = int(u.speed > 0)
        ti[t, TI_GAS_BUILDING] = int(name in _GAS_BUILDINGS)
        ti[t, TI_TERRAN_BUILD] = int(u.race == "Terran" and bool(ti[t, TI_BUILT_BY_WORKER]))
        tf[t, TF_HP], tf[t, TF_SHIELD], tf[t, TF_ARMOR] = u.hp, u.shield, u.armor
        tf[t, TF_SPEED] = u.speed / lps
        # Army units (1000 per normal s^2) are at full speed within a loop: no ramp for them.
        tf[t, TF_ACCEL] = u.acceleration / lps**2 if 0.0 < u.acceleration < 100.0 else 0.0
        tf[t, TF_SIGHT], tf[t, TF_RADIUS] = u.sight, u.radius
        if u.weapons:
            w = u.weapons[0]  # every type in scope has one weapon
            ti[t, TI_HITS] = w.attacks
            tf[t, TF_DAMAGE] = w.damage
            tf[t, TF_BONUS_ARMORED] = w.bonus_damage if w.bonus_attribute == "armored" else 0.0
            tf[t, TF_BONUS_LIGHT] = w.bonus_damage if w.bonus_attribute == "light" else 0.0
            tf[t, TF_RANGE] = w.range
            tf[t, TF_PERIOD] = w.cooldown
        tf[t, TF_FOOD], tf[t, TF_FOOD_PROVIDED] = u.supply_cost, u.supply_provided
        tf[t, TF_ENERGY_START], tf[t, TF_ENERGY_MAX], tf[t, TF_ENERGY_REGEN] = u.energy_start, u.energy_max, u.energy_regen
        tf[t, TF_LIFETIME] = u.lifetime
        tf[t, TF_POWER_RADIUS] = u.power_radius
        tf[t, TF_PROD_RATE] = eco.nexus_train_time_scale if name == "Nexus" else 1.0
        tf[t, TF_VALUE] = u.minerals_total + u.gas_total
    for t in range(nt):
        ti[t, TI_TRAINS_AS] = ti[t, TI_PRODUCER] if ti[t, TI_MORPH] else t
        # An Orbital Command counts as a Command Center, a lowered depot as a Supply Depot (the game
        # data's TechAliasArray: Alias_CommandCenter, Alias_SupplyDepot).
        ti[t, TI_TECH_ALIAS] = ti[t, TI_PRODUCER] if ti[t, TI_MORPH] else t
        ti[t, TI_RALLY] = int(
            bool(ti[t, TI_STRUCTURE]) and any(ti[k, TI_PRODUCER] == t and not ti[k, TI_STRUCTURE] for k in range(nt))
        )
    ec = np.zeros(NEC, dtype=np.float64)
    ec[EC_MINERALS_PER_TRIP] = eco.minerals_per_trip
    ec[EC_MINERAL_HARVEST] = eco.mineral_harvest_time
    ec[EC_RETURN_DELAY] = eco.mineral_return_delay_s * lps
    ec[EC_GAS_PER_TRIP] = eco.gas_per_trip
    ec[EC_GAS_HARVEST] = eco.gas_harvest_time
    ec[EC_MULE_PER_TRIP] = eco.mule_minerals_per_trip
    ec[EC_MULE_HARVEST] = eco.mule_harvest_time
    ec[EC_MULE_ENERGY] = eco.mule_energy_cost
    ec[EC_POWER_RADIUS] = eco.power_radius
    ec[EC_SUPPLY_MAX] = eco.supply_max
    ec[EC_SHIELD_REGEN_DELAY] = SHIELD_REGEN_DELAY_S * lps
    ec[EC_SHIELD_REGEN] = SHIELD_REGEN_RATE_PER_S / lps
    ec[EC_ACQUIRE_PERIOD] = ACQUIRE_PERIOD
    ec[EC_CANCEL_REFUND] = CANCEL_REFUND
    ec[EC_ADDON_DX], ec[EC_ADDON_DY] = mod.TECHLAB_OFFSET
    ec[EC_IDEAL_MINERAL_HARVESTERS] = eco.ideal_mineral_harvesters
    game_ids = ti[:, TI_GAME_ID].astype(np.int64)
    g2e = np.full(int(game_ids.max()) + 1, -1, dtype=np.int32)
    g2e[game_ids] = np.arange(nt, dtype=np.int32)
    return Catalog(profile, names, ids, ti, tf, ec, game_ids, g2e)
