"""Fidelity table: per map, win rate, time-out rate and mean episode length of fixed policies.

For every map and for ``spawn_jitter`` 0 (SMAC v1's fixed starts) and the default, runs the
uniform-random policy and SMAC's heuristic (attack the nearest enemy and keep it until it dies;
``sc2_envs.policies.HeuristicPolicy``, after oxwhirl/smac ``starcraft2.py``
``get_agent_action_heuristic``) for ``--episodes`` episodes (the first episode of each of that many seeded envs), and prints
win rate and time-out rate with Wilson 95 % intervals (``sc2_envs.stats.wilson_interval``) and the mean
episode length in env steps (1 env step = 8 game loops = 0.5 normal-speed seconds).

When SMAClite (uoe-agents/smaclite, git-only; see ``benchmarks/peers.py`` for installing it or
pointing ``SMACLITE_PATH`` at a checkout) is importable, the same run also plays the same two
policies on SMAClite's version of every map it ships (``peers.SMACLITE_MAPS``) and prints its figures
beside ours. SMAClite has no spawn jitter (fixed group grids; only the per-tick unit order is
random), so its figures sit in the ``spawn_jitter=0`` rows; SMAC's episode limit is imposed on it
(it has none). Otherwise the script says why the column is empty.

    python benchmarks/fidelity_table.py --maps MMM MMM2 --episodes 100
    python benchmarks/fidelity_table.py --episodes 32 --markdown   # every map, a docs table
    python benchmarks/fidelity_table.py --maps 2s3z MMM --episodes 16 --smaclite-episodes 16 --markdown
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

try:  # run as a script: benchmarks/ is sys.path[0]
    import peers
except ImportError:  # imported by path from the tests
    import importlib.util
    import sys
    from pathlib import Path

    _spec = importlib.util.spec_from_file_location("peers", Path(__file__).with_name("peers.py"))
    peers = importlib.util.module_from_spec(_spec)
    sys.modules["peers"] = peers
    _spec.loader.exec_module(peers)


@dataclass
class Args:
    maps: list[str] = field(default_factory=list_maps)
    """maps to evaluate (default: every registered SMAC map)"""
    episodes: int = 64
    """episodes per (map, policy, spawn_jitter): the first episode of each of that many envs (env e draws SeedSequence(seed,
    spawn_key=(e,)), env e of make_batched(seed=seed))"""
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
    smaclite: bool = True
    """also run SMAClite on the maps it ships, when it is importable (``--no-smaclite`` to skip)"""
    smaclite_episodes: int = 0
    """SMAClite episodes per (map, policy) (0 = same as --episodes); SMAClite runs one env at ~40-80
    env steps/s on one core"""
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


def evaluate_smaclite(map_name: str, policy: str, args: Args) -> dict | None:
    """SMAClite's figures for ``(map_name, policy)`` (``peers.smaclite_evaluate``, with Wilson intervals),
    or None when SMAClite has no such map. Episode e resets with ``SeedSequence(args.seed, spawn_key=(e,))``."""
    if map_name not in peers.SMACLITE_MAPS:
        return None
    r = peers.smaclite_evaluate(map_name, policy, args.smaclite_episodes or args.episodes, seed=args.seed)
    r.update(
        map=map_name,
        policy=policy,
        win_ci=wilson_interval(r["wins"], r["episodes"]),
        timeout_ci=wilson_interval(r["timeouts"], r["episodes"]),
    )
    return r


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
    if args.smaclite_episodes < 0:
        raise SystemExit(f"--smaclite-episodes must be >= 0 (0 = --episodes), got {args.smaclite_episodes}")
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
    smaclite_reason = ""
    if args.smaclite:
        smaclite_reason = peers.import_smaclite()[1]
        if not smaclite_reason and not set(args.maps) & set(peers.SMACLITE_MAPS):
            smaclite_reason = f"SMAClite ships none of {args.maps} (it has {', '.join(peers.SMACLITE_MAPS)})"
    else:
        smaclite_reason = "--no-smaclite"
    if smaclite_reason:
        print(f"SMAClite columns skipped: {smaclite_reason}", flush=True)
    else:
        print(
            f"SMAClite: {args.smaclite_episodes or args.episodes} episodes per (map, policy) on "
            f"{sorted(set(args.maps) & set(peers.SMACLITE_MAPS))}; no spawn jitter (fixed group grids), SMAC's "
            "episode limit imposed",
            flush=True,
        )
    rows, lite = [], {}
    t0 = time.time()
    for m in args.maps:
        for j in args.jitters:
            for p in args.policies:
                r = evaluate(m, p, j, args)
                rows.append(r)
                print(f"{m:>14} jitter={j:<4} {p:>9}: {_fmt(r)} ({r['episodes']} episodes)", flush=True)
        if not smaclite_reason:
            for p in args.policies:
                r = evaluate_smaclite(m, p, args)
                if r is not None:
                    lite[m, p] = r
                    print(
                        f"{m:>14} SMAClite    {p:>9}: {_fmt(r)} ({r['episodes']} episodes, "
                        f"{r['steps_per_s']:.0f} env steps/s)",
                        flush=True,
                    )
    print(f"done in {time.time() - t0:.0f} s", flush=True)
    if args.markdown:
        print()
        print(
            "| map | spawn_jitter | policy | win rate [95 % CI] | time-outs [95 % CI] | mean length (steps) "
            "| SMAClite: win rate [95 % CI] / time-outs / mean length |"
        )
        print("|---|---|---|---|---|---|---|")
        for r in rows:
            n = r["episodes"]
            lr = lite.get((r["map"], r["policy"]))
            if lr is None:
                col = "n/a" if smaclite_reason else "no such map"
            elif r["jitter"] != 0:
                col = "(no spawn jitter)"
            else:
                col = (
                    f"{lr['wins'] / lr['episodes']:.2f} [{lr['win_ci'][0]:.2f}, {lr['win_ci'][1]:.2f}] / "
                    f"{lr['timeouts'] / lr['episodes']:.2f} / {lr['mean_length']:.1f}"
                )
            print(
                f"| {r['map']} | {r['jitter']:g} | {r['policy']} | {r['wins'] / n:.2f} "
                f"[{r['win_ci'][0]:.2f}, {r['win_ci'][1]:.2f}] | {r['timeouts'] / n:.2f} "
                f"[{r['timeout_ci'][0]:.2f}, {r['timeout_ci'][1]:.2f}] | {r['mean_length']:.1f} | {col} |"
            )


if __name__ == "__main__":
    from sc2_envs.training.cli import flowing_help

    main(tyro.cli(flowing_help(Args)))
