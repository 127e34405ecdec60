# Evaluation of full-game policies against the built-in bot. Style: CleanRL single file (tyro Args).
# Facts: mini-AlphaStar's evaluation (liuruoze/mini-AlphaStar alphastarmini/core/rl/rl_eval_sl.py: Simple64,
# Protoss vs the very_easy Terran bot, step_mul 8 in RL, 18,000 game loops per game); docs/full_game.md.
"""Evaluate full-game checkpoints and baselines against the bot: mini-AlphaStar's table, with intervals.

    python algos/eval_fullgame.py --checkpoints runs/RUN/best.pt --games 100 --seed 7
    python algos/eval_fullgame.py --policy random scripted --games 100 --seed 7

For each ``AlphaStarPolicy`` checkpoint (``models.alphastar.save_alphastar``: behaviour cloning with
``algos/bc_reweight.py`` on a replay dataset, or RL) and each baseline (``random``: the random legal
policy, ``sc2_envs.lite.policy``; ``scripted``: the replays' build order,
``sc2_envs.training.fullgame_scripted``) it plays ``--games`` games of FullGame-v0 (Protoss on
Simple64 against the very_easy Terran bot; the lite engine by default, ``--backend sc2`` for the real
game) in ``--num-envs`` parallel games, and prints one table row:

| column | meaning |
| --- | --- |
| win rate [lo, hi] | wins / games, Wilson 95% interval (``sc2_envs.stats.wilson_interval``); a timeout is not a win |
| minerals | minerals collected per game (score_cumulative collected_minerals) |
| kills | enemy units and structures killed per game |
| army@5, army@8 | food_army at 5 and 8 real minutes (1344 game loops each), over the games still running then (n) |
| idle | share of decisions whose action_type is no_op or Stop |
| errors | share of decisions the game refused (``action_errors``) |
| length | game length in real minutes |

The first lines are the effective configuration. The rows also go to ``--csv`` (default
``runs/eval_fullgame__<seed>__<unix time>.csv``). A checkpoint that is missing or not an
``AlphaStarPolicy`` checkpoint, an unknown ``--policy``, or ``--games 0`` ends the script before any game
with one line naming the value (exit status 1). On the real game, minerals and kills are read from
the lite engine only and print as n/a, and ``scripted`` needs ``--enemy-start COL ROW``.
"""

from __future__ import annotations

import csv
import os
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np
import torch
import tyro

from sc2_envs.stats import wilson_interval
from sc2_envs.training.fullgame_actor import (
    LOOPS_PER_MINUTE,
    AlphaStarActor,
    LiteProbe,
    make_vector_env,
    play_games,
)

BASELINES = ("random", "scripted")


@dataclass
class Args:
    checkpoints: tuple[str, ...] = ()
    """AlphaStarPolicy checkpoints (models.alphastar.save_alphastar: algos/bc_reweight.py on replays, or RL)"""
    policy: tuple[str, ...] = ()
    """baselines to evaluate too: random (random legal actions) and/or scripted (the replays' build order)"""
    games: int = 100
    """games per policy"""
    seed: int = 0
    """evaluation seed: the bot's jitter of game b of episode k; use one never used to select a checkpoint"""
    num_envs: int = 16
    """games played at once (one batched policy call per step)"""
    backend: str = "lite"
    """lite (the embedded engine) or sc2 (StarCraft II, needs SC2PATH)"""
    step_mul: int = 8
    """game loops per decision (mini-AlphaStar plays at 8)"""
    game_steps_per_episode: int = 18000
    """game loops before a game is cut (a tie): mini-AlphaStar's 18,000 (13.4 real minutes)"""
    omniscient: bool = False
    """lite engine: no fog of war (the replay dataset's default view); default: fog, as the real game"""
    greedy: bool = False
    """argmax every head (default: sample, as mini-AlphaStar plays)"""
    mask_action_type: bool = True
    """mask unavailable action types for checkpoints that do not read the mask (replay-trained)"""
    enemy_start: tuple[int, int] | None = None
    """scripted on --backend sc2: the enemy start location (col, row) on the raw grid"""
    noop_prob: float = 0.5
    """random baseline: probability of a no-op decision"""
    torch_threads: int = 1
    """torch CPU threads (0: torch's default)"""
    device: str = "cpu"
    """torch device of the networks"""
    csv: str = ""
    """CSV output file (default runs/eval_fullgame__<seed>__<unix time>.csv)"""


