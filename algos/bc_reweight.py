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
so that its mean over the training labels is 1 (the loss keeps its scale; after this step ``w`` may
leave ``[lo, hi]``). Each sample's weight ``w[label]`` multiplies its action-type loss *and* its
argument-head losses (mini-AlphaStar multiplies its argument masks by the same table). ``p = 0`` is plain BC.

The first screen lists the data used (files, frames, per-file counts, per-action counts) and the split.
A dataset with fewer files or frames than requested (``--num-files``, ``--min-frames``) is an error
unless ``--smoke``. Every epoch logs predicted vs data vs target action shares on the validation split
and writes ``runs/<run>/epoch_XXX.pt``. ``--select-by val-acc|behaviour`` picks the final checkpoint
(``best.pt``); behaviour plays every epoch: SMAC checkpoints on the simulator, replay-trained ones
(``AlphaStarPolicy``) on FullGame-v0 against the very_easy bot (``sc2_envs.training.fullgame_evaluation``;
the lite engine by default, ``--eval-backend sc2`` for StarCraft II), ``--eval-episodes`` games on
``--eval-seed``; ``--average-window k`` also averages ``k`` adjacent epochs containing the pick (ending at it
when possible) and evaluates the average. Report the selected checkpoint's win rate on another seed
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
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import tyro

from models.alphastar import alphastar_losses
from models.common import MASKED_LOGIT, masked_ce
from sc2_envs.replays.dataset import ReplayData
from sc2_envs.sim.rules.features import N_ACTIONS_NO_ATTACK
from sc2_envs.smac_actions import alive_mask
from sc2_envs.training import allocator

# "x as x": public names of this script that live in the library, re-exported
from sc2_envs.training.bc_checks import check_args, check_data, check_demo_layout, check_size
from sc2_envs.training.bc_checks import check_replay_evaluation as check_replay_evaluation
from sc2_envs.training.bc_epochs import DiscardUnstartedRun, end_epoch, open_run_dir, resume_run, resume_training
from sc2_envs.training.bc_epochs import log_scalars as log_scalars
from sc2_envs.training.bc_epochs import restart_curves as restart_curves
from sc2_envs.training.bc_epochs import save_epoch as save_epoch
from sc2_envs.training.bc_epochs import stopped as stopped
from sc2_envs.training.bc_labels import load_target, per_action, share_table, target_shares
from sc2_envs.training.bc_selection import average_span as average_span
from sc2_envs.training.bc_selection import fullgame_play, select, smac_play
from sc2_envs.training.bc_validation import replay_validate, smac_validate
from sc2_envs.training.checkpoints import save_checkpoint
from sc2_envs.training.cli import cli_error, flowing_help, given_fields
from sc2_envs.training.run import GracefulStop
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
    """a demonstration folder (sc2_envs.training.demos, has meta.json) or a replay dataset (sc2_envs.replays, has dataset.json)"""
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
    average_window: int = 0
    """if >= 2: also average `average_window` adjacent epochs containing the pick (ending at it when possible) and evaluate it"""


RESUME_CHANGEABLE = ("epochs", "torch_threads", "cuda", "select_by", "eval_episodes", "eval_envs", "eval_greedy")
RESUME_CHANGEABLE += ("eval_seed", "eval_backend", "eval_game_steps_per_episode", "average_window")
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
        ValueError: negative counts, no labels, bad power/clip, a target with negative entries, or a
            target that puts no mass on any seen action.
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
        if tgt.shape != counts.shape or (tgt < 0).any():
            raise ValueError(f"target must be {counts.shape[0]} non-negative shares; got shape {tgt.shape}")
    if tgt[seen].sum() <= 0:
        raise ValueError("target distribution puts no mass on any action seen in the data")
    tgt = np.where(seen, tgt, 0.0) / tgt[seen].sum()
    w = np.ones_like(counts)
    with np.errstate(divide="ignore"):
        ratio = np.where(seen, tgt / np.where(seen, data, 1.0), 1.0)
    w[seen] = np.clip(ratio[seen] ** power, lo, hi)
    w[seen] /= (data * w).sum()
    return w


