# Behaviour cloning with action re-weighting. Style: CleanRL single file (tyro Args).
# Facts: liuruoze/mini-AlphaStar's SL loss and argument masks, and a power-law re-weighting of its
# action-type labels; docs/bc.md.
"""Behaviour cloning with per-head masked cross-entropy and action re-weighting.

    # SMAC-map demonstrations (sc2_envs.training.demos) with the per-class actor of models/
    python algos/bc_reweight.py --data demos/2s3z_k4 --reweight-power 1 --select-by behaviour
    # the replay dataset (python -m sc2_envs.replays) with models/alphastar.py
    python algos/bc_reweight.py --data /tmp/ds_actions --reweight-power 1

Re-weighting: with ``data[a]`` the share of action ``a`` among the training labels and ``target[a]``
the wanted share (``--target-dist uniform``: uniform over the actions seen in the data; or a JSON file
``{action name or id: share}``), ``w[a] = clip((target[a] / data[a]) ** p, lo, hi)`` with
``p = --reweight-power`` and ``(lo, hi) = --weight-clip``, then ``w`` is divided by ``sum_a data[a] w[a]``
so that its mean over the training labels is 1 (after this step ``w`` may leave ``[lo, hi]``): the
action-type loss keeps its scale. Each sample's weight ``w[label]`` multiplies its action-type loss *and*
its argument-head losses (mini-AlphaStar multiplies its argument masks by the same table); an argument
head serves some action types only, so its mean weight is not 1 and its scale moves with ``p``.
``p = 0`` is plain BC.

The first screen lists the data used (files, frames, per-file counts, per-action counts) and the split.
A dataset with fewer files or frames than requested (``--num-files``, ``--min-frames``) is an error
unless ``--smoke``. Every epoch prints, per action, the training split's label share (``data``), the
share the weighted loss trains towards (``effective``: ``data[a] w[a]`` normalised), and on the validation
split the mean predicted probability and the argmax share; it writes ``runs/<run>/epoch_<NNN>.pt``.
``--select-by val-acc|behaviour`` picks the final checkpoint (``best.pt``); behaviour plays every epoch: SMAC
checkpoints on the simulator, replay-trained ones (``AlphaStarPolicy``) on FullGame-v0 against the very_easy bot
(``sc2_envs.training.fullgame_evaluation``; the lite engine by default, ``--eval-backend sc2`` for StarCraft II),
``--eval-episodes`` games on ``--eval-seed``; ``--average-window k`` also averages ``k`` adjacent epochs containing
the pick (ending at it when possible) and evaluates the average. Report the selected checkpoint's win rate on another seed
(``algos/eval_fullgame.py --seed``): the selection seed's figure is biased upwards by the pick.

The bookkeeping is the library's (``sc2_envs.training.bc_*``). Each run writes into a new folder (``--run-dir``,
new or empty; default ``runs/<data name>__<exp_name>__<seed>__<unix time>``) with ``run_meta.json`` and, after
every epoch, ``resume.pt``. Ctrl-C (SIGINT) or SIGTERM finishes the current epoch (a second signal aborts at
once); ``--resume <run folder>`` continues with the next epoch and ends with the same checkpoints, bit for bit,
as a run never stopped. The selection (``best.pt``) runs once all ``--epochs`` are done, and again when a
finished run is resumed (other selection flags, more ``--epochs``; behaviour curves are then rewritten).
"""

from __future__ import annotations

import os

# Idle OpenMP threads spin ~10 us, not libgomp's ~3 ms, before they sleep: long spins starve the working
# thread on shared cores (sc2_envs.training.wait_policy). Set before torch loads OpenMP; your own setting wins.
if not (os.environ.get("OMP_WAIT_POLICY") or os.environ.get("GOMP_SPINCOUNT")):
    os.environ["GOMP_SPINCOUNT"] = "1000"

import math
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import tyro