@dataclass
class Row:
    """One policy's results (``None`` where the backend does not report a figure)."""

    policy: str
    games: int
    wins: int
    losses: int
    ties: int
    win_rate: float
    ci_low: float
    ci_high: float
    minerals_collected: float | None
    enemy_units_killed: float | None
    killed_value: float | None
    army_supply_5min: float | None
    army_supply_5min_n: int
    army_supply_8min: float | None
    army_supply_8min_n: int
    idle_share: float
    error_share: float
    game_length_min: float
    truncated_share: float


CSV_COLUMNS = [f.name for f in fields(Row)]


def summarise(name: str, records) -> Row:
    """Aggregate :class:`~sc2_envs.training.fullgame_actor.GameRecord` s into one table row."""
    n = len(records)
    wins = sum(r.outcome > 0 for r in records)
    losses = sum(r.outcome < 0 for r in records)
    lo, hi = wilson_interval(wins, n)

    def mean_probe(key):
        vals = [r.probe[key] for r in records if key in r.probe]
        return float(np.mean(vals)) if vals else None

    def army(minute):
        vals = [r.army_supply[minute] for r in records if minute in r.army_supply]
        return (float(np.mean(vals)) if vals else None), len(vals)

    a5, n5 = army(5.0)
    a8, n8 = army(8.0)
    steps = sum(r.steps for r in records)
    return Row(
        policy=name,
        games=n,
        wins=wins,
        losses=losses,
        ties=n - wins - losses,
        win_rate=wins / n,
        ci_low=lo,
        ci_high=hi,
        minerals_collected=mean_probe("minerals_collected"),
        enemy_units_killed=mean_probe("enemy_units_killed"),
        killed_value=mean_probe("killed_value"),
        army_supply_5min=a5,
        army_supply_5min_n=n5,
        army_supply_8min=a8,
        army_supply_8min_n=n8,
        idle_share=sum(r.idle_steps for r in records) / max(steps, 1),
        error_share=sum(r.error_steps for r in records) / max(steps, 1),
        game_length_min=float(np.mean([r.game_loops for r in records])) / LOOPS_PER_MINUTE,
        truncated_share=sum(r.truncated for r in records) / n,
    )


def _f(v, fmt=".1f") -> str:
    return "n/a" if v is None else format(v, fmt)


HEADER = "| policy | games | win rate [95% CI] | minerals | kills | army@5 (n) | army@8 (n) | idle | errors | length (min) |"


def format_row(r: Row) -> str:
    """One Markdown table line of a :class:`Row`."""
    return (
        f"| {r.policy} | {r.games} | {r.win_rate:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}] | {_f(r.minerals_collected, '.0f')} | "
        f"{_f(r.enemy_units_killed)} | {_f(r.army_supply_5min)} ({r.army_supply_5min_n}) | "
        f"{_f(r.army_supply_8min)} ({r.army_supply_8min_n}) | {r.idle_share:.3f} | {r.error_share:.3f} | "
        f"{r.game_length_min:.2f} |"
    )


def check_args(args: Args) -> None:
    """Refuse a command line before any game is played.

    Raises:
        SystemExit: nothing to evaluate, a missing or non-AlphaStar checkpoint, an unknown baseline or
            backend, ``--games``/``--num-envs``/``--step-mul`` below 1, or ``scripted`` on the real game
            without ``--enemy-start``.
    """
    from models.alphastar import CHECKPOINT_FORMAT

    if not args.checkpoints and not args.policy:
        raise SystemExit("eval_fullgame: nothing to evaluate; give --checkpoints FILE ... and/or --policy random scripted")
    bad = [p for p in args.policy if p not in BASELINES]
    if bad:
        raise SystemExit(f"eval_fullgame --policy {bad}: expected names from {list(BASELINES)}")
    for p in args.checkpoints:
        if not os.path.isfile(p):
            raise SystemExit(f"eval_fullgame: no such checkpoint file {p!r}")
        try:
            ckpt = torch.load(p, map_location="cpu", weights_only=True)
        except Exception as e:  # a text file, a truncated file: say which and why
            raise SystemExit(f"eval_fullgame: {p!r} is not a torch checkpoint ({type(e).__name__}: {e})") from None
        if not isinstance(ckpt, dict) or ckpt.get("format") != CHECKPOINT_FORMAT:
            raise SystemExit(f"eval_fullgame: {p!r} is not a {CHECKPOINT_FORMAT} checkpoint (models.alphastar.save_alphastar)")
    for name in ("games", "num_envs", "step_mul"):
        if getattr(args, name) < 1:
            raise SystemExit(f"eval_fullgame --{name.replace('_', '-')} {getattr(args, name)}: expected an integer >= 1")
    if args.game_steps_per_episode < 0:
        raise SystemExit(f"eval_fullgame --game-steps-per-episode {args.game_steps_per_episode}: expected >= 0 (0: no limit)")
    if args.backend not in ("lite", "sc2"):
        raise SystemExit(f"eval_fullgame --backend {args.backend!r}: expected 'lite' or 'sc2'")
    if "scripted" in args.policy and args.backend == "sc2" and args.enemy_start is None:
        raise SystemExit("eval_fullgame --policy scripted --backend sc2 needs --enemy-start COL ROW (the raw-grid start)")


