"""Column layout of the lite engine's state arrays (one place, shared by kernels and Python).

The state of ``B`` games is a handful of dense arrays (see ``sc2_envs.lite.state.GameState``);
each array's last axis is a record whose columns are named here. Kernels index with these
module-level ints, which Numba folds into constants.

Time is in game loops (16 per normal-speed game second, 22.4 per real "faster" second);
positions are in map cells (world units), x to the east, y to the north, as in the SC2 API.
"""

from __future__ import annotations

# ---------------------------------------------------------------- per-unit floats  uf[B, U, NUF]
UF_X = 0
UF_Y = 1
UF_HP = 2
UF_SHIELD = 3
UF_ENERGY = 4
UF_BUILD = 5  # construction: game loops of build time done (structures under construction)
UF_WTIMER = 6  # worker: game loops left in the current mining / dropping-off phase
UF_COOLDOWN = 7  # game loops until the weapon may fire again
UF_PROD = 8  # producer: game loops of the head of the production queue done
UF_RALLY_X = 9
UF_RALLY_Y = 10
UF_LIFE = 11  # timed life left in game loops (MULE); 0 = no timed life
UF_LAST_DAMAGED = 12  # game loop of the last damage taken (shield regeneration delay)
UF_BORN = 13  # game loop the unit appeared (a structure placed in loop L first progresses in L + 1)
UF_SPEED = 14  # current speed, cells per game loop (workers accelerate from a stop)
NUF = 15

# ---------------------------------------------------------------- per-unit ints  ui[B, U, NUI]
UI_ALIVE = 0
UI_TYPE = 1  # engine type id (sc2_envs.lite.catalog)
UI_OWNER = 2  # 0 neutral, 1 the agent, 2 the bot
UI_DONE = 3  # 1 built / born, 0 under construction
UI_RECYCLE = 4  # times this slot was reused (the tag's low bits, as SC2's unit tags)
UI_NORDERS = 5  # orders in the order queue
UI_WSTATE = 6  # worker phase, one of WS_*
UI_CARGO = 7  # resources carried
UI_CARGO_KIND = 8  # 1 minerals, 2 vespene
UI_GATHER = 9  # slot of the resource (mineral field or gas building) the worker harvests; -1
UI_TARGET = 10  # slot of the unit being attacked; -1
UI_CONTENTS = 11  # minerals / vespene left (resources and gas buildings)
UI_OCCUPANT = 12  # resources: slot of the worker harvesting it now; -1
UI_NQUEUE = 13  # producer: entries in the production queue
UI_STARTED = 14  # producer: 1 when the head entry started (its supply is taken)
UI_RALLY_SET = 15
UI_BUILDER = 16  # Terran structure under construction: slot of its SCV; -1
UI_POWERED = 17
UI_ADDON = 18  # slot of the add-on (Barracks Tech Lab); -1
UI_HALL = 19  # worker: slot of the town hall it returns cargo to; -1
UI_GEYSER = 20  # gas building: slot of the geyser it stands on; -1
UI_SEEN = 21  # bit 0: counted by the build order; bit 1: snapshot taken by the agent
UI_ACQUIRE = 22  # game loop of the next target scan
NUI = 23

# ---------------------------------------------------------------- order queue  oi[B, U, NQ, NOI], of[B, U, NQ, 2]
NQ = 4  # orders a unit holds (the head plus three queued)
OI_KIND = 0
OI_TARGET = 1  # unit slot, -1
OI_PARAM = 2  # engine type id to build / build site variant; ORD_ATTACK: the target slot's UI_RECYCLE when ordered
NOI = 3
OF_X = 0
OF_Y = 1

ORD_NONE = 0
ORD_MOVE = 1  # walk to a point (Move, Smart on ground, Patrol)
ORD_ATTACK_MOVE = 2  # walk to a point, fighting what is met
ORD_ATTACK = 3  # attack one unit
ORD_HOLD = 4  # stay, fire at what comes in range
ORD_GATHER = 5  # harvest a resource (the worker phases in UI_WSTATE)
ORD_RETURN = 6  # carry cargo home, then harvest again
ORD_BUILD = 7  # walk to a site and place a structure (OI_PARAM type, OF_X/OF_Y centre or OI_TARGET geyser)
ORD_CONSTRUCT = 8  # SCV building a structure (OI_TARGET), held until it is done
ORD_FOLLOW = 9  # walk to a unit (Smart / Move on a friendly or neutral unit)

