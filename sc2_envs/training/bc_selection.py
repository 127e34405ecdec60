"""The checkpoint selection that ends a behaviour-cloning run (``algos/bc_reweight.py``), and its evaluators.

:func:`select` picks ``best.pt`` among the run's epoch checkpoints, by validation action accuracy
(``--select-by val-acc``) or by behaviour (``--select-by behaviour``: every epoch plays, ranked by
``sc2_envs.training.evaluation.behaviour_key``: win rate, then less idling, then more damage), and
with ``--average-window k`` also averages ``k`` adjacent epochs containing the pick
(:func:`average_span`, ``sc2_envs.training.checkpoints.average_checkpoints``).

Checkpoints play through a *play* function, a checkpoint path -> a behaviour result
(``evaluate(..., behaviour=True)``'s dict): :func:`smac_play` on the batched simulator,
:func:`fullgame_play` on FullGame-v0 against the very_easy bot.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import torch

from sc2_envs.training.bc_epochs import log_scalars, restart_curves
from sc2_envs.training.checkpoints import average_checkpoints, load_checkpoint
from sc2_envs.training.evaluation import behaviour_key, evaluate, format_result

__all__ = ["average_span", "fullgame_play", "fullgame_play_stride", "select", "smac_play"]


def average_span(pick: int, window: int, epochs: int) -> tuple[int, int]:
    """Epochs ``[lo, hi]`` (1-based, inclusive) of ``window`` adjacent epochs that contain ``pick``: ending at the
    pick when there are enough earlier epochs, else starting at epoch 1; clipped to the run's length."""
    lo = max(1, pick - window + 1)
    hi = min(epochs, lo + window - 1)
    return lo, hi


def _log_behaviour(run_dir: Path, rec: dict) -> None:
    """The numeric figures of ``rec["behaviour"]`` as ``behaviour/…`` at ``rec["epoch"]``."""
    figures = {f"behaviour/{k}": v for k, v in rec["behaviour"].items() if isinstance(v, (int, float))}
    log_scalars(run_dir, {"epoch": rec["epoch"], **figures})


def _average(args: Any, run_dir: Path, history: list, pick: dict, play, summary: dict) -> None:
    """``--average-window``: average the window around ``pick`` into ``avg_LLL_HHH.pt`` (and play it)."""
    lo, hi = average_span(pick["epoch"], args.average_window, len(history))
    paths = [r["checkpoint"] for r in history if lo <= r["epoch"] <= hi]
    if len(paths) < 2:
        print(f"average window {args.average_window}: the run has a single epoch, nothing to average")
        return
    out = run_dir / f"avg_{lo:03d}_{hi:03d}.pt"
    average_checkpoints(paths, str(out))
    summary["average"] = {"from": paths, "checkpoint": str(out)}
    if play is not None:
        summary["average"]["behaviour"] = play(out)
        print(format_result(f"average of epochs {lo}..{hi}", summary["average"]["behaviour"]), flush=True)


def select(args: Any, run_dir: Path, history: list, play, resumed: bool = False) -> dict:
    """Pick the final checkpoint (``best.pt``) by validation accuracy or by behaviour; optionally average.

    Args:
        args: the run's ``Args`` (``select_by``, ``average_window``).
        run_dir: the run folder; ``best.pt``, ``avg_LLL_HHH.pt`` and ``summary.json`` are written there.
        history: one record per epoch (``epoch``, ``val_acc``, ``checkpoint``); with behaviour selection each
            gets a ``behaviour`` result.
        play: a checkpoint path -> its behaviour result, or None (val-acc selection without averaging).
        resumed: the run was resumed; with behaviour selection its TensorBoard curves are first rewritten
            (:func:`sc2_envs.training.bc_epochs.restart_curves`), so a run resumed after it had finished (or
            with more ``--epochs``) shows one point per epoch, those of this selection.

    Returns:
        The summary (also ``summary.json``): ``history``, ``val_acc_pick`` and ``pick`` (epochs), and
        ``average`` (``from``, ``checkpoint``, ``behaviour``) when an average was made.

    Raises:
        ValueError: a ``select_by`` other than val-acc / behaviour, or behaviour selection without ``play``.
    """
    by_acc = max(history, key=lambda r: r["val_acc"])
    summary = {"history": history, "val_acc_pick": by_acc["epoch"]}
    if play is None and args.select_by == "behaviour":
        raise ValueError("--select-by behaviour needs a play function (a checkpoint path -> its behaviour result)")
    if play is not None and args.select_by == "behaviour":
        if resumed:
            restart_curves(run_dir, history)
        for r in history:  # every epoch plays, on the same seeds
            r["behaviour"] = play(r["checkpoint"])
            _log_behaviour(run_dir, r)
            print(format_result(f"epoch {r['epoch']} (val acc {r['val_acc']:.3f})", r["behaviour"]), flush=True)
        pick = max(history, key=lambda r: behaviour_key(r["behaviour"]))
    elif args.select_by in ("val-acc", "behaviour"):
        pick = by_acc
        if play is not None:
            pick["behaviour"] = play(pick["checkpoint"])
            print(format_result(f"epoch {pick['epoch']} (val acc {pick['val_acc']:.3f})", pick["behaviour"]), flush=True)
    else:
        raise ValueError(f"--select-by {args.select_by!r}; expected 'val-acc' or 'behaviour'")
    summary["pick"] = pick["epoch"]
    shutil.copyfile(pick["checkpoint"], run_dir / "best.pt")
    print(
        f"selected by {args.select_by}: epoch {pick['epoch']} -> {run_dir / 'best.pt'} "
        f"(val-acc pick: epoch {by_acc['epoch']}, val acc {by_acc['val_acc']:.4f})"
    )
    if args.average_window >= 2:
        _average(args, run_dir, history, pick, play, summary)
    (run_dir / "summary.json").write_text(
        json.dumps(summary, indent=1, default=lambda o: list(o) if isinstance(o, tuple) else float(o))
    )
    return summary


