"""Checkpoints of the class actors and the critic, and the lineage of fine-tuned runs.

* :func:`save_checkpoint` / :func:`load_checkpoint` write and read a plain dict of tensors and Python
  values, loadable with ``torch.load(weights_only=True)``; the checkpoint records the map, the
  classes, the entity widths, the layouts and the training ``Args``, and loading it for an env it
  does not fit raises a ``ValueError`` that says what differs.
* :func:`lineage_after`, :func:`ancestors` and the ``*_text`` helpers record and name the chain of
  checkpoints a fine-tuned run started from (``--init-from``).
* :func:`save_atomic` / :func:`write_atomic` replace a file atomically, so a crash mid-write leaves
  the previous file, not a truncated one.
"""

from __future__ import annotations

import os
import pickle
import struct
import threading
from pathlib import Path

import torch

from models.policy import (
    CentralCritic,
    ClassPolicy,
    dict_diffs,
    plain,
)
from sc2_envs.validation import as_device

CHECKPOINT_FORMAT = "sc2_envs.class_actor_critic/1"


def checkpoint_maps(config: dict) -> list[str]:
    """The training maps recorded in a checkpoint's ``config``: ``train_maps`` of a multi-map
    checkpoint, else ``[map_name]``."""
    return list(config.get("train_maps") or [config["map_name"]])


def save_checkpoint(
    path: str,
    policy: ClassPolicy,
    critic: CentralCritic,
    env_info: dict,
    args: dict,
    global_step: int = 0,
    maps: list[str] | None = None,
    extra: dict | None = None,
    algorithm: str | None = None,
) -> None:
    """Write a checkpoint readable with ``torch.load(path, weights_only=True)``, atomically (a crash
    mid-write leaves the previous file, not a truncated one: :func:`save_atomic`).

    Keys: ``format``, ``config`` (map, actor type, classes and agent ids, network sizes, entity
    widths, obs/state sizes and layouts, n_actions), ``args`` (the training ``Args`` as a dict),
    ``global_step`` (env steps), ``actors`` / ``critic`` (state dicts, CPU tensors), and, when
    ``algorithm`` is given, ``algorithm``: the training script's name (``"happo_gnn"``,
    ``"hatrpo_gnn"``, ``"a3c_upgo"``, ``"bc_reweight"``), which a fine-tune's lineage records
    (:func:`lineage_after`; the checkpoints shipped in ``checkpoints/`` have none).

    Multi-map training (``maps`` with two or more names): ``config["train_maps"]`` lists every
    training map; ``map_name``, the agent ids and the sizes are those of the first map
    (``env_info``), whose layout every other map shares (:func:`build_multi_map_models` checked it).
    With ``maps`` None or one map the checkpoint has no ``train_maps`` key (the single-map format).
    ``extra``: more top-level records written in the same file (e.g. behaviour cloning's ``bc``), so a
    reader never sees the checkpoint without them.

    Raises:
        ValueError: a weight holds NaN or inf (a diverged run is not saved as if it were trained),
            ``maps[0]`` is not ``env_info``'s map, an ``extra`` key would replace a standard one, or
            ``algorithm`` is given but is not a non-empty string.
    """
    if algorithm is not None and (not isinstance(algorithm, str) or not algorithm):
        raise ValueError(f"save_checkpoint algorithm={algorithm!r}: expected the training script's name, e.g. 'happo_gnn'")

    def cpu(sd: dict) -> dict:
        return {k: v.detach().cpu() for k, v in sd.items()}

    config = {
        "map_name": env_info.get("map_name"),
        "actor_type": policy.actor_type,
        "classes": list(policy.classes),
        "class_agents": {c: list(ids) for c, ids in policy.class_agents.items()},
        "policy_spec": policy.spec,
        "policy_hparams": policy.hparams,
        "critic_spec": critic.spec,
        "critic_hparams": critic.hparams,
        "obs_shape": int(env_info["obs_shape"]),
        "state_shape": int(env_info["state_shape"]),
        "n_actions": int(env_info["n_actions"]),
        "n_agents": int(env_info["n_agents"]),
        "n_enemies": int(env_info["n_enemies"]),
        "obs_layout": env_info.get("obs_layout"),
        "state_layout": env_info.get("state_layout"),
        "feature_options": env_info.get("feature_options"),
    }
    if maps is not None and len(maps) > 1:
        if maps[0] != env_info.get("map_name"):
            raise ValueError(f"maps {list(maps)}: the first must be env_info's map {env_info.get('map_name')!r}")
        config["train_maps"] = list(maps)
    ckpt = {
        "format": CHECKPOINT_FORMAT,
        "config": config,
        "args": dict(args),
        "global_step": int(global_step),
        "actors": cpu(policy.state_dict()),
        "critic": cpu(critic.state_dict()),
    }
    if algorithm is not None:
        ckpt["algorithm"] = algorithm
    clash = sorted(set(extra or {}) & (set(ckpt) | {"algorithm"}))  # algorithm= is checked; an extra would bypass it
    if clash:
        raise ValueError(f"save_checkpoint extra keys {clash} would replace the checkpoint's own records")
    if extra:
        _check_weights_only(extra)
        ckpt.update(extra)
    _check_finite_weights(f"save_checkpoint({path!r}) at {int(global_step)} env steps", ckpt)
    save_atomic(ckpt, path)