def make_env(args: Args, num_envs: int, max_entities: int = 512, raw_resolution: int = 64, minimap: int = 64):
    kw = dict(
        step_mul=args.step_mul,
        game_steps_per_episode=args.game_steps_per_episode,
        max_entities=max_entities,
        raw_resolution=raw_resolution,
        minimap_resolution=minimap,
    )
    if args.backend == "lite":
        kw["omniscient"] = args.omniscient
    return make_vector_env(args.backend, num_envs, **kw)


def build_policy(args: Args, name: str, env, num_envs: int):
    """The policy object for a baseline name or a checkpoint path."""
    if name == "random":
        from sc2_envs.lite.catalog import build_catalog
        from sc2_envs.lite.policy import RandomLegalPolicy

        catalog = env.engine.catalog if hasattr(env, "engine") else build_catalog("3.16.1")
        return RandomLegalPolicy(catalog, noop_prob=args.noop_prob, seed=args.seed)
    if name == "scripted":
        from sc2_envs.training.fullgame_scripted import ScriptedExpert

        if args.enemy_start is not None:
            return ScriptedExpert(args.enemy_start)
        return ScriptedExpert.for_lite(env)
    from models.alphastar import load_alphastar

    model, _ = load_alphastar(name, device=args.device)
    return AlphaStarActor(
        model,
        num_envs,
        max_entities=512,
        max_selected=64,
        raw_resolution=model.cfg.raw_resolution,
        greedy=args.greedy,
        mask_action_type=args.mask_action_type,
        device=args.device,
    )


def evaluate_policy(args: Args, name: str) -> Row:
    """Play ``args.games`` games of one policy (a baseline name or a checkpoint path) and summarise them."""
    num_envs = min(args.num_envs, args.games)
    res, mm = 64, 64
    if name not in BASELINES:
        from models.alphastar import AlphaStarConfig

        cfg = AlphaStarConfig.from_dict(torch.load(name, map_location="cpu", weights_only=True)["config"])
        res, mm = cfg.raw_resolution, cfg.minimap_size
    env = make_env(args, num_envs, raw_resolution=res, minimap=mm)
    policy = build_policy(args, name, env, num_envs)
    probe = LiteProbe(env.engine) if hasattr(env, "engine") else None
    records = play_games(policy, env, args.games, args.seed, probe=probe)
    env.close()
    return summarise(name, records)


def main(args: Args) -> list[Row]:
    check_args(args)
    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    out = Path(args.csv or f"runs/eval_fullgame__{args.seed}__{int(time.time())}.csv")
    print("eval_fullgame configuration:")
    for k, v in asdict(args).items():
        print(f"  {k}: {v}")
    print(f"  games at once: {min(args.num_envs, args.games)}; csv: {out}", flush=True)
    rows = []
    print(HEADER)
    print("|" + "---|" * (HEADER.count("|") - 1), flush=True)
    for name in (*args.policy, *args.checkpoints):
        row = evaluate_policy(args, name)
        rows.append(row)
        print(format_row(row), flush=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=CSV_COLUMNS)
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if v is None else v) for k, v in asdict(r).items()})
    print(f"wrote {out}")
    return rows


if __name__ == "__main__":
    main(tyro.cli(Args))
