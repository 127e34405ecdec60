"""The checks of the asynchronous actor-learner's flags (``algos/a3c_upgo.py``), run before any process starts.

Each bad or inconsistent option ends the program with one line naming the flag, the value and what was
expected (``SystemExit``; status 2 through ``cli.cli_error`` where the argument parser's convention
applies), rather than a traceback from an actor or from the middle of the learner.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

from models import ACTOR_TYPES, build_models
from sc2_envs.training.checkpoints import load_torch_file
from sc2_envs.training.cli import check_finite_flags, cli_error, flags_off_default, flags_set, is_plain_name
from sc2_envs.validation import check_out_dir, did_you_mean

FULL_GAME_MAPS = ("Simple64",)
"""``--map`` values that train ``AlphaStarPolicy`` on FullGame-v0 (``--env-backend sim``: the lite engine)."""

POSITIVE_FLAGS = (
    "num_actors",
    "envs_per_actor",
    "unroll_length",
    "batch_unrolls",
    "queue_size",
    "checkpoint_interval",
    "win_window",
)
"""Counts that must be at least 1."""


NUMERIC_RANGES = (
    ("learning_rate", lambda v: v > 0, "an Adam learning rate > 0"),
    ("gamma", lambda v: 0 <= v <= 1, "a discount in [0, 1]"),
    ("vtrace_lambda", lambda v: 0 <= v <= 1, "a trace lambda in [0, 1]"),
    ("td_lambda", lambda v: 0 <= v <= 1, "a TD(lambda) lambda in [0, 1]"),
    ("rho_bar", lambda v: v > 0, "an importance-ratio clip > 0"),
    ("c_bar", lambda v: v > 0, "a trace-ratio clip > 0"),
    ("pg_coef", lambda v: v >= 0, "a coefficient >= 0"),
    ("upgo_coef", lambda v: v >= 0, "a coefficient >= 0"),
    ("vf_coef", lambda v: v >= 0, "a coefficient >= 0"),
    ("ent_coef", lambda v: v >= 0, "a coefficient >= 0"),
    ("kl_coef", lambda v: v >= 0, "a coefficient >= 0"),
    ("max_grad_norm", lambda v: v > 0, "a gradient-norm bound > 0"),
    ("critic_warmup_steps", lambda v: v >= 0, "env steps >= 0 (0: no warm-up)"),
    ("total_timesteps", lambda v: v >= 1, "env steps >= 1"),
    ("time_budget_s", lambda v: v >= 0, "seconds >= 0 (0: no limit)"),
    ("hidden", lambda v: v >= 1, "a network width >= 1"),
    ("actor_layers", lambda v: v >= 1, "attention blocks >= 1"),
    ("torch_threads", lambda v: v >= 0, "threads >= 0 (0: torch's default)"),
    ("max_restarts", lambda v: v >= 0, "restarts >= 0"),
    ("heartbeat_interval", lambda v: v > 0, "seconds > 0"),
    ("stall_timeout", lambda v: v > 0, "seconds > 0"),
    ("startup_timeout", lambda v: v > 0, "seconds > 0"),
    ("print_interval_s", lambda v: v >= 0, "seconds >= 0 (0: a line every update)"),
    ("ray_actor_cpus", lambda v: v > 0, "CPUs per actor > 0"),
)
"""``(flag, valid, expected)``: the ranges of the learner's rates, discounts, clips and loss coefficients, its
budget, network sizes and the actor pool's timing."""
GNN_HEADS = inspect.signature(build_models).parameters["heads"].default
"""Attention heads of the GNN actors and critic ``models.build_models`` builds for this script (its default, 4):
``--hidden`` must divide by it."""

FULL_GAME_ONLY_FLAGS = (
    "step_mul",
    "game_steps_per_episode",
    "train_game_loops",
    "discount_zero_after_timeout",
    "saved_start_share",
    "save_loop",
    "saved_start_games",
    "banked_minerals_cost",
    "max_entities",
)
"""Flags only FullGame-v0 reads: given with a SMAC map they would be ignored, so they are refused."""


INIT_DECIDES = ("actor", "hidden", "actor_layers")
"""Network flags an ``--init`` checkpoint decides (its actor type and sizes): given with it they are refused."""


