# Zero-shot transfer of trained actors across team sizes.
# Idea and reference figures: count-invariant entity/attention actors transfer between SMAC team
# sizes (e.g. UPDeT, Hu et al., ICLR 2021),
# while a flat MLP cannot even read a differently sized observation.
"""Evaluate checkpoints of ``algos/happo_gnn.py`` greedily on other maps, without retraining.

    python algos/eval_transfer.py --checkpoints checkpoints/2s3z_gnn.pt checkpoints/3s5z_gnn.pt

For every (checkpoint, target map) pair it runs ``--episodes`` episodes on the embedded batched
simulator and writes, into a new folder ``<out_dir>/<name>__<unix time>/`` (``-2``, ``-3``, ... if
taken; never an existing one), ``<name>.csv``, ``<name>.md`` (a Markdown table), ``<name>.png``
(bar chart of the win rates with Wilson 95 % intervals) and ``run_meta.json`` (configuration, git
commit, package versions; see ``sc2_envs.training.run``). Bad input (a missing or non-checkpoint file,
``--episodes 0``, an unknown map) ends the script with one line naming the value and what was
expected, exit status 2, before any folder is made. A pair the checkpoint cannot serve (a unit
class of the target map without an actor in the checkpoint, an MLP whose input or output size does
not fit, a different observation layout) becomes a row with an ``error`` and no figures: nothing is
substituted or guessed.
"""

from __future__ import annotations

import os

# Idle OpenMP threads spin ~10 us, not libgomp's ~3 ms, before they sleep: long spins starve the working
# thread on shared cores (sc2_envs.training.wait_policy). Set before torch loads OpenMP; your own setting wins.
if not (os.environ.get("OMP_WAIT_POLICY") or os.environ.get("GOMP_SPINCOUNT")):
    os.environ["GOMP_SPINCOUNT"] = "1000"

import math
import time
from dataclasses import asdict, dataclass

import torch
import tyro

import sc2_envs
from models.entities import ObsParser
from models.policy import dict_diffs, unit_classes
from sc2_envs import smacv2
from sc2_envs.training.checkpoints import (
    ancestors,
    ancestry_text,
    checkpoint_maps,
    env_steps,
    load_checkpoint,
    read_checkpoint,
    trained_by,
    training_amount,
)
from sc2_envs.training.cli import cli_error, close_names, flowing_help, is_plain_name
from sc2_envs.training.evaluation import evaluate
from sc2_envs.training.run import make_run_dir, write_run_meta
from sc2_envs.training.transfer_results import CSV_COLUMNS as CSV_COLUMNS
from sc2_envs.training.transfer_results import TransferRow, markdown_table, median_table, plot_rows, write_csv
from sc2_envs.training.transfer_results import short_names as short_names
from sc2_envs.validation import check_out_dir

DEFAULT_MAPS: dict[frozenset, tuple[str, ...]] = {
    frozenset({"stalker", "zealot"}): ("2s3z", "3s5z", "3s5z_vs_3s6z"),
    frozenset({"marine"}): ("3m", "5m_vs_6m", "8m", "25m"),
    frozenset({"marine", "marauder", "medivac"}): ("MMM", "MMM2"),
}
"""Target maps used when ``--maps`` is not given, keyed by the checkpoint's set of unit classes:
maps whose allies are made of exactly those classes, from small to large teams."""