def _check_weights_only(extra: dict) -> None:
    """Raise ValueError naming the first ``extra`` record that ``torch.load(weights_only=True)`` could not read
    back (a NumPy value, a Path, ...), before anything is written: the file would replace a good
    checkpoint with one no reader of this project opens."""
    import io

    for key, value in extra.items():
        buf = io.BytesIO()
        try:
            torch.save(value, buf)
            buf.seek(0)
            torch.load(buf, weights_only=True)
        except Exception as e:
            raise ValueError(
                f"save_checkpoint extra[{key!r}] cannot be read back with torch.load(weights_only=True) "
                f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}); use tensors, Python numbers, "
                f"strings, lists and dicts"
            ) from None


def _check_finite_weights(where: str, ckpt: dict, with_critic: bool = True) -> None:
    """Raise ValueError naming the first tensor of ``ckpt``'s actors (and critic) with a NaN or inf:
    such weights act as a uniform or broken policy, and would be scored as if they were trained."""
    for part in ("actors", *(("critic",) if with_critic else ())):
        for name, t in ckpt.get(part, {}).items():
            if torch.is_tensor(t) and t.is_floating_point() and not bool(torch.isfinite(t).all()):
                raise ValueError(
                    f"{where}: {part}.{name} holds {int((~torch.isfinite(t)).sum())} non-finite values (NaN or inf); "
                    "the training diverged (check its losses, e.g. --ent-coef, --learning-rate)"
                )


def load_torch_file(path: str | os.PathLike) -> object:
    """``torch.load(path, map_location="cpu", weights_only=True)``, with one clear error for a file that is
    not a torch checkpoint; the caller checks the format of what it returns.

    Raises:
        ValueError: ``"<path> is not a torch checkpoint (<error type>: <torch's first 200 characters>)"``
            for a file torch cannot read: text, a truncated zip, foreign bytes, pickled code.
        OSError: the file cannot be opened (missing, a directory, no permission).
        MemoryError: as raised.
    """
    with open(path, "rb"):  # a missing file or a folder is an OSError naming the path, not "not a checkpoint"
        pass
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except MemoryError:
        raise
    except Exception as e:  # UnpicklingError (a text file), RuntimeError/OSError (a truncated zip), EOFError, ...
        # torch's text for a foreign pickle advises weights_only=False (running arbitrary code): only the
        # unpickler's own reason after "WeightsUnpickler error:" is kept (e.g. "Unsupported operand 35")
        text = str(e)
        if "WeightsUnpickler error:" in text:
            text = text.split("WeightsUnpickler error:", 1)[1].split("Check the documentation", 1)[0]
        first = " ".join(text.split())[:200]
        raise ValueError(f"{os.fspath(path)} is not a torch checkpoint ({type(e).__name__}: {first})") from None