def smac_play(args: Any, map_name: str, device: torch.device):
    """A play function for SMAC checkpoints: ``args.eval_episodes`` episodes of ``map_name`` on
    ``args.eval_envs`` simulator envs, reset and sampling seeded by ``args.eval_seed`` (the same battles and
    noise for every checkpoint), sampled or argmax (``args.eval_greedy``); returns ``evaluate``'s dict."""
    import sc2_envs  # here, not at the top: sc2_envs imports this package

    def play(path) -> dict:
        env = sc2_envs.make_batched(
            map_name, num_envs=args.eval_envs, device=device, seed=args.eval_seed, num_threads=torch.get_num_threads()
        )
        pol, _, _ = load_checkpoint(str(path), env.get_env_info(), device=device, with_critic=False)
        pol.eval()
        return evaluate(
            pol,
            env,
            args.eval_episodes,
            seed=sc2_envs.eval_seed(args.eval_seed),
            greedy=args.eval_greedy,
            behaviour=True,
            sample_seed=args.eval_seed,
        )

    return play


def fullgame_play_stride(eval_step_mul: int, dataset_step_mul: int | None) -> str:
    """The game loops per decision at which :func:`fullgame_play` plays a replay run's checkpoints, and why.

    The checkpoints record the dataset's stride (``ReplayData.step_mul``), which ``evaluate_fullgame`` plays
    at when ``--eval-step-mul`` is 0; an event-sampled dataset records none, and then the games are played at
    ``fullgame_evaluation.DEFAULT_STEP_MUL`` (mini-AlphaStar's 8).

    Args:
        eval_step_mul: ``--eval-step-mul`` (0: the checkpoint's own).
        dataset_step_mul: the dataset's ``every_k`` stride ``k``, or None (``sample actions``).

    Returns:
        One line: ``"selection games: K game loops per decision (<source>)"``.
    """
    from sc2_envs.training.fullgame_evaluation import effective_step_mul

    value, kind = effective_step_mul(eval_step_mul, dataset_step_mul)
    source = {
        "given": "--eval-step-mul",
        "trained": "the dataset's every_k stride, which the checkpoints record",
        "default": "mini-AlphaStar's default: the dataset samples actions, with no fixed stride",
    }[kind]
    return f"selection games: {value} game loops per decision ({source})"


def fullgame_play(args: Any, device: torch.device):
    """A play function for ``AlphaStarPolicy`` checkpoints: ``args.eval_episodes`` games of FullGame-v0
    against the very_easy bot (``sc2_envs.training.fullgame_evaluation.evaluate_fullgame`` with the
    ``--eval-*`` flags); returns ``behaviour_result``'s dict, which ranks as a SMAC result does."""

    def play(path) -> dict:
        # imported at call time: the full-game actor loads the lite engine, which a SMAC run never needs
        from sc2_envs.training.fullgame_evaluation import behaviour_result, evaluate_fullgame

        row = evaluate_fullgame(
            str(path),
            args.eval_episodes,
            args.eval_seed,
            num_envs=args.eval_envs,
            backend=args.eval_backend,
            game_steps_per_episode=args.eval_game_steps_per_episode,
            step_mul=args.eval_step_mul,  # 0: the step_mul the checkpoint was trained at
            greedy=args.eval_greedy,
            device=str(device),
        )
        return behaviour_result(row)

    return play