from models.alphastar import alphastar_losses
from models.common import MASKED_LOGIT, masked_ce
from sc2_envs.replays.dataset import ReplayData
from sc2_envs.sim.rules.features import N_ACTIONS_NO_ATTACK
from sc2_envs.smac_actions import STOP
from sc2_envs.training.bc_checks import check_args, check_data, check_demo_layout, check_size
from sc2_envs.training.bc_data import SmacData
from sc2_envs.training.bc_epochs import end_epoch, open_run_dir, resume_run, resume_training
from sc2_envs.training.bc_labels import dropped_share, effective_shares, load_target, per_action, share_table
from sc2_envs.training.bc_selection import fullgame_play, fullgame_play_stride, select, smac_play
from sc2_envs.training.bc_validation import accuracy_text, replay_validate, smac_validate
from sc2_envs.training.checkpoints import save_checkpoint
from sc2_envs.training.cli import cli_error, flowing_help, given_fields
from sc2_envs.training.run import RESUME_FILE, GracefulStop, discard_unstarted_run, tune_allocator
from sc2_envs.training.wait_policy import wait_policy_line

SCRIPT = os.path.basename(__file__)  # run_meta.json records it; --resume continues only this script's runs
ALGORITHM = SCRIPT[: -len(".py")]  # recorded in every checkpoint (models.save_checkpoint)


@dataclass
class Args:
    exp_name: str = ALGORITHM
    """the name of this experiment"""
    seed: int = 1
    """seed of the experiment (split, shuffling, initialisation)"""
    torch_deterministic: bool = True
    """if toggled, sets `torch.backends.cudnn.deterministic=True`"""
    cuda: bool = True
    """if toggled, cuda will be enabled when available"""
    torch_threads: int = 1
    """torch CPU threads (0: torch's default)"""
    run_dir: str | None = None
    """output folder, new or empty (default: a new folder runs/<data name>__<exp_name>__<seed>__<time>)"""
    resume: str = ""
    """a run folder (or its resume.pt) to continue with its next epoch; only --epochs, the eval and selection flags,
    --torch-threads and --cuda may change (RESUME_CHANGEABLE)"""

    # data
    data: str = ""
    """a demonstration folder (sc2_envs.training.demos, has meta.json) or a replay dataset (sc2_envs.replays, has
    dataset.json)"""
    num_files: int | None = None
    """use exactly the first N shard files (None: all); fewer available is an error unless --smoke"""
    min_frames: int = 1
    """fail (unless --smoke) when the loaded data has fewer frames than this"""
    smoke: bool = False
    """allow a dataset smaller than requested (a warning is printed instead of an error)"""
    val_fraction: float = 0.1
    """share of episodes (demos) or replay files (replays) held out for validation"""

    # re-weighting
    reweight_power: float = 0.0
    """p in w[a] = clip((target[a]/data[a])**p, lo, hi); 0 = plain BC"""
    target_dist: str = "uniform"
    """`uniform` (over actions seen in the training labels) or a JSON file {action name or id: share}"""
    weight_clip: tuple[float, float] = (0.1, 50.0)
    """(lo, hi) clip of the weights before normalisation to mean 1 over the data"""

    # optimisation
    epochs: int = 10
    """passes over the training split"""
    batch_size: int = 64
    """frames (demos) or sequences (replays) per minibatch"""
    learning_rate: float = 1e-3
    """Adam learning rate"""
    weight_decay: float = 1e-5
    """Adam weight decay"""
    max_grad_norm: float = 1.0
    """gradient clipping (before the optimiser step)"""

    # models
    actor: str = "gnn"
    """SMAC actor: `gnn` (per-class attention actor) or `mlp`"""
    hidden: int = 64
    """SMAC actor width"""
    model_preset: str = "mini"
    """replay model: `mini` (mini-AlphaStar sizes) or `tiny`"""
    seq_len: int = 4
    """replay model: LSTM sequence length (mini-AlphaStar SL uses 4)"""

    # selection
    select_by: str = "val-acc"
    """`val-acc` (highest validation action accuracy) or `behaviour` (win rate, then idle share, then damage)"""
    eval_episodes: int = 64
    """episodes (SMAC) or full games against the bot (replay data) per checkpoint for behaviour evaluation"""
    eval_envs: int = 32
    """parallel envs (games) of the evaluator"""
    eval_greedy: bool = False
    """evaluate with argmax actions instead of sampling"""
    eval_seed: int = 10_000
    """reset and sampling seed of the evaluator (the same for every checkpoint); report with another seed"""
    eval_backend: str = "lite"
    """replay data: the game the evaluator plays, `lite` (the embedded engine) or `sc2` (StarCraft II)"""
    eval_game_steps_per_episode: int = 18000
    """replay data: game loops before an evaluation game is cut, a tie (mini-AlphaStar's 18,000); 0: no limit"""
    eval_step_mul: int = 0
    """replay data: game loops per decision in evaluation games; 0: the dataset's sampling stride (`--sample every_k --k K`
    gives K: the labels are the experts' commands per K loops), else mini-AlphaStar's 8"""
    average_window: int = 0
    """if >= 2: also average `average_window` adjacent epochs containing the pick (ending at it when possible) and evaluate
    it"""