def read_checkpoint(path: str) -> dict:
    """The checkpoint dict of :func:`save_checkpoint` (``torch.load(weights_only=True)`` onto the CPU), to
    read its ``config`` without building models.

    Raises:
        FileNotFoundError: no such file.
        ValueError: a directory, a file torch cannot read, or not a checkpoint of this format (e.g. a
            ``resume.pt`` or an AlphaStar model); the message names the path.
    """
    if os.path.isdir(path):
        inside = sorted(p.name for p in Path(path).glob("*.pt") if p.name != "resume.pt")
        hint = f" (its checkpoints: {', '.join(inside)})" if inside else ""
        raise ValueError(f"checkpoint {path!r} is a directory, not a checkpoint file{hint}")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"checkpoint {path!r} does not exist")
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # any unreadable file: bad pickle / zip / truncation / foreign bytes
        if isinstance(e, MemoryError):
            raise
        raise ValueError(
            f"checkpoint {path!r} could not be read as a torch file with weights_only=True ({type(e).__name__}); "
            "expected a file written by models.save_checkpoint (happo_gnn.py --save-model, bc_reweight.py)"
        ) from None
    if not isinstance(ckpt, dict) or ckpt.get("format") != CHECKPOINT_FORMAT or not isinstance(ckpt.get("config"), dict):
        found = ckpt.get("format") if isinstance(ckpt, dict) else type(ckpt).__name__
        beside = ""
        if isinstance(found, str) and found.startswith("sc2_envs.resume"):  # a run's resume state, not its model
            models = sorted(p.name for p in Path(path).parent.glob("*.pt") if p.name != Path(path).name)
            beside = f"; the run's model checkpoints beside it: {', '.join(models)}" if models else ""
        raise ValueError(
            f"checkpoint {path!r} is not a {CHECKPOINT_FORMAT!r} checkpoint (found {found!r}); expected a file written "
            f"by models.save_checkpoint (happo_gnn.py --save-model, bc_reweight.py){beside}"
        )
    return ckpt


def env_steps(ckpt: dict) -> int:
    """The env steps a checkpoint dict was trained for: its ``global_step``, or 0 for a behaviour-cloning
    checkpoint (one with a ``bc`` record, ``algos/bc_reweight.py``), which learnt from replays only."""
    return 0 if "bc" in ckpt else int(ckpt.get("global_step", 0))


def training_amount(ckpt: dict) -> str:
    """How much training a checkpoint dict holds, for start-up lines: ``"691,200 env steps"``, or for a
    behaviour-cloning checkpoint ``"3 epochs of behaviour cloning on replays, no env steps"`` (the
    epoch of its ``bc`` record; an average of such checkpoints says so instead)."""
    if "bc" in ckpt:
        if ckpt.get("averaged_from"):  # average_checkpoints keeps the first file's bc record
            return f"behaviour cloning on replays, the average of {len(ckpt['averaged_from'])} checkpoints, no env steps"
        epochs = (ckpt["bc"] or {}).get("epoch")
        if epochs is None:
            return "behaviour cloning on replays (epochs not recorded), no env steps"
        return f"{int(epochs):,} epoch{'' if int(epochs) == 1 else 's'} of behaviour cloning on replays, no env steps"
    return f"{env_steps(ckpt):,} env steps"


