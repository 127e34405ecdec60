"""Run bookkeeping shared by the training and evaluation scripts: folders, metadata, stop, resume, progress.

* :func:`make_run_dir` creates a new folder per run (atomic ``mkdir``; ``-2``, ``-3``, ... appended
  when the name is taken), so two runs started in the same second never share one.
* :func:`write_run_meta` records the run's full config, command line, git commit and package
  versions in ``run_meta.json``; :func:`note_resume` appends each resumption to it.
* :class:`GracefulStop` turns the first SIGINT / SIGTERM into a request to stop after the current
  iteration and the second into an immediate exit.
* :func:`rng_state` / :func:`set_rng_state`, :func:`save_resume` / :func:`load_resume`,
  :func:`given_fields` and :func:`resume_args` carry a run over a restart (``--resume``).
* :class:`Progress` reports one iteration at a time: a tqdm bar on a terminal, one line per
  iteration otherwise; the training return is left out until an episode has finished.
* :func:`cli_error` ends a script with one line and exit status 2 (argparse's convention for a bad
  command line).

The layout follows CleanRL's ``runs/{run_name}`` folders (``cleanrl/ppo.py``).
"""

from __future__ import annotations

import csv
import dataclasses
import datetime
import json
import math
import numbers
import os
import platform
import random
import signal
import subprocess
import sys
import threading
import time
from importlib import metadata
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import torch

RESUME_FORMAT = "sc2_envs.resume/1"
"""``format`` key of the files written by :func:`save_resume`."""
RESUME_FILE = "resume.pt"
"""File name of the resume state inside a run folder."""
META_FILE = "run_meta.json"
"""File name of the run metadata inside a run folder."""
PACKAGES = ("torch", "numpy", "gymnasium", "pettingzoo", "sc2-envs")
"""Distributions whose versions :func:`write_run_meta` records."""


def cli_error(message: str, prog: str | None = None) -> None:
    """Print ``<prog>: error: <message>`` (one line) to stderr and exit with status 2.

    Raises:
        SystemExit: always, with code 2 (the status argparse and tyro use for a bad command line).
    """
    prog = prog or os.path.basename(sys.argv[0] or "sc2_envs")
    print(f"{prog}: error: {' '.join(str(message).split())}", file=sys.stderr, flush=True)
    raise SystemExit(2)


def tune_allocator() -> str:
    """:func:`sc2_envs.allocator.keep_freed_memory` for a training script: returns its start-up line.

    Raises:
        SystemExit: code 2 (:func:`cli_error`) when ``$SC2_ENVS_KEEP_FREED_MEMORY`` is neither ``"0"``
            nor ``"1"``, or glibc refuses the setting.
    """
    from sc2_envs import allocator

    try:
        return allocator.keep_freed_memory()
    except (ValueError, RuntimeError) as e:
        cli_error(str(e))


def check_finite_flags(args: Any) -> None:
    """Refuse every float field of the dataclass ``args`` that is NaN or infinite.

    Why first: NaN passes no comparison, so a range check such as ``ent_coef >= 0`` would report
    it as out of range only by luck, and a check written as ``not x < 0`` lets it through; a NaN
    coefficient trains silently into NaN weights.

    Raises:
        SystemExit: :func:`cli_error` (status 2) naming the first such flag and its value.
    """
    message = nonfinite_flag(args)
    if message:
        cli_error(message)


def nonfinite_flag(args: Any) -> str | None:
    """``"--flag nan: expected a finite number"`` for the first float field of the dataclass ``args``
    that is NaN or infinite, else None (:func:`check_finite_flags`; the benchmarks raise it as a ValueError)."""
    for f in dataclasses.fields(args):
        v = getattr(args, f.name)
        if isinstance(v, float) and not math.isfinite(v):
            return f"--{f.name.replace('_', '-')} {v!r}: expected a finite number"
    return None


_LOSS_FLAG_RANGES = (
    ("ent_coef", lambda v: v >= 0, "a value >= 0"),
    ("vf_coef", lambda v: v > 0, "a value > 0"),
    ("huber_delta", lambda v: v >= 0, "a value >= 0 (0: squared error)"),
    ("max_grad_norm", lambda v: v > 0, "a gradient-norm bound > 0"),
    ("target_kl", lambda v: v is None or v > 0, "a KL > 0 (or unset: no early stop)"),
    ("accept_ratio", lambda v: 0 < v <= 1, "a ratio in (0, 1]"),
    ("backtrack_coeff", lambda v: 0 < v < 1, "a shrink factor in (0, 1)"),
    ("cg_damping", lambda v: v >= 0, "a damping >= 0"),
    ("ls_step", lambda v: v >= 1, "an integer >= 1 (line-search trials)"),
    ("cg_iters", lambda v: v >= 1, "an integer >= 1 (conjugate-gradient iterations)"),
)


def check_loss_flags(args: Any) -> None:
    """The ranges of the PPO / TRPO loss and update flags that ``args`` has (HAPPO's ``ent_coef``,
    ``max_grad_norm``, ``target_kl``; HATRPO's line search and conjugate gradient). A negative
    ``max_grad_norm`` or ``vf_coef`` flips a gradient; none of them is clipped into range.

    Raises:
        SystemExit: :func:`cli_error` (status 2) naming the flag, its value and the range.
    """
    for flag, ok, expected in _LOSS_FLAG_RANGES:
        if hasattr(args, flag) and not ok(getattr(args, flag)):
            cli_error(f"--{flag.replace('_', '-')} {getattr(args, flag)!r}: expected {expected}")


