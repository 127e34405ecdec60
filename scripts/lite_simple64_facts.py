"""Derive Simple64's layout from real replays' loop-0 tracker events and print it as data.

Every replay carries the map's starting objects: a ``SUnitBornEvent`` at game loop 0 for each
mineral field, geyser, rock, town hall and worker, with the cell its centre lies in (the tracker
truncates positions to whole cells). This script reads those events from a folder of Simple64
replays with ``sc2_envs.replays.decode_replay`` (s2protocol), checks that every replay shows the
same layout, restores exact centres from the footprint's parity (a structure snaps to the cell
grid: an odd footprint side puts the centre on a half cell, an even side on a whole cell; the
footprints are the profile's, e.g. a mineral field is 2x1 and a geyser 3x3), and prints the
values ``sc2_envs/lite/data/simple64.py`` ships. With ``--check`` it compares them with that
module and exits 1 on any difference.

Usage:
    python scripts/lite_simple64_facts.py REPLAY_DIR [--check]

REPLAY_DIR: e.g. the mini-AlphaStar Simple64 replays (liuruoze/HierNet-SC2 ``data/replay/`` and
liuruoze/Useful-Big-Resources ``replays/simple64_replays.7z``, Apache-2.0).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

NEUTRAL_TYPES = ("MineralField", "MineralField750", "VespeneGeyser", "UnbuildableRocksDestructible")
TOWN_HALLS = ("Nexus", "CommandCenter")
WORKERS = ("Probe", "SCV")
FOOTPRINTS = {"UnbuildableRocksDestructible": (2, 2)}  # not a profile unit: its 2x2 footprint


def centre(cell_x: int, cell_y: int, footprint: tuple[int, int]) -> tuple[float, float]:
    """The exact centre of a structure whose centre lies in cell (cell_x, cell_y)."""
    w, h = footprint
    return (cell_x + (0.5 if w % 2 else 0.0), cell_y + (0.5 if h % 2 else 0.0))


def layout(replay) -> dict:
    """Loop-0 objects of one decoded replay: {kind: sorted [(x, y)]} plus player starts and sizes."""
    from sc2_envs.lite.data.profile_3_16_1 import UNITS

    out: dict = {"map_size": replay.map_size, "title": replay.map_title}
    objs: dict[str, list] = {t: [] for t in NEUTRAL_TYPES}
    starts: dict[int, tuple] = {}
    workers: dict[int, list] = {}
    for e in replay.tracker_events:
        if e["_gameloop"] != 0 or not e["_event"].endswith("SUnitBornEvent"):
            continue
        name = e["m_unitTypeName"].decode() if isinstance(e["m_unitTypeName"], bytes) else e["m_unitTypeName"]
        x, y, pid = int(e["m_x"]), int(e["m_y"]), int(e["m_controlPlayerId"])
        if name in NEUTRAL_TYPES:
            fp = FOOTPRINTS.get(name) or UNITS[name].footprint
            objs[name].append(centre(x, y, fp))
        elif name in TOWN_HALLS:
            starts[pid] = (name, centre(x, y, UNITS[name].footprint))
        elif name in WORKERS:
            workers.setdefault(pid, []).append((x, y))
    out["objects"] = {k: sorted(v) for k, v in objs.items()}
    out["starts"] = dict(sorted(starts.items()))
    out["workers"] = {k: sorted(v) for k, v in sorted(workers.items())}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("replay_dir", type=Path)
    ap.add_argument("--check", action="store_true", help="compare with sc2_envs.lite.data.simple64; exit 1 on a difference")
    args = ap.parse_args()

    from sc2_envs.replays import decode_replay

    paths = sorted(args.replay_dir.glob("*.SC2Replay"))
    if not paths:
        print(f"no .SC2Replay files in {args.replay_dir}", file=sys.stderr)
        return 2
    layouts = []
    for p in paths:
        r = decode_replay(p)
        if "64" not in r.map_title:
            print(f"skip {p.name}: map {r.map_title!r}")
            continue
        layouts.append(layout(r))
    keyed = Counter(repr(lay) for lay in layouts)
    first = layouts[0]
    print(f"replays: {len(layouts)}; distinct loop-0 layouts: {len(keyed)}")
    print(f"map: {first['title']!r} size (x, y) = {first['map_size']}")
    for pid, (name, pos) in first["starts"].items():
        print(f"player {pid}: {name} at {pos}; workers at cells {first['workers'][pid]}")
    for kind, pts in first["objects"].items():
        print(f"{kind} ({len(pts)}): {pts}")
    if args.check:
        from sc2_envs.lite.data import simple64

        bad = []
        if len(keyed) != 1:
            bad.append(f"{len(keyed)} different layouts")
        if tuple(first["map_size"]) != simple64.MAP_SIZE:
            bad.append(f"map size {first['map_size']} vs {simple64.MAP_SIZE}")
        if [pos for _, pos in first["starts"].values()] != list(simple64.START_LOCATIONS):
            bad.append(f"starts {first['starts']} vs {simple64.START_LOCATIONS}")
        ours = {
            "MineralField": sorted((m.x, m.y) for m in simple64.MINERAL_FIELDS if m.kind == "MineralField"),
            "MineralField750": sorted((m.x, m.y) for m in simple64.MINERAL_FIELDS if m.kind == "MineralField750"),
            "VespeneGeyser": sorted(simple64.GEYSERS),
            "UnbuildableRocksDestructible": sorted(simple64.ROCKS),
        }
        for kind, pts in first["objects"].items():
            if pts != ours[kind]:
                bad.append(f"{kind}: replays {pts} vs module {ours[kind]}")
        for pid, cells in first["workers"].items():
            if cells != sorted(simple64.START_WORKER_CELLS[pid - 1]):
                bad.append(f"player {pid} workers {cells} vs module {simple64.START_WORKER_CELLS[pid - 1]}")
        for line in bad:
            print("DIFF", line)
        print(f"CHECK replays={len(layouts)} differences={len(bad)}")
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
