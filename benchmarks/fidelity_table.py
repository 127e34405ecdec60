"""Fidelity table: per map, win rate, time-out rate and mean episode length of fixed policies.

For every map and for ``spawn_jitter`` 0 (SMAC v1's fixed starts) and the default, runs the
uniform-random policy and SMAC's heuristic (attack the nearest enemy and keep it until it dies;
``sc2_envs.policies.HeuristicPolicy``, after oxwhirl/smac ``starcraft2.py``
``get_agent_action_heuristic``) for ``--episodes`` episodes (the first episode of each of that many seeded envs), and prints win rate
and time-out rate with Wilson 95 % intervals (``sc2_envs.stats.wilson_interval``) and the mean
episode length in env steps (1 env step = 8 game loops = 0.5 normal-speed seconds).

SMAClite (uoe-agents/smaclite) is not on PyPI (git-only) and not installed here, so its columns are
not produced: the script checks whether it is importable and prints why the column is empty.
Running SMAClite's own env loop beside ours is left for a machine where it is installed.

    python benchmarks/fidelity_table.py --maps MMM MMM2 --episodes 100
    python benchmarks/fidelity_table.py --episodes 32 --markdown   # every map, a docs table
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch
import tyro

from sc2_envs import list_maps, make_batched
from sc2_envs.policies import HeuristicPolicy, random_actions
from sc2_envs.stats import wilson_interval

try:  # SMAClite is git-only (github.com/uoe-agents/smaclite); optional
    import smaclite  # noqa: F401

    SMACLITE_REASON = ""
except ImportError:
    SMACLITE_REASON = "SMAClite not importable (not on PyPI; install from github.com/uoe-agents/smaclite)"


@dataclass
class Args:
    maps: list[str] = field(default_factory=list_maps)
    """maps to evaluate (default: every registered SMAC map)"""
    episodes: int = 64
    """episodes per (map, policy, spawn_jitter): the first episode of each of that many envs (env e draws SeedSequence(seed, spawn_key=(e,)), env e of make_batched(seed=seed))"""
    num_envs: int = 64
    """envs stepped together"""
    jitters: list[float] = field(default_factory=lambda: [0.0, 0.5])
    """spawn_jitter values (0 = SMAC v1's fixed starts; 0.5 = this package's default)"""
    policies: list[str] = field(default_factory=lambda: ["random", "heuristic"])
    """policies: random (uniform over available actions), heuristic (attack-nearest, SMAC's)"""
    seed: int = 0
    """seed of the envs and of the random policy"""
    markdown: bool = False
    """also print the results as a Markdown table (for docs/deviations.md)"""
    instant_weapons: bool = False
    """ablation: every attack lands the loop it starts (no damage point, no missile flight, the
    zealot's two hits together), to measure what SC2's weapon timing changes"""


def evaluate(map_name: str, policy: str, jitter: float, args: Args) -> dict:
    """Run ``policy`` on ``map_name`` for ``args.episodes`` episodes (one per seeded env, in rounds of ``num_envs``).

    Returns:
        dict with ``episodes``, ``wins``, ``timeouts``, ``mean_length`` (env steps) and Wilson
        intervals ``win_ci`` / ``timeout_ci``.
    """
    if policy not in ("random", "heuristic"):
        raise ValueError(f"unknown policy {policy!r}; expected 'random' or 'heuristic'")
    wins = timeouts = episodes = 0
    lengths = []
    while episodes < args.episodes:
        # only the first episode of each env counts: taking the first n episodes to finish would
        # over-sample short episodes
        B = min(args.num_envs, args.episodes - episodes)
        # env e (global index) plays env e of make_batched(seed=args.seed): split streams, not seed + e,
        # so rounds and run seeds never share a battle
        env = make_batched(
            map_name,
            num_envs=B,
            seed=[np.random.SeedSequence(args.seed, spawn_key=(episodes + b,)) for b in range(B)],
            spawn_jitter=jitter,
        )
        out = env.reset()
        heuristic, gen = HeuristicPolicy(env), torch.Generator().manual_seed(args.seed + episodes)
        finished = torch.zeros(B, dtype=torch.bool)
        length = 0
        while not bool(finished.all()):
            a = heuristic(out["avail_actions"]) if policy == "heuristic" else random_actions(out["avail_actions"], gen)
            out = env.step(a)
            length += 1
            new = (out["terminated"] | out["truncated"]) & ~finished
            n_new = int(new.sum())
            episodes += n_new
            wins += int((out["battle_won"] & new).sum())
            timeouts += int((out["truncated"] & new).sum())
            lengths += [length] * n_new
            finished |= new
    return dict(
        map=map_name,
        policy=policy,
        jitter=jitter,
        episodes=episodes,
        wins=wins,
        timeouts=timeouts,
        win_ci=wilson_interval(wins, episodes),
        timeout_ci=wilson_interval(timeouts, episodes),
        mean_length=sum(lengths) / episodes,
    )


def _fmt(r: dict) -> str:
    n = r["episodes"]
    return (
        f"win {r['wins'] / n:.2f} [{r['win_ci'][0]:.2f}, {r['win_ci'][1]:.2f}], "
        f"time-out {r['timeouts'] / n:.2f} [{r['timeout_ci'][0]:.2f}, {r['timeout_ci'][1]:.2f}], "
        f"length {r['mean_length']:.1f}"
    )


def main(args: Args) -> None:
    if args.episodes < 1 or args.num_envs < 1:
        raise SystemExit(f"--episodes and --num-envs must be >= 1, got {args.episodes} and {args.num_envs}")
    unknown = sorted(set(args.maps) - set(list_maps()))
    if unknown:
        raise SystemExit(f"unknown map(s) {unknown}; valid: {list_maps()}")
    if args.instant_weapons:
        from sc2_envs.sim import weapons

        for name in list(weapons.WEAPON_TIMING):
            weapons.WEAPON_TIMING[name] = weapons.WeaponTiming()
    print(
        f"fidelity_table: episodes={args.episodes} num_envs={args.num_envs} seed={args.seed} "
        f"jitters={args.jitters} instant_weapons={args.instant_weapons} device=cpu torch={torch.__version__}",
        flush=True,
    )
    if SMACLITE_REASON:
        print(f"SMAClite columns skipped: {SMACLITE_REASON}", flush=True)
    rows = []
    t0 = time.time()
    for m in args.maps:
        for j in args.jitters:
            for p in args.policies:
                r = evaluate(m, p, j, args)
                rows.append(r)
                print(f"{m:>14} jitter={j:<4} {p:>9}: {_fmt(r)} ({r['episodes']} episodes)", flush=True)
    print(f"done in {time.time() - t0:.0f} s", flush=True)
    if args.markdown:
        print()
        print("| map | spawn_jitter | policy | win rate [95 % CI] | time-outs [95 % CI] | mean length (steps) | SMAClite |")
        print("|---|---|---|---|---|---|---|")
        for r in rows:
            n = r["episodes"]
            print(
                f"| {r['map']} | {r['jitter']:g} | {r['policy']} | {r['wins'] / n:.2f} "
                f"[{r['win_ci'][0]:.2f}, {r['win_ci'][1]:.2f}] | {r['timeouts'] / n:.2f} "
                f"[{r['timeout_ci'][0]:.2f}, {r['timeout_ci'][1]:.2f}] | {r['mean_length']:.1f} | n/a |"
            )


if __name__ == "__main__":
    main(tyro.cli(Args))