def check_eval_maps(eval_maps: Any, train_maps: list[str], backend: str, valid_maps: list[str]) -> None:
    """Refuse a bad ``--eval-maps`` of a training script (maps played zero-shot at every evaluation).

    Args:
        eval_maps: the flag's value, a sequence of map names (may be empty).
        train_maps: the run's ``--map`` names.
        backend: ``--backend``; zero-shot maps need the embedded simulator (``sim``), since a real game
            per extra map would start another StarCraft II process at every evaluation.
        valid_maps: every known map or scenario name (``sc2_envs.list_maps("all")``).

    Raises:
        SystemExit: via :func:`cli_error` (status 2) for an unknown, repeated or training map, or a
            backend other than ``sim``; the message names the value and what was expected. Whether the
            actors can play a map (its unit classes, entity widths) is checked once the models exist.
    """
    names = list(eval_maps)
    if not names:
        return
    shown = " ".join(map(str, names))
    unknown = [m for m in names if m not in valid_maps]
    if unknown:
        cli_error(f"--eval-maps {shown}: unknown {unknown}; expected names of sc2_envs.list_maps('all')")
    if len(set(names)) < len(names):
        cli_error(f"--eval-maps {shown}: expected distinct maps")
    trained = [m for m in names if m in train_maps]
    if trained:
        cli_error(
            f"--eval-maps {shown}: {trained} also in --map; expected maps not trained on (training maps are evaluated anyway)"
        )
    if backend != "sim":
        cli_error(f"--eval-maps {shown} with --backend {backend}: expected --backend sim (one simulator per zero-shot map)")


def check_ally_dropout(ally_dropout: Any, train_maps: list[str], backend: str) -> list[float]:
    """Refuse a bad ``--ally-dropout`` of a training script; return one probability per training map.

    Args:
        ally_dropout: the flag's value, one probability in ``[0, 1)`` for every map, or one per map.
        train_maps: the run's ``--map`` names.
        backend: ``--backend``; removing units at reset needs the embedded simulator (``sim``).

    Raises:
        SystemExit: via :func:`cli_error` (status 2) for a value that is not a number or lies outside
            ``[0, 1)``, no value or a count of values that is neither 1 nor the number of maps, or a
            non-zero value with ``--backend sc2``.
    """
    values = list(ally_dropout) if isinstance(ally_dropout, (list, tuple)) else [ally_dropout]  # one number: one value
    shown = " ".join(map(str, values)) or "(no value)"
    if any(isinstance(p, bool) or not isinstance(p, numbers.Real) for p in values):
        cli_error(f"--ally-dropout {shown}: expected probabilities in [0, 1) (numbers)")
    probs = [float(p) for p in values]
    if len(probs) not in (1, len(train_maps)):
        cli_error(
            f"--ally-dropout {shown}: expected one probability (used for every map) or one per --map ({len(train_maps)}: "
            f"{' '.join(train_maps)})"
        )
    bad = [p for p in probs if not 0.0 <= p < 1.0]
    if bad:
        cli_error(f"--ally-dropout {shown}: expected probabilities in [0, 1) (got {bad})")
    probs = probs * len(train_maps) if len(probs) == 1 else probs
    if any(probs) and backend != "sim":
        cli_error(f"--ally-dropout {shown} with --backend {backend}: expected --backend sim (SMACSim.remove_allies) or 0")
    return probs


def ally_dropout_for(ally_dropout: Any, train_maps: list[str], backend: str, infos: list[dict]) -> list[float]:
    """:func:`check_ally_dropout`, then refuse dropout on a map of one agent (its only ally would go).

    Args:
        infos: each training map's ``get_env_info()``, in ``train_maps`` order.

    Returns:
        One probability per training map.

    Raises:
        SystemExit: via :func:`cli_error` (status 2), as :func:`check_ally_dropout`, or for a non-zero
            probability on a map with fewer than 2 agents.
    """
    probs = check_ally_dropout(ally_dropout, train_maps, backend)
    for m, p, info in zip(train_maps, probs, infos, strict=True):
        if p > 0 and info["n_agents"] < 2:
            cli_error(f"--ally-dropout {p} on {m}: it has {info['n_agents']} agent; expected maps of 2 or more agents")
    return probs


def load_init_weights(init_from: str, resuming: bool, policy: Any, critic: Any) -> dict | None:
    """``--init-from``: copy the checkpoint's actor and critic weights into a new run's models
    (``models.init_weights``); a resumed run keeps its own weights and loads nothing.

    Returns:
        The starting checkpoint (``models.read_checkpoint``'s dict: ``global_step``, ``args``, ...), or
        None when nothing was loaded.

    Raises:
        SystemExit: via :func:`cli_error` (status 2) for a file that cannot be read or does not fit the
            models; the message names the path and what differs.
    """
    if not init_from or resuming:
        return None
    from models import init_weights

    try:
        return init_weights(init_from, policy, critic)
    except (FileNotFoundError, ValueError) as e:
        cli_error(f"--init-from {init_from}: {e}")


def starting_lineage(init_from: str, init_ckpt: dict | None, resumed: dict | None) -> list[dict]:
    """A training run's ``lineage`` record (``models.lineage_after``: its starting checkpoints, oldest
    first), saved in its checkpoints, ``resume.pt`` and ``run_meta.json``: a resumed run's own record
    when its resume file has one, else the chain of the starting checkpoint ``init_from`` (its dict
    ``init_ckpt``, None when nothing was loaded), else empty (a run from scratch).

    Raises:
        OSError: ``init_from`` cannot be read to take its digest.
    """
    if resumed is not None and resumed.get("lineage"):
        return list(resumed["lineage"])
    if init_ckpt is None:
        return []
    from models import lineage_after

    return lineage_after(init_from, init_ckpt)