def is_full_game(args: Any) -> bool:
    """``--map`` names a full-game map (``FULL_GAME_MAPS``) rather than a SMAC one."""
    return args.map in FULL_GAME_MAPS


def checkpoint_kind(args: Any) -> str:
    """What ``--init`` and ``--teacher`` must be for ``--map``: on a SMAC map a BC or HAPPO checkpoint
    (``models.save_checkpoint``), on the full game an ``AlphaStarPolicy`` one (``models.alphastar.save_alphastar``)."""
    if is_full_game(args):
        return "an AlphaStarPolicy checkpoint written by models.alphastar.save_alphastar (bc_reweight.py)"
    return "a BC or HAPPO checkpoint written by models.save_checkpoint"


def check_numeric_flags(args: Any) -> None:
    """Refuse a NaN or infinite float flag (``cli.check_finite_flags``), then one outside ``NUMERIC_RANGES``, then a
    critic warm-up without a value loss.

    Raises:
        SystemExit: status 2 (``cli_error``), naming the flag, its value and the range expected.
    """
    check_finite_flags(args)
    for name, valid, expected in NUMERIC_RANGES:
        if not valid(getattr(args, name)):
            cli_error(f"--{name.replace('_', '-')} {getattr(args, name)!r}: expected {expected}")
    if args.actor == "gnn" and args.hidden % GNN_HEADS:  # build_models' ValueError in the learner, after the first screen
        cli_error(f"--hidden {args.hidden}: expected a width divisible by the GNN's {GNN_HEADS} attention heads")
    if args.critic_warmup_steps > 0 and args.vf_coef == 0:
        cli_error(
            f"--critic-warmup-steps {args.critic_warmup_steps} with --vf-coef 0: the warm-up trains only the value "
            "baseline, whose loss --vf-coef 0 removes; expected --vf-coef > 0 or --critic-warmup-steps 0"
        )


def check_no_full_game_flags(args: Any) -> None:
    """On a SMAC map, refuse the full-game-only flags (``FULL_GAME_ONLY_FLAGS``) set away from their defaults:
    SMAC's envs would ignore them. A resumed run is not checked (it cannot change them, and runs saved before
    ``--step-mul``'s default became 0 record 8).

    Raises:
        SystemExit: status 2 (``cli_error``), naming the flag and the map.
    """
    if is_full_game(args) or args.resume:
        return
    for name in flags_off_default(args, FULL_GAME_ONLY_FLAGS):
        cli_error(
            f"--{name.replace('_', '-')} {getattr(args, name)}: only the full game (--map "
            f"{' or '.join(FULL_GAME_MAPS)}) reads it; on the SMAC map {args.map} it would be ignored, leave it out"
        )


def check_fullgame_env_flags(args: Any) -> None:
    """Refuse FullGame-v0 options that its envs would refuse in every actor (``FullGameEnv`` and the lite engine
    share the limits ``sc2_envs.full_game.spaces.MAX_SIZES`` / ``MAX_LOOPS``).

    Raises:
        SystemExit: status 2 (``cli_error``) for ``--step-mul`` below 0 (0: :func:`resolve_step_mul`),
            ``--game-steps-per-episode`` below 0 (0: no limit), either of them above ``MAX_LOOPS``, ``--envs-per-actor`` above
            the lite engine's ``MAX_NUM_ENVS`` on ``--env-backend sim``, ``--train-game-loops`` below 0 or above
            ``--game-steps-per-episode`` (when that is not 0), saved-start flags (:func:`check_saved_start_flags`),
            a ``--banked-minerals-cost`` that is negative or not finite, or ``--max-entities`` outside [1, 65,536].
    """
    from sc2_envs.full_game.spaces import MAX_LOOPS, MAX_SIZES
    from sc2_envs.lite.env import MAX_NUM_ENVS
    from sc2_envs.training.fullgame_rl import check_banked_minerals_cost

    if args.step_mul < 0:
        cli_error(
            f"--step-mul {args.step_mul}: expected game loops per env step >= 1 (8: half a normal-speed second), "
            "or 0: the --init checkpoint's trained step_mul"
        )
    if args.step_mul > MAX_LOOPS["step_mul"]:
        cli_error(
            f"--step-mul {args.step_mul}: expected game loops per env step <= {MAX_LOOPS['step_mul']} (the full game's limit)"
        )
    if args.game_steps_per_episode < 0:
        cli_error(f"--game-steps-per-episode {args.game_steps_per_episode}: expected game loops >= 0 (0: no limit)")
    if args.game_steps_per_episode > MAX_LOOPS["game_steps_per_episode"]:
        top = MAX_LOOPS["game_steps_per_episode"]
        cli_error(
            f"--game-steps-per-episode {args.game_steps_per_episode}: expected game loops <= {top} (the full game's limit)"
        )
    if args.env_backend == "sim" and args.envs_per_actor > MAX_NUM_ENVS:
        cli_error(
            f"--envs-per-actor {args.envs_per_actor}: expected games per actor <= {MAX_NUM_ENVS} (the lite engine's limit)"
        )
    limit = args.game_steps_per_episode
    if args.train_game_loops < 0 or (limit and args.train_game_loops > limit):
        cli_error(
            f"--train-game-loops {args.train_game_loops}: expected game loops in [1, {limit}] (at most "
            f"--game-steps-per-episode {limit}, the full game's limit), or 0: that limit"
            if limit
            else f"--train-game-loops {args.train_game_loops}: expected game loops >= 1, or 0: no limit"
        )
    check_saved_start_flags(args)
    try:
        check_banked_minerals_cost(args.banked_minerals_cost)
    except ValueError as e:
        cli_error(f"--banked-minerals-cost {e}")
    top = MAX_SIZES["max_entities"]
    if not 1 <= args.max_entities <= top:
        cli_error(f"--max-entities {args.max_entities}: expected entity rows per observation, an int in [1, {top}]")


