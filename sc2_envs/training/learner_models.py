"""The models of the asynchronous actor-learner (``algos/a3c_upgo.py``), built from its ``Args`` for each game family.

* :func:`smac_models`: on a SMAC map, the student ``ClassPolicy`` (heads = agents) and its central critic,
  new or from ``--init``, and the ``--teacher`` policy of the KL term.
* :func:`fullgame_pieces`: on the full game (``--map Simple64``), ``AlphaStarPolicy`` from ``--init``
  (a supervised checkpoint) with its win/loss baseline as the value (``base.winloss``: the only parameters a
  critic warm-up trains), the actors of ``sc2_envs.training.fullgame_rl`` (:func:`fullgame_actor_settings`:
  training games truncated at ``--train-game-loops``) and the per-head loss of ``models.alphastar_rl``, as
  :class:`~sc2_envs.training.async_learner.LearnerPieces`.

A checkpoint that does not fit (another map's classes, a teacher the student cannot be compared with) is
refused here, before any actor starts.
"""

from __future__ import annotations

import functools
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from models import CentralCritic, ClassPolicy, build_critic, build_models
from sc2_envs.training.async_learner import LearnerPieces, actor_seed
from sc2_envs.training.checkpoints import file_sha256, load_checkpoint
from sc2_envs.training.run import starting_lineage


def smac_models(
    args: Any, env_info: dict, device: torch.device, resumed: dict | None
) -> tuple[ClassPolicy, CentralCritic, ClassPolicy | None, list[dict]]:
    """The SMAC learner's networks: new ones (``--actor``, ``--hidden``, ``--actor-layers``), or the student of
    ``--init`` (its critic when the checkpoint has one, else a new critic of the policy's sizes); and the frozen
    ``--teacher`` when one is given.

    Args:
        args: the learner's ``Args`` (reads ``init``, ``teacher``, ``kl_coef``, ``actor``, ``hidden``, ``actor_layers``).
        env_info: the map's ``get_env_info()`` (the classes and entity layout the models must fit).
        device: where the models live.
        resumed: a resumed run's state (its ``lineage`` is kept), or None.

    Returns:
        ``(policy, critic, teacher, lineage)``; ``teacher`` is None without ``--teacher`` (in eval mode, no
        gradients, otherwise); ``lineage`` lists the starting checkpoints, oldest first (empty from scratch).

    Raises:
        ValueError: a checkpoint does not fit the map (``load_checkpoint`` names the mismatch).
    """
    if args.init:
        policy, _, ckpt = load_checkpoint(args.init, env_info, device, with_critic=False)
        if "critic" in ckpt:
            _, critic, _ = load_checkpoint(args.init, env_info, device, with_critic=True)
        else:
            hp = policy.hparams
            critic = build_critic(env_info, policy.actor_type, hp["hidden"], hp["heads"], hp["layers"], device=device)
        print(f"student initialised from {args.init} (trained on {ckpt['config']['map_name']})")
    else:
        policy, critic = build_models(env_info, args.actor, hidden=args.hidden, actor_layers=args.actor_layers, device=device)
        ckpt = None
    lineage = starting_lineage(args.init, ckpt, resumed)  # saved in every checkpoint
    teacher = None
    if args.teacher:  # before the actors start: a teacher that does not fit the map is bad input, not an actor failure
        teacher, _, tck = load_checkpoint(args.teacher, env_info, device, with_critic=False)
        teacher.eval().requires_grad_(False)
        print(
            f"teacher {args.teacher} ({tck['config']['actor_type']}, trained on {tck['config']['map_name']}), "
            f"kl_coef {args.kl_coef}"
        )
    return policy, critic, teacher, lineage


