"""The built-in very_easy Terran AI on Simple64, fitted to real replays, and a seeded timeline sampler.

Source: the 80 mini-AlphaStar Simple64 replays (3.16.1.55958; liuruoze/HierNet-SC2
``data/replay/`` and liuruoze/Useful-Big-Resources ``replays/simple64_replays.7z``, Apache-2.0).
Their lobby gives the computer difficulty 1 and AI build 0 in all 80 (s2client-proto's
``Difficulty`` enum: VeryEasy = 1); the AI is player 2, Terran, starting at (59.5, 27.5).
``scripts/lite_bot_fit.py REPLAY_DIR`` prints every number below from the tracker events and
``--check`` diffs them with this module.

What the replays show (loops are game loops, 16 per normal second, 22.4 per real second):

* the same opening in every game (``OPENING``: each event's [min, max], median, deciles and the
  cell it happens at; the structures always go to the same cells, ``STRUCTURE_SITES``);
* SCVs: two right away, none while the Command Center waits for the Barracks and morphs, then six
  back to back (271 loops apart) after the Orbital Command: 20 in all, rebuilt when lost;
* army: Marine, Marine, Marauder (61 of 80 games; 16 build a third Marine, every one of them after
  losing a unit: of the 50 games with no loss before the third unit, 47 open Marine, Marine,
  Marauder, 3 Marauder, Marine, Marine, none Marine, Marine, Marine), then nothing new until units
  die or, in the games that last without a loss, a Marine as the fourth (8 of 8) from loop 5,970;
* MULEs every 1,424 loops (the Orbital's 50 energy at 0.5625 per normal second);
* a third depot at a loop that varies widely (3,858-9,020), and in long games a Factory (11 of
  the 26 games that reach loop 8,853), a Command Center at the south-west base (an expansion; 8
  of 26) and a Starport (5 of 14), each at the same cell in (nearly) every game;
* 396 of the 413 army units it loses die on its own half of the map: it defends and never
  attacks before the human wins (median game 7,533 loops, longest 17,952).

Behaviours the replays cannot show are parameters of ``BotParams`` with the assumption stated
(``ASSUMPTIONS``): whether and when it would attack, how far it chases, how its army grows in a
long game without contact, where its late buildings go.

``sample_timeline(seed)`` draws one game's timeline: each opening event's loop from its fitted
deciles (inverse-CDF with linear interpolation, so every draw lies in the replays' [min, max]),
moved later where a prerequisite is not yet done (Barracks after its depot, Marine after the
Barracks, ...), then the SCV, MULE, army and later-tech schedules.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sc2_envs.lite.data.profile_3_16_1 import TECHLAB_OFFSET, UNITS

PROFILE = "3.16.1"
"""The data profile the replays were played in."""

REPLAY_SOURCE = (
    "mini-AlphaStar Simple64 replays (80, 3.16.1.55958): github.com/liuruoze/HierNet-SC2 data/replay/ "
    "@396646056dbe and github.com/liuruoze/Useful-Big-Resources replays/simple64_replays.7z @887716128423, "
    "Apache-2.0; s2protocol tracker events of player 2 (the built-in AI, difficulty 1 = VeryEasy)"
)


@dataclass(frozen=True)
class OpeningEvent:
    """One event of the AI's opening as the tracker records it.

    Attributes:
        name: our name (``"barracks_1"``).
        kind: ``"init"`` (a structure is placed), ``"born"`` (a unit appears) or ``"morph"`` (a
            type change completes: the Orbital Command, the depot lowered).
        unit: the SC2 unit name of the event.
        nth: which occurrence of ``kind`` for ``unit`` after loop 0 (1-based).
        min_loop, median_loop, max_loop: over the replays where it happens, game loops.
        replays: in how many of the 80 replays it happens.
        deciles: the 0, 10, ..., 100th percentiles of its loop (11 values).
        cell: the (x, y) cell most replays record it at, or ``None`` (morphs; MULEs land anywhere
            on the minerals).
    """

    name: str
    kind: str
    unit: str
    nth: int
    min_loop: int
    median_loop: float
    max_loop: int
    replays: int
    deciles: tuple[int, ...]
    cell: tuple[int, int] | None
    profile: str = PROFILE


def _ev(name, kind, unit, nth, lo, med, hi, n, deciles, cell=None) -> OpeningEvent:
    return OpeningEvent(name, kind, unit, nth, lo, med, hi, n, tuple(deciles), cell)


OPENING: tuple[OpeningEvent, ...] = (
    _ev("scv_1", "born", "SCV", 1, 290, 290.0, 290, 80, [290] * 11, (62, 26)),
    _ev("supply_depot_1", "init", "SupplyDepot", 1, 441, 442.0, 448, 80,
        [441, 441, 441, 441, 442, 442, 443, 447, 447, 448, 448], (55, 32)),
    _ev("scv_2", "born", "SCV", 2, 561, 561.0, 561, 80, [561] * 11, (62, 26)),
    _ev("refinery_1", "init", "Refinery", 1, 825, 825.0, 828, 80,
        [825, 825, 825, 825, 825, 825, 828, 828, 828, 828, 828], (56, 20)),
    _ev("supply_depot_1_lowered", "morph", "SupplyDepotLowered", 1, 931, 932.0, 934, 80,
        [931, 932, 932, 932, 932, 932, 932, 932, 933, 933, 934]),
    _ev("barracks_1", "init", "Barracks", 1, 1013, 1037.0, 1060, 80,
        [1013, 1024, 1026, 1028, 1030, 1037, 1041, 1044, 1045, 1049, 1060], (51, 27)),
    _ev("supply_depot_2", "init", "SupplyDepot", 2, 1454, 1489.0, 1509, 80,
        [1454, 1474, 1474, 1478, 1486, 1489, 1491, 1494, 1495, 1501, 1509], (56, 34)),
    _ev("refinery_2", "init", "Refinery", 2, 1598, 1647.5, 1655, 80,
        [1598, 1618, 1621, 1635, 1640, 1648, 1655, 1655, 1655, 1655, 1655], (66, 30)),
    _ev("marine_1", "born", "Marine", 1, 2460, 2507.5, 3915, 80,
        [2460, 2480, 2507, 2507, 2507, 2508, 2509, 2512, 2512, 2512, 3915], (53, 28)),
    _ev("barracks_tech_lab", "init", "BarracksTechLab", 1, 2067, 2532.0, 2543, 80,
        [2067, 2470, 2508, 2514, 2515, 2532, 2533, 2534, 2535, 2535, 2543], (54, 27)),
    _ev("orbital_command", "morph", "OrbitalCommand", 1, 2614, 2694.0, 2708, 80,
        [2614, 2673, 2677, 2685, 2693, 2694, 2694, 2694, 2694, 2700, 2708]),
    _ev("mule_1", "born", "MULE", 1, 2648, 2709.0, 2725, 80,
        [2648, 2680, 2693, 2696, 2709, 2709, 2709, 2709, 2709, 2712, 2725]),
    _ev("scv_3", "born", "SCV", 3, 2888, 2971.0, 2993, 80,
        [2888, 2956, 2963, 2965, 2968, 2971, 2973, 2976, 2977, 2979, 2993], (62, 26)),
    _ev("marine_2", "born", "Marine", 2, 3448, 3531.0, 4939, 80,
        [3448, 3487, 3514, 3531, 3531, 3531, 3532, 3535, 3536, 3536, 4939], (49, 27)),
    _ev("marauder_1", "born", "Marauder", 1, 2955, 4635.0, 5910, 67,
        [2955, 4540, 4593, 4625, 4635, 4635, 4636, 4639, 4640, 4640, 5910], (49, 27)),
    _ev("mule_2", "born", "MULE", 2, 4037, 4117.0, 4265, 80,
        [4037, 4101, 4101, 4117, 4117, 4117, 4117, 4119, 4133, 4133, 4265]),
    _ev("scv_8", "born", "SCV", 8, 4243, 4326.0, 4348, 80,
        [4243, 4311, 4318, 4320, 4323, 4326, 4328, 4331, 4332, 4334, 4348], (62, 26)),
    _ev("supply_depot_3", "init", "SupplyDepot", 3, 3858, 5287.0, 9020, 77,
        [3858, 4103, 4285, 4393, 4670, 5287, 6287, 7305, 7811, 8816, 9020], (63, 33)),
)  # fmt: skip
"""The AI's opening, fitted to the 80 replays (``scripts/lite_bot_fit.py``)."""