def check_saved_start_flags(args: Any) -> None:
    """Refuse ``--saved-start-share`` outside [0, 1), above 0 on the real game (it cannot load a game), a
    ``--save-loop`` below 1 or at or past where training games end, a ``--saved-start-games`` outside
    ``SAVED_START_GAMES``, and a ``--save-loop`` or ``--saved-start-games`` given without a share (nothing would
    read it). :func:`check_save_loop_reached` checks the save loop against the step_mul once
    that is resolved.

    Raises:
        SystemExit: status 2 (``cli_error``), naming the flag, its value and what was expected.
    """
    from sc2_envs.training.fullgame_rl import SAVED_START_GAMES, check_saved_start_share

    share = args.saved_start_share
    try:
        check_saved_start_share(share)
    except ValueError as e:
        cli_error(f"--saved-start-share {e}")
    if isinstance(args.save_loop, bool) or not isinstance(args.save_loop, int):
        cli_error(f"--save-loop {args.save_loop!r}: expected a game loop, an int")
    if args.saved_start_games not in SAVED_START_GAMES:
        cli_error(f"--saved-start-games {args.saved_start_games!r}: expected one of {', '.join(SAVED_START_GAMES)}")
    if share == 0:
        for name in flags_off_default(args, ("save_loop", "saved_start_games")):
            cli_error(
                f"--{name.replace('_', '-')} {getattr(args, name)}: only --saved-start-share reads it (here 0: none); "
                "leave it out"
            )
        return
    if args.env_backend != "sim":
        cli_error(
            f"--saved-start-share {share} with --env-backend {args.env_backend}: only the lite engine saves and "
            "loads a game (LiteFullGameVectorEnv.save_game); use --env-backend sim or --saved-start-share 0"
        )
    end = training_game_loops(args)
    if args.save_loop < 1 or (end and args.save_loop >= end):
        cli_error(
            f"--save-loop {args.save_loop}: expected a game loop in [1, {end - 1}], before training games end (at {end} loops)"
            if end
            else f"--save-loop {args.save_loop}: expected a game loop >= 1"
        )


def last_save_loop(end: int, step_mul: int) -> int:
    """The latest ``--save-loop`` a training game can be saved at: the last step boundary before its end.

    A game is saved on the step that crosses the save loop, unless that step ends it; steps cover ``step_mul``
    game loops from loop 0 (the last one shortened to end at ``end``), so the step crossing a loop past the last
    boundary before ``end`` is the game's last.

    Args:
        end: where training games end, game loops >= 1 (:func:`training_game_loops`).
        step_mul: game loops per env step, >= 1.
    """
    return (end - 1) // step_mul * step_mul