RESUME_CHANGEABLE = ("epochs", "torch_threads", "cuda", "select_by", "eval_episodes", "eval_envs", "eval_greedy")
RESUME_CHANGEABLE += ("eval_seed", "eval_backend", "eval_game_steps_per_episode", "eval_step_mul", "average_window")
"""The flags a resumed run may change (``--resume``); every other flag keeps the run's saved value."""


# ----------------------------------------------------------------------------------------- weights
def action_weights(counts, power: float, target=None, clip: tuple[float, float] = (0.1, 50.0)) -> np.ndarray:
    """Per-action loss weights ``w[a] = clip((target[a] / data[a]) ** power, lo, hi)``, mean 1 over the data.

    Args:
        counts: ``[A]`` label counts in the training data (non-negative).
        power: ``p >= 0``; 0 gives all ones (plain BC).
        target: ``[A]`` wanted shares (non-negative, any scale: renormalised over the seen actions) or
            None for uniform over the actions with ``counts > 0``.
        clip: ``(lo, hi)`` with ``0 < lo <= hi``.

    Returns:
        ``[A]`` float64 with ``sum(counts * w) / sum(counts) == 1``. Actions absent from the data get
        weight 1 (they never occur in the loss).

    Raises:
        ValueError: negative counts, no labels, bad power/clip, a target of another length than ``counts``
            or with a negative or non-finite entry (the action id is named), or a target that puts no mass
            on any seen action.
    """
    counts = np.asarray(counts, dtype=np.float64)
    if counts.ndim != 1 or (counts < 0).any() or counts.sum() <= 0:
        raise ValueError(f"counts must be a 1-D array of non-negative label counts with a positive sum; got {counts}")
    lo, hi = clip
    if not (0 < lo <= hi):
        raise ValueError(f"weight_clip={clip!r}; expected 0 < lo <= hi")
    if power < 0 or not math.isfinite(power):
        raise ValueError(f"reweight_power={power!r}; expected a finite number >= 0")
    seen = counts > 0
    data = counts / counts.sum()
    if target is None:
        tgt = seen.astype(np.float64)
    else:
        tgt = np.asarray(target, dtype=np.float64)
        if tgt.shape != counts.shape:
            raise ValueError(f"target must be {counts.shape[0]} shares (one per action); got shape {tgt.shape}")
        bad = np.flatnonzero(~np.isfinite(tgt) | (tgt < 0))
        if bad.size:
            raise ValueError(f"target share of action {int(bad[0])} is {tgt[bad[0]]}; expected finite shares >= 0")
    if tgt[seen].sum() <= 0:
        raise ValueError("target distribution puts no mass on any action seen in the data")
    tgt = np.where(seen, tgt, 0.0) / tgt[seen].sum()
    w = np.ones_like(counts)
    with np.errstate(divide="ignore"):
        ratio = np.where(seen, tgt / np.where(seen, data, 1.0), 1.0)
    w[seen] = np.clip(ratio[seen] ** power, lo, hi)
    w[seen] /= (data * w).sum()
    return w


