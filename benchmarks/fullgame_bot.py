"""How closely the lite engine's very_easy bot follows the real one: opening events and counts vs the replays.

Over N seeded games (default 100) it records, for the bot (player 2), the loop of each opening
event of ``sc2_envs.lite.data.bot_very_easy.OPENING`` and the SCVs and army units alive at 2, 3,
4 and 6 real minutes, and prints, per event, the share of games where it happens (beside the
replays' share) and, among those, the share inside the 80 replays' [min, max] (``OPENING``,
``COUNTS``; fitted by ``scripts/lite_bot_fit.py``); games run to loop 8,065. The issue's bar: every
opening event inside the range in >= 95% of games; the counts inside the ranges.

Two sources:

* ``--source engine`` (default when ``sc2_envs.lite.engine`` imports): B games of ``LiteEngine``
  with ``VeryEasyTerranBot``, the agent idle; the state is read every ``--period`` loops, so an
  event's loop is known to within one period (an event counts as inside when it is within
  [min, max + period)).
* ``--source timeline``: the seeded timelines themselves (``bot_very_easy.sample_timeline``), the
  plan the engine's bot is driven by.

Its last line: ``SUMMARY source=S games=N events_scored=K opening_events_in_range=X worst_event=E:Y
counts_in_range=C`` (X: over the K events seen in any game, the mean share inside the range).

Usage:
    python benchmarks/fullgame_bot.py [--games 100] [--source engine|timeline] [--period 8]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sc2_envs.lite.data import bot_very_easy as bot  # noqa: E402

ARMY = ("Marine", "Marauder")
END_LOOP = max(bot.COUNTS) + 1


def from_timelines(games: int) -> tuple[list[dict[str, int]], list[dict[int, dict[str, int]]]]:
    """Per game: {event name: loop} and {count loop: counts} from the sampled timelines."""
    events, counts = [], []
    for seed in range(games):
        tl = bot.sample_timeline(seed, end_loop=END_LOOP)
        events.append({e.name: e.loop for e in tl})
        counts.append({t: bot.counts_at(tl, t) for t in bot.COUNTS})
    return events, counts


def from_engine(games: int, period: int) -> tuple[list[dict[str, int]], list[dict[int, dict[str, int]]]]:
    """Per game: the loop each opening event is first seen and the counts, from engine games."""
    from sc2_envs.lite.bot import VeryEasyTerranBot
    from sc2_envs.lite.engine import LiteEngine
    from sc2_envs.lite.layout import UI_ALIVE, UI_DONE, UI_OWNER, UI_TYPE

    eng = LiteEngine(num_games=games)
    b = VeryEasyTerranBot(eng)
    b.reset(np.arange(games), np.arange(games))
    cat = eng.catalog
    tid = {n: cat.ids[n] for n in cat.names}
    events: list[dict[str, int]] = [{} for _ in range(games)]
    counts: list[dict[int, dict[str, int]]] = [{} for _ in range(games)]
    # Slots ever seen per (game, unit type, born/init): the n-th event is the n-th distinct slot
    # (a MULE expires before the next one lands, so alive counts alone would miss it).
    seen_slots: dict[tuple[int, str, str], set[int]] = {}
    loop = 0
    while loop < END_LOOP:
        b.run(np.full(games, period, np.int64))
        loop += period
        ui = eng.state.ui
        mine = (ui[:, :, UI_ALIVE] == 1) & (ui[:, :, UI_OWNER] == 2)
        for ev in bot.OPENING:
            if ev.unit not in tid:
                continue  # a type outside the engine's data profile: reported as never seen
            of_type = mine & (ui[:, :, UI_TYPE] == tid[ev.unit])
            if ev.kind == "born":
                of_type &= ui[:, :, UI_DONE] == 1
            base = 12 if ev.unit == "SCV" else 0  # the 12 starting SCVs are not events
            for g in range(games):
                if ev.name in events[g]:
                    continue
                slots = seen_slots.setdefault((g, ev.unit, ev.kind), set())
                slots.update(np.flatnonzero(of_type[g]).tolist())
                if (ev.kind == "morph" and of_type[g].any()) or len(slots) >= base + ev.nth:
                    events[g][ev.name] = loop
        for g in range(games):
            for t in bot.COUNTS:
                if t not in counts[g] and loop >= t:
                    alive = mine[g] & (ui[g, :, UI_DONE] == 1)
                    scv = int((alive & (ui[g, :, UI_TYPE] == tid["SCV"])).sum())
                    army = int((alive & np.isin(ui[g, :, UI_TYPE], [tid[a] for a in ARMY])).sum())
                    counts[g][t] = {"scv_alive": scv, "army_alive": army, "army_trained": army}
    return events, counts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--games", type=int, default=100)
    ap.add_argument("--source", choices=("engine", "timeline"), default=None)
    ap.add_argument("--period", type=int, default=8, help="engine: loops between state reads")
    args = ap.parse_args()
    if args.games < 1 or args.period < 1:
        ap.error(f"--games and --period must be >= 1, got {args.games}, {args.period}")
    source = args.source
    if source is None:
        try:
            import sc2_envs.lite.engine  # noqa: F401

            source = "engine"
        except ImportError:
            source = "timeline"
    t0 = time.perf_counter()
    events, counts = from_engine(args.games, args.period) if source == "engine" else from_timelines(args.games)
    slack = args.period if source == "engine" else 0
    print(f"source={source} games={args.games} ({time.perf_counter() - t0:.1f} s)")
    print(
        f"{'event':24s} {'replays [min, max]':>20s} {'seen':>5s} {'replays':>8s} {'in range':>9s} {'median':>8s}"
        "   (in range: share of the games where it happens)"
    )
    shares = []
    for ev in bot.OPENING:
        seen = [e[ev.name] for e in events if ev.name in e]
        inside = sum(1 for x in seen if ev.min_loop <= x < ev.max_loop + 1 + slack)
        rate = f"{len(seen) / args.games:.2f}"
        head = f"{ev.name:24s} {f'[{ev.min_loop}, {ev.max_loop}]':>20s} {rate:>5s} {ev.replays / 80:8.2f}"
        if not seen:  # an event no game reached by the end loop: not scored
            print(f"{head}        -        -")
            continue
        share = inside / len(seen)
        shares.append((share, ev.name))
        print(f"{head} {share:9.2f} {np.median(seen):8.0f}")
    n_ok = n_all = 0
    print("counts (replays [min, max]; share of games inside):")
    for t, rows in bot.COUNTS.items():
        cells = []
        for key in ("scv_alive", "army_alive"):
            lo, _, hi = rows[key]
            vals = [c[t][key] for c in counts if t in c]
            ok = sum(lo <= v <= hi for v in vals)
            n_ok += ok
            n_all += len(vals)
            cells.append(
                f"{key} [{lo}, {hi}] {ok / max(len(vals), 1):.2f} (median {np.median(vals) if vals else float('nan'):g})"
            )
        print(f"  loop {t:5d}: " + "  ".join(cells))
    overall = float(np.mean([s for s, _ in shares]))
    worst = min(shares)
    print(
        f"SUMMARY source={source} games={args.games} events_scored={len(shares)} opening_events_in_range={overall:.3f} "
        f"worst_event={worst[1]}:{worst[0]:.2f} counts_in_range={n_ok / max(n_all, 1):.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