OPENING_BY_NAME: dict[str, OpeningEvent] = {e.name: e for e in OPENING}

COUNTS: dict[int, dict[str, tuple[int, float, int]]] = {
    2688: {"scv_alive": (14, 14.0, 14), "army_alive": (0, 1.0, 1), "army_trained": (0, 1.0, 1)},
    4032: {"scv_alive": (8, 18.0, 19), "army_alive": (0, 2.0, 2), "army_trained": (2, 2.0, 2)},
    5376: {"scv_alive": (0, 20.0, 20), "army_alive": (0, 2.0, 3), "army_trained": (3, 3.0, 4)},
    8064: {"scv_alive": (0, 20.0, 20), "army_alive": (0, 3.0, 6), "army_trained": (3, 3.0, 6)},
}
"""``COUNTS[loop][count] = (min, median, max)`` at 2, 3, 4 and 6 real minutes over the replays still
running (80, 80, 80, 35): SCVs alive, army (Marines + Marauders) alive, army trained so far. The
human's attacks pull the minima down; an untouched AI sits at the maxima."""

STRUCTURE_SITES: dict[str, tuple[float, float]] = {
    "supply_depot_1": (55.0, 32.0),
    "supply_depot_2": (56.0, 34.0),
    "supply_depot_3": (63.0, 33.0),
    "refinery_1": (56.5, 20.5),
    "refinery_2": (66.5, 30.5),
    "barracks_1": (51.5, 27.5),
    "barracks_tech_lab": (51.5 + TECHLAB_OFFSET[0], 27.5 + TECHLAB_OFFSET[1]),
    "supply_depot_4": (53.0, 32.0),
    "factory": (58.5, 34.5),
    "commandcenter": (25.5, 23.5),
    "starport": (51.5, 24.5),
    "refinery_3": (18.5, 26.5),
}
"""Exact centres of the AI's structures: the fitted cells with the footprint parity restored (2x2
on whole cells, 3x3 and 5x5 on half cells); the refineries sit on the geysers at (56.5, 20.5) and
(66.5, 30.5); the tech lab is the Barracks' add-on. Later ones, in the replays that reach them: the
fourth depot (8 of 12 at this cell), the Factory (10 of 11), the Starport (5 of 5), the Command
Center (8 of 8: an expansion to the south-west base, whose geyser at (18.5, 26.5) takes the third
Refinery in 4 of 6)."""