@dataclass
class Args:
    checkpoints: tuple[str, ...]
    """checkpoint files written by algos/happo_gnn.py or hatrpo_gnn.py --save-model (GNN or MLP actors)"""
    maps: tuple[str, ...] = ()
    """target maps or SMACv2 scenarios (sc2_envs.list_maps("all")); empty: the checkpoint's source map(s) plus
    DEFAULT_MAPS of its unit classes (a SMACv2 checkpoint: every scenario of its race)"""
    episodes: int = 100
    """episodes per (checkpoint, target map) pair"""
    max_envs: int = 128
    """the batched simulator runs min(episodes, max_envs) envs in parallel"""
    seed: int = 0
    """evaluation seed (envs reset with sc2_envs.eval_seed(seed): streams disjoint from any training run's); the same for every
    pair"""
    greedy: bool = True
    """argmax over the available actions (False: sample from the policy)"""
    spawn_jitter: float | None = None
    """half-width of the random start offsets in world units (None: the simulator's default, as in training)"""
    device: str = "cpu"
    """torch device of the simulator and the networks (cpu, cuda, cuda:1, ...)"""
    torch_threads: int = 1
    """torch CPU threads (0: torch's default)"""
    out_dir: str = "runs"
    """parent folder: each evaluation writes into its own new folder <out_dir>/<name>__<unix time>"""
    name: str = "transfer"
    """file stem of the outputs and prefix of the run folder"""


def source_label(config: dict) -> str:
    """The training map(s) of a checkpoint config as one name: ``3m`` or, multi-map, ``3m+8m``."""
    return "+".join(checkpoint_maps(config))


def n_agents_of(name: str) -> int:
    """Number of agents of a SMAC v1 map or a SMACv2 scenario (``n_units``).

    Raises:
        ValueError: neither a map nor a scenario (the message lists the valid names).
    """
    if smacv2.is_scenario(name):
        return smacv2.get_scenario(name).n_units
    if name not in sc2_envs.list_maps():
        raise ValueError(f"unknown map {name!r}; expected one of: {', '.join(sc2_envs.list_maps('all'))}")
    return sc2_envs.get_map(name).n_agents


def transfer_kind(source_map: str, target_map: str) -> str:
    """``in-distribution`` (a training map), ``scale-up`` / ``scale-down`` (more / fewer agents than every
    training map), ``same-team-size`` (as many agents as a training map) or ``interpolation`` (between
    the team sizes of a multi-map checkpoint's maps). ``source_map``: one map or ``A+B`` (:func:`source_label`)."""
    sources = source_map.split("+")
    if target_map in sources:
        return "in-distribution"
    n_src = [n_agents_of(m) for m in sources]
    n_tgt = n_agents_of(target_map)
    if n_tgt > max(n_src):
        return "scale-up"
    if n_tgt < min(n_src):
        return "scale-down"
    if n_tgt in n_src:
        return "same-team-size"
    return "interpolation"


def _entity_columns(names: list[str]) -> list[str]:
    """Feature names a GNN actor reads from a row: type bits and last-action columns are re-encoded or
    dropped by ``models.entities.ObsParser`` (same name rule as there), so they are left out."""
    return [n for n in names if "type" not in n.lower() and "last_action" not in n.lower()]


def _option_diffs(config: dict, env_info: dict) -> list[str]:
    """SMACv2 ``feature_options`` that differ between a checkpoint and an env (same layout, other
    meaning: e.g. ``use_unit_ranges``); none when either side has no record (SMAC v1, older checkpoints)."""
    src, tgt = config.get("feature_options"), env_info.get("feature_options")
    if not isinstance(src, dict) or not isinstance(tgt, dict):
        return []
    return dict_diffs(src, tgt)