def ancestors(ckpt: dict) -> list[dict]:
    """The checkpoints a fine-tuned checkpoint dict started from, nearest first.

    Each entry is a dict (:func:`lineage_after`): ``path`` (the file as its run was given it),
    ``training`` (:func:`training_amount` text), ``resolved`` (absolute path), ``global_step`` (int env
    steps), ``maps`` (training maps), ``sha256`` (of the file when the run started), ``algorithm`` (the
    script that trained it, None when its file does not record one) and ``seed`` (its run's ``--seed``,
    None when its ``args`` hold none). A checkpoint without a ``lineage`` record (the shipped fine-tuned
    ones) gives only its nearest start, from ``args["init_from"]`` (HAPPO, HATRPO) or A3C's
    ``args["init"]``, with only ``path`` and ``training`` None. Empty for a checkpoint trained from scratch.
    """
    chain = ckpt.get("lineage")
    if chain:
        return [dict(e) for e in reversed(chain)]
    args = ckpt.get("args") or {}
    parent = args.get("init_from") or args.get("init") or ""
    return [{"path": str(parent), "training": None}] if parent else []


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes (read in 1 MiB blocks)."""
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def lineage_after(path: str, ckpt: dict) -> list[dict]:
    """The ``lineage`` record of a run that starts from checkpoint ``path`` (its dict ``ckpt``): its
    ancestors, then itself, oldest first (entries as :func:`ancestors` describes); saved in every
    checkpoint of that run (``save_checkpoint(..., extra={"lineage": ...})``) and carried through
    ``--resume``, so a chain of fine-tunes names every starting point and its training.

    Raises:
        OSError: ``path`` cannot be read (it was just loaded, so only if it vanished meanwhile).
    """
    me = {
        "path": str(path),
        "resolved": str(Path(path).resolve()),
        "training": training_amount(ckpt),
        "global_step": env_steps(ckpt),
        "maps": checkpoint_maps(ckpt["config"]) if "config" in ckpt else [],
        "sha256": file_sha256(path),
        "algorithm": ckpt.get("algorithm"),
        "seed": _recorded_seed(ckpt),
    }
    return [*reversed(ancestors(ckpt)), me]


def trained_by(ckpt: dict) -> str:
    """The script and seed that trained a checkpoint dict, as text for listings: ``"happo_gnn seed 1"``;
    ``"seed 1"`` for a file that records no script (the shipped checkpoints), ``""`` with neither."""
    return trainer_text(ckpt.get("algorithm"), _recorded_seed(ckpt))


def trainer_text(algorithm: str | None, seed: int | None) -> str:
    """``"happo_gnn seed 1"`` from a script name and a seed, leaving out what is None (a lineage
    entry's ``algorithm`` / ``seed``, :func:`lineage_after`)."""
    algorithm = algorithm if isinstance(algorithm, str) else None  # a hand-edited record must not break a listing
    return " ".join(x for x in (algorithm, None if seed is None else f"seed {seed}") if x)


RUN_CHANGEABLE_ARGS = (
    "resume", "total_timesteps", "time_budget_s", "torch_threads", "pass_rows", "track", "cuda",  # happo / hatrpo
    "epochs", "select_by", "eval_episodes", "eval_envs", "eval_greedy", "eval_seed", "eval_backend",  # bc_reweight
    "eval_game_steps_per_episode", "eval_step_mul", "average_window",
    "num_actors", "backend", "ray_address", "ray_actor_cpus", "queue_size", "restart_actors", "max_restarts",  # a3c_upgo
    "heartbeat_interval", "heartbeat_timeout", "stall_timeout", "startup_timeout", "print_interval_s",
    "checkpoint_interval", "keep_checkpoints",
    "num_iterations", "session",  # computed anew on a resume: from --total-timesteps; a3c_upgo's resume count
)  # fmt: skip
"""Recorded training arguments that a resumed run may change (``--resume``, every training script's
``RESUME_CHANGEABLE`` and what a resume recomputes), so checkpoints of one run can differ in them."""


def _recorded_args(ckpt: dict) -> dict | None:
    """The training arguments a checkpoint dict records (``args``, ``bc["args"]`` or ``rl["args"]``) less
    :data:`RUN_CHANGEABLE_ARGS`; None if it records none."""
    for record in (ckpt, ckpt.get("bc"), ckpt.get("rl")):
        args = record.get("args") if isinstance(record, dict) else None
        if isinstance(args, dict):
            return {k: v for k, v in args.items() if k not in RUN_CHANGEABLE_ARGS}
    return None


def _recorded_seed(ckpt: dict) -> int | None:
    """The ``--seed`` of the run that wrote a checkpoint dict, None if not recorded: ``args["seed"]`` (SMAC
    checkpoints), ``bc["args"]["seed"]`` (behaviour cloning) or ``rl["args"]["seed"]`` (full-game RL)."""
    for record in (ckpt, ckpt.get("bc"), ckpt.get("rl")):
        args = record.get("args") if isinstance(record, dict) else None
        seed = args.get("seed") if isinstance(args, dict) else None
        if isinstance(seed, int) and not isinstance(seed, bool):
            return int(seed)
    return None


def ancestry_text(chain: list[dict]) -> str:
    """``ancestors``' list as text, nearest first: ``"b.pt (230,400 env steps on 3m, happo_gnn seed 2),
    itself fine-tuned from a.pt (102,400 env steps on 3m+8m, happo_gnn seed 1)"``; an entry without a
    recorded amount shows its path only (and without a recorded script or seed, no script or seed),
    and one whose file now holds other bytes than when it was recorded says so (:func:`changed_since`)."""

    def one(e: dict) -> str:
        what = [e["training"] + (f" on {'+'.join(e['maps'])}" if e.get("maps") else "")] if e.get("training") else []
        who = trainer_text(e.get("algorithm"), e.get("seed"))
        if who:
            what = [f"{what[0]}, {who}"] if what else [who]
        if changed_since(e):
            what.append("the file has changed since")
        return e["path"] + (f" ({'; '.join(what)})" if what else "")

    return ", itself fine-tuned from ".join(one(e) for e in chain)


def changed_since(entry: dict) -> bool:
    """Whether a lineage entry's file exists but no longer holds the bytes it had when recorded (e.g. a
    run's ``<exp_name>.pt`` that the run, resumed, has overwritten). False when no digest was recorded
    or the file is gone (nothing to compare)."""
    want, where = entry.get("sha256"), entry.get("resolved") or entry.get("path")
    if not want or not where or not Path(where).is_file():
        return False
    try:
        return file_sha256(where) != want
    except OSError:
        return False


def init_weights(path: str, policy: ClassPolicy, critic: CentralCritic) -> dict:
    """Copy a checkpoint's actor and critic weights into freshly built models (fine-tuning from it).

    The models must be the same networks: the same actor type, classes, widths and critic (e.g.
    built by :func:`build_multi_map_models` for the checkpoint's training maps, or for other maps
    whose classes and entity widths are the same). Weights only: no optimiser state or env step
    count carries over.

    Returns:
        The checkpoint dict (:func:`read_checkpoint`), e.g. for its ``global_step``.

    Raises:
        FileNotFoundError / ValueError: as :func:`read_checkpoint`; weights holding NaN or inf; a
            checkpoint of another actor type, other classes (or the same in another order), inputs of
            another layout (its ``policy_spec`` / ``critic_spec``: entity widths, type vocabulary,
            observation or state size), or weights of other names or shapes (the message names the
            path and what differs).
    """
    ckpt = read_checkpoint(path)
    cfg = ckpt["config"]
    _check_finite_weights(f"checkpoint {path!r}", ckpt)
    if cfg.get("actor_type") != policy.actor_type:
        raise ValueError(f"checkpoint {path!r} holds {cfg.get('actor_type')} actors; expected {policy.actor_type}")
    trained = "+".join(checkpoint_maps(cfg)) if cfg.get("map_name") or cfg.get("train_maps") else "unknown maps"
    if list(cfg.get("classes", [])) != list(policy.classes):
        order = ""
        if sorted(cfg.get("classes", [])) == sorted(policy.classes):  # the order follows the training maps'
            order = f" (the same classes in another order: give --map in its order, {trained})"
        raise ValueError(
            f"checkpoint {path!r} (trained on {trained}) has the classes {cfg.get('classes')}; "
            f"expected {list(policy.classes)}{order}"
        )
    for part, model, key in (("actors", policy, "policy_spec"), ("critic", critic, "critic_spec")):
        # same shapes are not enough: a type vocabulary of the same size in another order would load silently
        want, have = plain(cfg.get(key)), plain(getattr(model, "spec", None))
        if isinstance(want, dict) and isinstance(have, dict) and want != have:
            raise ValueError(
                f"checkpoint {path!r} (trained on {trained}): its {part} read inputs of another layout "
                f"({'; '.join(dict_diffs(want, have))}: checkpoint vs this run); expected maps whose observations "
                "and states have its layout"
            )
    saved_gru = bool((cfg.get("policy_hparams") or {}).get("recurrent", False))
    if saved_gru != bool(getattr(policy, "recurrent", False)):  # a tester: the key dump below buried this
        raise ValueError(
            f"checkpoint {path!r} (trained on {trained}) has "
            + (
                "recurrent actors (a GRU per agent, happo_gnn.py --recurrent); this run's are feed-forward: add "
                "--recurrent (happo_gnn.py; hatrpo_gnn.py and the actor-learners have no recurrent actors)"
                if saved_gru
                else "feed-forward actors; this run's are recurrent (--recurrent): leave out --recurrent"
            )
        )
    for part, model, key in (("actors", policy, "policy_hparams"), ("critic", critic, "critic_hparams")):
        # the width first, by name: the default changed from 64 to 32 (2026-12-08) and every shipped checkpoint is 64
        saved_width, width = (cfg.get(key) or {}).get("hidden"), (getattr(model, "hparams", None) or {}).get("hidden")
        if saved_width is not None and width is not None and saved_width != width:
            raise ValueError(
                f"checkpoint {path!r} (trained on {trained}) has {part} {saved_width} wide; this run's are {width} wide: "
                f"add --hidden {saved_width}"
            )
        try:
            model.load_state_dict(ckpt[part])
        except RuntimeError as e:  # missing / unexpected keys, or shapes that differ
            first = str(e).strip().splitlines()
            sizes = "the same network sizes (--hidden, --actor-layers, --recurrent)"
            if cfg.get(key) is not None and cfg.get(key) != getattr(model, "hparams", None):
                sizes = (
                    f"networks of its sizes {cfg.get(key)} (this run's: {getattr(model, 'hparams', None)}; "
                    "--hidden, --actor-layers, --recurrent)"
                )
            raise ValueError(
                f"checkpoint {path!r} (trained on {trained}): its {part} do not fit this run's networks "
                f"({' '.join(first[:3])}); expected {sizes} and maps whose observations and states have its layout"
            ) from None
    return ckpt


def _check_flat_layouts(path, cfg: dict, env_info: dict, with_critic: bool) -> None:
    """An MLP reads columns by position: raise ValueError if the env's observation (and, with the critic,
    state) layout differs from the training one, naming the keys that differ. A layout that the
    checkpoint or the env does not record (None: an env_info without the key) is not checked."""
    for key in ("obs_layout", *(("state_layout",) if with_critic else ())):
        want, have = cfg.get(key), env_info.get(key)
        if not isinstance(want, dict) or not isinstance(have, dict):
            continue
        diff = dict_diffs(plain(want), plain(have))
        if diff:
            raise ValueError(
                f"checkpoint {path} (trained on {cfg['map_name']}, actor mlp) does not fit {env_info.get('map_name')}: "
                f"the sizes match but the {key} differs (checkpoint vs env: {'; '.join(diff)}); a flat MLP reads its "
                "inputs by position, so other SMAC feature options (obs_pathing_grid, obs_all_health, ...) are refused"
            )


def _check_feature_options(path, cfg: dict, env_info: dict) -> None:
    """SMACv2's ``use_unit_ranges`` and ``min_attack_range`` change what distances and visibility mean
    without changing the layout: raise ValueError if the checkpoint's ``feature_options`` differ from
    the env's, naming them. Checkpoints and envs without the record (SMAC v1 maps record None) are not
    checked."""
    want, have = cfg.get("feature_options"), env_info.get("feature_options")
    if not isinstance(want, dict) or not isinstance(have, dict):
        return
    diff = dict_diffs(want, have)
    if diff:
        raise ValueError(
            f"checkpoint {path} (trained on {cfg['map_name']}) does not fit {env_info.get('map_name')}: it was trained "
            f"with other SMACv2 feature options (checkpoint vs env: {'; '.join(diff)}); the features would mean "
            "other things (sight and shoot ranges), so build the env with the checkpoint's options"
        )


def load_checkpoint(path: str, env_info: dict, device: str | torch.device = "cpu", with_critic: bool = True):
    """Rebuild the models of a checkpoint and bind them to ``env_info`` (possibly another map).

    Any map whose unit classes all have an actor in the checkpoint and whose entity widths equal
    the training ones can be served by a GNN checkpoint, single- or multi-map (the count-invariant
    actors and critic do not depend on team sizes); an MLP checkpoint only its training sizes.

    Returns:
        ``(policy, critic_or_None, checkpoint_dict)``.
    Raises:
        ValueError: ``path`` is not a path, ``device`` is not ``'cpu'`` or a visible CUDA device, the file cannot be read
            (missing, a folder, truncated, not a torch file, or saved on a device that ``device`` cannot map), it is not a
            checkpoint of this format, its weights hold NaN or inf, or the models cannot serve this env (the message
            names the checkpoint's map and what differs; an MLP also needs the training observation and
            state layouts, not just their sizes; a SMACv2 checkpoint needs the training
            ``feature_options``, e.g. ``use_unit_ranges``).
    """
    if not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"checkpoint path {path!r}: expected a file path (str or os.PathLike)")
    device = as_device(device)  # 'meta', 'mps', 'cpu:1', ...: a ValueError naming it, as make_batched gives
    try:
        ckpt = torch.load(path, map_location=device, weights_only=True)
    except (KeyError, IndexError, ValueError, struct.error) as e:
        # what torch's legacy (non-zip) reader raises on some text files, e.g. "hello" -> KeyError: 101
        raise ValueError(
            f"cannot read checkpoint {path}: not a torch file ({type(e).__name__}: {e} while unpickling it); "
            "expected a file written by models.save_checkpoint (algos/happo_gnn.py --save-model)"
        ) from None
    except (OSError, RuntimeError, pickle.UnpicklingError, EOFError) as e:
        # torch's own message for a text file advises weights_only=False (unpickling arbitrary code): not repeated here
        first = " ".join(str(e).split())[:200]
        raise ValueError(
            f"cannot read checkpoint {path} onto device {device!r}: {type(e).__name__}: {first}; expected a file "
            "written by models.save_checkpoint (algos/happo_gnn.py --save-model)"
        ) from None
    if not isinstance(ckpt, dict) or ckpt.get("format") != CHECKPOINT_FORMAT:
        found = ckpt.get("format") if isinstance(ckpt, dict) else type(ckpt)
        raise ValueError(f"{path} is not a {CHECKPOINT_FORMAT} checkpoint (format={found})")
    missing = [k for k in ("config", "actors", *(("critic",) if with_critic else ())) if k not in ckpt]
    cfg = ckpt.get("config", {})
    missing += [
        f"config.{k}"
        for k in ("actor_type", "classes", "policy_spec", "policy_hparams", "critic_spec", "critic_hparams", "map_name")
        if isinstance(cfg, dict) and k not in cfg
    ]
    if missing or not isinstance(cfg, dict):
        raise ValueError(
            f"{path} says format={CHECKPOINT_FORMAT} but lacks {', '.join(missing) or 'a config dict'}: it was not written "
            f"by models.save_checkpoint (or was edited); expected the keys config, actors, critic"
        )
    if not isinstance(cfg["classes"], list) or not all(isinstance(c, str) for c in cfg["classes"]):
        raise ValueError(f"{path}: config.classes = {cfg['classes']!r}; expected a list of unit class names")
    _check_finite_weights(path, ckpt, with_critic)
    ch = cfg["critic_hparams"]
    policy = ClassPolicy.from_config(
        {
            "actor_type": cfg["actor_type"],
            "classes": cfg["classes"],
            "spec": cfg["policy_spec"],
            "hparams": cfg["policy_hparams"],
        }
    )
    policy.load_state_dict(ckpt["actors"])
    policy.to(device)
    try:
        policy.bind(env_info)
    except ValueError as e:
        raise ValueError(
            f"checkpoint {path} (trained on {cfg['map_name']}, actor {cfg['actor_type']}) does not fit "
            f"{env_info.get('map_name')}: {e}"
        ) from None
    if cfg["actor_type"] == "mlp":  # same sizes are not the same columns (e.g. pathing grid vs health + timestep)
        _check_flat_layouts(path, cfg, env_info, with_critic)
    _check_feature_options(path, cfg, env_info)
    critic = None
    if with_critic:
        critic = CentralCritic(cfg["actor_type"], cfg["classes"], cfg["critic_spec"], ch["hidden"], ch["heads"], ch["layers"])
        critic.load_state_dict(ckpt["critic"])
        critic.to(device)
        try:
            critic.bind(env_info)
        except ValueError as e:
            raise ValueError(
                f"checkpoint {path} (trained on {cfg['map_name']}): critic does not fit {env_info.get('map_name')}: {e}"
            ) from None
    return policy, critic, ckpt