LATER_TECH: dict[str, tuple[int, int, int, float, int]] = {
    "Factory": (11, 26, 8853, 9044.0, 9441),
    "CommandCenter": (8, 26, 8993, 9138.0, 9165),
    "Starport": (5, 14, 9902, 10080.0, 10101),
}
"""``LATER_TECH[unit] = (games with it, games lasting to its earliest loop, min, median, max)`` of
the first UnitInit, game loops."""

MULE_INTERVAL = 1424
"""Most common loops between MULEs (98 of 134 gaps; 50 energy / 0.5625 per normal s = 1422)."""
SCV_INTERVAL = 271
"""Loops between SCVs trained back to back (400 of 400 gaps after the Orbital Command)."""
ARMY_ORDERS: tuple[tuple[tuple[str, ...], int], ...] = (
    (("Marine", "Marine", "Marauder"), 61),
    (("Marine", "Marine", "Marine"), 16),
    (("Marauder", "Marine", "Marine"), 3),
)
"""The first three army units and in how many replays (80 in all)."""
ARMY_ORDERS_BEFORE_LOSS: tuple[tuple[tuple[str, ...], int], ...] = (
    (("Marine", "Marine", "Marauder"), 47),
    (("Marauder", "Marine", "Marine"), 3),
)
"""The first three army units in the 50 replays where the AI loses no unit (MULEs aside) before its
third army unit is born. The 16 Marine, Marine, Marine openings of ``ARMY_ORDERS`` all follow a loss:
the third Marine replaces a lost unit, so an untouched bot never opens that way."""
FOURTH_BEFORE_LOSS: tuple[str, int] = ("Marine", 8)
"""The fourth army unit, and in how many replays, among the 8 where it is born before the AI's first
loss (loops 5,970-9,401)."""
ARMY_DEATHS_ON_OWN_HALF = (396, 413)
"""(army units lost on the AI's half of the map, all army units lost) over the 80 replays."""


