"""Command line: ``python -m sc2_envs.replays REPLAY_DIR --out OUT_DIR [options]``.

Converts every ``*.SC2Replay`` under ``REPLAY_DIR`` into the sharded dataset described in
``sc2_envs.replays.dataset``, printing one line per file, the action-type distribution and
the ability-mapping coverage.
"""

from __future__ import annotations

import argparse
import sys

from sc2_envs.replays.dataset import convert_replays, find_replays
from sc2_envs.replays.extract import StreamConfig


def main(argv=None) -> int:
    """Run the converter; returns 0 when at least one file converted, else 1."""
    p = argparse.ArgumentParser(prog="python -m sc2_envs.replays", description=__doc__.splitlines()[0])
    p.add_argument("replays", help="folder (searched recursively) or a single .SC2Replay file")
    p.add_argument("--out", default=None, help="output folder; omit to only print the report")
    p.add_argument(
        "--sample", choices=["actions", "every_k"], default="actions", help="one row per action, or one row every k game loops"
    )
    p.add_argument("--k", type=int, default=8, help="stride in game loops for --sample every_k")
    p.add_argument("--players", choices=["humans", "winners"], default="humans", help="which players' streams to write")
    p.add_argument("--max-entities", type=int, default=256)
    p.add_argument("--max-selected", type=int, default=64)
    p.add_argument("--raw-resolution", type=int, default=64)
    p.add_argument(
        "--enemy-units",
        choices=["all", "none"],
        default="all",
        help="include enemy units in the entity list (replays are omniscient)",
    )
    p.add_argument("--include-target-updates", action="store_true", help="also emit SCmdUpdateTarget* events as actions")
    p.add_argument("--shard-rows", type=int, default=20000)
    p.add_argument(
        "--stableid",
        default=None,
        help="path of stableid.json or stableid.json.gz (default $SC2_ENVS_SHARED_DATA/sc2_static/stableid.json if set, else the copy shipped with sc2_envs)",
    )
    p.add_argument("--no-progress", action="store_true")
    a = p.parse_args(argv)
    cfg = StreamConfig(
        max_entities=a.max_entities,
        max_selected=a.max_selected,
        raw_resolution=a.raw_resolution,
        enemy_units=a.enemy_units,
        sample=a.sample,
        k=a.k,
        include_target_updates=a.include_target_updates,
    )
    files = find_replays(a.replays)
    print(
        f"replays: {len(files)} .SC2Replay file(s) under {a.replays} -> {a.out or 'report only (no --out)'} | "
        f"sample {a.sample}{f' k={a.k}' if a.sample == 'every_k' else ''}, players {a.players}, enemy units "
        f"{a.enemy_units}, target updates {a.include_target_updates} | max entities {a.max_entities}, max selected "
        f"{a.max_selected}, raw resolution {a.raw_resolution}, {a.shard_rows} rows per shard",
        flush=True,
    )
    summary = convert_replays(
        files,
        a.out,
        cfg,
        players=a.players,
        shard_rows=a.shard_rows,
        stableid_path=a.stableid,
        progress=not a.no_progress,
    )
    return 0 if summary.converted else 1


if __name__ == "__main__":
    sys.exit(main())