def fullgame_actor_settings(args: Any, cfg: Any) -> Any:
    """What the full-game actors play: ``--envs-per-actor`` games of FullGame-v0 on the lite engine
    (``--env-backend sim``) or the real game, unrolls of ``--unroll-length`` env steps.

    Training games end at ``async_learner_checks.training_game_loops(args)`` game loops (``--train-game-loops``,
    else ``--game-steps-per-episode``) as a truncation, which the loss bootstraps from the value, or with
    ``--discount-zero-after-timeout`` as a tie worth 0.

    Args:
        args: the learner's ``Args`` (checked; ``step_mul`` resolved).
        cfg: the student's ``AlphaStarConfig`` (its raw and minimap resolutions are the env's).

    Returns:
        A ``fullgame_rl.FullGameActorSettings``.
    """
    from sc2_envs.training.async_learner_checks import training_game_loops
    from sc2_envs.training.fullgame_rl import FullGameActorSettings

    env_kwargs = {
        "step_mul": args.step_mul,
        "game_steps_per_episode": training_game_loops(args),
        "max_entities": args.max_entities,
        "raw_resolution": cfg.raw_resolution,
        "minimap_resolution": cfg.minimap_size,
    }
    backend = "lite" if args.env_backend == "sim" else "sc2"
    return FullGameActorSettings(
        backend,
        args.envs_per_actor,
        args.unroll_length,
        env_kwargs,
        discount_zero_after_timeout=args.discount_zero_after_timeout,
        saved_start_share=args.saved_start_share,
        save_loop=args.save_loop,
        saved_start_games=args.saved_start_games,
        banked_minerals_cost=args.banked_minerals_cost,
    )


def fullgame_pieces(args: Any, device: torch.device, resumed: dict | None, algorithm: str) -> LearnerPieces:
    """The full-game learner: ``AlphaStarPolicy`` from ``--init`` (an SL checkpoint), its win/loss
    baseline as the value, per-head V-trace / UPGO and the per-head KL to ``--teacher``
    (``sc2_envs.training.fullgame_rl``, ``models.alphastar_rl``).

    Args:
        args: the learner's ``Args`` (``init``, ``teacher``, the loss settings of ``OffPolicySettings``,
            ``env_backend``, ``envs_per_actor``, ``unroll_length``, ``step_mul``, ``game_steps_per_episode`` and
            ``train_game_loops`` in game loops, ``max_entities``, ``seed``, ``session``).
        device: the learner's device.
        resumed: a resumed run's state (its ``lineage`` is kept), or None.
        algorithm: the training script's name, recorded in every checkpoint (``"a3c_upgo"``).

    Raises:
        SystemExit: ``--init`` or ``--teacher`` cannot be loaded, or the teacher does not fit the student
            (one line naming ``--map`` and the reason).
    """
    from models.alphastar import load_alphastar, save_alphastar
    from models.alphastar_rl import OffPolicySettings
    from sc2_envs.training.fullgame_rl import (
        FullGameLearner,
        collate_unrolls,
        compile_lite_kernels,
        run_fullgame_actor,
    )

    try:  # bad input, reported before the actors start
        model, _ = load_alphastar(args.init, device)
        teacher = load_alphastar(args.teacher, device)[0] if args.teacher else None
        settings = OffPolicySettings(**{k: getattr(args, k) for k in OffPolicySettings.__dataclass_fields__})
        learner = FullGameLearner(model, teacher, settings)  # checks that the teacher fits the student
    except ValueError as e:
        raise SystemExit(f"--map {args.map}: {e}") from None
    cfg = model.cfg
    if resumed is not None and resumed.get("lineage"):
        lineage = list(resumed["lineage"])
    else:
        lineage = [{"path": args.init, "resolved": str(Path(args.init).resolve()), "sha256": file_sha256(args.init)}]
    actor_settings = fullgame_actor_settings(args, cfg)
    if actor_settings.backend == "lite":
        compile_lite_kernels(actor_settings)  # once here, not in every actor past its --startup-timeout
    seed_fn = functools.partial(actor_seed, args.seed, session=args.session)

    def save(path: Path, env_steps: int) -> None:
        extra = {"rl": {"algorithm": algorithm, "args": asdict(args), "env_steps": env_steps}, "lineage": lineage}
        save_alphastar(str(path), model, extra)  # atomic, loadable with weights_only=True

    teacher_line = f", teacher {args.teacher} (kl_coef {args.kl_coef})" if teacher is not None else ""
    return LearnerPieces(
        modules={"actors": model},
        published=model,
        target=functools.partial(run_fullgame_actor, actor_settings, cfg.to_dict(), seed_fn),
        collate=collate_unrolls,
        loss=learner.loss,
        save=save,
        lineage=lineage,
        value_params={"base.winloss": list(model.base["winloss"].parameters())},  # the loss's only baseline
        summary=(
            f"{args.map} (FullGame-v0, {actor_settings.backend}): AlphaStarPolicy from {args.init} "
            f"({sum(p.numel() for p in model.parameters()):,} parameters){teacher_line}"
        ),
    )