def start_lines(
    train_maps: list[str], probs: list[float], init_from: str, init_ckpt: dict | None, lineage: list[dict] | None = None
) -> list[str]:
    """The configuration lines of ``--ally-dropout`` and ``--init-from`` printed at a training run's start
    (none when both are off); ``init_ckpt`` is the starting checkpoint (:func:`load_init_weights`), None
    on ``--resume``, where ``lineage`` (the run's saved record, ``models.lineage_after``) names the
    chain instead. A starting checkpoint that was itself fine-tuned counts only its own env steps, so
    its chain of starting points is named with their training (``models.ancestors``); one trained
    with ``--ally-dropout`` that this run does not repeat gets a line saying so."""
    from models import ancestors, ancestry_text, trained_by, trainer_text, training_amount

    lines = []
    shown = ", ".join(f"{m} {p:g}" for m, p in zip(train_maps, probs, strict=True)) if any(probs) else "none"
    if any(probs):
        lines.append(f"ally dropout (training episodes that start with one ally removed): {shown}")
    if init_from:
        if lineage:  # nearest first: the start itself, then where it started
            me, *chain = reversed(lineage)
            amount, who = me["training"], trainer_text(me.get("algorithm"), me.get("seed"))
        elif init_ckpt is not None:
            amount, chain, who = training_amount(init_ckpt), ancestors(init_ckpt), trained_by(init_ckpt)
        else:  # a run resumed from a file written before the lineage was recorded
            amount, chain, who = None, [], ""
        parts = []
        if amount:
            origin = f", itself fine-tuned from {ancestry_text(chain)}, whose steps are not included" if chain else ""
            parts.append(f"trained {amount}{f', {who}' if who else ''}{origin}")
        if init_ckpt is None:
            parts.append("the run's starting point; not reloaded on --resume")
        else:
            parts.append("this run's env steps count from 0, with fresh optimisers")
        note = "; ".join(parts)
        lines.append(f"initial weights: {init_from} ({note})")
        before = ((init_ckpt or {}).get("args") or {}).get("ally_dropout") or ()
        before = [float(p) for p in (before if isinstance(before, (list, tuple)) else [before])]
        config = (init_ckpt or {}).get("config") or {}
        was_on = dict(zip(config.get("train_maps") or [config.get("map_name", "?")], before, strict=False))
        now_on = dict(zip(train_maps, (float(p) for p in probs), strict=True))
        if any(p and now_on.get(m, 0.0) != p for m, p in was_on.items()):  # a setting a fine-tune may drop unawares
            was = ", ".join(f"{m} {p:g}" for m, p in was_on.items())
            lines.append(f"the starting checkpoint was trained with ally dropout {was}; this run: {shown}")
    return lines


def drop_allies(env: Any, obs: dict, started: torch.Tensor, prob: float) -> dict:
    """Team-size randomisation of ``--ally-dropout``: in each env that has just started an episode, with
    probability ``prob`` remove one of its allies, drawn uniformly (``SMACSim.remove_allies``). A draw
    that would leave only healers (medivacs) removes no one.

    The draws use torch's global generator (seeded by the script, saved in resume files), and none is
    made when ``prob`` is 0 or no episode started, so a run without dropout draws exactly as before.

    Args:
        env: the training simulator (``SMACSim``) of one map, ``B`` envs and ``N`` agents.
        obs: its last ``reset`` / ``step`` output; ``obs``, ``state`` and ``avail_actions`` rows of the
            envs that lost an ally are replaced in place (copies of the tensors, so no caller's
            tensor changes).
        started: ``[B]`` bool, the envs at step 0 of a new episode.
        prob: the probability, in ``[0, 1)``.

    Returns:
        ``obs`` (the same dict).

    Raises:
        ValueError: ``prob`` not a number in ``[0, 1)`` (NaN included); with ``prob > 0``, ``started``
            not a ``[B]`` bool tensor (``B`` the env's ``num_envs``).
    """
    if isinstance(prob, bool) or not isinstance(prob, numbers.Real) or not 0.0 <= prob < 1.0:
        raise ValueError(f"drop_allies: prob must be a probability in [0, 1), got {prob!r}")
    if prob == 0.0:  # off: no check of the env (any backend), no draw
        return obs
    if not isinstance(started, torch.Tensor) or started.dtype != torch.bool or tuple(started.shape) != (env.num_envs,):
        got = (started.dtype, tuple(started.shape)) if isinstance(started, torch.Tensor) else type(started).__name__
        raise ValueError(f"drop_allies: started must be a bool tensor of shape ({env.num_envs},), got {got}")
    if not bool(started.any()):
        return obs
    B, N = started.shape[0], env.n_agents
    pick = started & (torch.rand(B, device=started.device) < prob)
    who = torch.randint(N, (B,), device=started.device)
    # a team of healers alone (a SMACv2 terran team whose only non-medivac was drawn) cannot fight: such a
    # draw removes no one. Where no team is left that way the draws are used as they are.
    fighter = ~env.table.is_healer[..., :N].to(started.device).expand(B, N)
    pick &= fighter.sum(1) - fighter.gather(1, who[:, None]).squeeze(1).long() > 0
    if not bool(pick.any()):
        return obs
    mask = torch.zeros(B, N, dtype=torch.bool, device=started.device)
    mask[pick, who[pick]] = True
    fresh = env.remove_allies(mask)
    idx = pick.nonzero().flatten()
    for key in ("obs", "state", "avail_actions"):
        rows = fresh[key][idx.to(fresh[key].device)].to(obs[key].device)
        obs[key] = obs[key].index_copy(0, idx.to(obs[key].device), rows)
    return obs


def zero_shot_eval_seed(run_seed: int, round_index: int, map_index: int) -> np.random.SeedSequence:
    """The evaluation seed of the ``map_index``-th ``--eval-maps`` map at evaluation round ``round_index``.

    ``sc2_envs.eval_seed(run_seed, round_index, 1 + map_index)``: spawn keys of the form
    ``(EVAL_SPAWN_KEY, round, 1 + j, b)``, one element longer than a single-map run's evaluation
    streams ``(EVAL_SPAWN_KEY, round, b)`` and never starting like a training stream, so no zero-shot
    battle repeats a training or training-map evaluation battle (``sc2_envs.sim.rng``).

    Raises:
        ValueError: a negative or non-int argument (as ``eval_seed``).
    """
    from sc2_envs.sim.rng import eval_seed

    return eval_seed(run_seed, round_index, 1 + map_index)