# ----------------------------------------------------------------------------------------- the epoch loop
@dataclass
class Cloning:
    """One dataset kind's parts of the epoch loop (:func:`train`): SMAC demonstrations or a replay dataset.

    Attributes:
        model: the trained network (``models.ClassPolicy`` or ``models.alphastar.AlphaStarPolicy``).
        generator: the shuffler, seeded with ``--seed``, its state in ``resume.pt``: SMAC's a ``torch.Generator``,
            the replays' a NumPy ``Generator`` (each keeps the stream its runs were trained with).
        minibatches: batch size -> one epoch's minibatches of training items (frame ids / windows), shuffled.
        loss: a minibatch -> its weighted mean loss. validate: -> the held-out figures (``bc_validation``).
        record: held-out figures -> the dataset's own entries of the epoch record (``summary.json`` history).
        save: (path, the common ``bc`` record, held-out figures) -> writes the epoch checkpoint.
        names, counts, weights, files: action names, ``[A]`` training label counts and float64 loss weights
            (:func:`action_weights`), the data files used.
    """

    model: torch.nn.Module
    generator: Any
    minibatches: Callable[[int], Iterator]
    loss: Callable[[Any], torch.Tensor]
    validate: Callable[[], dict]
    record: Callable[[dict], dict]
    save: Callable[[Path, dict, dict], None]
    names: list[str]
    counts: np.ndarray
    weights: np.ndarray
    files: list[str]


def train(args: Args, run_dir: Path, job: Cloning, resumed: dict | None, stop: GracefulStop | None):
    """Adam on ``job.loss`` for epochs ``[next, --epochs]``; after each: validation, checkpoint, ``resume.pt``.

    Returns:
        ``(stopped, history)``: the summary of a run stopped by a signal (``bc_epochs.stopped``; no
        selection follows) or None, and the epoch records.
    """
    model = job.model
    opt = torch.optim.Adam(model.parameters(), lr=args.learning_rate, weight_decay=args.weight_decay)
    data_share = job.counts / job.counts.sum()
    eff_share = effective_shares(job.weights, job.counts)
    start_epoch, history = 0, []
    if resumed is not None:
        start_epoch, history = resume_training(resumed, run_dir, model, opt, job.generator)
    for epoch in range(start_epoch + 1, args.epochs + 1):
        t0 = time.time()
        model.train()
        losses = []
        for batch in job.minibatches(args.batch_size):
            loss = job.loss(batch)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
            opt.step()
            losses.append(float(loss.detach()))
        model.eval()
        val = job.validate()
        path = run_dir / f"epoch_{epoch:03d}.pt"
        bc = {"epoch": epoch, "val_acc": val["val_acc"], "val_loss": val["val_loss"], "weights": job.weights.tolist()}
        bc.update(data_counts=job.counts.tolist(), files=job.files, args=asdict(args))
        job.save(path, bc, val)
        rec = {"epoch": epoch, "train_loss": float(np.mean(losses)), "val_loss": val["val_loss"], "val_acc": val["val_acc"]}
        rec.update(**job.record(val), checkpoint=str(path))
        print(
            f"epoch {epoch}: train loss {rec['train_loss']:.4f} (weighted), val loss {val['val_loss']:.4f} (unweighted), "
            f"{accuracy_text(val)} ({time.time() - t0:.1f} s)\n"
            + share_table(job.names, data_share, eff_share, val["pred_share"], val["argmax_share"]),
            flush=True,
        )
        done = end_epoch(run_dir, args, rec, history, model, opt, job.generator, stop)
        if done is not None:  # a stop was requested: the run ends after this epoch, before the selection
            return done, history
    return None, history


# ----------------------------------------------------------------------------------------- SMAC demos
def smac_action_names(n_actions: int) -> list[str]:
    """SMAC action names: no-op, stop, move N/S/E/W, ``target_j`` (attack, or heal for a medivac)."""
    moves = ["no_op", "stop", "north", "south", "east", "west"]
    return moves + [f"target_{j}" for j in range(n_actions - N_ACTIONS_NO_ATTACK)]