@dataclass(frozen=True)
class BotParams:
    """Behaviour of the very_easy bot; the fields marked *assumption* are not settled by replays.

    Attributes:
        worker_target: SCVs it keeps (trains back to back up to this, rebuilds losses): 20, the
            maximum alive at 4 and 6 minutes in the replays.
        army_target: army units it keeps before any growth: 3 (the replays' 4-minute maximum).
        army_growth_start: *assumption* loop from which it adds army units without losses: 6290,
            the 4th unit in the one replay that reaches 7,000 loops with no contact.
        army_growth_interval: *assumption* loops between those extra units (that replay: 725, 560).
        army_cap: *assumption* most army units it keeps.
        attack_loop: *assumption* loop at which it sends its army at the enemy's start location;
            ``None`` (default): never, as in every replay (the human always won first).
        defend_radius: *assumption* game units from its own structures within which its army
            engages enemies; beyond it the army returns to ``rally``.
        rally: *assumption* where the army waits: (x, y) in front of its Barracks, above its ramp.
        later_tech: build Factory / Command Center / Starport with the replays' probabilities.
        supply_margin: *assumption* it places a further depot (after the third) when the next
            army unit would bring food used within this many of its food cap.
        profile: the data profile's name.
    """

    worker_target: int = 20
    army_target: int = 3
    army_growth_start: int = 6290
    army_growth_interval: int = 640
    army_cap: int = 12
    attack_loop: int | None = None
    defend_radius: float = 12.0
    rally: tuple[float, float] = (48.0, 28.0)
    later_tech: bool = True
    supply_margin: int = 3
    profile: str = PROFILE


ASSUMPTIONS: dict[str, str] = {
    "attack_loop": "No army unit of the AI ever dies on the human's half of the map before the human wins (the "
    "first Protoss unit it kills there is at loop 9,296 in 1 game of 80). Default: never attacks.",
    "defend_radius": "Its kills and losses happen at home (396 of 413 losses on its half). How far it chases is not "
    "visible; 12 game units covers its main and ramp.",
    "army_growth": "Without contact the army stays at 3 until about loop 6,290 and then grows by one unit per "
    "~640 loops (one replay reaches that long without contact); alternating Marine, Marauder from the fourth, a "
    "Marine in all 8 replays that reach it before a loss (FOURTH_BEFORE_LOSS); the later ones are not seen "
    "untouched.",
    "rebuild": "After losses it trains replacements (SCVs back to 20, army back to its target): production "
    "resumes within ~200 loops of the first loss in the replays.",
    "later_structures": "Factory, Command Center (the south-west expansion) and Starport appear only in the long "
    "games, at the fitted loops and cells (STRUCTURE_SITES); what the bot does with them (units, mining at the "
    "expansion) is past the replays' contact and not fitted.",
}
"""The behaviours ``BotParams`` parameterises because the replays cannot settle them."""