def fit_error(config: dict, env_info: dict) -> str:
    """Why a checkpoint's actors cannot serve an env, or ``""`` if they can.

    Args:
        config: the checkpoint's ``config`` dict (``models.save_checkpoint``).
        env_info: the target env's ``get_env_info()``.

    Checks, in this order: every unit class of the target has an actor in the checkpoint (a missing
    class is reported, never replaced by another class's actor); for MLP actors, the flat input
    (``obs_shape``) and output (``n_actions``) sizes and the whole observation layout equal the
    training ones; for GNN actors, the per-entity feature names and move/timestep widths equal the
    training ones and every unit type of the target is in the checkpoint's type vocabulary
    (counts of allies and enemies may differ; a map without type bits, one type per side, is read
    with that vocabulary too); for both, SMACv2's ``feature_options`` (``use_unit_ranges``, ...)
    equal the training ones where both are recorded.
    """
    target, source = env_info["map_name"], source_label(config)
    classes = list(unit_classes(env_info))
    missing = [c for c in classes if c not in config["classes"]]
    if missing:
        return (
            f"unit class(es) {missing} of {target} absent from the checkpoint (trained on {source}, actors for "
            f"{config['classes']}); no actor is substituted for a missing class"
        )
    if config["actor_type"] == "mlp":
        have = (int(env_info["obs_shape"]), int(env_info["n_actions"]))
        want = (int(config["obs_shape"]), int(config["n_actions"]))
        if have != want:
            return (
                f"MLP input/output size mismatch: the actor reads obs_size={want[0]} and outputs n_actions={want[1]} "
                f"({source}); {target} has obs_size={have[0]}, n_actions={have[1]}. A flat MLP does not transfer "
                f"across team sizes"
            )
        if env_info.get("obs_layout") != config.get("obs_layout"):
            return (
                f"MLP observation layout mismatch: {target} has the sizes of {source} but a different layout "
                f"{env_info.get('obs_layout')} (trained on {config.get('obs_layout')})"
            )
        if options := _option_diffs(config, env_info):
            return f"observation layout mismatch between the checkpoint ({source}) and {target}: " + "; ".join(options)
        return ""
    src, tgt = config.get("obs_layout") or {}, env_info["obs_layout"]
    diffs = []
    for key in ("move_feats", "timestep_feats"):
        if src.get(key) != tgt.get(key):
            diffs.append(f"{key} {src.get(key)} vs {tgt.get(key)}")
    for key in ("enemy_feature_names", "ally_feature_names", "own_feature_names"):
        a, b = _entity_columns(list(src.get(key) or [])), _entity_columns(list(tgt.get(key) or []))
        if a != b:
            diffs.append(f"{key} {a} vs {b}")
    want = config["policy_spec"].get("type_vocab")
    try:  # the target's types are read into the checkpoint's vocabulary (models.entities._type_vocab)
        ObsParser(env_info, vocab=want)
    except ValueError as e:
        diffs.append(f"unit types: {e}")
    diffs += _option_diffs(config, env_info)
    if diffs:
        v2_source = all(smacv2.is_scenario(m) for m in checkpoint_maps(config))
        if v2_source != smacv2.is_scenario(target):
            hint = (
                "a SMACv2 checkpoint on a SMAC v1 map" if v2_source else "a SMAC v1 checkpoint on a SMACv2 scenario"
            ) + ": the two feature layouts differ; train on the target's family"
        else:
            hint = "were they built with different SMAC feature options?"
        return (
            f"observation layout mismatch between the checkpoint ({source}) and {target}: "
            + "; ".join(diffs)
            + f" (checkpoint vs target; {hint})"
        )
    return ""