def smac_loss(policy, data: SmacData, idx: torch.Tensor, w: torch.Tensor):
    """Weighted masked cross-entropy over the living agents of frames ``idx`` (every class).

    Args:
        policy: the per-class actor (``logits(obs [B, N, obs_size]) -> [B, N, A]``).
        data: the split.
        idx: ``[B]`` int64 frame ids (rows of ``data.obs``) on ``data``'s device.
        w: ``[A]`` float32 per-action weights (:func:`action_weights`); a sample's weight is ``w[label]``.

    Returns:
        ``(loss, n)``: the weighted CE summed over the living agent-frames, divided by ``n`` (a scalar
        tensor), and ``n`` (int), the number of living agent-frames.
    """
    avail, lab = data.avail[idx], data.labels[idx]
    logits = torch.where(avail, policy.logits(data.obs[idx]), torch.full_like(avail, MASKED_LOGIT, dtype=torch.float32))
    total, n = masked_ce(logits, lab, data.alive[idx], w[lab])
    return total / max(n, 1), n


def loss_weights(args: Args, names: list[str], counts: np.ndarray, device, by_count: bool = False):
    """The re-weighting of ``--reweight-power``, ``--target-dist`` and ``--weight-clip`` over the training
    label ``counts``; prints the counts and weights. Returns ``(w [A] float64, w on device float32)``."""
    print("training label counts: " + per_action(names, counts, counts, by_count=by_count))
    target = load_target(args.target_dist, names)
    dropped = dropped_share(target, counts)
    if dropped > 0:  # renormalised away by action_weights: said, not silent
        absent = [names[i] for i in np.flatnonzero((target > 0) & (np.asarray(counts) == 0))]
        print(
            f"warning: --target-dist {args.target_dist} puts {dropped:.1%} of its mass on {len(absent)} action(s) "
            f"absent from the training data ({', '.join(absent[:8])}{', ...' if len(absent) > 8 else ''}); "
            "that share is dropped and the rest renormalised"
        )
    w_np = action_weights(counts, args.reweight_power, target, args.weight_clip)
    print("weights: " + per_action(names, w_np, counts, ".3f", by_count=by_count))
    return w_np, torch.as_tensor(w_np, dtype=torch.float32, device=device)


def load_smac(args: Args, device):
    """Load and split the demonstrations; print what is used. Returns ``(files, SmacData, env_info)``:
    the shard files, the split and the simulator's ``get_env_info()`` (the recording's layout, checked)."""
    import sc2_envs
    from sc2_envs.training.demos import load_demos

    ds = load_demos(args.data, max_files=args.num_files)
    check_size(args, len(ds.files), len(ds.meta["shards"]), ds.rows)
    print(ds.describe())
    data = SmacData(ds, args.val_fraction, args.seed, device)
    check_size(args, len(ds.files), len(ds.meta["shards"]), ds.rows, data.n_val_eps, "episode")
    print(
        f"split: train {len(data.train_idx)} frames ({data.n_train_eps} episodes), val {len(data.val_idx)} frames "
        f"({data.n_val_eps} episodes); loss over living agents ({int(data.counts.sum())} agent-frames), "
        f"{data.dead_frames} dead-agent frames excluded (only no-op is available to them)"
    )
    info = ds.meta["env_info"]
    # the evaluator plays the default-option simulator: the demonstrations must have its layout
    env_info = sc2_envs.make_batched(info["map_name"], num_envs=1).get_env_info()
    check_demo_layout(args.data, info, env_info)
    return [f[0] for f in ds.files], data, env_info


