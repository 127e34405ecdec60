"""Command line: ``python -m sc2_envs.replays REPLAY_DIR --out OUT_DIR [options]``.

Converts every ``*.SC2Replay`` under ``REPLAY_DIR`` into the sharded dataset described in
``sc2_envs.replays.dataset``, printing one line per file, the action-type distribution and
the ability-mapping coverage. A command line that could only fail later (a missing or replay-less folder,
a size or stride below 1, a missing ``--stableid``, an ``--out`` that is a file) is one usage line (exit
status 2) before any file is read; a run in which no file converts ends with an error line (exit status 1).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

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
        help=(
            "path of stableid.json or stableid.json.gz (default $SC2_ENVS_SHARED_DATA/sc2_static/stableid.json if set, "
            "else the copy shipped with sc2_envs)"
        ),
    )
    p.add_argument("--no-progress", action="store_true")
    a = p.parse_args(argv)
    files = check_args(p, a)
    cfg = StreamConfig(
        max_entities=a.max_entities,
        max_selected=a.max_selected,
        raw_resolution=a.raw_resolution,
        enemy_units=a.enemy_units,
        sample=a.sample,
        k=a.k,
        include_target_updates=a.include_target_updates,
    )
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
    if not summary.converted:
        print(
            f"{p.prog}: error: none of the {summary.files} replay file(s) converted (errors: {summary.errors}; "
            "one line per file above)",
            file=sys.stderr,
        )
    return 0 if summary.converted else 1


def check_args(parser: argparse.ArgumentParser, a: argparse.Namespace) -> list[Path]:
    """The replay files of a command line, after refusing what could only fail later (``parser.error``: one
    line naming the flag and its value, exit status 2, before any file is read or written).

    Refused: a replay path that does not exist, a folder with no ``.SC2Replay`` file, a ``--k``, ``--max-entities``,
    ``--max-selected``, ``--raw-resolution`` or ``--shard-rows`` below 1, a ``--stableid`` that is not a file, and
    an ``--out`` that is (or is inside) a file.
    """
    for flag, value, expected in (
        ("--k", a.k, "a positive stride in game loops"),
        ("--max-entities", a.max_entities, "a positive integer"),
        ("--max-selected", a.max_selected, "a positive integer"),
        ("--raw-resolution", a.raw_resolution, "a positive integer"),
        ("--shard-rows", a.shard_rows, "a positive row count"),
    ):
        if value < 1:
            parser.error(f"{flag} {value}: expected {expected}")
    if a.stableid is not None and not Path(a.stableid).is_file():
        parser.error(f"--stableid {a.stableid!r}: no such file; expected stableid.json or stableid.json.gz")
    if a.out is not None:
        out = Path(a.out).absolute()
        existing = next(q for q in (out, *out.parents) if q.exists() or q == q.parent)
        if not existing.is_dir():
            where = "is a file" if existing == out else f"is inside {str(existing)!r}, which is a file"
            parser.error(f"--out {a.out!r} {where}; expected a folder (new or existing)")
    try:
        files = find_replays(a.replays)
    except FileNotFoundError as e:
        parser.error(str(e))
    if not files:
        others = sum(1 for q in Path(a.replays).rglob("*") if q.is_file())
        parser.error(
            f"no .SC2Replay files under {a.replays!r} ({others} other file{'s' if others != 1 else ''}); expected a "
            "folder of replays (searched recursively) or one .SC2Replay file"
        )
    return files


if __name__ == "__main__":
    sys.exit(main())
