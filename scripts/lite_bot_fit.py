"""Fit the built-in very_easy Terran AI's timeline to real replays and print the table.

Reads a folder of Simple64 replays in which player 2 is the built-in Terran AI (the mini-AlphaStar
set: liuruoze/HierNet-SC2 ``data/replay/`` and liuruoze/Useful-Big-Resources
``replays/simple64_replays.7z``, Apache-2.0; its lobby gives the computer difficulty 1 =
VeryEasy), decodes the tracker events with ``sc2_envs.replays.decode_replay`` and prints, for the
AI player:

* every opening event of ``sc2_envs.lite.data.bot_very_easy.OPENING`` (the n-th UnitInit, UnitBorn
  or UnitTypeChange of a type): in how many replays it happens, its [min, max] and median game
  loop, and the cells it happens at (structures are placed at the same few cells);
* SCVs alive, army (Marines + Marauders) alive and army trained so far at 2, 3, 4 and 6 real
  minutes (loops 2688, 4032, 5376, 8064; 22.4 loops per real second), over the replays still
  running then;
* the gaps between MULEs and between SCVs trained after the Orbital Command, the order of army
  units, the later tech (Factory, Command Center, Starport, ...) and where the AI loses units.

``--check`` compares the printed numbers with ``bot_very_easy`` and exits 1 on a difference.

Usage:
    python scripts/lite_bot_fit.py REPLAY_DIR [--check]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

AI = 2
ARMY = ("Marine", "Marauder")
COUNT_LOOPS = (2688, 4032, 5376, 8064)
LATER_TECH = (
    "Factory",
    "CommandCenter",
    "Starport",
    "Hellion",
    "Raven",
    "Medivac",
    "VikingFighter",
    "Bunker",
    "EngineeringBay",
)


@dataclass
class ReplayEvents:
    """The AI's unit events of one replay, in game-loop order."""

    loops: int
    # (loop, kind, unit name, player, x, y); kind in born, init, morph, died
    events: list = field(default_factory=list)


def read(path: Path) -> ReplayEvents:
    """Decode one replay's tracker events into ``ReplayEvents``."""
    from sc2_envs.replays import decode_replay

    r = decode_replay(path)
    out = ReplayEvents(loops=r.game_loops)
    owner: dict = {}
    for e in r.tracker_events:
        kind = e["_event"].rsplit(".", 1)[-1]
        loop = e["_gameloop"]
        if kind in ("SUnitBornEvent", "SUnitInitEvent"):
            tag = (e["m_unitTagIndex"], e["m_unitTagRecycle"])
            name = e["m_unitTypeName"].decode()
            owner[tag] = (name, e["m_controlPlayerId"])
            k = "born" if kind == "SUnitBornEvent" else "init"
            out.events.append((loop, k, name, e["m_controlPlayerId"], e["m_x"], e["m_y"]))
        elif kind == "SUnitTypeChangeEvent":
            tag = (e["m_unitTagIndex"], e["m_unitTagRecycle"])
            name = e["m_unitTypeName"].decode()
            player = owner.get(tag, ("?", 0))[1]
            owner[tag] = (name, player)
            out.events.append((loop, "morph", name, player, None, None))
        elif kind == "SUnitDiedEvent":
            tag = (e["m_unitTagIndex"], e["m_unitTagRecycle"])
            name, player = owner.get(tag, ("?", 0))
            out.events.append((loop, "died", name, player, e["m_x"], e["m_y"]))
    out.events.sort(key=lambda ev: ev[0])
    return out


def nth_event(rep: ReplayEvents, kind: str, unit: str, nth: int):
    """(loop, x, y) of the AI's ``nth`` (1-based) ``kind`` event of ``unit`` after loop 0, or None."""
    hits = [ev for ev in rep.events if ev[3] == AI and ev[1] == kind and ev[2] == unit and ev[0] > 0]
    return (hits[nth - 1][0], hits[nth - 1][4], hits[nth - 1][5]) if len(hits) >= nth else None


def alive(rep: ReplayEvents, names: tuple[str, ...], loop: int) -> int:
    n = 0
    for ev in rep.events:
        if ev[0] > loop:
            break
        if ev[3] == AI and ev[2] in names:
            n += {"born": 1, "died": -1}.get(ev[1], 0)
    return n