def saved_starts_line(args: Any) -> str:
    """One first-screen line saying how a full-game run's training games start (``--saved-start-share``)."""
    from sc2_envs.training.fullgame_actor import LOOPS_PER_MINUTE

    if args.saved_start_share == 0:
        return "training games start at loop 0 (--saved-start-share 0)"
    which = (
        "that went on to end without a win" if args.saved_start_games == "failed" else "while still running, whatever follows"
    )
    return (
        f"training games: a share {args.saved_start_share} of the new ones start from a save, each actor's games saved at "
        f"loop {args.save_loop} ({args.save_loop / LOOPS_PER_MINUTE:.1f} real (Faster) minutes) {which} "
        f"(--saved-start-games {args.saved_start_games}; UnrollCollector); "
        "the others, and all while no save is kept, at loop 0"
    )


def training_reward_line(args: Any) -> str:
    """One first-screen line saying what reward a full-game run trains on (``--banked-minerals-cost``).

    Args:
        args: ``algos/a3c_upgo.py``'s ``Args`` of a full-game run with ``step_mul`` resolved (:func:`resolve_step_mul`).
    """
    from sc2_envs.training.fullgame_actor import LOOPS_PER_MINUTE

    cost = args.banked_minerals_cost
    if cost == 0:
        return "training reward: the game's (+1 won, -1 lost, 0 otherwise; --banked-minerals-cost 0)"
    return (
        f"training reward: the game's (+1 won, -1 lost, 0 otherwise) minus {cost} per env step for each 1,000 minerals "
        f"held after it ({cost * LOOPS_PER_MINUTE / args.step_mul:.3g} per real (Faster) minute at step_mul "
        f"{args.step_mul}; --banked-minerals-cost); the win rate, charts/episodic_return and the progress line report "
        "the game's return, the losses/ value and return charts the trained one"
    )


def check_save_loop_reached(args: Any) -> None:
    """With ``--saved-start-share`` above 0 and ``step_mul`` resolved (:func:`resolve_step_mul`), refuse a
    ``--save-loop`` past :func:`last_save_loop`: no training game would ever be saved, and the flag would do nothing.

    Raises:
        SystemExit: status 2 (``cli_error``), naming the flag, the step_mul and the latest loop that works.
    """
    end = training_game_loops(args)
    if args.saved_start_share == 0 or not end:
        return
    last = last_save_loop(end, args.step_mul)
    if args.save_loop > last:
        cli_error(
            f"--save-loop {args.save_loop}: a training game's last step starts at loop {last} (--step-mul "
            f"{args.step_mul}, games ending at {end} loops) and ends it, so no game would be saved; expected a "
            f"game loop in [1, {last}]"
        )


def resolve_step_mul(args: Any) -> str:
    """Set a full-game run's ``args.step_mul`` when it is 0 and say where its value comes from.

    0 means the ``--init`` checkpoint's trained step_mul (``fullgame_evaluation.trained_step_mul``: a BC
    checkpoint records its replay dataset's stride, an RL one its ``--step-mul``), else
    ``fullgame_evaluation.DEFAULT_STEP_MUL`` (8): a policy cloned from 32-loop labels that decides every 8 loops issues four
    times the experts' commands per game second. A resumed run keeps the value its first session resolved (saved in its
    ``Args``).

    Args:
        args: ``algos/a3c_upgo.py``'s ``Args`` of a full-game run, already checked (:func:`check_async_learner_args`).

    Returns:
        One line, ``"step_mul = K game loops per env step: <source>"``.

    Raises:
        SystemExit: status 2 (``cli_error``), an ``--init`` whose recorded step_mul is invalid (named).
    """
    from sc2_envs.training.fullgame_evaluation import effective_step_mul, trained_step_mul

    if args.step_mul > 0:
        source = "kept from the resumed run" if args.resume else "--step-mul as given"
    else:
        try:
            recorded = trained_step_mul(load_torch_file(args.init), args.init)
        except ValueError as e:  # a step_mul record that is not a positive int
            cli_error(f"--init {e}")
        args.step_mul, kind = effective_step_mul(0, recorded)
        source = (
            f"the step_mul the --init checkpoint {args.init} was trained at"
            if kind == "trained"
            else f"mini-AlphaStar's default (the --init checkpoint {args.init} records no trained step_mul)"
        )
    return f"step_mul = {args.step_mul} game loops per env step: {source}"


