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

Each run writes into a new folder (``--run-dir``, which must not exist yet or be empty; default
``runs/<data name>__<exp_name>__<seed>__<unix time>``, ``-2``, ``-3``, ... if taken) with
``run_meta.json`` (config, git commit, package versions; ``sc2_envs.training.run``) and, after every epoch,
``resume.pt``. Ctrl-C (SIGINT) or SIGTERM finishes the current epoch, writes its checkpoint and
exits with status 0 (a second signal aborts at once); ``--resume <run folder>`` continues with the
next epoch (weights, optimiser, shuffling generator, RNG states and the epoch history restored), so
a run stopped after epoch ``k`` and resumed ends with the same checkpoints, bit for bit, as one that
was never stopped; the selection (``best.pt``) runs once all ``--epochs`` are done. A run resumed after
it finished (the same ``--epochs`` with other selection flags, or more ``--epochs``) selects again; with
behaviour selection its TensorBoard curves are rewritten first, so they keep one point per epoch.
"""

from __future__ import annotations

import os

# Idle OpenMP threads spin ~10 us, not libgomp's ~3 ms, before they sleep: long spins starve the working
# thread on shared cores (sc2_envs.training.wait_policy). Set before torch loads OpenMP; your own setting wins.
if not (os.environ.get("OMP_WAIT_POLICY") or os.environ.get("GOMP_SPINCOUNT")):
    os.environ["GOMP_SPINCOUNT"] = "1000"

import json
import math
import random
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
import tyro

from models.alphastar import alphastar_losses
from models.common import MASKED_LOGIT, masked_ce
from sc2_envs.lite.env import MAX_SEED, check_seed
from sc2_envs.replays.dataset import ReplayData
from sc2_envs.sim.rules.features import N_ACTIONS_NO_ATTACK
from sc2_envs.training import allocator
from sc2_envs.training.checkpoints import average_checkpoints, load_checkpoint, save_checkpoint
from sc2_envs.training.cli import cli_error, flowing_help, given_fields, resume_args
from sc2_envs.training.evaluation import behaviour_key, evaluate, format_result
from sc2_envs.training.run import (
    RESUME_FILE,
    GracefulStop,
    load_resume,
    make_run_dir,
    note_resume,
    rng_state,
    save_resume,
    set_rng_state,
    write_run_meta,
)
from sc2_envs.training.wait_policy import wait_policy_line

ALGORITHM = os.path.basename(__file__)[: -len(".py")]  # recorded in every checkpoint (models.save_checkpoint)


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


def load_target(spec: str, names: list[str]) -> np.ndarray | None:
    """``--target-dist``: None for ``uniform``, else the shares of a JSON file keyed by action name or id.

    Raises:
        FileNotFoundError / ValueError: missing file, unknown action names, or ids out of range.
    """
    if spec == "uniform":
        return None
    path = Path(spec)
    if not path.exists():
        raise FileNotFoundError(f"--target-dist {spec!r} is neither 'uniform' nor an existing JSON file")
    raw = json.loads(path.read_text())
    out = np.zeros(len(names))
    index = {n: i for i, n in enumerate(names)}
    for k, v in raw.items():
        if k in index:
            i = index[k]
        elif str(k).isdigit() and int(k) < len(names):
            i = int(k)
        else:
            raise ValueError(f"{spec}: action {k!r} is neither an action name nor an id in [0, {len(names)})")
        out[i] = float(v)
    return out


def share_table(names, data_share, target_share, pred_share, greedy_share, top: int = 12) -> str:
    """Text table of action shares sorted by the data share."""
    order = np.argsort(-np.asarray(data_share))[:top]
    lines = [f"    {'action':28s} {'data':>7s} {'target':>7s} {'pred':>7s} {'argmax':>7s}"]
    for i in order:
        lines.append(
            f"    {names[i][:28]:28s} {data_share[i]:7.3f} {target_share[i]:7.3f} {pred_share[i]:7.3f} {greedy_share[i]:7.3f}"
        )
    return "\n".join(lines)


def target_shares(weights: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Label shares the weighted loss effectively trains on: ``data[a] w[a]`` (sums to 1)."""
    d = counts / counts.sum()
    return d * weights / (d * weights).sum()