# worker phases (UI_WSTATE) while gathering
WS_NONE = 0
WS_TO_RESOURCE = 1
WS_WAIT = 2  # at the resource, waiting for the worker on it to leave
WS_HARVEST = 3
WS_TO_HALL = 4
WS_DROPOFF = 5

# ---------------------------------------------------------------- production queue  pq[B, U, PQ]
PQ = 5  # SC2's queue of five

# ---------------------------------------------------------------- per-player floats  pf[B, 3, NPF] (index 1, 2 = players)
PF_MINERALS = 0
PF_VESPENE = 1
PF_FOOD_USED = 2
PF_FOOD_CAP = 3
PF_FOOD_WORKERS = 4
PF_FOOD_ARMY = 5
PF_IDLE_WORKERS = 6
PF_ARMY_COUNT = 7
PF_STRUCTURES = 8
PF_COLLECTED_MINERALS = 9
PF_COLLECTED_VESPENE = 10
PF_SPENT_MINERALS = 11
PF_SPENT_VESPENE = 12
PF_KILLED_VALUE = 13
PF_LOST_VALUE = 14
PF_WORKERS = 15
NPF = 16

# ---------------------------------------------------------------- per-game ints  gi[B, NGI]
GI_LOOP = 0
GI_RESULT = 1  # one of RESULT_*
GI_GHOSTS = 2  # snapshots kept of destroyed, unseen enemy structures
NGI = 3

RESULT_NONE = 0
RESULT_P1_WINS = 1
RESULT_P2_WINS = 2
RESULT_TIE = 3

# Build orders refused on arrival, per player, not yet read  err[B, 2, 1 + ERR_QUEUE] int32: column 0 the
# count, then the ActionResult codes in order. The env reads them every step (one Build command per step),
# so 16 waiting is far above any step's arrivals; a refusal beyond them is counted but its code not kept.
ERR_QUEUE = 16

# snapshots of enemy structures the agent saw and that died unseen  ghost[B, NGHOST, NGF] float32
NGHOST = 32
GH_TYPE = 0
GH_X = 1
GH_Y = 2
GH_TAG = 3
GH_HP_MAX = 4
NGF = 5

# visibility grid values (pysc2 visibility_map)
VIS_HIDDEN = 0
VIS_FOGGED = 1
VIS_VISIBLE = 2

# ---------------------------------------------------------------- commands  ck[B, K_CMD], cf[B, 2], cs[B, MAXSEL]
CK_KIND = 0  # one of CMD_*
CK_PARAM = 1  # engine type id (Build / Train)
CK_TARGET = 2  # unit slot, -1
CK_QUEUED = 3
CK_PLAYER = 4
NCK = 5

CMD_NONE = 0
CMD_SMART_PT = 1
CMD_SMART_UNIT = 2
CMD_ATTACK_PT = 3
CMD_ATTACK_UNIT = 4
CMD_MOVE_PT = 5
CMD_MOVE_UNIT = 6
CMD_HOLD = 7
CMD_STOP = 8
CMD_GATHER = 9
CMD_RETURN = 10
CMD_BUILD_PT = 11
CMD_BUILD_UNIT = 12  # gas building on a geyser
CMD_TRAIN = 13  # also morphs (Orbital Command) and add-ons (Tech Lab)
CMD_RALLY = 14
CMD_CANCEL_LAST = 15
CMD_CANCEL_BUILD = 16
CMD_CALLDOWN_MULE = 17  # on a mineral field (OI target) or a point
NCMD = 18

# ActionResult codes (s2clientprotocol error.proto) reported for refused commands.
AR_SUCCESS = 1
AR_NOT_SUPPORTED = 2
AR_ERROR = 3
AR_QUEUE_IS_FULL = 7
AR_NOT_ENOUGH_MINERALS = 9
AR_NOT_ENOUGH_VESPENE = 10
AR_NOT_ENOUGH_FOOD = 13
AR_NOT_ENOUGH_ENERGY = 17
AR_CANT_TARGET_THAT_UNIT = 36
AR_UNIT_CANT_MOVE = 38
AR_BUILD_TECH_REQUIREMENTS_NOT_MET = 40
AR_CANT_BUILD_LOCATION_INVALID = 44
AR_CANT_BUILD_TOO_FAR_FROM_POWER = 50
AR_BUILDING_IS_UNDER_CONSTRUCTION = 64
AR_TECH_REQUIREMENTS_NOT_MET = 79
AR_MUST_TARGET_RESOURCES = 89
AR_ORDER_QUEUE_IS_FULL = 203
