"""The experts' build order in the Simple64 replays: the facts the scripted expert follows.

For each replay of REPLAY_DIR (the mini-AlphaStar Simple64 set: player 1 a human Protoss against the
built-in very_easy Terran AI) it reads player 1's tracker events and commands and prints one line:
the food used (from the latest 160-loop ``SPlayerStatsEvent``) when the 1st and 2nd Pylon and the
1st, 2nd and 3rd Gateway were started (``SUnitInitEvent``), the workers when the first Gateway was
started and their maximum before the first ``Attack`` command, the gateways started and the Zealots
alive at that first ``Attack`` command, and its game loop. The last line,
``SUMMARY replays=N name=median[p10,p90] ...``, is what ``sc2_envs.training.fullgame_scripted`` takes
its build order from (and what ``tests/test_fullgame_scripted.py`` holds it to).

Usage:
    python benchmarks/fullgame_build_order.py REPLAY_DIR [--limit N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

COLUMNS = (
    "pylon1_food",
    "pylon2_food",
    "gateway1_food",
    "gateway2_food",
    "gateway3_food",
    "workers_at_gateway1",
    "max_workers_before_attack",
    "gateways_at_attack",
    "zealots_at_attack",
    "attack_loop",
)


def facts(path: Path) -> dict:
    """Player 1's build-order facts of one replay (NaN where the replay never reaches the event)."""
    from sc2_envs.full_game import spec
    from sc2_envs.replays import decode_replay
    from sc2_envs.replays.abilities import AbilityMapper
    from sc2_envs.replays.extract import player_actions

    r = decode_replay(path)
    names = {f.id: f.name for f in spec.raw_functions()}
    actions, _ = player_actions(r, 1, AbilityMapper(r.base_build))
    attack = next((a.game_loop for a in actions if names[a.function].startswith("Attack_")), None)
    food, workers = [], []  # (loop, value) from PlayerStats
    inits = {"Pylon": [], "Gateway": []}
    zealots: dict[int, tuple[int, int]] = {}  # tag -> (born, died)
    for e in r.tracker_events:
        kind = e["_event"].rsplit(".", 1)[-1]
        loop = e["_gameloop"]
        if kind == "SPlayerStatsEvent" and e["m_playerId"] == 1:
            food.append((loop, e["m_stats"]["m_scoreValueFoodUsed"] / 4096))
            workers.append((loop, e["m_stats"]["m_scoreValueWorkersActiveCount"]))
        elif kind in ("SUnitInitEvent", "SUnitBornEvent") and e["m_controlPlayerId"] == 1:
            name = e["m_unitTypeName"].decode()
            tag = (e["m_unitTagIndex"] << 18) + e["m_unitTagRecycle"]
            if name in inits and loop > 0:
                inits[name].append(loop)
            if name == "Zealot":
                zealots[tag] = (loop, 1 << 62)
        elif kind == "SUnitDiedEvent":
            tag = (e["m_unitTagIndex"] << 18) + e["m_unitTagRecycle"]
            if tag in zealots:
                zealots[tag] = (zealots[tag][0], loop)

    def at(series, loop):
        before = [v for t, v in series if t <= loop]
        return float(before[-1]) if before else float("nan")

    def nth(name, k, series):
        return at(series, inits[name][k]) if len(inits[name]) > k else float("nan")

    end = attack if attack is not None else r.game_loops
    return {
        "pylon1_food": nth("Pylon", 0, food),
        "pylon2_food": nth("Pylon", 1, food),
        "gateway1_food": nth("Gateway", 0, food),
        "gateway2_food": nth("Gateway", 1, food),
        "gateway3_food": nth("Gateway", 2, food),
        "workers_at_gateway1": nth("Gateway", 0, workers),
        "max_workers_before_attack": float(max((v for t, v in workers if t <= end), default=float("nan"))),
        "gateways_at_attack": float(sum(1 for t in inits["Gateway"] if t <= end)) if attack is not None else float("nan"),
        "zealots_at_attack": float(sum(1 for b, d in zealots.values() if b <= end < d))
        if attack is not None
        else float("nan"),
        "attack_loop": float(attack) if attack is not None else float("nan"),
    }


def summary(rows: list[dict]) -> str:
    """``name=median[p10,p90]`` over the replays that reach each event."""
    parts = []
    for c in COLUMNS:
        v = np.array([r[c] for r in rows], float)
        v = v[~np.isnan(v)]
        if len(v):
            p10, med, p90 = np.percentile(v, [10, 50, 90])
            parts.append(f"{c}={med:g}[{p10:g},{p90:g}]")
        else:
            parts.append(f"{c}=nan")
    return " ".join(parts)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("replay_dir")
    p.add_argument("--limit", type=int, default=0, help="first N replays (0: all)")
    a = p.parse_args()
    files = sorted(Path(a.replay_dir).glob("*.SC2Replay"))
    if a.limit:
        files = files[: a.limit]
    if not files:
        raise SystemExit(f"no .SC2Replay files in {a.replay_dir!r}")
    rows = []
    for f in files:
        row = facts(f)
        rows.append(row)
        print(f.name, " ".join(f"{c}={row[c]:g}" for c in COLUMNS), flush=True)
    print(f"SUMMARY replays={len(rows)} {summary(rows)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