@dataclass(frozen=True)
class TimelineEvent:
    """One scheduled action of the bot.

    Attributes:
        loop: game loop of the tracker-visible event (structure placed, unit born, morph done).
        start_loop: game loop the order starts: the placement loop for structures, birth minus
            train time for units, completion minus morph time for the Orbital Command.
        kind: ``"init"``, ``"born"`` or ``"morph"``.
        unit: SC2 unit name.
        name: the opening event's name, or a generated one (``"scv_9"``, ``"army_4"``).
        position: (x, y) in game units where known, else ``None``.
    """

    loop: int
    start_loop: int
    kind: str
    unit: str
    name: str
    position: tuple[float, float] | None = None
    profile: str = PROFILE


def sample_opening_loop(event: OpeningEvent, rng: np.random.Generator, lowest: float = 0.0) -> int:
    """One draw of ``event``'s loop: inverse CDF over its deciles, in [min_loop, max_loop].

    Args:
        event: the opening event.
        rng: numpy generator.
        lowest: the lowest quantile drawn (0 to 1); ``sample_timeline`` draws the third army unit
            from 0.1 up, leaving out the decile made of the 3 games that opened with a Marauder.

    Returns:
        A game loop.
    """
    u = lowest + (1.0 - lowest) * rng.random()
    return int(round(float(np.interp(u, np.linspace(0.0, 1.0, 11), event.deciles))))


def _clip(x: int, lo: int) -> int:
    return max(int(x), int(lo))