def evaluate_transfer(
    path: str,
    target_map: str,
    episodes: int = 100,
    max_envs: int = 128,
    seed: int = 0,
    greedy: bool = True,
    device: str | torch.device = "cpu",
    spawn_jitter: float | None = None,
    ckpt: dict | None = None,
) -> TransferRow:
    """Evaluate the actors of checkpoint ``path`` on ``target_map``; see :class:`TransferRow`.

    A checkpoint that does not fit the target (:func:`fit_error`, or ``models.load_checkpoint``
    refusing it) gives a row with ``error`` set and no figures. ``ckpt``: the already-read
    checkpoint dict (saves reading the file twice).

    Raises:
        ValueError: unknown target map, ``episodes < 1`` or ``max_envs < 1``, or a file that is not
            a checkpoint (bad input, as opposed to a checkpoint that does not fit a map).
    """
    if episodes < 1 or max_envs < 1:
        raise ValueError(f"episodes and max_envs must be >= 1, got episodes={episodes}, max_envs={max_envs}")
    ckpt = read_checkpoint(path) if ckpt is None else ckpt
    cfg = ckpt["config"]
    row = TransferRow(
        target_map=target_map,
        source_map=source_label(cfg),
        actor_type=cfg["actor_type"],
        kind=transfer_kind(source_label(cfg), target_map),
        checkpoint=path,
        source_steps=env_steps(ckpt),
        eval_seed=seed,
        num_envs=min(episodes, max_envs),
    )
    num_envs = row.num_envs
    options = {} if spawn_jitter is None else {"spawn_jitter": spawn_jitter}
    env = sc2_envs.make_batched(
        target_map, num_envs=num_envs, device=device, seed=seed, autoreset=True, num_threads=torch.get_num_threads(), **options
    )
    env_info = env.get_env_info()
    row.error = fit_error(cfg, env_info)
    if row.error:
        return row
    try:
        policy, _, _ = load_checkpoint(path, env_info, device=device, with_critic=False)
    except ValueError as e:
        row.error = str(e)
        return row
    policy.eval()
    # sampled actions (greedy=False): seeded for this pair alone, whatever ran before in the process
    res = evaluate(policy, env, episodes, sc2_envs.eval_seed(seed), greedy=greedy, sample_seed=seed)
    row.episodes, row.wins = res["episodes"], res["wins"]
    row.win_rate = res["win_rate"]
    row.ci_low, row.ci_high = res["win_ci"]
    row.mean_return, row.mean_length = res["mean_return"], res["mean_length"]
    return row


def default_maps(config: dict) -> list[str]:
    """The checkpoint's training map(s), then: for a checkpoint trained on SMACv2 scenarios, every
    scenario of their race (team sizes 5v5, 10v10, 10v11, 20v20, 20v23); else :data:`DEFAULT_MAPS`
    of its classes."""
    trained = checkpoint_maps(config)
    scen = [smacv2.get_scenario(m) for m in trained if smacv2.is_scenario(m)]
    if scen:
        races = list(dict.fromkeys(s.race for s in scen))
        more = [f"{r}_{n}_vs_{e}" for r in races for n, e in smacv2.TEAM_SIZES]
    else:
        more = list(DEFAULT_MAPS.get(frozenset(config["classes"]), ()))
    return list(dict.fromkeys(trained + more))


def resolve_maps(maps: tuple[str, ...] | list[str], config: dict) -> list[str]:
    """``maps`` if given, else :func:`default_maps` of the checkpoint.

    Raises:
        ValueError: a name that is neither a SMAC v1 map nor a SMACv2 scenario (the message lists them, and
            the closest name to a mistyped one),
            or a map given twice (each would be evaluated once: the table would hold fewer rows than
            asked for).
    """
    out = list(maps) if maps else default_maps(config)
    valid = set(sc2_envs.list_maps("all"))
    bad = [m for m in out if m not in valid]
    if bad:
        # the suggestion the training scripts give for a mistyped --map (sc2_envs.validation.did_you_mean)
        raise ValueError(f"unknown map(s) {bad}{close_names(bad, sorted(valid))}; valid maps: {sorted(valid)}")
    twice = sorted({m for m in maps if list(maps).count(m) > 1})
    if twice:
        raise ValueError(f"--maps {' '.join(maps)}: {', '.join(twice)} given more than once; expected distinct maps")
    return list(dict.fromkeys(out))


MAX_SPAWN_JITTER = 2.0
"""The largest ``spawn_jitter`` the simulator accepts (world units; ``sc2_envs.make_batched``)."""