def refuse_computed_flags(cli: Any, names: tuple[str, ...], how: str, given: set[str] | frozenset[str] | None = None) -> None:
    """Refuse the CleanRL fields that are computed at runtime (``batch_size`` ...) when the command
    line set them: they would be overwritten without notice. ``how`` says what they are computed from.
    ``given``: the fields the command line set (:func:`given_fields`), so that even ``--batch-size 0``
    is refused; None: those whose value is not 0 (their unset default).

    Raises:
        SystemExit: :func:`cli_error` (status 2) naming the flag.
    """
    for name in names:
        if (name in given) if given is not None else getattr(cli, name):
            cli_error(f"--{name.replace('_', '-')} {getattr(cli, name)!r}: this is computed at runtime ({how}); do not set it")


# ---------------------------------------------------------------------------- run folders


def is_plain_name(name: str) -> bool:
    """Whether ``name`` can be one folder or file name: non-empty, not ``.`` or ``..``, and without a
    path separator (``/``, or ``\\`` on Windows). The scripts check their name flags with it before any
    work, so that ``--exp-name ../x`` is a command-line error, not a traceback from :func:`make_run_dir`."""
    return (
        bool(name)
        and name not in (".", "..")
        and "/" not in name
        and os.sep not in name
        and not (os.altsep and os.altsep in name)
    )


def split_flags(text: str, flag: str) -> list[str]:
    """A pass-through flag string (e.g. ``--extra``) split as a shell would (``shlex.split``: quoted
    values keep their spaces).

    Raises:
        ValueError: unbalanced quotes; the message names ``flag`` and the text.
    """
    import shlex

    try:
        return shlex.split(text)
    except ValueError as e:
        raise ValueError(f"{flag} {text!r}: {e} (quote values as in a shell)") from None


def flag_clashes(text: str, taken, flag: str) -> list[str]:
    """The flags of the pass-through string ``text`` (:func:`split_flags`, ``--name`` or ``--name=value``)
    that are in ``taken``, in order, once each: flags a harness sets itself, where a repeat would win
    and make a run other than its label."""
    given = [t.split("=", 1)[0] for t in split_flags(text, flag) if t.startswith("--")]
    return [f for f in dict.fromkeys(given) if f in taken]


def check_out_dir(path: str | os.PathLike, flag: str = "--out-dir") -> None:
    """Refuse an output folder that cannot be created or written to, before any work: ``path`` or its
    nearest existing parent is a file, or that folder is not writable. The scripts call it on their
    output flags first, so that a typo fails at once instead of after the runs or evaluations.

    Raises:
        ValueError: naming the flag, the value and the file (or folder) that is in the way.
    """
    p = Path(path).absolute()
    existing = next(q for q in (p, *p.parents) if q.exists() or q == q.parent)
    if not existing.is_dir():
        where = "is a file" if existing == p else f"is inside {str(existing)!r}, which is a file"
        raise ValueError(f"{flag} {str(path)!r} {where}; expected a folder (new or existing)")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(
            f"{flag} {str(path)!r}: the folder {str(existing)!r} is not writable; expected a folder to write into"
        )


def make_run_dir(root: str | os.PathLike, name: str) -> Path:
    """Create and return a new, empty folder ``root/name`` (``root/name-2``, ``-3``, ... if taken).

    ``os.mkdir`` is atomic, so two processes asking for the same name at the same moment get two
    different folders; an existing folder is never reused. ``root`` is created if needed.

    Raises:
        ValueError: ``name`` is empty or contains a path separator.
    """
    if not is_plain_name(name):
        raise ValueError(f"run name {name!r}: expected a non-empty folder name without path separators")
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    for k in range(1, 100_000):
        path = root / (name if k == 1 else f"{name}-{k}")
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise RuntimeError(f"no free run folder name {name}-<k> under {root}")  # pragma: no cover