def sample_timeline(seed: int, params: BotParams | None = None, end_loop: int = 18000) -> list[TimelineEvent]:
    """A seeded timeline of the bot's game, untouched by an opponent.

    Args:
        seed: seed of the numpy generator (the same seed gives the same timeline).
        params: behaviour parameters; default ``BotParams()``.
        end_loop: last game loop to schedule (mini-AlphaStar's episodes end at 18,000).

    Returns:
        ``TimelineEvent``s sorted by ``loop``.

    Raises:
        ValueError: ``seed`` is not a non-negative int, or ``end_loop`` is not positive.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    if isinstance(end_loop, bool) or not isinstance(end_loop, (int, np.integer)) or end_loop <= 0:
        raise ValueError(f"end_loop must be a positive int (game loops), got {end_loop!r}")
    p = params or BotParams()
    rng = np.random.default_rng(int(seed))
    t = {e.name: sample_opening_loop(e, rng, 0.1 if e.name == "marauder_1" else 0.0) for e in OPENING}
    bt = {n: UNITS[n].build_time for n in ("SupplyDepot", "Barracks", "BarracksTechLab", "Marine", "Marauder")}

    # Prerequisites: a draw never precedes what the game requires (Barracks needs a finished depot, ...).
    t["barracks_1"] = _clip(t["barracks_1"], t["supply_depot_1"] + bt["SupplyDepot"])
    barracks_done = t["barracks_1"] + bt["Barracks"]
    t["marine_1"] = _clip(t["marine_1"], barracks_done + bt["Marine"])
    if t["barracks_tech_lab"] >= t["marine_1"]:  # the usual order: Marine first, then the add-on
        t["barracks_tech_lab"] = _clip(t["barracks_tech_lab"], t["marine_1"])
    else:  # add-on first: the Marine trains once it is done
        t["barracks_tech_lab"] = _clip(t["barracks_tech_lab"], barracks_done)
        t["marine_1"] = _clip(t["marine_1"], t["barracks_tech_lab"] + bt["BarracksTechLab"] + bt["Marine"])
    lab_done = t["barracks_tech_lab"] + bt["BarracksTechLab"]
    t["orbital_command"] = _clip(t["orbital_command"], barracks_done + UNITS["OrbitalCommand"].build_time)
    t["mule_1"] = _clip(t["mule_1"], t["orbital_command"] + 1)  # called down once the morph is done
    t["scv_3"] = _clip(t["scv_3"], t["orbital_command"] + 1)
    t["marine_2"] = _clip(t["marine_2"], max(lab_done, t["marine_1"]) + bt["Marine"])

    # An untouched bot opens Marine, Marine, Marauder (ARMY_ORDERS_BEFORE_LOSS: the Marine, Marine,
    # Marine openings all replace a lost unit). The 3 Marauder-first games are folded in too: their
    # Marine loops fill the top decile of marine_1 and marine_2 (3915, 4939) that the draws keep.
    order = ARMY_ORDERS_BEFORE_LOSS[0][0]
    third = order[2]
    t["marauder_1"] = _clip(t["marauder_1"], max(lab_done, t["marine_2"]) + bt[third])

    out: list[TimelineEvent] = []

    def add(loop, kind, unit, name, pos=None, start=None):
        if loop <= end_loop:
            if start is None:
                start = loop if kind == "init" else loop - (UNITS[unit].build_time if unit in UNITS else 0)
            out.append(TimelineEvent(int(loop), int(start), kind, unit, name, pos))

    for e in OPENING:
        if e.name in ("mule_2", "scv_8", "marauder_1"):
            continue  # scheduled below from their predecessors
        pos = STRUCTURE_SITES.get(e.name)
        start = t[e.name] - UNITS["OrbitalCommand"].build_time if e.name == "orbital_command" else None
        if e.name == "supply_depot_1_lowered":
            t[e.name] = _clip(t[e.name], t["supply_depot_1"] + bt["SupplyDepot"])
            start = t[e.name]
        add(t[e.name], e.kind, e.unit, e.name, pos, start)
    add(t["marauder_1"], "born", third, "army_3" if third == "Marine" else "marauder_1")

    # SCVs 4-8 back to back after the third, then none while 20 are alive (untouched game).
    n_scv = 12 + 3
    for k in range(4, 4 + p.worker_target - n_scv):
        add(t["scv_3"] + (k - 3) * SCV_INTERVAL, "born", "SCV", f"scv_{k}")
    # MULEs as the Orbital's energy refills.
    k, loop = 1, t["mule_1"] + MULE_INTERVAL
    while loop <= end_loop:
        k += 1
        add(loop, "born", "MULE", f"mule_{k}", start=loop)
        loop += MULE_INTERVAL
    # Army growth after the opening's three units (assumption; see ASSUMPTIONS["army_growth"]),
    # with a further depot whenever the next unit would bring food within supply_margin of the cap.
    food = p.worker_target + sum(UNITS[u].supply_cost for u in order)
    cap = 15 + 8 * 3
    n_army, loop, n_depot = 3, max(p.army_growth_start, t["marauder_1"] + bt["Marine"]), 3
    while n_army < p.army_cap and loop <= end_loop:
        n_army += 1
        unit = "Marine" if n_army % 2 == 0 else "Marauder"
        food += UNITS[unit].supply_cost
        if food > cap - p.supply_margin and cap < 200:
            n_depot += 1
            cap += 8
            start = loop - bt[unit] - bt["SupplyDepot"]
            add(start, "init", "SupplyDepot", f"supply_depot_{n_depot}", STRUCTURE_SITES.get(f"supply_depot_{n_depot}"))
        add(loop, "born", unit, f"army_{n_army}")
        loop += p.army_growth_interval
    # Later structures with the replays' share of the games that last long enough (a Starport
    # needs the Factory: drawn only with one, at its share among the Factory games).
    if p.later_tech:
        have_factory = False
        for unit, (n, reach, lo, _med, hi) in LATER_TECH.items():
            share = n / reach if unit != "Starport" else n / LATER_TECH["Factory"][0]
            if unit == "Starport" and not have_factory:
                continue
            if rng.random() < share:
                have_factory |= unit == "Factory"
                add(int(rng.integers(lo, hi + 1)), "init", unit, unit.lower(), STRUCTURE_SITES[unit.lower()])
    return sorted(out, key=lambda e: (e.loop, e.name))


LATER_ORDERS = ("supply_depot_1_lowered", "supply_depot_3")
"""Timeline events the bot issues as scripted orders besides the opening's, without holding its macro
back until they are done: the first depot lowered (loops 931-934, 3-13 loops after it is done) and
the third depot (median loop 5,287, placed before supply runs short)."""


def sample_later_orders(seed: int, params: BotParams | None = None) -> list[tuple[int, str, str]]:
    """The ``LATER_ORDERS`` events of ``sample_timeline(seed)`` as ``(loop, event, unit name)``.

    Args:
        seed: non-negative int.
        params: behaviour parameters; default ``BotParams()``.

    Returns:
        ``[(loop, event, unit), ...]`` sorted by loop, event ``"init"`` (a structure placed) or
        ``"done"`` (a morph's completion: the depot lowered), as ``sample_opening`` names them.

    Raises:
        ValueError: a bad ``seed`` (as ``sample_timeline``).
    """
    timeline = sample_timeline(seed, params)
    return sorted((e.loop, "done" if e.kind == "morph" else e.kind, e.unit) for e in timeline if e.name in LATER_ORDERS)


def sample_army(seed: int, params: BotParams | None = None) -> tuple[str, ...]:
    """The army units of ``sample_timeline(seed)`` in the order it trains them.

    The bot's macro follows it: its k-th army unit alive (counting those in production) is the
    k-th of this plan, so losses are replaced with the plan's composition.

    Args:
        seed: non-negative int.
        params: behaviour parameters; default ``BotParams()``.

    Returns:
        Unit names (``"Marine"``, ``"Marauder"``), the opening's three first, up to
        ``params.army_cap`` units.

    Raises:
        ValueError: a bad ``seed`` (as ``sample_timeline``).
    """
    timeline = sample_timeline(seed, params)
    return tuple(e.unit for e in timeline if e.kind == "born" and e.unit in ("Marine", "Marauder"))


def counts_at(timeline: list[TimelineEvent], loop: int) -> dict[str, int]:
    """SCVs alive, army alive and army trained by ``loop`` in an untouched timeline.

    Args:
        timeline: from ``sample_timeline``.
        loop: game loop.

    Returns:
        ``{"scv_alive", "army_alive", "army_trained"}`` (the 12 starting SCVs included).
    """
    scv = 12 + sum(1 for e in timeline if e.unit == "SCV" and e.kind == "born" and e.loop <= loop)
    army = sum(1 for e in timeline if e.unit in ("Marine", "Marauder") and e.kind == "born" and e.loop <= loop)
    return {"scv_alive": scv, "army_alive": army, "army_trained": army}


_OPENING_ORDERS = (
    "scv_1",
    "supply_depot_1",
    "scv_2",
    "refinery_1",
    "barracks_1",
    "supply_depot_2",
    "refinery_2",
    "marine_1",
    "barracks_tech_lab",
    "orbital_command",
    "mule_1",
    "marine_2",
    "marauder_1",
    "army_3",
)


def sample_opening(seed: int, params: BotParams | None = None) -> list[tuple[int, str, str]]:
    """The opening part of ``sample_timeline(seed)`` as ``(loop, event, unit name)``, sorted by loop.

    The events an engine issues as scripted orders: the first two SCVs, both depots and refineries
    of the opening, the Barracks and its Tech Lab, the Orbital Command (event ``"done"``: the
    morph's completion), the first MULE and the first three army units. What follows (SCVs up to
    ``worker_target``, MULEs, supply, army growth) is the bot's macro, in ``sample_timeline``.

    Args:
        seed: non-negative int.
        params: behaviour parameters; default ``BotParams()``.

    Returns:
        ``[(loop, event, unit), ...]`` with event ``"born"``, ``"init"`` or ``"done"``.

    Raises:
        ValueError: a bad ``seed`` (as ``sample_timeline``).
    """
    timeline = sample_timeline(seed, params)
    out = []
    for e in timeline:
        if e.name in _OPENING_ORDERS:
            out.append((e.loop, "done" if e.kind == "morph" else e.kind, e.unit))
    return sorted(out)