def trained(rep: ReplayEvents, names: tuple[str, ...], loop: int) -> int:
    return sum(1 for ev in rep.events if ev[3] == AI and ev[1] == "born" and ev[2] in names and 0 < ev[0] <= loop)


def fit(reps: list[ReplayEvents]) -> dict:
    """The fitted numbers (see the module docstring)."""
    from sc2_envs.lite.data.bot_very_easy import OPENING

    out: dict = {"replays": len(reps), "opening": {}, "counts": {}}
    for ev in OPENING:
        hits = [nth_event(r, ev.kind, ev.unit, ev.nth) for r in reps]
        loops = [h[0] for h in hits if h]
        cells = Counter((h[1], h[2]) for h in hits if h and h[1] is not None)
        out["opening"][ev.name] = {
            "n": len(loops),
            "min": int(min(loops)),
            "median": float(np.median(loops)),
            "max": int(max(loops)),
            "cells": cells.most_common(3),
            "deciles": tuple(int(round(q)) for q in np.quantile(loops, np.linspace(0, 1, 11))),
        }
    for t in COUNT_LOOPS:
        running = [r for r in reps if r.loops >= t]
        rows = {
            "scv_alive": [alive(r, ("SCV",), t) for r in running],
            "army_alive": [alive(r, ARMY, t) for r in running],
            "army_trained": [trained(r, ARMY, t) for r in running],
        }
        out["counts"][t] = {k: (int(min(v)), float(np.median(v)), int(max(v)), len(v)) for k, v in rows.items()}
    mule_gaps, scv_gaps, orders = Counter(), Counter(), Counter()
    for r in reps:
        mules = [ev[0] for ev in r.events if ev[3] == AI and ev[1] == "born" and ev[2] == "MULE"]
        mule_gaps.update(np.diff(mules).tolist())
        oc = nth_event(r, "morph", "OrbitalCommand", 1)
        scvs = [ev[0] for ev in r.events if ev[3] == AI and ev[1] == "born" and ev[2] == "SCV" and oc and ev[0] > oc[0]]
        scv_gaps.update(np.diff(scvs[:6]).tolist())
        army = [ev[2] for ev in r.events if ev[3] == AI and ev[1] == "born" and ev[2] in ARMY][:3]
        orders[tuple(army)] += 1
    out["mule_gaps"] = mule_gaps.most_common(3)
    out["scv_gaps_after_orbital"] = scv_gaps.most_common(3)
    out["army_order"] = orders.most_common(3)
    # The same before the AI's first loss (MULEs expire, they are not losses): what an untouched
    # bot trains.
    before, fourth = Counter(), Counter()
    for r in reps:
        loss = min((ev[0] for ev in r.events if ev[3] == AI and ev[1] == "died" and ev[2] != "MULE" and ev[0] > 0),
                   default=r.loops + 1)  # fmt: skip
        army = [ev[2] for ev in r.events if ev[3] == AI and ev[1] == "born" and ev[2] in ARMY and ev[0] < loss]
        if len(army) >= 3:
            before[tuple(army[:3])] += 1
        if len(army) >= 4:
            fourth[army[3]] += 1
    out["army_order_before_loss"] = before.most_common()
    out["fourth_before_loss"] = fourth.most_common()
    later = {}
    for name in LATER_TECH:
        firsts = []
        for r in reps:
            hits = [ev[0] for ev in r.events if ev[3] == AI and ev[2] == name and ev[1] in ("init", "born") and ev[0] > 0]
            if hits:
                firsts.append(hits[0])
        if firsts:
            # Share among the replays still running at the earliest first appearance.
            reach = sum(1 for r in reps if r.loops >= min(firsts))
            later[name] = (len(firsts), reach, int(min(firsts)), float(np.median(firsts)), int(max(firsts)))
    out["later_tech"] = later
    sites = {}
    for unit, nth in (("Factory", 1), ("CommandCenter", 1), ("Starport", 1), ("SupplyDepot", 4), ("Refinery", 3)):
        cells = Counter((h[1], h[2]) for h in (nth_event(r, "init", unit, nth) for r in reps) if h)
        sites[f"{unit} #{nth}"] = (sum(cells.values()), cells.most_common(2))
    out["later_sites"] = sites
    # Where the AI's army loses units: the human attacks it at home (see bot_very_easy).
    out["army_deaths_on_ai_half"] = sum(
        1 for r in reps for ev in r.events if ev[3] == AI and ev[1] == "died" and ev[2] in ARMY and ev[4] + ev[5] < 88
    )
    out["army_deaths_total"] = sum(1 for r in reps for ev in r.events if ev[3] == AI and ev[1] == "died" and ev[2] in ARMY)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("replay_dir", type=Path)
    ap.add_argument("--check", action="store_true", help="compare with sc2_envs.lite.data.bot_very_easy")
    args = ap.parse_args()
    paths = sorted(args.replay_dir.glob("*.SC2Replay"))
    if not paths:
        print(f"no .SC2Replay files in {args.replay_dir}", file=sys.stderr)
        return 2
    res = fit([read(p) for p in paths])
    print(f"replays: {res['replays']}")
    print(f"{'event':24s} {'n':>3s} {'min':>6s} {'median':>8s} {'max':>6s}  cells (x, y): count")
    for name, row in res["opening"].items():
        cells = ", ".join(f"{c}: {k}" for c, k in row["cells"])
        print(f"{name:24s} {row['n']:3d} {row['min']:6d} {row['median']:8.1f} {row['max']:6d}  {cells}")
        print(f"{'':24s} deciles {row['deciles']}")
    print("counts at loop (real min): [min, median, max] over the replays still running")
    for t, rows in res["counts"].items():
        cells = "  ".join(f"{k} [{a}, {m:g}, {b}]" for k, (a, m, b, _) in rows.items())
        print(f"  {t:5d} ({t / 1344:.0f} min, n={rows['scv_alive'][3]}): {cells}")
    print(f"MULE gaps: {res['mule_gaps']}; SCV gaps after the Orbital: {res['scv_gaps_after_orbital']}")
    print(f"first three army units: {res['army_order']}")
    print(f"  in the replays where the AI has lost no unit by then: {res['army_order_before_loss']}")
    print(f"  the fourth, likewise: {res['fourth_before_loss']}")
    print("later tech (replays with it / replays lasting to its earliest loop, min, median, max first loop):")
    for name, (n, reach, a, m, b) in res["later_tech"].items():
        print(f"  {name:16s} {n:3d}/{reach:3d} {a:6d} {m:8.1f} {b:6d}")
    print("later structures' cells (x, y): (replays, most common)")
    for name, (n, cells) in res["later_sites"].items():
        print(f"  {name:18s} {n:3d} {cells}")
    print(f"army deaths on the AI's half of the map: {res['army_deaths_on_ai_half']} of {res['army_deaths_total']}")
    if args.check:
        from sc2_envs.lite.data import bot_very_easy as bot

        bad = []
        for ev in bot.OPENING:
            row = res["opening"][ev.name]
            fitted = (row["min"], row["median"], row["max"], row["n"], row["deciles"])
            if fitted != (ev.min_loop, ev.median_loop, ev.max_loop, ev.replays, ev.deciles):
                bad.append(f"{ev.name}: fitted {row} vs module {ev}")
        for t, rows in res["counts"].items():
            for k, (a, m, b, _) in rows.items():
                if bot.COUNTS[t][k] != (a, m, b):
                    bad.append(f"counts {t} {k}: fitted {(a, m, b)} vs module {bot.COUNTS[t][k]}")
        if res["army_order_before_loss"] != list(bot.ARMY_ORDERS_BEFORE_LOSS):
            bad.append(f"army order before loss: fitted {res['army_order_before_loss']} vs {bot.ARMY_ORDERS_BEFORE_LOSS}")
        if res["fourth_before_loss"] != [bot.FOURTH_BEFORE_LOSS]:
            bad.append(f"fourth before loss: fitted {res['fourth_before_loss']} vs {bot.FOURTH_BEFORE_LOSS}")
        for line in bad:
            print("DIFF", line)
        print(f"CHECK replays={res['replays']} differences={len(bad)}")
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