def training_game_loops(args: Any) -> int:
    """The game loops after which a full-game run's training games are truncated: ``--train-game-loops``, or
    when it is 0 ``--game-steps-per-episode`` (the full game's limit; 0: none)."""
    return args.train_game_loops or args.game_steps_per_episode


def training_games_line(args: Any) -> str:
    """One first-screen line saying where a full-game run's training games end, and why that is a truncation.

    Args:
        args: ``algos/a3c_upgo.py``'s ``Args`` of a full-game run with ``step_mul`` resolved (:func:`resolve_step_mul`).

    Returns:
        e.g. ``"training games end at 13440 game loops (420 env steps of 32 loops), truncated: ..."``.
    """
    loops, limit = training_game_loops(args), args.game_steps_per_episode
    if not loops:
        return "training games end only when won or lost (--game-steps-per-episode 0: no limit)"
    steps = -(-loops // args.step_mul)  # the lite engine shortens the last step to end at `loops` exactly
    source = (
        f"--train-game-loops, below the full game's --game-steps-per-episode {limit or 'none'}, which evaluation "
        "(eval_fullgame.py) keeps; this run evaluates nothing"
        if args.train_game_loops and args.train_game_loops != limit
        else "--game-steps-per-episode, the full game's limit"
    )
    how = (
        "as a tie worth 0 (--discount-zero-after-timeout: the value learns that running out of time loses the win)"
        if args.discount_zero_after_timeout
        else "truncated (the value of the last state bootstraps the return)"
    )
    return (
        f"training games end at {loops} game loops ({steps} env steps of {args.step_mul} loops) unless won or lost, "
        f"{how}: {source}"
    )


def check_checkpoint_kinds(args: Any) -> None:
    """Read ``--init`` and ``--teacher`` (CPU, ``weights_only``) and refuse a file that is not a torch
    checkpoint, a checkpoint of the other kind of run (``models.alphastar`` for ``--map Simple64``,
    ``models.save_checkpoint`` for a SMAC map), a recurrent SMAC checkpoint (``happo_gnn.py --recurrent``:
    this actor-learner is feed-forward), or, for the full game, ``--max-entities`` below the entity
    rows the ``--init`` model was built for (``config.max_entities``).

    Raises:
        SystemExit: status 2 (``cli_error``), naming the flag, the path and what was expected.
    """
    from models.alphastar import CHECKPOINT_FORMAT as FULL_GAME_FORMAT

    for name in ("init", "teacher"):
        path = getattr(args, name)
        if not path:
            continue
        try:
            ckpt = load_torch_file(path)
        except (OSError, ValueError) as e:
            cli_error(f"--{name} {e}")
        found = ckpt.get("format") if isinstance(ckpt, dict) else type(ckpt).__name__
        if is_full_game(args) and found != FULL_GAME_FORMAT:
            cli_error(
                f"--{name} {path}: --map {args.map} trains AlphaStarPolicy and needs a full-game checkpoint "
                f"(format {FULL_GAME_FORMAT}, models.alphastar.save_alphastar: bc_reweight.py); this one is {found!r}"
            )
        if not is_full_game(args) and found == FULL_GAME_FORMAT:
            cli_error(
                f"--{name} {path} is a full-game (AlphaStarPolicy, {FULL_GAME_FORMAT}) checkpoint: train it with "
                f"--map {' or '.join(FULL_GAME_MAPS)} (FullGame-v0), not on the SMAC map {args.map}"
            )
        cfg = ckpt.get("config") if isinstance(ckpt, dict) else None
        hparams = cfg.get("policy_hparams") if isinstance(cfg, dict) else None
        if not is_full_game(args) and isinstance(hparams, dict) and hparams.get("recurrent"):
            # the actors and the learner call the feed-forward act / logits, which a GRU actor refuses
            cli_error(
                f"--{name} {path} is a recurrent checkpoint (a GRU per agent: happo_gnn.py --recurrent); this "
                "actor-learner's policies are feed-forward: expected a checkpoint trained without --recurrent"
            )
        if name == "init" and is_full_game(args) and isinstance(cfg, dict) and "max_entities" in cfg:
            rows = int(cfg["max_entities"])  # a config without it is refused when the model is built (load_alphastar)
            if args.max_entities < rows:
                cli_error(
                    f"--max-entities {args.max_entities} is below the {rows} entity rows of the --init model "
                    f"({path}, config.max_entities): it would see only the first {args.max_entities} units; "
                    f"give --max-entities {rows} or more"
                )


def adopt_init_networks(args: Any) -> None:
    """A new SMAC run from ``--init``: set ``args.actor``, ``hidden`` and ``actor_layers`` (:data:`INIT_DECIDES`) to
    the checkpoint's, so that the first screen, ``run_meta.json`` and the checkpoints record the networks that train
    (the models are built from the checkpoint). No-op for a resumed run (its saved flags) or the full game.

    Call it after :func:`check_async_learner_args`, which refuses those flags given with ``--init`` and checks the file.
    """
    if not args.init or args.resume or is_full_game(args):
        return
    ckpt = load_torch_file(args.init)
    cfg = ckpt.get("config") if isinstance(ckpt, dict) else None
    hparams = cfg.get("policy_hparams") if isinstance(cfg, dict) else None
    if isinstance(hparams, dict):
        args.actor = cfg.get("actor_type", args.actor)
        args.hidden = int(hparams.get("hidden", args.hidden))
        args.actor_layers = int(hparams.get("layers", args.actor_layers))


def check_map_and_teacher(args: Any, given: frozenset[str] | None = None) -> None:
    """``--map`` (a SMAC map, or a full-game map with ``--init``; the full-game-only flags only there), ``--kl-coef``
    and ``--teacher`` together, no network flag (``INIT_DECIDES``) with ``--init`` in a new run (one the command
    line gave, ``given`` from ``cli.given_fields``, even at its default; without ``given``, one off its default), and
    that ``--init`` and ``--teacher`` are checkpoints of the right kind (:func:`check_checkpoint_kinds`).

    Raises:
        SystemExit: one line naming the flag and what was expected.
    """
    from sc2_envs import list_maps

    if is_full_game(args):
        if not args.init:
            raise SystemExit(f"--map {args.map} trains AlphaStarPolicy from a supervised checkpoint: give --init PATH")
        if args.env_factory:
            raise SystemExit(f"--env-factory builds SMAC envs; --map {args.map} plays FullGame-v0")
        check_fullgame_env_flags(args)
    elif not args.env_factory and args.map not in list_maps():
        choices = list_maps() + list(FULL_GAME_MAPS)
        raise SystemExit(f"--map {args.map!r}{did_you_mean(args.map, choices)}; expected one of {', '.join(choices)}")
    else:
        check_no_full_game_flags(args)
    if args.kl_coef > 0 and not args.teacher:
        raise SystemExit(
            f"--kl-coef {args.kl_coef} > 0 needs --teacher PATH ({checkpoint_kind(args)}); "
            "the teacher is never guessed from a folder"
        )
    if args.teacher and args.kl_coef == 0:
        no_effect = f"--teacher {args.teacher!r} with --kl-coef 0: the teacher would have no effect (its KL is weighted by 0)"
        if not args.resume:
            raise SystemExit(f"{no_effect}; set --kl-coef > 0 (e.g. 0.02) or drop --teacher")
        # a run saved before this was refused: neither flag may change on --resume, so say it and go on
        print(f"note: {no_effect}; this run was started so, and a resumed run keeps both flags", flush=True)
    for name in ("teacher", "init"):
        path = getattr(args, name)
        if path and not Path(path).is_file():
            raise SystemExit(f"--{name} {path!r} is not a file; expected {checkpoint_kind(args)}")
    if args.init and not args.resume:  # a resumed run keeps its saved flags
        for name in flags_set(args, INIT_DECIDES, given):
            cli_error(
                f"--{name.replace('_', '-')} {getattr(args, name)} with --init {args.init}: the networks are the "
                "checkpoint's (its actor type and sizes), so the flag would be ignored; leave it out"
            )
    check_checkpoint_kinds(args)


def check_env_factory(spec: str) -> None:
    """``--env-factory module:function``: the form, the module importable and the function in it.

    Raises:
        SystemExit: status 2 (``cli_error``), naming the value and what is missing.
    """
    import importlib

    module, sep, name = spec.partition(":")
    if not (sep and module and name.isidentifier()):
        cli_error(f"--env-factory {spec!r}: expected module:function (e.g. mypackage.envs:make_env)")
    try:
        found = importlib.import_module(module)
    except ImportError as e:
        cli_error(f"--env-factory {spec!r}: cannot import {module!r} ({type(e).__name__}: {e})")
    if not callable(getattr(found, name, None)):
        cli_error(f"--env-factory {spec!r}: {module!r} has no function {name!r}")


def check_backends_and_sizes(args: Any) -> None:
    """``--exp-name`` (one folder name), ``--backend``, ``--env-backend`` (with StarCraft II installed for ``sc2``),
    ``--actor``, the counts of ``POSITIVE_FLAGS``, ``--run-dir``, the heartbeat timing and ``--keep-checkpoints``
    (with ``--save-model``, and an ``--exp-name`` not ending in ``_step<digits>``, the kept files' suffix).

    Raises:
        SystemExit: one line naming the flag and what was expected (status 2 for a missing StarCraft II).
    """
    if not is_plain_name(args.exp_name):  # make_run_dir's ValueError otherwise, a traceback
        cli_error(f"--exp-name {args.exp_name!r}: expected a name without path separators (it names the run folder)")
    if args.backend not in ("process", "ray"):
        raise SystemExit(f"--backend {args.backend!r}; expected 'process' or 'ray'")
    if args.env_backend not in ("sim", "sc2"):
        raise SystemExit(f"--env-backend {args.env_backend!r}; expected 'sim' or 'sc2'")
    if args.env_backend == "sc2" and not args.env_factory:
        from sc2_envs.full_game.env import SC2NotFoundError, find_sc2_binary

        try:
            find_sc2_binary()
        except SC2NotFoundError as e:  # names SC2PATH and the install steps
            cli_error(f"--env-backend sc2: {e}")
        if args.envs_per_actor != 1 and not is_full_game(args):
            raise SystemExit(f"--env-backend sc2 runs one game per actor: use --envs-per-actor 1 (got {args.envs_per_actor})")
    if args.backend != "ray" and not args.resume:  # read only by the Ray backend: given otherwise they would be ignored
        # (a resumed Ray run may go on with --backend process: its saved Ray flags then rest unused)
        for name in flags_off_default(args, ("ray_address", "ray_actor_cpus")):
            cli_error(f"--{name.replace('_', '-')} {getattr(args, name)!r} is read only with --backend ray; leave it out")
    if args.env_factory:
        check_env_factory(args.env_factory)
    if args.actor not in ACTOR_TYPES:
        raise SystemExit(f"--actor {args.actor!r}; expected one of {', '.join(ACTOR_TYPES)}")
    for name in POSITIVE_FLAGS:
        if getattr(args, name) < 1:
            raise SystemExit(f"--{name.replace('_', '-')} {getattr(args, name)}; expected >= 1")
    if not args.resume:  # a new run folder goes under --run-dir: a file in the way is a traceback from mkdir otherwise
        try:
            check_out_dir(args.run_dir, "--run-dir")
        except ValueError as e:
            raise SystemExit(str(e)) from None
    if args.heartbeat_timeout <= args.heartbeat_interval:
        raise SystemExit(
            f"--heartbeat-timeout {args.heartbeat_timeout} must exceed --heartbeat-interval {args.heartbeat_interval}"
        )
    if args.keep_checkpoints and not args.save_model:  # it would write nothing, silently
        cli_error("--keep-checkpoints: only --save-model writes checkpoints (here --no-save-model); leave it out")
    if args.keep_checkpoints and re.fullmatch(r".*_step\d+", args.exp_name):
        # <exp_name>.pt would read as a kept checkpoint of another step
        cli_error(f"--exp-name {args.exp_name!r} with --keep-checkpoints: expected a name not ending in _step<digits>")


def check_async_learner_args(args: Any, given: frozenset[str] | None = None) -> None:
    """Clear errors for bad or inconsistent options of the actor-learner's ``Args``, before any process starts:
    :func:`check_numeric_flags`, :func:`check_map_and_teacher` (with ``given``, the flags the command line set),
    then :func:`check_backends_and_sizes`.

    Raises:
        SystemExit: the first bad option, in one line naming the flag, the value and what was expected.
    """
    check_numeric_flags(args)
    check_map_and_teacher(args, given)
    check_backends_and_sizes(args)
