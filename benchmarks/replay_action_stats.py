"""Action-type distribution and no-op share of replay datasets under each frame-sampling mode.

Fixed-stride sampling (one frame every k game loops, as an env with ``step_mul=k`` sees the
game) labels most frames ``no_op``; action-event sampling (AlphaStar, mini-AlphaStar) has
none. This script decodes the replays once (engine-free, s2protocol), builds each human
player's action stream, and prints for every mode the number of samples, the no-op share
and the most frequent action types, plus the ability-mapping coverage.

Usage:
    python benchmarks/replay_action_stats.py [REPLAY_DIR] [--k 8 16] [--top 12]

REPLAY_DIR defaults to ``$SC2_ENVS_SHARED_DATA/replays`` when that variable is set, else to the five
small public replays committed in ``tests/data/replays``.
"""

from __future__ import annotations

import argparse
import collections
import os
import time
from pathlib import Path

from sc2_envs.full_game import spec
from sc2_envs.replays.abilities import AbilityMapper
from sc2_envs.replays.dataset import find_replays
from sc2_envs.replays.decode import ReplayError, decode_replay
from sc2_envs.replays.extract import StreamConfig, player_actions, sample_labels


def main() -> None:
    shared = os.environ.get("SC2_ENVS_SHARED_DATA")
    default_dir = Path(shared) / "replays" if shared else Path(__file__).resolve().parents[1] / "tests" / "data" / "replays"
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("replays", nargs="?", default=str(default_dir))
    p.add_argument("--k", type=int, nargs="+", default=[8, 16], help="strides (game loops) for every_k sampling")
    p.add_argument("--top", type=int, default=12)
    a = p.parse_args()

    names = [f.name for f in spec.raw_functions()]
    modes = [("actions", StreamConfig(sample="actions"))] + [
        (f"every_k k={k}", StreamConfig(sample="every_k", k=k)) for k in a.k
    ]
    counts = {m: collections.Counter() for m, _ in modes}
    groups = collections.defaultdict(lambda: [0, 0])  # folder -> [mapped, commands]
    errors = collections.Counter()
    start = time.time()
    paths = find_replays(a.replays)
    for path in paths:
        try:
            replay = decode_replay(path)
            mapper = AbilityMapper(replay.base_build)
        except ReplayError as e:
            errors[type(e).__name__] += 1
            print(f"error {path.name}: {e}")
            continue
        for player in replay.players:
            if player.control != "human":
                continue
            actions, stats = player_actions(replay, player.player_id, mapper)
            groups[path.parent.name][0] += stats.mapped
            groups[path.parent.name][1] += stats.commands
            for mode, cfg in modes:
                for _, action, _ in sample_labels(actions, replay.game_loops, cfg):
                    counts[mode][names[action.function] if action else "no_op"] += 1
    print(f"{len(paths)} files, errors: {dict(errors) or 'none'}, {time.time() - start:.1f} s")
    for folder, (mapped, total) in sorted(groups.items()):
        print(f"mapping coverage {folder}: {mapped}/{total} = {100 * mapped / max(total, 1):.2f}%")
    for mode, _ in modes:
        c = counts[mode]
        n = sum(c.values())
        print(f"\n[{mode}] samples {n}, no_op share {100 * c['no_op'] / max(n, 1):.2f}%")
        for name, v in c.most_common(a.top):
            print(f"  {name:36s} {v:8d} {100 * v / n:6.2f}%")


if __name__ == "__main__":
    main()
