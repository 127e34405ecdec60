"""Checks of a behaviour-cloning run's flags and data (``algos/bc_reweight.py``), made before training.

Every flag that could only fail after training (an evaluator that cannot start, a selection that
cannot run) or silently mean something else is refused here, with the flag, its value and what was
expected; so is data that cannot give the run what it asks for (fewer files or frames than
requested, nothing held out for validation, demonstrations of another observation layout than the
simulator that will evaluate the policy).
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

from models import build_models
from sc2_envs.lite.env import MAX_SEED, check_seed
from sc2_envs.training.bc_labels import read_target_file
from sc2_envs.training.cli import flags_set, is_plain_name, nonfinite_flag

OPTIMISER_RANGES = (
    ("learning_rate", lambda v: v > 0, "an Adam learning rate > 0"),
    ("weight_decay", lambda v: v >= 0, "a weight decay >= 0"),
    ("max_grad_norm", lambda v: v > 0, "a gradient-norm bound > 0"),
    ("reweight_power", lambda v: v >= 0, "a power >= 0 (0: plain BC)"),
)
"""``(flag, valid, expected)`` of the optimiser's and the re-weighting's numbers."""
SMAC_ONLY_FLAGS = ("actor", "hidden")
"""Flags only a SMAC-demonstration run reads (its per-class actor)."""
REPLAY_ONLY_FLAGS = ("model_preset", "seq_len", "eval_backend", "eval_game_steps_per_episode", "eval_step_mul")
"""Flags only a replay-dataset run reads (``AlphaStarPolicy`` and its full-game evaluation)."""

__all__ = ["check_args", "check_data", "check_demo_layout", "check_lite_evaluation", "check_replay_evaluation", "check_size"]


def check_args(args: Any) -> None:
    """Reject flags that could only fail (or silently mean something else) after training.

    Args:
        args: ``algos/bc_reweight.py``'s ``Args``.

    Raises:
        ValueError: a NaN or infinite float flag, a ``--learning-rate`` or ``--max-grad-norm`` not > 0, a
            ``--weight-decay`` or ``--reweight-power`` below 0, a ``--weight-clip`` not 0 < lo <= hi, a ``--hidden``
            below 1 (or, for the GNN actor, not divisible by its attention heads), a ``--torch-threads`` or
            ``--min-frames`` below 0, an ``--exp-name`` with a path separator, a ``--select-by`` other than
            val-acc / behaviour, an ``--actor`` other than gnn / mlp,
            a ``--model-preset`` other than mini / tiny, an ``--eval-backend`` other than lite / sc2, ``--epochs``,
            ``--batch-size``, ``--seq-len``, ``--eval-episodes``, ``--eval-envs`` or ``--num-files`` below 1,
            an ``--eval-game-steps-per-episode`` below 0, an ``--eval-seed`` outside [0, 2**63 - 1] (the lite
            engine's ``check_seed``), an ``--average-window`` of 1 or below 0,
            a ``--target-dist`` file that is not a JSON object of finite shares >= 0 (``bc_labels.read_target_file``)
            or, other than uniform, given with ``--reweight-power 0`` (it would be ignored),
            or a ``--val-fraction`` outside (0, 1) (0 would still hold out one episode, 1 leaves no training data).
    """
    message = nonfinite_flag(args)  # NaN passes no range check below: a NaN learning rate trains NaN weights
    if message:
        raise ValueError(message)
    for name, valid, expected in OPTIMISER_RANGES:
        if not valid(getattr(args, name)):
            raise ValueError(f"--{name.replace('_', '-')} {getattr(args, name)!r}; expected {expected}")
    lo, hi = args.weight_clip
    if not 0 < lo <= hi:  # action_weights' check, after the data loaded
        raise ValueError(f"--weight-clip {lo} {hi}; expected 0 < lo <= hi")
    if args.hidden < 1:
        raise ValueError(f"--hidden {args.hidden}; expected an integer >= 1")
    heads = inspect.signature(build_models).parameters["heads"].default
    if args.actor == "gnn" and args.hidden % heads:  # build_models' ValueError, after the data loaded
        raise ValueError(f"--hidden {args.hidden}; expected a width divisible by the GNN's {heads} attention heads")
    if args.torch_threads < 0:
        raise ValueError(f"--torch-threads {args.torch_threads}; expected an integer >= 0 (0: torch's default)")
    if args.min_frames < 0:
        raise ValueError(f"--min-frames {args.min_frames}; expected an integer >= 0")
    if not is_plain_name(args.exp_name):  # it names the run folder
        raise ValueError(f"--exp-name {args.exp_name!r}; expected a name without path separators")
    choices = (
        ("select_by", ("val-acc", "behaviour")),
        ("actor", ("gnn", "mlp")),
        ("model_preset", ("mini", "tiny")),
        ("eval_backend", ("lite", "sc2")),
    )
    for name, valid in choices:
        if getattr(args, name) not in valid:
            raise ValueError(f"--{name.replace('_', '-')} {getattr(args, name)!r}; expected one of {list(valid)}")
    for name in ("epochs", "batch_size", "seq_len", "eval_episodes", "eval_envs"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} {getattr(args, name)}; expected an integer >= 1")
    if args.eval_step_mul < 0:
        raise ValueError(
            f"--eval-step-mul {args.eval_step_mul}; expected game loops per decision >= 1 (0: the dataset's stride)"
        )
    if args.eval_game_steps_per_episode < 0:  # 0: no limit, as a3c_upgo.py and eval_fullgame.py take it
        raise ValueError(
            f"--eval-game-steps-per-episode {args.eval_game_steps_per_episode}; expected an integer >= 0 (0: no limit)"
        )
    try:
        check_seed(args.eval_seed)  # the evaluators' seed range (the lite engine's; SMAC's SeedSequence needs >= 0)
    except ValueError:
        raise ValueError(f"--eval-seed {args.eval_seed}; expected an integer in [0, {MAX_SEED}]") from None
    if args.num_files is not None and args.num_files < 1:
        raise ValueError(f"--num-files {args.num_files}; expected an integer >= 1 (or leave it out: every file)")
    if args.average_window < 0 or args.average_window == 1:  # a window of one epoch averages nothing
        raise ValueError(f"--average-window {args.average_window}; expected 0 (off) or a window >= 2")
    if args.target_dist != "uniform":  # its shares now; its keys need the data's action names (load_target)
        read_target_file(args.target_dist)
    if args.target_dist != "uniform" and args.reweight_power == 0:  # power 0 is plain BC: every weight 1
        raise ValueError(
            f"--target-dist {args.target_dist} with --reweight-power 0 would be ignored (power 0 weighs every action 1); "
            "expected a --reweight-power > 0, or leave --target-dist out"
        )
    if not (0.0 < args.val_fraction < 1.0):
        raise ValueError(f"--val-fraction {args.val_fraction}; expected a share in (0, 1) of the episodes (or replay files)")


def check_replay_evaluation(args: Any) -> None:
    """Reject, before training on a replay dataset, a full-game evaluation that could only fail after it.

    Only runs that play (``--select-by behaviour`` or ``--average-window`` >= 2) are checked; on the lite engine
    by :func:`check_lite_evaluation`.

    Raises:
        SC2NotFoundError: ``--eval-backend sc2`` without StarCraft II under ``$SC2PATH``
            (``sc2_envs.full_game.env.find_sc2_binary``, FullGame-v0's own check; names SC2PATH and the
            install steps).
        ValueError: ``--eval-backend sc2`` with an ``--eval-seed`` whose games' seeds (``seed + b`` for
            game ``b`` of the ``min(--eval-envs, --eval-episodes)`` played at once, Gymnasium's
            ``SyncVectorEnv``) exceed StarCraft II's ``random_seed``, ``MAX_GAME_SEED``.
    """
    if args.select_by != "behaviour" and args.average_window < 2:
        return
    if args.eval_backend != "sc2":
        check_lite_evaluation(args)
        return
    from sc2_envs.full_game.env import MAX_GAME_SEED, SC2NotFoundError, find_sc2_binary

    try:
        find_sc2_binary()
    except SC2NotFoundError as e:
        raise SC2NotFoundError(f"--eval-backend sc2: {e}") from None
    top = MAX_GAME_SEED - (min(args.eval_envs, args.eval_episodes) - 1)
    if not 0 <= args.eval_seed <= top:
        raise ValueError(
            f"--eval-seed {args.eval_seed} with --eval-backend sc2; expected an integer in [0, {top}] "
            f"(game b of {min(args.eval_envs, args.eval_episodes)} at once gets seed + b, StarCraft II's "
            f"random_seed <= {MAX_GAME_SEED})"
        )


def check_lite_evaluation(args: Any) -> None:
    """Refuse evaluation flags the lite engine's vector env would refuse only when the first epoch is evaluated.

    Raises:
        ValueError: more games at once (``min(--eval-envs, --eval-episodes)``) than ``MAX_NUM_ENVS``, or an
            ``--eval-step-mul`` / ``--eval-game-steps-per-episode`` above ``MAX_LOOPS``.
    """
    from sc2_envs.lite.env import MAX_LOOPS, MAX_NUM_ENVS

    if min(args.eval_envs, args.eval_episodes) > MAX_NUM_ENVS:
        raise ValueError(f"--eval-envs {args.eval_envs}: expected games at once <= {MAX_NUM_ENVS} (the lite engine's limit)")
    if args.eval_step_mul > MAX_LOOPS["step_mul"]:
        raise ValueError(
            f"--eval-step-mul {args.eval_step_mul}: expected game loops per decision <= {MAX_LOOPS['step_mul']} "
            "(the lite engine's limit)"
        )
    if args.eval_game_steps_per_episode > MAX_LOOPS["game_steps_per_episode"]:
        raise ValueError(
            f"--eval-game-steps-per-episode {args.eval_game_steps_per_episode}: expected game loops <= "
            f"{MAX_LOOPS['game_steps_per_episode']} (the lite engine's limit)"
        )


def check_data(args: Any, given: frozenset[str] | None = None) -> Path:
    """The ``--data`` folder, checked: a demonstration folder (``meta.json``) or a replay dataset
    (``dataset.json``); for a replay dataset also its evaluation flags (:func:`check_replay_evaluation`).

    Raises:
        ValueError: no ``--data``, or (a new run) a flag the data's kind does not read, given on the command line
            (``given``, from ``cli.given_fields``) or, without ``given``, set away from its default (``SMAC_ONLY_FLAGS``
            on a replay dataset, ``REPLAY_ONLY_FLAGS`` on demonstrations).
        FileNotFoundError: a ``--data`` that does not exist, a folder with neither file (a folder of ``.SC2Replay``
            files is named as such, with the converter's command), or (replays) StarCraft II missing for
            ``--eval-backend sc2``.
    """
    if not args.data:
        raise ValueError("--data is required: a demonstration folder (meta.json) or a replay dataset (dataset.json)")
    root = Path(args.data)
    if not root.exists():
        raise FileNotFoundError(
            f"--data {args.data!r} does not exist; expected a demonstration folder (meta.json) or a replay dataset "
            "(dataset.json)"
        )
    if not (root / "meta.json").exists() and not (root / "dataset.json").exists():
        replays = sum(1 for _ in root.rglob("*.SC2Replay")) if root.is_dir() else 0
        if replays:  # the replays themselves, not the dataset converted from them
            raise FileNotFoundError(
                f"--data {args.data!r} holds {replays} .SC2Replay file(s), not a dataset; convert them first: "
                f"python -m sc2_envs.replays {args.data} --out DATASET, then --data DATASET"
            )
        raise FileNotFoundError(
            f"--data {args.data!r} has neither meta.json (sc2_envs.training.demos) nor dataset.json (sc2_envs.replays)"
        )
    replays = not (root / "meta.json").exists()
    if not args.resume:  # a resumed run keeps its saved flags
        for name in flags_set(args, SMAC_ONLY_FLAGS if replays else REPLAY_ONLY_FLAGS, given):
            reader = "SMAC demonstrations (meta.json)" if replays else "a replay dataset (dataset.json)"
            raise ValueError(
                f"--{name.replace('_', '-')} {getattr(args, name)}: only {reader} reads it; --data {args.data!r} "
                f"is {'a replay dataset' if replays else 'a demonstration folder'}, so it would be ignored"
            )
    if replays:  # a replay dataset: its checkpoints play FullGame-v0
        check_replay_evaluation(args)
    return root


def check_size(args: Any, n_files: int, available: int, frames: int, held_out: int | None = None, what: str = "") -> None:
    """Refuse (unless ``--smoke``) a dataset with fewer files or frames than requested, or (``held_out``
    given) one that leaves nothing for validation: every epoch would report val acc 0 and the
    val-acc selection would pick epoch 1 whatever it learnt.

    Args:
        args: the run's ``Args`` (``num_files``, ``min_frames``, ``smoke``).
        n_files: shard files loaded; ``available``: shard files the dataset has.
        frames: rows (env steps or replay frames) loaded.
        held_out: episodes (or replays) held out for validation; None: not checked (yet).
        what: the unit of ``held_out`` in the message (``episode``, ``replay``).

    Raises:
        ValueError: any of these problems, all named in one message, without ``--smoke`` (with it, a
            warning is printed instead).
    """
    problems = []
    if held_out == 0:
        problems.append(f"the data has a single {what}, so none is held out for validation (--val-fraction)")
    if args.num_files is not None and n_files < args.num_files:
        problems.append(f"--num-files {args.num_files} requested but only {available} shard files exist")
    if frames < args.min_frames:
        problems.append(f"--min-frames {args.min_frames} requested but the data has {frames} frames")
    if problems:
        msg = "; ".join(problems)
        if not args.smoke:
            raise ValueError(msg + " (pass --smoke to train on it anyway)")
        print("WARNING (--smoke): " + msg)


def check_demo_layout(data: str, info: dict, env_info: dict) -> None:
    """Refuse demonstrations whose observation layout is not the evaluating simulator's.

    The evaluator plays the default-option simulator, so a policy trained on other columns would be
    trained and evaluated on different features.

    Args:
        data: the demonstration folder (for the message).
        info: the recording's ``env_info`` (``meta.json``).
        env_info: ``get_env_info()`` of the simulator of ``info["map_name"]`` with default options.

    Raises:
        ValueError: other sizes (``obs_shape``, ``state_shape``, ``n_actions``, ``n_agents``), or equal sizes
            with another ``obs_layout`` / ``state_layout`` (other feature options); names the differing keys.
    """
    sizes = ("obs_shape", "state_shape", "n_actions", "n_agents")
    if any(env_info[k] != info[k] for k in sizes):
        raise ValueError(
            f"{data} was recorded with sizes { {k: info[k] for k in sizes} }; the simulator of "
            f"{info['map_name']} with default options has { {k: env_info[k] for k in sizes} }"
        )
    for key in ("obs_layout", "state_layout"):
        rec, sim = info.get(key), json.loads(json.dumps(env_info.get(key)))  # JSON round trip: tuples as meta.json's lists
        if rec is not None and rec != sim:
            diff = sorted(k for k in set(rec) | set(sim or {}) if rec.get(k) != (sim or {}).get(k))
            raise ValueError(
                f"{data} was recorded with another {key} than the simulator of {info['map_name']} with default "
                f"options (keys {diff} differ: recorded {[rec.get(k) for k in diff]}, simulator "
                f"{[(sim or {}).get(k) for k in diff]}); the policy would be trained and evaluated on other columns"
            )