# ----------------------------------------------------------------------------------------- SMAC demos
def smac_action_names(n_actions: int) -> list[str]:
    """SMAC action names: no-op, stop, move N/S/E/W, ``target_j`` (attack, or heal for a medivac)."""
    moves = ["no_op", "stop", "north", "south", "east", "west"]
    return moves + [f"target_{j}" for j in range(n_actions - N_ACTIONS_NO_ATTACK)]


class SmacData:
    """Frames of a demonstration recording split by episode (``sc2_envs.training.demos`` layout)."""

    def __init__(self, ds, val_fraction: float, seed: int, device):
        a = ds.arrays
        eps = np.unique(a["episode"])
        rng = np.random.default_rng(seed)
        n_val = max(1, round(val_fraction * len(eps))) if len(eps) > 1 else 0
        val_eps = set(rng.permutation(eps)[:n_val].tolist())
        is_val = np.isin(a["episode"], list(val_eps))
        self.train_idx = np.flatnonzero(~is_val)
        self.val_idx = np.flatnonzero(is_val)
        self.obs = torch.as_tensor(a["obs"], device=device)
        self.avail = torch.as_tensor(a["avail_actions"], device=device)
        self.labels = torch.as_tensor(a["actions"].astype(np.int64), device=device)
        self.alive = alive_mask(self.avail)
        self.n_val_eps, self.n_train_eps = n_val, len(eps) - n_val
        A = self.avail.shape[-1]
        tr = torch.as_tensor(self.train_idx, device=device)
        self.counts = torch.bincount(self.labels[tr][self.alive[tr]], minlength=A).cpu().numpy()
        self.dead_frames = int((~self.alive[tr]).sum())
        bad = ~torch.gather(self.avail, 2, self.labels.unsqueeze(-1)).squeeze(-1)
        if bool(bad.any()):
            i, n = (int(x) for x in bad.nonzero()[0])
            raise ValueError(f"frame {i}, agent {n}: label {int(self.labels[i, n])} is not in avail_actions")


def smac_loss(policy, data: SmacData, idx: torch.Tensor, w: torch.Tensor):
    """Weighted masked CE over the living agents of frames ``idx`` (all classes); returns ``(mean loss, n)``."""
    avail, lab = data.avail[idx], data.labels[idx]
    logits = torch.where(avail, policy.logits(data.obs[idx]), torch.full_like(avail, MASKED_LOGIT, dtype=torch.float32))
    total, n = masked_ce(logits, lab, data.alive[idx], w[lab])
    return total / max(n, 1), n