def git_commit(path: str | os.PathLike | None = None) -> str:
    """The commit hash of the git checkout holding ``path`` (default: this package), with ``+dirty``
    when tracked files have uncommitted changes; ``"unknown"`` outside a checkout or without git."""
    where = str(path or Path(__file__).resolve().parent)
    try:
        head = subprocess.run(
            ["git", "-C", where, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", where, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+dirty" if dirty else "") if head else "unknown"


def package_versions(packages: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    """Installed versions of ``packages`` (``"not installed"`` for a missing one)."""
    out = {}
    for name in packages:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def _jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def write_run_meta(run_dir: str | os.PathLike, config: Any, **extra: Any) -> Path:
    """Write ``run_dir/run_meta.json``: what is needed to tell runs apart and rerun one.

    Args:
        run_dir: the run folder.
        config: the run's full configuration (a dataclass such as a script's ``Args``, or a dict).
        **extra: more top-level keys (e.g. ``run_name``).

    Keys: ``config``, ``argv`` (the command line), ``cwd``, ``git_commit`` (:func:`git_commit`),
    ``packages`` (:func:`package_versions`), ``python``, ``platform``, ``hostname``, ``started_utc``
    (ISO 8601), ``resumes`` (empty; see :func:`note_resume`), then ``extra``. The training scripts
    pass ``device``, the device actually used (``"cpu"`` when ``config["cuda"]`` is true but no GPU
    is available: ``cuda`` is the flag, not the device); ``happo_gnn.py`` and ``hatrpo_gnn.py`` also pass
    ``torch_threads_used``, the torch CPU thread count in effect (their ``--torch-threads 0`` is torch's
    default, which depends on the machine, and another thread count rounds the updates differently).
    """
    meta = {
        "config": _jsonable(config),
        "argv": [sys.executable, *sys.argv],
        "cwd": os.getcwd(),
        "git_commit": git_commit(),
        "packages": package_versions(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "hostname": platform.node(),
        "started_utc": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "resumes": [],
        **_jsonable(extra),
    }
    path = Path(run_dir) / META_FILE
    _atomic_write_text(path, json.dumps(meta, indent=2) + "\n")
    return path


def note_resume(run_dir: str | os.PathLike, **info: Any) -> None:
    """Append ``{time, argv, git_commit, **info}`` to ``resumes`` in ``run_dir/run_meta.json``
    (the file is created, without a config, if it is missing)."""
    path = Path(run_dir) / META_FILE
    meta = json.loads(path.read_text()) if path.is_file() else {"resumes": []}
    meta.setdefault("resumes", []).append(
        {
            "time_utc": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "argv": [sys.executable, *sys.argv],
            "git_commit": git_commit(),
            **_jsonable(info),
        }
    )
    _atomic_write_text(path, json.dumps(meta, indent=2) + "\n")


def _atomic_write_text(path: Path, text: str) -> None:
    write_atomic(path, lambda f: f.write(text), binary=False)


# ---------------------------------------------------------------------------- graceful stop


class GracefulStop:
    """Context manager: the first SIGINT / SIGTERM asks the loop to stop, the second exits at once.

    Inside the ``with`` block the first signal only sets :attr:`requested` (and prints one line to
    stderr saying so); the training loop checks it after each iteration, then writes its checkpoint
    and exits normally. A second signal raises ``SystemExit(128 + signum)`` (130 for SIGINT, 143 for
    SIGTERM, the shell's convention) wherever the program is. The previous handlers are restored on
    exit. Outside the main thread (where Python cannot install handlers) only :meth:`request` works.

    Attributes:
        requested: ``True`` once a stop was asked for.
        reason: ``"SIGINT"``, ``"SIGTERM"``, the reason given to :meth:`request`, or ``None``.
    """

    def __init__(self, signals: tuple[int, ...] = (signal.SIGINT, signal.SIGTERM), stream: TextIO | None = None):
        self.signals = tuple(signals)
        self.requested = False
        self.reason: str | None = None
        self._stream = stream
        self._previous: dict[int, Any] = {}

    def request(self, reason: str = "request") -> None:
        """Ask for a stop after the current iteration (what the first signal does)."""
        self.requested = True
        self.reason = self.reason or reason

    def _handle(self, signum, frame) -> None:
        name = signal.Signals(signum).name
        if self.requested:
            print(f"{name} again: aborting now, without a checkpoint", file=self._stream or sys.stderr, flush=True)
            raise SystemExit(128 + signum)
        self.request(name)
        print(
            f"{name} received: finishing this iteration, then checkpoint and exit (send it again to abort now)",
            file=self._stream or sys.stderr,
            flush=True,
        )

    def install(self) -> GracefulStop:
        """Install the handlers (what entering the ``with`` block does); returns ``self``."""
        if threading.current_thread() is threading.main_thread():
            for s in self.signals:
                self._previous[s] = signal.signal(s, self._handle)
        return self

    def restore(self) -> None:
        """Put the previous handlers back (what leaving the ``with`` block does)."""
        for s, h in self._previous.items():
            signal.signal(s, h)
        self._previous.clear()

    def __enter__(self) -> GracefulStop:
        return self.install()

    def __exit__(self, *exc) -> None:
        self.restore()


# ---------------------------------------------------------------------------- resume


def rng_state() -> dict:
    """The states of Python's ``random``, NumPy's global generator and torch's CPU (and CUDA)
    generators, in a form ``torch.load(weights_only=True)`` accepts (NumPy's key as an int64 tensor)."""
    np_state = np.random.get_state(legacy=False)
    state = {
        "python": random.getstate(),
        "numpy": {
            "bit_generator": np_state["bit_generator"],
            "key": torch.from_numpy(np.asarray(np_state["state"]["key"], dtype=np.int64)),
            "pos": int(np_state["state"]["pos"]),
            "has_gauss": int(np_state["has_gauss"]),
            "gauss": float(np_state["gauss"]),
        },
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    """Restore what :func:`rng_state` returned (CUDA states only if saved and CUDA is in use)."""
    py = state["python"]
    random.setstate((py[0], tuple(py[1]), py[2]))
    n = state["numpy"]
    np.random.set_state(
        {
            "bit_generator": n["bit_generator"],
            "state": {"key": n["key"].numpy().astype(np.uint32), "pos": n["pos"]},
            "has_gauss": n["has_gauss"],
            "gauss": n["gauss"],
        }
    )
    torch.set_rng_state(state["torch"].cpu())
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda"]])


def to_cpu(obj: Any) -> Any:
    """``obj`` with every tensor (in nested dicts, lists and tuples) detached and copied to the CPU."""
    if isinstance(obj, torch.Tensor):
        return obj.detach().cpu().clone()
    if isinstance(obj, dict):
        return {k: to_cpu(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_cpu(v) for v in obj)
    return obj


def save_resume(path: str | os.PathLike, state: dict) -> Path:
    """Write ``{"format": RESUME_FORMAT, **state}`` to ``path`` atomically (a temporary file in the
    same folder, then ``os.replace``), so a crash mid-write leaves the previous file intact.

    ``state`` must hold only tensors, Python scalars, strings and containers of them (what
    ``torch.load(weights_only=True)`` reads back); tensors are copied to the CPU.
    """
    return save_atomic({"format": RESUME_FORMAT, **to_cpu(state)}, path)


def save_atomic(obj, path: str | os.PathLike) -> Path:
    """``torch.save(obj, path)`` atomically (:func:`write_atomic`); returns the path.

    Raises:
        OSError: the file cannot be written (naming it and the reason); nothing is left behind.
    """
    return write_atomic(path, lambda f: torch.save(obj, f))


def write_atomic(path: str | os.PathLike, write, binary: bool = True) -> Path:
    """Call ``write(f)`` on a temporary file in the same folder (``"wb"``, or text with ``newline=""``
    when ``binary`` is False), flush it to disk, then ``os.replace`` it onto ``path``, so a crash mid-write
    leaves the previous file (or none) instead of a truncated one; returns the path. A symbolic link
    is followed (its target is replaced, the link kept).

    Raises:
        OSError: the file cannot be written (naming it and the reason); nothing is left behind.
    """
    path = Path(path)
    if path.is_symlink():
        path = path.resolve()
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}.{threading.get_ident()}")
    try:
        with open(tmp, "wb") if binary else open(tmp, "w", newline="") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        raise OSError(f"cannot write {path}: {e}") from e
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def load_resume(path: str | os.PathLike, script: str | None = None) -> tuple[dict, Path]:
    """Read a resume state written by :func:`save_resume`.

    Args:
        path: a run folder (its ``resume.pt`` is read) or the file itself.
        script: the resuming script's file name (``happo_gnn.py``); if given, a run whose
            ``run_meta.json`` names another ``script`` is refused (its saved flags and state are
            another algorithm's). A folder without that record is not checked.

    Returns:
        ``(state, run_dir)``: the dict (tensors on the CPU) and the folder holding the file.

    Raises:
        FileNotFoundError: no such folder or file, or a folder without ``resume.pt``.
        ValueError: the file is not a resume state of this format, or the run is another script's.
    """
    path = Path(path)
    if path.is_dir():
        path = path / RESUME_FILE
        if not path.is_file():
            raise FileNotFoundError(
                f"--resume {path.parent}: no {RESUME_FILE} in that folder; expected a run folder "
                "written by a script of this package (it saves one at each evaluation)"
            )
    elif not path.is_file():
        raise FileNotFoundError(f"--resume {str(path)!r} does not exist; expected a run folder or its {RESUME_FILE}")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        if isinstance(e, MemoryError):
            raise
        raise ValueError(
            f"--resume {path}: not readable as a torch file ({type(e).__name__}); expected a {RESUME_FILE}"
        ) from None
    if not isinstance(state, dict) or state.get("format") != RESUME_FORMAT:
        found = state.get("format") if isinstance(state, dict) else type(state).__name__
        raise ValueError(f"--resume {path}: format {found!r}; expected a {RESUME_FORMAT!r} file ({RESUME_FILE})")
    if script is not None and (path.parent / META_FILE).is_file():
        try:
            written_by = json.loads((path.parent / META_FILE).read_text()).get("script")
        except (ValueError, AttributeError):  # an unreadable record: nothing to compare
            written_by = None
        if written_by is not None and written_by != script:
            raise ValueError(
                f"--resume {path.parent}: a run of {written_by} (its {META_FILE}); expected a run of {script}, "
                f"which continues only its own runs"
            )
    return state, path.parent


def flowing_help(cls: Any) -> Any:
    """The dataclass ``cls`` with each field's docstring given to tyro as help text in flowing paragraphs.

    tyro keeps a field docstring's line breaks, so a docstring wrapped at the source's width broke
    mid-sentence in ``--help`` on a narrower terminal. Each field that has a docstring gets it as
    ``tyro.conf.arg(help=...)`` with the line breaks inside a paragraph joined (blank lines still
    separate paragraphs); the terminal then wraps it. A class without a docstring of its own is given
    the first paragraph of its module's docstring, which ``--help`` then opens with. reST inline
    literals (in double backticks) show in single backticks, and an empty list default as
    ``(default: empty)`` (tyro's own reads ``(default: )``; a field marked ``tyro.conf.UseAppendAction``
    or ``Fixed`` keeps tyro's hint). Only help changes: flags, defaults and parsing do not. ``cls`` is
    changed in place (once; a second call does nothing) and returned, and so are
    its dataclass bases, whose inherited fields' docstrings flow too. When a class's source or
    annotations cannot be read (an interactive session), that class is left unchanged.

    Usage: ``tyro.cli(flowing_help(Args))``.
    """
    import ast
    import inspect
    import re
    import textwrap
    import typing

    import tyro

    if cls.__dict__.get("_flowing_help", False):
        return cls
    for base in cls.__mro__[1:]:  # inherited fields: their annotations live in the base's __annotations__
        if dataclasses.is_dataclass(base):
            flowing_help(base)
    try:
        body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body
        hints = typing.get_type_hints(cls, include_extras=True)
    except (OSError, TypeError, NameError, SyntaxError, IndexError, AttributeError):
        return cls
    module_doc = getattr(sys.modules.get(cls.__module__), "__doc__", None) or ""
    if module_doc.strip() and (cls.__doc__ or "").startswith(f"{cls.__name__}("):  # dataclass's own signature doc
        # no docstring of its own: --help opens with the first paragraph of the script's docstring
        cls.__doc__ = _single_backticks(" ".join(re.split(r"\n\s*\n", module_doc.strip())[0].split()))
    for node, doc in zip(body, body[1:], strict=False):
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(doc, ast.Expr)):
            continue
        if not (isinstance(doc.value, ast.Constant) and isinstance(doc.value.value, str)):
            continue
        name = node.target.id
        paragraphs = re.split(r"\n\s*\n", doc.value.value.strip())
        text = "\n\n".join(" ".join(p.split()) for p in paragraphs)
        text = _single_backticks(text)
        arg = tyro.conf.arg(help=text)
        # tyro prints an empty list as "(default: )"; a hint of its own ("(repeatable)", "(fixed to: ...)") stays
        if _empty_default(cls.__dataclass_fields__.get(name)) and not _has_own_hint(hints[name]):
            arg = tyro.conf.arg(help=text, help_behavior_hint="(default: empty)")
        cls.__annotations__[name] = typing.Annotated[hints[name], arg]
    cls._flowing_help = True
    return cls


def _single_backticks(text: str) -> str:
    """reST inline literals (````x````) as Markdown's (```x```), which read better in a terminal; a literal
    holding a backtick, or a longer run of backticks, stays as written (Markdown's double-backtick span,
    or not a literal at all)."""
    import re

    return re.sub(r"(?<!`)``([^`]+)``(?!`)", r"`\1`", text)


def _empty_default(f: Any) -> bool:
    """Whether the dataclass field ``f`` (or None) defaults to an empty list, tuple, set or dict."""
    if f is None:
        return False
    if f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
    elif f.default is not dataclasses.MISSING:
        value = f.default
    else:
        return False
    return isinstance(value, (list, tuple, set, dict)) and len(value) == 0


def _has_own_hint(tp: Any) -> bool:
    """Whether the annotation ``tp`` carries a tyro marker whose help hint replaces the default's:
    ``tyro.conf.UseAppendAction`` ("(repeatable)") or ``tyro.conf.Fixed`` ("(fixed to: ...)")."""
    import typing

    import tyro

    if typing.get_origin(tp) is not typing.Annotated:
        return False
    return any(m is tyro.conf.UseAppendAction or m is tyro.conf.Fixed for m in tp.__metadata__)


def given_fields(cls: Any, argv: list[str] | None = None) -> frozenset[str]:
    """The fields of the dataclass ``cls`` that the command line ``argv`` (default ``sys.argv[1:]``) sets.

    A field counts as given when one of tyro's spellings of its flag appears: ``--field-name``,
    ``--field_name``, either with ``=value``, and ``--no-field-name`` / ``--no_field_name`` for a bool.
    Whether the value equals the default does not matter (``--total-timesteps 2000000`` is given even
    when 2,000,000 is the default): :func:`resume_args` needs what was asked for, not what differs.
    Tokens after a bare ``--`` are positional values, not flags.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    given = set()
    for token in argv:
        if token == "--":
            break
        if not token.startswith("--"):
            continue
        name = token[2:].split("=", 1)[0].replace("-", "_")
        if name in fields:
            given.add(name)
        elif name.startswith("no_") and name[3:] in fields:
            given.add(name[3:])
    return frozenset(given)


def resume_args(
    saved: dict, cli: Any, defaults: Any, changeable: tuple[str, ...], given: set[str] | frozenset[str] | None = None
) -> Any:
    """The resumed run's ``Args``: the saved config, with the ``changeable`` flags the command line set.

    Args:
        saved: the run's config as saved (``dataclasses.asdict`` of its ``Args``).
        cli: the ``Args`` parsed from this command line.
        defaults: ``Args`` with every default; used only when ``given`` is None.
        changeable: fields a resumed run may change (e.g. ``total_timesteps`` to train longer).
        given: the fields the command line set (:func:`given_fields`), whatever their values: a given
            changeable flag is applied even when it equals its default (``--total-timesteps 2000000``,
            ``--torch-threads 0``), and a given other flag is checked against the saved value even
            when it equals its default (``--seed 1`` on a seed-5 run is refused). None (a caller
            that builds ``cli`` itself, not from a command line): the fields that differ from
            ``defaults``.

    Raises:
        ValueError: the command line sets another field to a value other than the saved one; the
            message names the flag, both values and the changeable flags.
    """
    values = dict(saved)
    if given is None:
        given = {f.name for f in dataclasses.fields(cli) if getattr(cli, f.name) != getattr(defaults, f.name)}
    flags = ", ".join("--" + c.replace("_", "-") for c in changeable)
    for f in dataclasses.fields(cli):
        if f.name not in given or f.name == "resume":
            continue
        value = getattr(cli, f.name)
        if f.name in changeable:
            values[f.name] = value
            continue
        # a flag the saved run predates keeps its default on resume
        kept = values[f.name] if f.name in values else getattr(defaults, f.name)
        if kept != value and not (isinstance(value, tuple) and list(value) == kept):
            shown = " ".join(map(str, value)) if isinstance(value, (tuple, list)) else repr(value)
            raise ValueError(
                f"--{f.name.replace('_', '-')} {shown}: the resumed run has {kept!r} and keeps its "
                f"configuration; only {flags} may change on --resume"
            )
    names = {f.name for f in dataclasses.fields(cli)}
    return type(cli)(**{k: v for k, v in values.items() if k in names})


def truncate_csv(path: str | os.PathLike, column: str, last: float) -> int:
    """Drop the rows of CSV ``path`` whose ``column`` exceeds ``last`` (rows written after the state a
    run resumes from); returns the number of rows kept. A missing file is left missing (0)."""
    path = Path(path)
    if not path.is_file():
        return 0
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows:
        return 0
    col = rows[0].index(column)
    kept = [rows[0]] + [r for r in rows[1:] if r and float(r[col]) <= last]
    write_atomic(path, lambda f: csv.writer(f).writerows(kept), binary=False)
    return len(kept) - 1


# ---------------------------------------------------------------------------- progress


def plural(n: int, word: str, many: str | None = None) -> str:
    """``"1 iteration"``, ``"2 iterations"``, ``"1,000 iterations"``; ``many`` is the plural when it is
    not ``word + "s"`` (``plural(2, "pass", "passes")``)."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def resume_hint(run_dir: str | os.PathLike, finished: bool, total_timesteps: int) -> str:
    """What the end-of-run line suggests: ``continue with --resume <run>`` for a run that stopped
    early, or, for one that used its whole budget (where a plain ``--resume`` has nothing to do),
    ``train longer with --resume <run> --total-timesteps N`` with N above the steps done."""
    if finished:
        return f"to train longer: --resume {run_dir} --total-timesteps N (N > {total_timesteps:,})"
    return f"continue with --resume {run_dir}"


def env_share_note(share_sum: float, share_n: int, apart_share: float | None, apart_n: int = 1) -> str:
    """``", env 24% of the iteration time"`` for the end-of-run line: the mean share of this process's
    iterations other than those kept apart, which are its first and any other in which a kernel of the
    simulator ran for the first time (a one-time compile or cache load: ``sim.first_use``; e.g. the
    auto-reset's kernel when the first episode ends). ``share_sum`` / ``share_n``: the other iterations'
    shares and count; ``apart_share``: the last kept-apart iteration's share, given (labelled) only when
    there is no other; ``apart_n``: how many were kept apart."""
    if share_n:
        return (
            f", env {share_sum / share_n:.0%} of the iteration time (the first iteration and any with a one-time "
            "kernel compile or cache load, or during a background compile, excluded)"
        )
    if apart_share is not None:
        if apart_n <= 1:
            return (
                f", env {apart_share:.0%} of the iteration time (this process ran one iteration, including the "
                "one-time kernel compile or cache load)"
            )
        return (
            f", env {apart_share:.0%} of the last iteration's time (each of this process's {apart_n} iterations "
            "included a one-time kernel compile or cache load, or ran during a background compile on the torch path)"
        )
    return ""


def _background_compile() -> bool:
    """Whether this process is compiling the simulator's numba kernels in the background (``sim.kernels.warmup``)."""
    from sc2_envs.sim.kernels.warmup import compiling  # imports no Numba itself (no job without it)

    return compiling()


class EnvShares:
    """The env's share of each training iteration's wall time, for the end-of-run line
    (:func:`env_share_note`). A process's first iteration, and any iteration in which a simulator kernel
    ran for the first time (``sim.first_use.first_calls_done`` grew: a compile or cache load), are
    kept apart from the mean. Usage: :meth:`start` at the top of an iteration, :meth:`add` with its
    share at the end, :meth:`note` after the last."""

    def __init__(self) -> None:
        self.share_sum, self.share_n = 0.0, 0
        self.apart_share: float | None = None
        self.apart_n = 0
        self._first_calls = 0
        self._compiling = False

    def start(self) -> None:
        from sc2_envs.sim.first_use import first_calls_done

        self._first_calls = first_calls_done()
        self._compiling = _background_compile()

    def add(self, share: float) -> str:
        """Record an iteration's env share; returns it as the progress line shows it, marked when a
        kernel made its first call in the iteration (its compile or cache load counts as env time) or
        a background compile ran during it (the simulators played on the slower torch path meanwhile,
        ``sim.kernels.warmup``); such iterations are kept apart too."""
        from sc2_envs.sim.first_use import first_calls_done

        first_call = first_calls_done() > self._first_calls
        compiling_now = _background_compile()
        compiling = self._compiling or compiling_now
        if self.share_n + self.apart_n == 0 or first_call or compiling:
            self.apart_share, self.apart_n = share, self.apart_n + 1
        else:
            self.share_sum, self.share_n = self.share_sum + share, self.share_n + 1
        if compiling:
            return f"{share:.0%} (torch path while the kernel compiled in the background)"
        return f"{share:.0%} (incl. a kernel's first call)" if first_call else f"{share:.0%}"

    def note(self) -> str:
        return env_share_note(self.share_sum, self.share_n, self.apart_share, self.apart_n)


def wall_time_note(run_s: float, process_s: float, resumed: bool) -> str:
    """``"14 s"`` for the end-of-run line, the run's wall time in seconds (what its SPS divides by);
    a resumed run's counts its earlier processes too, so this process's own share is added:
    ``"14 s (whole run; 5 s in this process)"``."""
    if not resumed:
        return f"{run_s:.0f} s"
    return f"{run_s:.0f} s (whole run; {process_s:.0f} s in this process)"


def format_progress(ret: float | None, win: float, sps: int | float, **extra: Any) -> str:
    """``ret=… win=… sps=…`` for a progress line; ``ret`` is left out while it is ``None`` (no
    training episode has finished yet) and ``win`` shows ``nan`` until the first evaluation."""
    parts = [] if ret is None else [f"ret={ret:.2f}"]
    parts.append(f"win={win:.2f}")
    parts.append(f"sps={int(sps)}")
    parts += [f"{k}={v}" for k, v in extra.items()]
    return " ".join(parts)


class Progress:
    """Per-iteration progress: a tqdm bar when stdout is a terminal, else one plain line per iteration.

    Args:
        num_iterations: iterations of the whole run.
        batch_size: env steps per iteration.
        start_iteration: iterations already done (a resumed run's bar starts there).
        tty: force the bar (``True``) or the lines (``False``); default ``sys.stdout.isatty()``.
        stream: where lines go (default ``sys.stdout``).
        elapsed_before: wall seconds of the run's earlier processes (a resumed run): a line's time is
            the whole run's, as its ``sps`` (env steps over the whole run's time). The bar's own
            elapsed time is tqdm's, for this process; a resumed bar (``start_iteration > 0``) leaves
            out tqdm's rate, which would count this process only, next to the whole run's ``sps``.
    """

    def __init__(
        self,
        num_iterations: int,
        batch_size: int,
        start_iteration: int = 0,
        tty: bool | None = None,
        stream: TextIO | None = None,
        elapsed_before: float = 0.0,
    ):
        self.num_iterations, self.batch_size = int(num_iterations), int(batch_size)
        self.elapsed_before = float(elapsed_before)
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty() if tty is None else bool(tty)
        self.last_return: float | None = None
        self._t0 = time.time()
        self.bar = None
        if self.tty:
            from tqdm import tqdm

            resumed = int(start_iteration) > 0
            self.bar = tqdm(
                total=self.num_iterations * self.batch_size,
                initial=int(start_iteration) * self.batch_size,
                unit="step",
                dynamic_ncols=True,
                file=self.stream,
                bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}{postfix}]" if resumed else None,
            )

    def update(
        self,
        iteration: int,
        global_step: int,
        ret: float | None,
        win: float,
        sps: int | float,
        extra: dict[str, Any] | None = None,
    ) -> str:
        """Report iteration ``iteration`` (1-based). ``ret``: mean return of the training episodes
        that finished in it (``None`` if none did: the last known one is shown, nothing before the
        first). ``extra``: further ``name=value`` fields shown after ``sps`` (e.g. the env's share
        of the iteration time). Returns the text of the fields."""
        if ret is not None:
            self.last_return = ret
        fields = format_progress(self.last_return, win, sps, **(extra or {}))
        if self.bar is not None:
            self.bar.update(self.batch_size)
            self.bar.set_postfix_str(fields)
        else:
            print(
                f"iteration {iteration}/{self.num_iterations} step {global_step} {fields} ({self.elapsed_before + time.time() - self._t0:.0f} s)",
                file=self.stream,
                flush=True,
            )
        return fields

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