# ----------------------------------------------------------------------------------------- SMAC demos
def smac_action_names(n_actions: int) -> list[str]:
    """SMAC action names: no-op, stop, move N/S/E/W, ``target_j`` (attack, or heal for a medivac)."""
    return ["no_op", "stop", "north", "south", "east", "west"] + [
        f"target_{j}" for j in range(n_actions - N_ACTIONS_NO_ATTACK)
    ]


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
        self.alive = self.avail[..., 1]
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


@torch.no_grad()
def smac_validate(policy, data: SmacData, A: int, batch: int = 1024):
    """Validation CE, accuracy, mean predicted probability per action and argmax shares (living agents)."""
    ce_sum, correct, n = 0.0, 0, 0
    probs = torch.zeros(A)
    greedy = torch.zeros(A)
    idx_all = torch.as_tensor(data.val_idx, device=data.obs.device)
    for s in range(0, len(idx_all), batch):
        idx = idx_all[s : s + batch]
        avail, lab, alive = data.avail[idx], data.labels[idx], data.alive[idx]
        logits = torch.where(avail, policy.logits(data.obs[idx]), torch.full_like(avail, MASKED_LOGIT, dtype=torch.float32))
        cs, k = masked_ce(logits, lab, alive)
        ce_sum, n = ce_sum + float(cs), n + k
        pred = logits.argmax(-1)
        correct += int(((pred == lab) & alive).sum())
        probs += F.softmax(logits, -1)[alive].sum(0).cpu()
        greedy += torch.bincount(pred[alive], minlength=A).float().cpu()
    n = max(n, 1)
    return {
        "val_loss": ce_sum / n,
        "val_acc": correct / n,
        "pred_share": (probs / n).numpy(),
        "argmax_share": (greedy / n).numpy(),
    }