def loss_weights(args: Args, names: list[str], counts: np.ndarray, device, by_count: bool = False):
    """The re-weighting of ``--reweight-power``, ``--target-dist`` and ``--weight-clip`` over the training
    label ``counts``; prints the counts and weights. Returns ``(w [A] float64, w on device float32, target shares)``."""
    print("training label counts: " + per_action(names, counts, counts, by_count=by_count))
    w_np = action_weights(counts, args.reweight_power, load_target(args.target_dist, names), args.weight_clip)
    print("weights: " + per_action(names, w_np, counts, ".3f", by_count=by_count))
    return w_np, torch.as_tensor(w_np, dtype=torch.float32, device=device), target_shares(w_np, counts)


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
    w_np, w, tgt_share = loss_weights(args, names, data.counts, device)
    policy, critic = build_models(env_info, args.actor, hidden=args.hidden, device=device)
    opt = torch.optim.Adam(policy.parameters(), lr=args.learning_rate, weight_decay=args.weight_decay)
    data_share = data.counts / data.counts.sum()
    g = torch.Generator().manual_seed(args.seed)
    start_epoch, history = 0, []
    if resumed is not None:
        start_epoch, history = resume_training(resumed, run_dir, policy, opt)
        g.set_state(resumed["generator"])
    for epoch in range(start_epoch + 1, args.epochs + 1):
        t0 = time.time()
        perm = torch.as_tensor(data.train_idx)[torch.randperm(len(data.train_idx), generator=g)].to(device)
        losses = []
        policy.train()
        for s in range(0, len(perm), args.batch_size):
            loss, _ = smac_loss(policy, data, perm[s : s + args.batch_size], w)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), args.max_grad_norm)
            opt.step()
            losses.append(float(loss.detach()))
        policy.eval()
        val = smac_validate(policy, data, A)
        path = run_dir / f"epoch_{epoch:03d}.pt"
        # no env steps: behaviour cloning learns from replays (the epoch is in the checkpoint's bc record,
        # written in the same file, so no reader sees a BC checkpoint without it)
        bc = {
            "epoch": epoch,
            "val_acc": val["val_acc"],
            "val_loss": val["val_loss"],
            "weights": w_np.tolist(),
            "data_counts": data.counts.tolist(),
            "files": files,
        }
        save_checkpoint(
            str(path), policy, critic, env_info, asdict(args), global_step=0, extra={"bc": bc}, algorithm=ALGORITHM
        )
        rec = {
            "epoch": epoch,
            "train_loss": float(np.mean(losses)),
            "val_loss": val["val_loss"],
            "val_acc": val["val_acc"],
            "val_idle_pred": float(val["pred_share"][1]),
            "checkpoint": str(path),
        }
        print(
            f"epoch {epoch}: train loss {rec['train_loss']:.4f}, val loss {val['val_loss']:.4f}, val acc {val['val_acc']:.4f} "
            f"({time.time() - t0:.1f} s)\n"
            + share_table(names, data_share, tgt_share, val["pred_share"], val["argmax_share"]),
            flush=True,
        )
        done = end_epoch(run_dir, args, rec, history, policy, opt, {"generator": g.get_state()}, stop)
        if done is not None:  # a stop was requested: the run ends after this epoch, before the selection
            return done
    return select(args, run_dir, history, smac_play(args, env_info["map_name"], device), resumed=resumed is not None)


# ----------------------------------------------------------------------------------------- replays
def replay_config(args: Args, data: ReplayData):
    """``AlphaStarConfig`` of preset ``--model-preset`` on the dataset's columns (entities, grid, selection size)."""
    from models.alphastar import AlphaStarConfig

    base = {"mini": AlphaStarConfig.mini(), "tiny": AlphaStarConfig.tiny()}
    if args.model_preset not in base:
        raise ValueError(f"--model-preset {args.model_preset!r}; expected one of {sorted(base)}")
    return AlphaStarConfig.replay(
        base[args.model_preset],
        max_entities=data.E,
        raw_resolution=data.R,
        minimap_size=data.R,
        max_selected=min(base[args.model_preset].max_selected, data.K),
    )


def replay_loss(model, data: ReplayData, windows: list, device, cfg, w: torch.Tensor) -> torch.Tensor:
    """Weighted teacher-forced loss of the sequences ``windows``: every head's masked CE summed (mini-AlphaStar's
    SL loss), per step."""
    obs, labels, m = data.batch(windows, device, cfg.max_entities, cfg.max_selected)
    out, _ = model(obs, labels=labels)
    res, _ = alphastar_losses(model, out, labels, m, w)
    return sum(v[0] for v in res.values()) / max(int(m.sum()), 1)