def run_smac(args: Args, run_dir: Path, device, resumed: dict | None = None, stop: GracefulStop | None = None) -> dict:
    """Behaviour cloning of the per-class actor on SMAC demonstrations, then the selection."""
    from models import build_models

    files, data, env_info = load_smac(args, device)
    A = int(env_info["n_actions"])
    names = smac_action_names(A)
    w_np, w = loss_weights(args, names, data.counts, device)
    # a SMAC checkpoint holds actors and a critic (models.save_checkpoint; --init-from of the RL scripts loads
    # both): BC trains the actors only, so the critic keeps its seeded initialisation, from which a fine-tune starts
    policy, critic = build_models(env_info, args.actor, hidden=args.hidden, device=device)
    g = torch.Generator().manual_seed(args.seed)

    def minibatches(batch_size: int):
        perm = torch.as_tensor(data.train_idx)[torch.randperm(len(data.train_idx), generator=g)].to(device)
        return (perm[s : s + batch_size] for s in range(0, len(perm), batch_size))

    def save(path: Path, bc: dict, val: dict) -> None:  # global_step 0: no env steps (the bc record has the epoch)
        save_checkpoint(str(path), policy, critic, env_info, asdict(args), extra={"bc": bc}, algorithm=ALGORITHM)

    job = Cloning(
        model=policy,
        generator=g,
        minibatches=minibatches,
        loss=lambda idx: smac_loss(policy, data, idx, w)[0],
        validate=lambda: smac_validate(policy, data, A),
        record=lambda val: {"val_idle_pred": float(val["pred_share"][STOP])},
        save=save,
        names=names,
        counts=data.counts,
        weights=w_np,
        files=files,
    )
    done, history = train(args, run_dir, job, resumed, stop)
    if done is not None:
        return done
    # --select-by behaviour ranks the epochs by evaluation.behaviour_key: win rate, then less idling (stop), then
    # more damage. SMAC passes a play function also to val-acc without averaging (only the pick plays): its behaviour
    # goes into the summary for seconds of simulator time; full games cost minutes, so run_replays plays only if needed
    return select(args, run_dir, history, smac_play(args, env_info["map_name"], device), resumed=resumed is not None)


# ----------------------------------------------------------------------------------------- replays
def replay_loss(model, data: ReplayData, windows: list, device, cfg, w: torch.Tensor) -> torch.Tensor:
    """Weighted teacher-forced loss of the sequences ``windows`` (mini-AlphaStar's SL loss), per step.

    Every head's masked CE is summed and divided by the real (unpadded) steps: selected_units adds up to
    ``K + 1`` terms per step (each pick and the end of selection), the other heads one each. The LSTM
    starts from zeros at every window of ``seq_len`` steps; evaluation games carry it through the game.
    """
    obs, labels, m = data.batch(windows, device, cfg.max_entities, cfg.max_selected)
    out, _ = model(obs, labels=labels)
    # per head: CE summed over the steps whose action-type label uses the head (spec.argument_masks) and
    # that have a label, each times w[action-type label]; selected_units: one term per pick plus the
    # end-of-selection step; target_unit / target_location only where the label is >= 0
    res, _ = alphastar_losses(model, out, labels, m, w)
    return sum(v[0] for v in res.values()) / max(int(m.sum()), 1)