def check_device(name: str) -> torch.device:
    """The torch device ``--device name`` asks for, if the simulator and the networks can run there:
    ``cpu``, or ``cuda`` / ``cuda:N`` with such a GPU present.

    Raises:
        ValueError: an unparsable name, another device type (``meta``, ``mps``, ...: the simulator runs
            on the CPU or CUDA only), ``cpu:N`` (there is one CPU device), CUDA absent, or a GPU index
            not below ``torch.cuda.device_count()``.
    """
    try:
        device = torch.device(name)
    except RuntimeError:
        raise ValueError(f"--device {name!r}: expected cpu, cuda or cuda:N") from None
    if device.type not in ("cpu", "cuda"):
        raise ValueError(f"--device {name}: the simulator runs on the CPU or a CUDA GPU; expected cpu, cuda or cuda:N")
    if device.type == "cpu" and device.index not in (None, 0):
        raise ValueError(f"--device {name}: torch has one CPU device; expected --device cpu")
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"--device {name}: CUDA is not available on this machine; expected --device cpu")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ValueError(
                f"--device {name}: this machine has {torch.cuda.device_count()} CUDA device(s), "
                f"cuda:0 to cuda:{torch.cuda.device_count() - 1}"
            )
    return device


def prepare(args: Args) -> tuple[torch.device, dict, dict]:
    """Check the command line and read the checkpoints before anything is written.

    Returns:
        ``(device, checkpoints, plan)``: the torch device, ``{path: checkpoint dict}`` and
        ``{path: [target maps]}``.

    Raises:
        ValueError: one string for ``--checkpoints`` or ``--maps`` (in Python), ``--episodes`` or
            ``--max-envs`` below 1, no checkpoint or one given twice (also as another path to the same
            file, ``a.pt ./a.pt``), a
            negative ``--seed`` or ``--torch-threads``, a ``--spawn-jitter`` outside [0, 2] (or not
            finite), a ``--name`` with a path separator, an ``--out-dir`` that is (or is inside) a file or
            not writable (``check_out_dir``), a ``--device`` the simulator cannot run on
            (:func:`check_device`), a file that is not a checkpoint, or an unknown map.
        FileNotFoundError: a checkpoint file does not exist.
    """
    for flag in ("checkpoints", "maps"):  # Args(maps="3m") in Python: list() would split it into letters
        value = getattr(args, flag)
        if isinstance(value, str):
            raise ValueError(f"--{flag} {value!r}: expected a sequence of names such as ({value!r},), not one string")
    if args.episodes < 1:
        raise ValueError(f"--episodes {args.episodes}: expected an integer >= 1")
    if args.max_envs < 1:
        raise ValueError(f"--max-envs {args.max_envs}: expected an integer >= 1")
    if not args.checkpoints:
        raise ValueError("--checkpoints: give at least one checkpoint file")
    real = [os.path.realpath(c) for c in args.checkpoints]  # a.pt and ./a.pt are one file
    twice = sorted({c for c, r in zip(args.checkpoints, real, strict=True) if real.count(r) > 1})
    if twice:
        raise ValueError(f"--checkpoints: {', '.join(twice)} given more than once; expected distinct files")
    if args.seed < 0:
        raise ValueError(f"--seed {args.seed}: expected a non-negative integer")
    if args.torch_threads < 0:
        raise ValueError(f"--torch-threads {args.torch_threads}: expected an integer >= 0 (0: torch's default)")
    if args.spawn_jitter is not None and not (math.isfinite(args.spawn_jitter) and 0 <= args.spawn_jitter <= MAX_SPAWN_JITTER):
        raise ValueError(
            f"--spawn-jitter {args.spawn_jitter}: expected a distance in [0, {MAX_SPAWN_JITTER:g}] world units "
            "(the simulator's range)"
        )
    if not is_plain_name(args.name):
        raise ValueError(f"--name {args.name!r}: expected a file stem without path separators")
    check_out_dir(args.out_dir)  # before the evaluations, not after them
    device = check_device(args.device)
    ckpts = {p: read_checkpoint(p) for p in args.checkpoints}
    plan = {p: resolve_maps(args.maps, c["config"]) for p, c in ckpts.items()}
    return device, ckpts, plan


