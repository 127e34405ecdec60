"""Battle sanity of the simulator: win rates of uniform-random and SMAC-heuristic agents.

Uniform random agents should lose nearly every episode; SMAC's heuristic (attack the nearest enemy
and keep it) should win a clear share. Prints win rates with Wilson 95% intervals over at least
``--episodes`` complete episodes per (map, policy) and writes a CSV.

    python benchmarks/battle_sanity.py --maps 2s3z 3s5z --episodes 256
"""

from __future__ import annotations

import csv
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
import tyro

from sc2_envs import make_batched
from sc2_envs.policies import HeuristicPolicy, random_actions
from sc2_envs.stats import wilson_interval


@dataclass
class Args:
    maps: list[str] = field(default_factory=lambda: ["2s3z", "3s5z", "3m", "8m", "MMM", "1c3s5z"])
    """maps to evaluate"""
    episodes: int = 256
    """complete episodes per (map, policy); the first `episodes` finished episodes count"""
    num_envs: int = 128
    """envs stepped together"""
    seed: int = 0
    """seed of the envs and of the random policy"""
    spawn_jitter: float = 0.5
    """start-position jitter (0 = SMAC v1's fixed starts, one trajectory per policy)"""
    out: str = "benchmarks/results/battle_sanity.csv"
    """CSV output path"""


def evaluate(map_name: str, policy: str, args: Args) -> dict:
    env = make_batched(map_name, num_envs=args.num_envs, seed=args.seed, spawn_jitter=args.spawn_jitter)
    out = env.reset()
    heuristic, gen = HeuristicPolicy(env), torch.Generator().manual_seed(args.seed)
    wins = episodes = 0
    returns, lengths = [], []
    ret = torch.zeros(args.num_envs)
    length = torch.zeros(args.num_envs)
    while episodes < args.episodes:
        a = heuristic(out["avail_actions"]) if policy == "heuristic" else random_actions(out["avail_actions"], gen)
        out = env.step(a)
        ret += out["reward"]
        length += 1
        done = out["terminated"] | out["truncated"]
        for b in done.nonzero().flatten().tolist():
            if episodes < args.episodes:
                episodes += 1
                wins += int(out["battle_won"][b])
                returns.append(float(ret[b]))
                lengths.append(float(length[b]))
        ret[done] = 0
        length[done] = 0
    lo, hi = wilson_interval(wins, episodes)
    return dict(
        map=map_name,
        policy=policy,
        episodes=episodes,
        wins=wins,
        win_rate=wins / episodes,
        ci_low=lo,
        ci_high=hi,
        mean_return=sum(returns) / episodes,
        mean_length=sum(lengths) / episodes,
    )


def main(args: Args) -> None:
    from sc2_envs import list_maps

    if not args.maps or any(m not in list_maps() for m in args.maps):
        raise SystemExit(f"--maps {args.maps}: expected one or more SMAC maps ({', '.join(list_maps())})")
    if args.episodes < 1 or args.num_envs < 1:
        raise SystemExit(f"--episodes {args.episodes} / --num-envs {args.num_envs}: expected integers >= 1")
    if Path(args.out).is_dir():
        raise SystemExit(f"--out {args.out!r} is a folder; expected a CSV file path")
    print(
        f"battle_sanity: maps={args.maps} episodes={args.episodes} num_envs={args.num_envs} seed={args.seed} "
        f"spawn_jitter={args.spawn_jitter} device=cpu",
        flush=True,
    )
    rows = []
    t0 = time.time()
    for m in args.maps:
        for p in ("random", "heuristic"):
            r = evaluate(m, p, args)
            rows.append(r)
            print(
                f"{m:>12} {p:>9}: win rate {r['win_rate']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}] "
                f"({r['wins']}/{r['episodes']}), mean return {r['mean_return']:.2f}, "
                f"mean length {r['mean_length']:.1f} steps",
                flush=True,
            )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {args.out} in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    from sc2_envs.training.cli import flowing_help

    main(tyro.cli(flowing_help(Args)))