def run_replays(args: Args, run_dir: Path, device, resumed: dict | None = None, stop: GracefulStop | None = None) -> dict:
    """Behaviour cloning of ``AlphaStarPolicy`` on a replay dataset, then the selection."""
    from models.alphastar import AlphaStarConfig, AlphaStarPolicy, save_alphastar

    data = ReplayData(args.data, args.num_files, args.seq_len, args.val_fraction, args.seed)
    check_size(args, len(data.files), data.available, data.rows, data.val_replays, "replay")
    cfg = AlphaStarConfig.for_replays(args.model_preset, data.E, data.R, data.K)
    print(data.describe(cfg.max_selected))
    if args.select_by == "behaviour" or args.average_window >= 2:  # the runs that play games (fullgame_play)
        print(fullgame_play_stride(args.eval_step_mul, data.step_mul))
    print(
        f"split: train {len(data.train_windows)} sequences, val {len(data.val_windows)} sequences "
        f"({data.val_replays} of {data.n_replays} replays held out), seq_len {args.seq_len}"
    )
    w_np, w = loss_weights(args, data.names, data.counts, device, by_count=True)
    model = AlphaStarPolicy(cfg).to(device)
    print(f"model: AlphaStarPolicy preset {args.model_preset} (replay columns), {model.n_params()['total']:,} parameters")
    heads = list(data.spec.ACTION_HEADS)
    rng = np.random.default_rng(args.seed)

    def minibatches(batch_size: int):
        order = rng.permutation(len(data.train_windows))
        return ([data.train_windows[i] for i in order[s : s + batch_size]] for s in range(0, len(order), batch_size))

    def record(val: dict) -> dict:
        shares = {k: val[k].tolist() for k in ("pred_share", "argmax_share")}
        return {"val_head_acc": val["val_head_acc"], "val_head_n": val["val_head_n"], **shares}

    job = Cloning(
        model=model,
        generator=rng,
        minibatches=minibatches,
        loss=lambda windows: replay_loss(model, data, windows, device, cfg, w),
        validate=lambda: replay_validate(model, data, device, cfg, heads),
        record=record,
        save=lambda path, bc, val: save_alphastar(
            str(path), model, {"bc": {**bc, "val": val["val_head_acc"], "step_mul": data.step_mul}}
        ),
        names=data.names,
        counts=data.counts,
        weights=w_np,
        files=[f[0] for f in data.files],
    )
    done, history = train(args, run_dir, job, resumed, stop)
    if done is not None:
        return done
    play_when = args.select_by == "behaviour" or args.average_window >= 2
    # ranked as run_smac's: win rate, then less idling (no_op or Stop decisions), then more damage (killed value)
    return select(args, run_dir, history, fullgame_play(args, device) if play_when else None, resumed=resumed is not None)


def main(args: Args, stop: GracefulStop | None = None, given: frozenset[str] | None = None) -> dict:
    """Train (or continue, ``--resume``) and select; returns the summary dict.

    ``stop``: a :class:`sc2_envs.GracefulStop` to use instead of a new one (its handlers are
    installed for the run); the run ends after the epoch in which it was requested. ``given``: the
    flags the command line set (``given_fields``; None: those that differ from their defaults),
    which ``--resume`` applies (changeable ones) or checks against the run's values (the others).

    Raises:
        ValueError / FileNotFoundError: bad flags (``sc2_envs.training.bc_checks``: ``check_args``, and
            ``check_data``, which checks a replay run's evaluator too: ``SC2NotFoundError`` is a
            ``FileNotFoundError``), ``--data``, ``--run-dir`` or ``--resume`` (before any folder is made).
        SystemExit: code 2, a bad ``$SC2_ENVS_KEEP_FREED_MEMORY`` (``sc2_envs.training.run.tune_allocator``).
    """
    resumed, resumed_dir = None, None
    if args.resume:
        args, resumed, resumed_dir = resume_run(args, Args(), RESUME_CHANGEABLE, given, SCRIPT)
    check_args(args)
    allocator_line = tune_allocator()
    root = check_data(args, given)
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.backends.cudnn.deterministic = args.torch_deterministic
    if args.torch_threads > 0:
        torch.set_num_threads(args.torch_threads)
    device = torch.device("cuda" if torch.cuda.is_available() and args.cuda else "cpu")
    run_dir = open_run_dir(args, root.name, SCRIPT, device, resumed, resumed_dir)
    print(f"run dir {run_dir}; args {asdict(args)}")
    print(allocator_line)
    print(wait_policy_line())
    stop = stop or GracefulStop()
    # SIGINT / SIGTERM: finish the epoch, write its checkpoint and resume.pt, return
    with discard_unstarted_run(run_dir, resumed is not None, RESUME_FILE), stop:
        run = run_smac if (root / "meta.json").exists() else run_replays
        return run(args, run_dir, device, resumed, stop)


if __name__ == "__main__":
    cli_args = tyro.cli(flowing_help(Args))
    try:
        main(cli_args, given=given_fields(Args))
    except (OSError, ValueError) as e:
        if not getattr(e, "before_training", True):
            raise
        cli_error(str(e))  # bad input, found before training: one line, exit status 2, no run folder