def main(args: Args, prepared: tuple | None = None) -> list[TransferRow]:
    """Run every (checkpoint, map) pair, print and write the CSV / Markdown / PNG into a new run
    folder under ``args.out_dir``; returns the rows. ``prepared``: :func:`prepare`'s result (it is
    called here if not given, and raises on bad input before any folder is made)."""
    device, ckpts, plan = prepare(args) if prepared is None else prepared
    if args.torch_threads > 0:
        torch.set_num_threads(args.torch_threads)

    print("eval_transfer configuration:")
    for k, v in asdict(args).items():
        if k == "maps":  # the resolved targets, not the flag (empty: each checkpoint's defaults)
            targets = list(dict.fromkeys(m for p in plan for m in plan[p]))
            how = "" if args.maps else " (default for the checkpoint(s): training map(s), then the maps of their classes)"
            v = " ".join(targets) + how
        elif k == "greedy":
            v = f"{v} ({'argmax' if v else 'sampled'} actions)"
        elif k == "spawn_jitter" and v is None:
            v = "None (the simulator's default)"
        print(f"  {k}: {v}")
    print(f"  num_envs per map: {min(args.episodes, args.max_envs)}")
    for p, c in ckpts.items():
        cfg = c["config"]
        chain = ancestors(c)
        # a fine-tune's global_step counts its own steps only (source_steps in the CSV too): say where it started
        its = "its steps are" if len(chain) == 1 else "their steps are"
        notes = [trained_by(c)] + ([f"fine-tuned from {ancestry_text(chain)}; {its} not included"] if chain else [])
        notes = "; ".join(n for n in notes if n)
        print(
            f"  {p}: {cfg['actor_type']} actors {cfg['classes']} trained on {source_label(cfg)} for "
            f"{training_amount(c)}{f' ({notes})' if notes else ''} -> {plan[p]}"
        )

    rows = []
    for p, c in ckpts.items():
        for m in plan[p]:
            t0 = time.time()
            r = evaluate_transfer(
                p, m, args.episodes, args.max_envs, args.seed, args.greedy, device, args.spawn_jitter, ckpt=c
            )
            rows.append(r)
            # with several checkpoints, two can share a source map and actor type (seeds, fine-tunes): name the file
            who = f"{r.source_map} ({r.actor_type}{f', {p}' if len(ckpts) > 1 else ''})"
            if r.error:
                print(f"{who} -> {m}: not evaluated: {r.error}")
            else:
                print(
                    f"{who} -> {m} [{r.kind}]: win rate {r.win_rate:.3f} "
                    f"[{r.ci_low:.3f}, {r.ci_high:.3f}] over {r.episodes} episodes, return {r.mean_return:.2f}, "
                    f"length {r.mean_length:.1f} env steps ({time.time() - t0:.0f} s)"
                )

    run_dir = make_run_dir(args.out_dir, f"{args.name}__{int(time.time())}")
    # per fine-tuned checkpoint, its starting checkpoints oldest first (source_steps counts its own steps only)
    lineages = {p: chain[::-1] for p, c in ckpts.items() if (chain := ancestors(c))}
    write_run_meta(run_dir, args, script=os.path.basename(__file__), targets=plan, device=str(device), lineages=lineages)
    stem = os.path.join(str(run_dir), args.name)
    write_csv(rows, stem + ".csv")
    table = markdown_table(rows)
    medians = median_table(rows)
    if medians:  # several checkpoints of one source map and actor type (seeds): their median per target
        medians = "\nMedian win rate over the checkpoints of each source map and actor type:\n\n" + medians
    with open(stem + ".md", "w") as f:
        f.write(
            f"Greedy={args.greedy}, {args.episodes} episodes per pair, seed {args.seed}, embedded simulator; "
            "win rate with Wilson 95% interval.\n\n" + table + medians
        )
    plot_rows(rows, stem + ".png")
    print("\n" + table + medians)
    print(f"wrote {stem}.csv, {stem}.md, {stem}.png")
    return rows


if __name__ == "__main__":
    cli_args = tyro.cli(flowing_help(Args))
    try:
        ready = prepare(cli_args)
    except (OSError, ValueError) as e:  # bad input: one line, exit status 2, nothing written
        cli_error(str(e))
    main(cli_args, ready)