def run_replays(args: Args, run_dir: Path, device, resumed: dict | None = None, stop: GracefulStop | None = None) -> dict:
    """Behaviour cloning of ``AlphaStarPolicy`` on a replay dataset, then the selection."""
    from models.alphastar import AlphaStarPolicy, save_alphastar

    data = ReplayData(args.data, args.num_files, args.seq_len, args.val_fraction, args.seed)
    check_size(args, len(data.files), data.available, data.rows, data.val_replays, "replay")
    cfg = replay_config(args, data)
    print(data.describe(cfg.max_selected))
    print(
        f"split: train {len(data.train_windows)} sequences, val {len(data.val_windows)} sequences "
        f"({data.val_replays} of {data.n_replays} replays held out), seq_len {args.seq_len}"
    )
    w_np, w, tgt_share = loss_weights(args, data.names, data.counts, device, by_count=True)
    model = AlphaStarPolicy(cfg).to(device)
    print(f"model: AlphaStarPolicy preset {args.model_preset} (replay columns), {model.n_params()['total']:,} parameters")
    opt = torch.optim.Adam(model.parameters(), lr=args.learning_rate, weight_decay=args.weight_decay)
    data_share = data.counts / data.counts.sum()
    heads = list(data.spec.ACTION_HEADS)
    rng = np.random.default_rng(args.seed)
    start_epoch, history = 0, []
    if resumed is not None:
        start_epoch, history = resume_training(resumed, run_dir, model, opt)
        rng.bit_generator.state = resumed["generator"]
    for epoch in range(start_epoch + 1, args.epochs + 1):
        t0 = time.time()
        model.train()
        order = rng.permutation(len(data.train_windows))
        losses = []
        for s in range(0, len(order), args.batch_size):
            loss = replay_loss(model, data, [data.train_windows[i] for i in order[s : s + args.batch_size]], device, cfg, w)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
            opt.step()
            losses.append(float(loss.detach()))
        model.eval()
        val = replay_validate(model, data, device, cfg, heads)
        path = run_dir / f"epoch_{epoch:03d}.pt"
        bc = {
            "epoch": epoch,
            "val_acc": val["acc"]["action_type"],
            "val": val["acc"],
            "weights": w_np.tolist(),
            "data_counts": data.counts.tolist(),
            "files": [f[0] for f in data.files],
            "args": asdict(args),
        }
        save_alphastar(str(path), model, {"bc": bc})
        rec = {
            "epoch": epoch,
            "train_loss": float(np.mean(losses)),
            "val_acc": val["acc"]["action_type"],
            "val_head_acc": val["acc"],
            "val_head_n": val["n"],
            "val_loss": val["loss"],
            "checkpoint": str(path),
            "pred_share": val["pred_share"].tolist(),
            "argmax_share": val["argmax_share"].tolist(),
        }
        accs = ", ".join(f"{h} {val['acc'][h]:.3f} (n={val['n'][h]})" for h in heads)
        print(
            f"epoch {epoch}: train loss {rec['train_loss']:.4f}, val loss {val['loss']:.4f}, held-out accuracy: {accs} "
            f"({time.time() - t0:.1f} s)\n"
            + share_table(data.names, data_share, tgt_share, val["pred_share"], val["argmax_share"]),
            flush=True,
        )
        done = end_epoch(run_dir, args, rec, history, model, opt, {"generator": rng.bit_generator.state}, stop)
        if done is not None:  # a stop was requested: the run ends after this epoch, before the selection
            return done
    play_when = args.select_by == "behaviour" or args.average_window >= 2
    return select(args, run_dir, history, fullgame_play(args, device) if play_when else None, resumed=resumed is not None)


def main(args: Args, stop: GracefulStop | None = None, given: frozenset[str] | None = None) -> dict:
    """Train (or continue, ``--resume``) and select; returns the summary dict.

    ``stop``: a :class:`sc2_envs.GracefulStop` to use instead of a new one (its handlers are
    installed for the run); the run ends after the epoch in which it was requested. ``given``: the
    flags the command line set (``given_fields``; None: those that differ from their defaults),
    which ``--resume`` applies (changeable ones) or checks against the run's values (the others).

    Raises:
        ValueError / FileNotFoundError: bad flags (:func:`check_args`, :func:`check_replay_evaluation`:
            ``SC2NotFoundError`` is a ``FileNotFoundError``), ``$SC2_ENVS_KEEP_FREED_MEMORY``
            (``sc2_envs.training.allocator``), ``--data``, ``--run-dir`` or ``--resume``
            (before any folder is made).
    """
    resumed, resumed_dir = None, None
    if args.resume:
        args, resumed, resumed_dir = resume_run(args, Args(), RESUME_CHANGEABLE, given, SCRIPT)
    check_args(args)
    try:
        allocator_line = allocator.keep_freed_memory()
    except RuntimeError as e:  # glibc refused the setting: a bad setting, as a bad $SC2_ENVS_KEEP_FREED_MEMORY is
        raise ValueError(str(e)) from None
    root = check_data(args)
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
    with DiscardUnstartedRun(run_dir, resumed=resumed is not None), stop:
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