def run_smac(args: Args, run_dir: Path, device, resumed: dict | None = None, stop: GracefulStop | None = None) -> dict:
    import sc2_envs
    from models import build_models
    from sc2_envs.training.demos import load_demos

    ds = load_demos(args.data, max_files=args.num_files)
    check_size(args, len(ds.files), len(ds.meta["shards"]), ds.rows)
    print(ds.describe())
    info = ds.meta["env_info"]
    A = int(info["n_actions"])
    names = smac_action_names(A)
    data = SmacData(ds, args.val_fraction, args.seed, device)
    check_size(args, len(ds.files), len(ds.meta["shards"]), ds.rows, data.n_val_eps, "episode")
    print(
        f"split: train {len(data.train_idx)} frames ({data.n_train_eps} episodes), val {len(data.val_idx)} frames "
        f"({data.n_val_eps} episodes); loss over living agents ({int(data.counts.sum())} agent-frames), "
        f"{data.dead_frames} dead-agent frames excluded (only no-op is available to them)"
    )
    print("training label counts: " + ", ".join(f"{names[i]} {c}" for i, c in enumerate(data.counts) if c))
    target = load_target(args.target_dist, names)
    w_np = action_weights(data.counts, args.reweight_power, target, args.weight_clip)
    tgt_share = target_shares(w_np, data.counts)
    print("weights: " + ", ".join(f"{names[i]} {w_np[i]:.3f}" for i in range(A) if data.counts[i]))
    w = torch.as_tensor(w_np, dtype=torch.float32, device=device)

    env_info = sc2_envs.make_batched(info["map_name"], num_envs=1).get_env_info()
    sizes = ("obs_shape", "state_shape", "n_actions", "n_agents")
    if any(env_info[k] != info[k] for k in sizes):
        # the evaluator plays the default-option simulator: the demonstrations must have its layout
        raise ValueError(
            f"{args.data} was recorded with sizes { {k: info[k] for k in sizes} }; the simulator of "
            f"{info['map_name']} with default options has { {k: env_info[k] for k in sizes} }"
        )
    for key in ("obs_layout", "state_layout"):  # equal sizes can still be other columns (other feature options)
        rec, sim = info.get(key), json.loads(json.dumps(env_info.get(key)))
        if rec is not None and rec != sim:
            diff = sorted(k for k in set(rec) | set(sim or {}) if rec.get(k) != (sim or {}).get(k))
            raise ValueError(
                f"{args.data} was recorded with another {key} than the simulator of {info['map_name']} with default "
                f"options (keys {diff} differ: recorded {[rec.get(k) for k in diff]}, simulator "
                f"{[(sim or {}).get(k) for k in diff]}); the policy would be trained and evaluated on other columns"
            )
    policy, critic = build_models(env_info, args.actor, hidden=args.hidden, device=device)
    opt = torch.optim.Adam(policy.parameters(), lr=args.learning_rate, weight_decay=args.weight_decay)
    data_share = data.counts / data.counts.sum()
    history = []
    g = torch.Generator().manual_seed(args.seed)
    start_epoch = 0
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
            "files": [f[0] for f in ds.files],
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
        history.append(rec)
        log_scalars(run_dir, rec)
        print(
            f"epoch {epoch}: train loss {rec['train_loss']:.4f}, val loss {val['val_loss']:.4f}, val acc {val['val_acc']:.4f} "
            f"({time.time() - t0:.1f} s)\n"
            + share_table(names, data_share, tgt_share, val["pred_share"], val["argmax_share"]),
            flush=True,
        )
        save_epoch(run_dir, args, epoch, history, policy, opt, {"generator": g.get_state()})
        if stop is not None and stop.requested:
            return stopped(args, run_dir, epoch, history, stop.reason)

    def play(path):
        env = sc2_envs.make_batched(
            info["map_name"], num_envs=args.eval_envs, device=device, seed=args.eval_seed, num_threads=torch.get_num_threads()
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

    return select(args, run_dir, history, play, resumed=resumed is not None)


_WRITERS: dict = {}


def _writer(run_dir: Path):
    """The run's open TensorBoard writer (opened on first use)."""
    from torch.utils.tensorboard import SummaryWriter

    key = str(run_dir)
    if key not in _WRITERS:
        _WRITERS[key] = SummaryWriter(key)
    return _WRITERS[key]


def log_scalars(run_dir: Path, rec: dict) -> None:
    """Write the numeric entries of ``rec`` to TensorBoard (``run_dir``), with ``rec["epoch"]`` as the step."""
    w = _writer(run_dir)
    for k, v in rec.items():
        if k != "epoch" and isinstance(v, (int, float)) and not isinstance(v, bool):
            w.add_scalar(k if "/" in k else f"bc/{k}", v, rec["epoch"])
    w.flush()


def restart_curves(run_dir: Path, history: list) -> None:
    """Supersede every earlier TensorBoard event of ``run_dir`` and write the ``bc/…`` figures of ``history`` again.

    A resumed run may already hold ``behaviour/…`` points of an earlier selection (the run had finished,
    or was killed while selecting); TensorBoard would show a second point per epoch beside them. A session
    start at step 1 (what ``SummaryWriter(purge_step=1)`` writes) makes TensorBoard drop all events before
    it (every step is an epoch >= 1), so the per-epoch figures are written once more from ``history`` and
    each curve has one point per epoch."""
    from tensorboard.compat.proto.event_pb2 import Event, SessionLog

    # into the open file, not a new one: TensorBoard reads a folder's files in name order, and two files one
    # process opens within a second sort by a counter as text (...pid.10 before ...pid.9)
    _writer(run_dir).file_writer.add_event(Event(step=1, session_log=SessionLog(status=SessionLog.START)))
    for rec in history:
        log_scalars(run_dir, rec)


def select(args: Args, run_dir: Path, history: list, play, resumed: bool = False) -> dict:
    """Pick the final checkpoint (``best.pt``) by validation accuracy or by behaviour; optionally average.

    With behaviour selection every epoch's evaluation goes to TensorBoard (``behaviour/…``, the epoch as the
    step); in a ``resumed`` run the curves are first rewritten (:func:`restart_curves`), so a run resumed
    after it had finished (or with more ``--epochs``) shows one point per epoch, those of this selection."""
    by_acc = max(history, key=lambda r: r["val_acc"])
    summary = {"history": history, "val_acc_pick": by_acc["epoch"]}
    if play is None and args.select_by == "behaviour":
        raise ValueError("--select-by behaviour needs a play function (a checkpoint path -> its behaviour result)")
    if play is not None and args.select_by == "behaviour":
        if resumed:
            restart_curves(run_dir, history)
        for r in history:
            r["behaviour"] = play(r["checkpoint"])
            log_scalars(
                run_dir,
                {
                    "epoch": r["epoch"],
                    **{f"behaviour/{k}": v for k, v in r["behaviour"].items() if isinstance(v, (int, float))},
                },
            )
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
        lo, hi = average_span(pick["epoch"], args.average_window, len(history))
        paths = [r["checkpoint"] for r in history if lo <= r["epoch"] <= hi]
        if len(paths) >= 2:
            out = run_dir / f"avg_{lo:03d}_{hi:03d}.pt"
            average_checkpoints(paths, str(out))
            summary["average"] = {"from": paths, "checkpoint": str(out)}
            if play is not None:
                summary["average"]["behaviour"] = play(out)
                print(format_result(f"average of epochs {lo}..{hi}", summary["average"]["behaviour"]), flush=True)
        else:
            print(f"average window {args.average_window}: the run has a single epoch, nothing to average")
    (run_dir / "summary.json").write_text(
        json.dumps(summary, indent=1, default=lambda o: list(o) if isinstance(o, tuple) else float(o))
    )
    return summary


def average_span(pick: int, window: int, epochs: int) -> tuple[int, int]:
    """Epochs ``[lo, hi]`` (1-based, inclusive) of ``window`` adjacent epochs that contain ``pick``: ending at the
    pick when there are enough earlier epochs, else starting at epoch 1; clipped to the run's length."""
    lo = max(1, pick - window + 1)
    hi = min(epochs, lo + window - 1)
    return lo, hi


def check_size(args: Args, n_files: int, available: int, frames: int, held_out: int | None = None, what: str = "") -> None:
    """Refuse (unless ``--smoke``) a dataset with fewer files or frames than requested, or (``held_out``
    given) one that leaves nothing for validation: every epoch would report val acc 0 and the
    val-acc selection would pick epoch 1 whatever it learnt."""
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


# ----------------------------------------------------------------------------------------- replays
def run_replays(args: Args, run_dir: Path, device, resumed: dict | None = None, stop: GracefulStop | None = None) -> dict:
    from models.alphastar import AlphaStarConfig, AlphaStarPolicy, save_alphastar

    data = ReplayData(args.data, args.num_files, args.seq_len, args.val_fraction, args.seed)
    check_size(args, len(data.files), data.available, data.rows, data.val_replays, "replay")
    base = {"mini": AlphaStarConfig.mini(), "tiny": AlphaStarConfig.tiny()}
    if args.model_preset not in base:
        raise ValueError(f"--model-preset {args.model_preset!r}; expected one of {sorted(base)}")
    cfg = AlphaStarConfig.replay(
        base[args.model_preset],
        max_entities=data.E,
        raw_resolution=data.R,
        minimap_size=data.R,
        max_selected=min(base[args.model_preset].max_selected, data.K),
    )
    print(data.describe(cfg.max_selected))
    print(
        f"split: train {len(data.train_windows)} sequences, val {len(data.val_windows)} sequences "
        f"({data.val_replays} of {data.n_replays} replays held out), seq_len {args.seq_len}"
    )
    names = data.names
    print("training label counts: " + ", ".join(f"{names[i]} {c}" for i in np.argsort(-data.counts) if (c := data.counts[i])))
    target = load_target(args.target_dist, names)
    w_np = action_weights(data.counts, args.reweight_power, target, args.weight_clip)
    tgt_share = target_shares(w_np, data.counts)
    print("weights: " + ", ".join(f"{names[i]} {w_np[i]:.3f}" for i in np.argsort(-data.counts) if data.counts[i]))
    w = torch.as_tensor(w_np, dtype=torch.float32, device=device)
    model = AlphaStarPolicy(cfg).to(device)
    print(f"model: AlphaStarPolicy preset {args.model_preset} (replay columns), {model.n_params()['total']:,} parameters")
    opt = torch.optim.Adam(model.parameters(), lr=args.learning_rate, weight_decay=args.weight_decay)
    data_share = data.counts / data.counts.sum()
    heads = list(data.spec.ACTION_HEADS)
    history = []
    rng = np.random.default_rng(args.seed)
    start_epoch = 0
    if resumed is not None:
        start_epoch, history = resume_training(resumed, run_dir, model, opt)
        rng.bit_generator.state = resumed["generator"]
    for epoch in range(start_epoch + 1, args.epochs + 1):
        t0 = time.time()
        model.train()
        order = rng.permutation(len(data.train_windows))
        losses = []
        for s in range(0, len(order), args.batch_size):
            wins = [data.train_windows[i] for i in order[s : s + args.batch_size]]
            obs, labels, m = data.batch(wins, device, cfg.max_entities, cfg.max_selected)
            out, _ = model(obs, labels=labels)
            res, _ = alphastar_losses(model, out, labels, m, w)
            n_steps = max(int(m.sum()), 1)
            loss = sum(v[0] for v in res.values()) / n_steps  # per step; heads summed (mini-AS SL loss)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
            opt.step()
            losses.append(float(loss.detach()))
        model.eval()
        val = replay_validate(model, data, device, cfg, heads)
        path = run_dir / f"epoch_{epoch:03d}.pt"
        save_alphastar(
            str(path),
            model,
            {
                "bc": {
                    "epoch": epoch,
                    "val_acc": val["acc"]["action_type"],
                    "val": val["acc"],
                    "weights": w_np.tolist(),
                    "data_counts": data.counts.tolist(),
                    "files": [f[0] for f in data.files],
                    "args": asdict(args),
                }
            },
        )
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
        history.append(rec)
        log_scalars(run_dir, rec)
        accs = ", ".join(f"{h} {val['acc'][h]:.3f} (n={val['n'][h]})" for h in heads)
        print(
            f"epoch {epoch}: train loss {rec['train_loss']:.4f}, val loss {val['loss']:.4f}, held-out accuracy: {accs} "
            f"({time.time() - t0:.1f} s)\n"
            + share_table(names, data_share, tgt_share, val["pred_share"], val["argmax_share"]),
            flush=True,
        )
        save_epoch(run_dir, args, epoch, history, model, opt, {"generator": rng.bit_generator.state})
        if stop is not None and stop.requested:
            return stopped(args, run_dir, epoch, history, stop.reason)

    def play(path):
        from sc2_envs.training.fullgame_evaluation import behaviour_result, evaluate_fullgame

        row = evaluate_fullgame(
            str(path),
            args.eval_episodes,
            args.eval_seed,
            num_envs=args.eval_envs,
            backend=args.eval_backend,
            game_steps_per_episode=args.eval_game_steps_per_episode,
            greedy=args.eval_greedy,
            device=str(device),
        )
        return behaviour_result(row)

    play_when = args.select_by == "behaviour" or args.average_window >= 2
    return select(args, run_dir, history, play if play_when else None, resumed=resumed is not None)


@torch.no_grad()
def replay_validate(model, data: ReplayData, device, cfg, heads, batch: int = 32) -> dict:
    """Held-out per-head accuracy (teacher forced), loss per step and predicted action-type shares."""
    F_ = cfg.n_functions
    n = {h: 0 for h in heads}
    correct = {h: 0 for h in heads}
    loss_sum, steps = 0.0, 0
    probs, greedy = torch.zeros(F_), torch.zeros(F_)
    for s in range(0, len(data.val_windows), batch):
        obs, labels, m = data.batch(data.val_windows[s : s + batch], device, cfg.max_entities, cfg.max_selected)
        out, _ = model(obs, labels=labels)
        res, cor = alphastar_losses(model, out, labels, m, None)
        for h in heads:
            n[h] += res[h][1]
            correct[h] += cor[h]
        loss_sum += float(sum(v[0] for v in res.values()))
        steps += int(m.sum())
        p = F.softmax(out["action_type"], -1)[m]
        probs += p.sum(0).cpu()
        greedy += torch.bincount(out["action_type"].argmax(-1)[m], minlength=F_).float().cpu()
    steps = max(steps, 1)
    return {
        "acc": {h: correct[h] / max(n[h], 1) for h in heads},
        "n": n,
        "loss": loss_sum / steps,
        "pred_share": (probs / steps).numpy(),
        "argmax_share": (greedy / steps).numpy(),
    }


def save_epoch(run_dir: Path, args: Args, epoch: int, history: list, model, opt, extra: dict) -> None:
    """``run_dir/resume.pt`` after ``epoch``: weights, optimiser, RNG states, history and ``extra`` (the shuffler's state)."""
    save_resume(
        run_dir / RESUME_FILE,
        {
            "args": asdict(args),
            "epoch": epoch,
            "history": history,
            "model": model.state_dict(),
            "optimizer": opt.state_dict(),
            "rng": rng_state(),
            **extra,
        },
    )


def resume_training(resumed: dict, run_dir: Path, model, opt) -> tuple[int, list]:
    """Restore weights, optimiser and RNG states of a resume state; returns ``(last epoch done, history)``."""
    model.load_state_dict(resumed["model"])
    opt.load_state_dict(resumed["optimizer"])
    set_rng_state(resumed["rng"])
    from torch.utils.tensorboard import SummaryWriter

    # the curves continue; events logged after the resume state (e.g. after a hard kill) are dropped
    _WRITERS[str(run_dir)] = SummaryWriter(str(run_dir), purge_step=int(resumed["epoch"]) + 1)
    print(f"resumed from {run_dir / RESUME_FILE} after epoch {resumed['epoch']}")
    return int(resumed["epoch"]), list(resumed["history"])


def stopped(args: Args, run_dir: Path, epoch: int, history: list, reason: str | None) -> dict:
    """The summary of a run stopped by a signal after ``epoch`` (no selection yet)."""
    print(
        f"stopped by {reason} after epoch {epoch}/{args.epochs}: run folder {run_dir} (epoch_{epoch:03d}.pt, "
        f"resume.pt); continue with --resume {run_dir}",
        flush=True,
    )
    return {"history": history, "stopped_after_epoch": epoch}


RESUME_CHANGEABLE = (
    "epochs",
    "torch_threads",
    "cuda",
    "select_by",
    "eval_episodes",
    "eval_envs",
    "eval_greedy",
    "eval_seed",
    "eval_backend",
    "eval_game_steps_per_episode",
    "average_window",
)
"""The flags a resumed run may change (``--resume``); every other flag keeps the run's saved value."""


def check_args(args: Args) -> None:
    """Reject flags that could only fail (or silently mean something else) after training.

    Raises:
        ValueError: a ``--select-by`` other than val-acc / behaviour, an ``--actor`` other than gnn / mlp,
            a ``--model-preset`` other than mini / tiny, an ``--eval-backend`` other than lite / sc2, ``--epochs``,
            ``--batch-size``, ``--seq-len``, ``--eval-episodes``, ``--eval-envs`` or ``--num-files`` below 1,
            an ``--eval-game-steps-per-episode`` below 0, an ``--eval-seed`` outside [0, 2**63 - 1] (the lite
            engine's ``check_seed``), an ``--average-window`` of 1 or below 0,
            or a ``--val-fraction`` outside (0, 1) (0 would still hold out one episode, 1 leaves no training data).
    """
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
    if not (0.0 < args.val_fraction < 1.0):
        raise ValueError(f"--val-fraction {args.val_fraction}; expected a share in (0, 1) of the episodes (or replay files)")


def check_replay_evaluation(args: Args) -> None:
    """Reject, before training on a replay dataset, a full-game evaluation that could only fail after it.

    Only runs that play (``--select-by behaviour`` or ``--average-window`` >= 2) are checked.

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
    resumed = None
    if args.resume:
        resumed, run_dir = load_resume(args.resume, script=os.path.basename(__file__))
        resume_from = args.resume
        args = resume_args(resumed["args"], args, Args(), RESUME_CHANGEABLE, given)
        args.resume = resume_from
        if args.epochs < resumed["epoch"]:
            raise ValueError(
                f"--epochs {args.epochs}: the resumed run has done {resumed['epoch']} epochs; expected at least that"
            )
    check_args(args)
    try:
        allocator_line = allocator.keep_freed_memory()
    except RuntimeError as e:  # glibc refused the setting: a bad setting, as a bad $SC2_ENVS_KEEP_FREED_MEMORY is
        raise ValueError(str(e)) from None
    if not args.data:
        raise ValueError("--data is required: a demonstration folder (meta.json) or a replay dataset (dataset.json)")
    root = Path(args.data)
    if not (root / "meta.json").exists() and not (root / "dataset.json").exists():
        raise FileNotFoundError(
            f"--data {args.data!r} has neither meta.json (sc2_envs.training.demos) nor dataset.json (sc2_envs.replays)"
        )
    if not (root / "meta.json").exists():  # a replay dataset: its checkpoints play FullGame-v0
        check_replay_evaluation(args)
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.backends.cudnn.deterministic = args.torch_deterministic
    if args.torch_threads > 0:
        torch.set_num_threads(args.torch_threads)
    device = torch.device("cuda" if torch.cuda.is_available() and args.cuda else "cpu")
    if resumed is not None:
        note_resume(run_dir, from_epoch=resumed["epoch"], config=args, device=str(device))
    elif args.run_dir:
        run_dir = Path(args.run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        if any(run_dir.iterdir()):  # never mix two runs in one folder
            raise ValueError(
                f"--run-dir {args.run_dir}: the folder exists and is not empty; expected a new or empty folder "
                f"(or --resume {args.run_dir} to continue the run in it)"
            )
    else:
        run_dir = make_run_dir("runs", f"{root.name}__{args.exp_name}__{args.seed}__{int(time.time())}")
    if resumed is None:
        write_run_meta(run_dir, args, run_name=run_dir.name, script=os.path.basename(__file__), device=str(device))
    print(f"run dir {run_dir}; args {asdict(args)}")
    print(allocator_line)
    print(wait_policy_line())
    stop = stop or GracefulStop()
    try:
        with stop:  # SIGINT / SIGTERM: finish the epoch, write its checkpoint and resume.pt, return
            if (root / "meta.json").exists():
                return run_smac(args, run_dir, device, resumed, stop)
            return run_replays(args, run_dir, device, resumed, stop)
    except BaseException as e:
        started = resumed is not None or (run_dir / RESUME_FILE).exists()
        if not started:  # failed before the first epoch ended (e.g. too little data): leave no run folder
            shutil.rmtree(run_dir, ignore_errors=True)
        if isinstance(e, Exception):
            e.before_training = not started  # read by the command line: bad input vs. a failure in training
        raise


if __name__ == "__main__":
    cli_args = tyro.cli(flowing_help(Args))
    try:
        main(cli_args, given=given_fields(Args))
    except (OSError, ValueError) as e:
        if not getattr(e, "before_training", True):
            raise
        cli_error(str(e))  # bad input, found before training: one line, exit status 2, no run folder