def _weights_part(ckpt: dict) -> list[str]:
    """Keys of a checkpoint dict that hold state dicts (SMAC ``actors``/``critic``; AlphaStar ``model``)."""
    return [k for k in ("actors", "critic", "model") if k in ckpt]


def average_checkpoints(paths: list[str], out: str | None = None, allow_different_runs: bool = False) -> dict:
    """Element-wise mean of the floating-point tensors of checkpoints of one run.

    Args:
        paths: two or more checkpoint files of one run: the same format, configuration and recorded training
            arguments (``models`` SMAC checkpoints or ``models.alphastar`` checkpoints).
        out: write the averaged checkpoint here (None: only return it). It keeps the first file's
            metadata and records ``averaged_from``.
        allow_different_runs: also average files whose recorded training seeds or arguments differ (other than
            :data:`RUN_CHANGEABLE_ARGS`). Runs from
            different random starts order their hidden neurons differently, so the mean of their weights
            is no trained network; the exception is a "model soup", fine-tunes of one start
            (Wortsman et al., ICML 2022).

    Returns:
        the averaged checkpoint dict.

    Raises:
        ValueError: a ``paths`` that is a string, fewer than two paths, a file given twice (it would weigh double),
            ``out`` naming one of the inputs (it would be overwritten), a file that cannot be read or holds no
            checkpoint dict, different formats or configs, different recorded training seeds or arguments without
            ``allow_different_runs``, different tensor
            names or shapes, or a non-float tensor (e.g. a counter buffer) that differs between the files.
    """
    if isinstance(paths, (str, os.PathLike)):
        raise ValueError(f"average_checkpoints: paths={str(paths)!r} is one path; expected a list of two or more")
    if len(paths) < 2:
        raise ValueError(f"average_checkpoints needs at least two checkpoints, got {len(paths)}: {paths}")
    real = [os.path.realpath(p) for p in paths]
    twice = sorted({str(p) for p, r in zip(paths, real, strict=True) if real.count(r) > 1})
    if twice:  # a file given twice would silently weigh double in the mean
        raise ValueError(f"average_checkpoints: {twice} name the same file more than once; expected distinct checkpoints")
    if out is not None and os.path.realpath(out) in real:
        raise ValueError(f"average_checkpoints: out={str(out)!r} is one of the input checkpoints; expected a new file")
    ckpts = []
    for p in paths:
        try:
            ckpts.append(load_torch_file(p))
        except OSError as e:  # missing, a folder, no permission: one error type for the caller (bc_select average)
            raise ValueError(f"cannot read checkpoint {p}: {type(e).__name__}: {e}") from None
    for p, c in zip(paths, ckpts, strict=True):
        if not isinstance(c, dict):
            raise ValueError(
                f"{p} holds a {type(c).__name__}, not a checkpoint dict; expected a file of models.save_checkpoint"
            )
    first = ckpts[0]
    for p, c in zip(paths[1:], ckpts[1:], strict=True):
        if c.get("format") != first.get("format"):
            raise ValueError(f"{p} has format {c.get('format')!r}, {paths[0]} has {first.get('format')!r}")
        if c.get("config") != first.get("config"):
            diff = sorted(k for k in set(c["config"]) | set(first["config"]) if c["config"].get(k) != first["config"].get(k))
            raise ValueError(f"{p} and {paths[0]} have different configs (keys {diff}); average only checkpoints of one run")
    seeds = {p: _recorded_seed(c) for p, c in zip(paths, ckpts, strict=True)}
    if not allow_different_runs and len({s for s in seeds.values() if s is not None}) > 1:
        raise ValueError(
            f"the files come from runs of different training seeds {seeds}; the mean of "
            "weights from different random starts is no trained network. Average checkpoints of one run, or pass "
            "allow_different_runs=True (bc_select.py average --allow-different-runs) for fine-tunes of one start"
        )
    recorded = {p: _recorded_args(c) for p, c in zip(paths, ckpts, strict=True)}
    known = {p: a for p, a in recorded.items() if a is not None}
    if not allow_different_runs and known:
        p0, a0 = next(iter(known.items()))
        for p, a in known.items():
            diff = sorted(k for k in set(a) | set(a0) if a.get(k) != a0.get(k))
            if diff:
                raise ValueError(
                    f"{p} and {p0} come from different runs (their recorded training arguments differ in {diff}); the mean "
                    "of weights from different runs is no trained network. Average checkpoints of one run, or pass "
                    "allow_different_runs=True (bc_select.py average --allow-different-runs) for fine-tunes of one start"
                )
    parts = _weights_part(first)
    if not parts:
        raise ValueError(f"{paths[0]} holds no state dict (expected 'actors'/'critic' or 'model')")
    avg = dict(first)
    for part in parts:
        sds = [c[part] for c in ckpts]
        for p, sd in zip(paths[1:], sds[1:], strict=True):
            if set(sd) != set(sds[0]):
                raise ValueError(f"{p}[{part!r}] has tensors {sorted(set(sd) ^ set(sds[0]))} that {paths[0]} lacks or has")
            for k, v in sd.items():
                if v.shape != sds[0][k].shape:
                    raise ValueError(
                        f"{p}[{part!r}][{k!r}] has shape {tuple(v.shape)}; {paths[0]} has {tuple(sds[0][k].shape)}"
                    )
        merged = {}
        for k, v in sds[0].items():
            if v.is_floating_point():
                merged[k] = torch.stack([sd[k].float() for sd in sds]).mean(0).to(v.dtype)
            else:
                for p, sd in zip(paths[1:], sds[1:], strict=True):
                    if not torch.equal(sd[k], v):
                        raise ValueError(f"non-float tensor {part}.{k} differs between {paths[0]} and {p}; cannot average")
                merged[k] = v
        avg[part] = merged
    avg["averaged_from"] = [str(p) for p in paths]
    if out is not None:
        torch.save(avg, out)
    return avg


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
