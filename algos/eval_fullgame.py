# Evaluation of full-game policies against the built-in bot. Style: CleanRL single file (tyro Args).
# Facts: mini-AlphaStar's evaluation (liuruoze/mini-AlphaStar alphastarmini/core/rl/rl_eval_sl.py: Simple64,
# Protoss vs the very_easy Terran bot, step_mul 8 in RL, 18,000 game loops per game); docs/full_game.md.
"""Evaluate full-game checkpoints and baselines against the bot: mini-AlphaStar's table, with intervals.

    python algos/eval_fullgame.py --checkpoints runs/RUN/best.pt --games 100 --seed 7
    python algos/eval_fullgame.py --policy random scripted --games 100 --seed 7

For each ``AlphaStarPolicy`` checkpoint (``models.alphastar.save_alphastar``: behaviour cloning with
``algos/bc_reweight.py`` on a replay dataset, or RL) and each baseline (``random``: the random legal
policy, ``sc2_envs.lite.policy``; ``scripted``: the replays' build order,
``sc2_envs.training.fullgame_scripted``) it plays ``--games`` games of FullGame-v0 (Protoss on
Simple64 against the very_easy Terran bot; the lite engine by default, ``--backend sc2`` for the real
game) in ``--num-envs`` parallel games, and prints one table row:

| column | meaning |
| --- | --- |
| W / L / T | games won, lost and tied (a tie: the game reached ``--game-steps-per-episode`` with no result) |
| win rate [lo, hi] | wins / games, Wilson 95% interval (``sc2_envs.stats.wilson_interval``); a timeout is not a win |
| minerals | minerals collected per game (score_cumulative collected_minerals) |
| kills | enemy units and structures killed per game |
| army@5, army@8 | food_army at 5 and 8 real minutes (1344 game loops each), over the games still running then (n) |
| idle | share of decisions whose action_type is no_op or Stop |
| errors | share of decisions the game refused (``action_errors``) |
| length | game length in real minutes |

Under the table, one line per policy names the refused commands behind ``errors``: the most frequent
``function:ActionResult`` pairs with their share of decisions (also the CSV's ``refused_top``).

A checkpoint decides every ``step_mul`` game loops it was trained at (``--step-mul 0``, the default):
behaviour cloning on a fixed-stride replay dataset records the dataset's stride (its labels are the
experts' commands per that many loops), RL its own ``--step-mul``; a checkpoint that records none,
and the baselines, play at mini-AlphaStar's 8. The first lines are the effective configuration (with
each checkpoint's step_mul and where it came from), and a warning for a checkpoint of a
``bc_reweight.py --select-by behaviour`` run that evaluated its epochs on this very ``--seed`` (the
figures of the one it picked are biased upwards there: report a win rate on a seed never used for selection). The rows also go
to ``--csv`` (default ``runs/eval_fullgame__<seed>__<unix time>.csv``), each with its ``eval_seed`` and ``num_envs``
(together they fix the games; ``python -m sc2_envs.stats`` pools seeds' CSVs and refuses a seed twice).
A checkpoint that is missing or not an
``AlphaStarPolicy`` checkpoint (or one whose config, model or recorded step_mul is invalid), an unknown
``--policy``, a flag out of its range (``--games 0``, ``--seed -3``, ``--noop-prob 1.5``, an ``--enemy-start``
off the raw grid), a ``--device`` torch cannot use or a ``--csv`` that cannot be written ends the script
before any game with one line naming the flag and its value (``eval_fullgame.py: error: ...``, exit status 2,
as argparse and tyro report a bad command line). On the real game, minerals and kills are read from the lite engine only and
print as n/a, and ``scripted`` needs ``--enemy-start COL ROW``.
"""

from __future__ import annotations

import os

# Idle OpenMP threads spin ~10 us, not libgomp's ~3 ms, before they sleep: long spins starve the working
# thread on shared cores (sc2_envs.training.wait_policy). Set before torch loads OpenMP; your own setting wins.
if not (os.environ.get("OMP_WAIT_POLICY") or os.environ.get("GOMP_SPINCOUNT")):
    os.environ["GOMP_SPINCOUNT"] = "1000"

import csv
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import tyro

from models.alphastar import TEMPERATURE_EXPECTED, check_temperature
from sc2_envs.lite.env import MAX_LOOPS, MAX_NUM_ENVS
from sc2_envs.training.checkpoints import CHECKPOINT_FORMAT as SMAC_FORMAT
from sc2_envs.training.checkpoints import load_torch_file
from sc2_envs.training.cli import cli_error, close_names
from sc2_envs.training.fullgame_evaluation import (
    BASELINE_RAW_RESOLUTION,
    BASELINES,
    CSV_COLUMNS,
    DEFAULT_STEP_MUL,
    HEADER,
    check_fullgame_checkpoint,
    effective_step_mul,
    evaluate_fullgame,
    format_row,
    trained_step_mul,
)
from sc2_envs.validation import check_out_dir


@dataclass
class Args:
    checkpoints: tuple[str, ...] = ()
    """AlphaStarPolicy checkpoints (models.alphastar.save_alphastar: algos/bc_reweight.py on replays, or RL)"""
    policy: tuple[str, ...] = ()
    """baselines to evaluate too: random (random legal actions) and/or scripted (the replays' build order)"""
    games: int = 100
    """games per policy"""
    seed: int = 0
    """evaluation seed: the bot's jitter of game b of episode k; use one never used to select a checkpoint"""
    num_envs: int = 16
    """games played at once (one batched policy call per step); the games depend on it and on --seed: keep both to repeat a figure"""  # noqa: E501
    backend: str = "lite"
    """lite (the embedded engine) or sc2 (StarCraft II, needs SC2PATH)"""
    step_mul: int = 0
    """game loops per decision; 0: each checkpoint's own (a fixed-stride replay dataset's stride for BC, RL's --step-mul),
    else mini-AlphaStar's 8 (the baselines' default)"""
    game_steps_per_episode: int = 18000
    """game loops before a game is cut (a tie): mini-AlphaStar's 18,000 (13.4 real minutes)"""
    omniscient: bool = False
    """lite engine: no fog of war (the replay dataset's default view); default: fog, as the real game"""
    greedy: bool = False
    """argmax every head (default: sample, as mini-AlphaStar plays; the shipped RL checkpoint played greedy wins
    no game: it repeats one refused command, docs/a3c_upgo.md)"""
    temperature: float = 1.0
    """checkpoints: sample every head from softmax(logits / temperature); 1: the policy as trained"""
    mask_action_type: bool = True
    """mask unavailable action types for checkpoints that do not read the mask (replay-trained)"""
    enemy_start: tuple[int, int] | None = None
    """scripted on --backend sc2: the enemy start location (col, row) on the raw grid"""
    noop_prob: float = 0.5
    """random baseline: probability of a no-op decision"""
    torch_threads: int = 1
    """torch CPU threads (0: torch's default)"""
    device: str = "cpu"
    """torch device of the networks"""
    csv: str = ""
    """CSV output file (default runs/eval_fullgame__<seed>__<unix time>.csv)"""


def check_args(args: Args) -> None:
    """Refuse a command line before any game is played (:func:`main` prints the message as a usage error).

    Raises:
        ValueError: ``"--flag value: expected ..."`` (one line, naming the flag, its value and what was expected)
            for nothing to evaluate; one string for --policy or --checkpoints (in Python); a baseline or
            checkpoint named twice; a missing or non-AlphaStar checkpoint, one whose ``config`` / ``model``
            do not build the model, or whose ``bc`` / ``rl`` record or recorded step_mul is invalid
            (``fullgame_evaluation.check_fullgame_checkpoint``); an unknown baseline (with the closest name when
            one is close: ``scriptd`` suggests ``scripted``) or backend,
            ``--games``/``--num-envs`` below 1, more games at once than the lite engine's ``MAX_NUM_ENVS``,
            ``--step-mul`` below 0, ``--seed`` outside [0, 2**63 - 1] (the envs' seed range), ``--torch-threads`` below 0,
            ``--noop-prob`` outside [0, 1], ``scripted`` on the real game without ``--enemy-start``, a flag no evaluated policy
            reads (``--noop-prob`` without ``random``, ``--enemy-start`` without ``scripted``, ``--greedy`` /
            ``--no-mask-action-type`` without a checkpoint, ``--omniscient`` on the real game), an ``--enemy-start`` cell off
            the baselines' raw grid, a ``--device`` torch cannot use, or a ``--csv`` that cannot be written (a folder, or under
            a file or an unwritable folder).
    """
    from models.alphastar import CHECKPOINT_FORMAT

    for flag in ("policy", "checkpoints"):  # Args(policy="random") in Python: list() would split it into letters
        if isinstance(getattr(args, flag), str):
            value = getattr(args, flag)
            raise ValueError(f"--{flag} {value!r}: expected a sequence of names such as ({value!r},), not one string")
    if not args.checkpoints and not args.policy:
        raise ValueError("nothing to evaluate; give --checkpoints FILE ... and/or --policy random scripted")
    bad = [p for p in args.policy if p not in BASELINES]
    if bad:
        # the suggestion the training scripts give for a mistyped --map (sc2_envs.validation.did_you_mean)
        hint = close_names(bad, list(BASELINES))
        raise ValueError(f"--policy {' '.join(args.policy)}: unknown {bad}{hint}; expected names from {list(BASELINES)}")
    # a name given twice would be played twice (twice the games, two identical rows), as --map refuses it in training
    for flag, names, what in (("policy", args.policy, "baselines"), ("checkpoints", args.checkpoints, "checkpoint files")):
        same = [os.path.realpath(n) for n in names] if flag == "checkpoints" else list(names)  # a.pt and ./a.pt
        twice = [n for i, n in enumerate(names) if same[i] in same[:i]]
        if twice:
            raise ValueError(f"--{flag} {' '.join(names)}: {twice[0]!r} given twice; expected distinct {what}")
    for p in args.checkpoints:
        if os.path.isdir(p):  # a run folder: name the checkpoints it holds
            held = sorted(q.name for q in Path(p).glob("*.pt"))[:4]
            holds = f" (it holds {', '.join(held)})" if held else " (it holds no .pt file)"
            raise ValueError(f"--checkpoints {p!r} is a folder{holds}; expected an AlphaStarPolicy checkpoint file")
        if not os.path.isfile(p):
            raise ValueError(f"--checkpoints {p!r}: no such checkpoint file")
        try:
            ckpt = load_torch_file(p)
        except (OSError, ValueError) as e:  # a text file, a truncated file: say which and why
            raise ValueError(f"--checkpoints {e}") from None
        if not isinstance(ckpt, dict) or ckpt.get("format") != CHECKPOINT_FORMAT:
            found = ckpt.get("format") if isinstance(ckpt, dict) else type(ckpt).__name__
            what = " (a SMAC-map checkpoint: algos/eval_transfer.py evaluates it)" if found == SMAC_FORMAT else ""
            raise ValueError(
                f"--checkpoints {p!r}: not a {CHECKPOINT_FORMAT} checkpoint (models.alphastar.save_alphastar); "
                f"this one is {found!r}{what}"
            )
        try:
            check_fullgame_checkpoint(p, ckpt)
        except ValueError as e:  # "<path>: its ... record ..."
            raise ValueError(f"--checkpoints {e}") from None
    for name in ("games", "num_envs"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} {getattr(args, name)}: expected an integer >= 1")
    if args.backend == "lite" and min(args.num_envs, args.games) > MAX_NUM_ENVS:  # the games played at once
        raise ValueError(f"--num-envs {args.num_envs}: expected games at once <= {MAX_NUM_ENVS} (the lite engine's limit)")
    if args.step_mul < 0:
        raise ValueError(f"--step-mul {args.step_mul}: expected game loops per decision >= 1 (0: each policy's own)")
    if args.step_mul > MAX_LOOPS["step_mul"]:  # the env's limit, checked before any game
        raise ValueError(f"--step-mul {args.step_mul}: expected game loops per decision <= {MAX_LOOPS['step_mul']}")
    if not 0 <= args.seed <= 2**63 - 1:
        raise ValueError(f"--seed {args.seed}: expected an integer in [0, {2**63 - 1}]")
    if args.torch_threads < 0:
        raise ValueError(f"--torch-threads {args.torch_threads}: expected an integer >= 0 (0: torch's default)")
    if not 0.0 <= args.noop_prob <= 1.0:  # NaN fails this too
        raise ValueError(f"--noop-prob {args.noop_prob}: expected a probability in [0, 1]")
    try:
        check_temperature(args.temperature)
    except ValueError:
        raise ValueError(f"--temperature {args.temperature}: {TEMPERATURE_EXPECTED}") from None
    if not 0 <= args.game_steps_per_episode <= MAX_LOOPS["game_steps_per_episode"]:
        raise ValueError(
            f"--game-steps-per-episode {args.game_steps_per_episode}: expected game loops in "
            f"[0, {MAX_LOOPS['game_steps_per_episode']}] (0: no limit)"
        )
    if args.backend not in ("lite", "sc2"):
        raise ValueError(f"--backend {args.backend!r}: expected 'lite' or 'sc2'")
    if "scripted" in args.policy and args.backend == "sc2" and args.enemy_start is None:
        raise ValueError("--policy scripted --backend sc2: expected --enemy-start COL ROW (the raw-grid start)")
    for name, reader in unread_options(args).items():  # set away from its default, it would be ignored, silently
        value = getattr(args, name)
        if value != getattr(Args, name):
            raise ValueError(f"{flag_text(name, value)}: only {reader}; leave it out")
    r = BASELINE_RAW_RESOLUTION
    if args.enemy_start is not None and not all(0 <= c < r for c in args.enemy_start):
        col, row = args.enemy_start
        raise ValueError(f"--enemy-start {col} {row}: expected a cell of the {r}x{r} raw grid (col, row in [0, {r - 1}])")
    check_device(args.device)
    check_csv(args.csv)


def check_device(device: str) -> None:
    """Refuse a ``--device`` torch cannot parse or allocate on (``cuda`` without a GPU, ``cuda:7`` on one GPU).

    Raises:
        ValueError: naming the device and torch's reason.
    """
    try:
        torch.zeros(1, device=torch.device(device))
    except (RuntimeError, AssertionError, ValueError) as e:  # a bad name, or a device this torch cannot reach
        reason = " ".join(str(e).split())
        raise ValueError(f"--device {device!r}: torch cannot use it ({reason:.200})") from None


def check_csv(path: str) -> None:
    """Refuse a ``--csv`` that could only fail after the games: an existing folder, or a file whose folder
    cannot be created or written (``validation.check_out_dir`` on the parent, then a temporary file created and removed
    in its nearest existing folder). Empty: the default under ``runs/``.

    Raises:
        ValueError: naming the value and what is in the way.
    """
    out = Path(path or "runs/eval_fullgame.csv")
    if out.is_dir():
        raise ValueError(f"--csv {path!r} is a folder; expected a file to write the rows to")
    try:
        check_out_dir(out.parent, "--csv")
    except ValueError as e:
        raise ValueError(f"{e} (the folder of --csv {path or str(out)!r})") from None
    folder = out.parent.absolute()
    folder = next(q for q in (folder, *folder.parents) if q.exists())
    try:  # os.access says yes to root anywhere: a read-only file system or /proc fails only on writing
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as e:
        raise ValueError(f"--csv {path or str(out)!r}: a file cannot be created in {str(folder)!r} ({e.strerror})") from None


def selection_seed(path: str) -> int | None:
    """The evaluation seed on which ``bc_reweight.py --select-by behaviour`` evaluated checkpoint ``path``
    to choose among its run's epochs (its ``bc`` record; an averaged checkpoint keeps its first input's),
    or None (another selection, or no ``bc`` record: RL checkpoints). Every epoch of such a run has it,
    picked or not."""
    bc = torch.load(path, map_location="cpu", weights_only=True).get("bc") or {}
    bc_args = bc.get("args") or {}
    return int(bc_args["eval_seed"]) if bc_args.get("select_by") == "behaviour" and "eval_seed" in bc_args else None


def unread_options(args: Args) -> dict[str, str]:
    """The options no policy of ``args`` reads, each with what would ("the random baseline reads it"):
    ``noop_prob`` (the random baseline), ``enemy_start`` (the scripted baseline on the real game), ``greedy``,
    ``mask_action_type`` and ``temperature`` (checkpoints; ``temperature`` only when they sample, not with
    ``--greedy``), ``omniscient`` (the lite engine). The one home of that rule:
    :func:`check_args` refuses such an option set away from its default, :func:`config_note` marks it."""
    unread = {}
    if "random" not in args.policy:
        unread["noop_prob"] = "the random baseline reads it"
    if "scripted" not in args.policy:
        unread["enemy_start"] = "the scripted baseline reads it"
    elif args.backend == "lite":  # the lite engine tells the scripted baseline where the enemy base is
        unread["enemy_start"] = "the scripted baseline on --backend sc2 reads it (the lite engine gives the enemy base)"
    if not args.checkpoints:
        unread["greedy"] = unread["mask_action_type"] = unread["temperature"] = "checkpoints read it"
    elif args.greedy:
        unread["temperature"] = "sampled play reads it, not --greedy's argmax"
    if args.backend != "lite":
        unread["omniscient"] = "the lite engine reads it"
    return unread


def flag_text(name: str, value) -> str:
    """Option ``name`` at ``value`` as the command line gives it: ``--greedy``, ``--no-mask-action-type``,
    ``--enemy-start 10 10``, ``--noop-prob 0.3``."""
    flag = name.replace("_", "-")
    if isinstance(value, bool):
        return f"--{flag}" if value else f"--no-{flag}"
    if isinstance(value, tuple):
        return f"--{flag} {' '.join(str(v) for v in value)}"
    return f"--{flag} {value}"


def config_note(args: Args, name: str, out: Path) -> str:
    """What the configuration screen adds after option ``name``: the value a default resolves to (the
    CSV path, each checkpoint's own step_mul), or that no evaluated policy reads it (:func:`unread_options`)."""
    if name == "csv":
        return "" if args.csv else f" -> {out} (the default)"
    if name == "step_mul" and args.step_mul == 0:
        baselines = f"the baselines {DEFAULT_STEP_MUL}" if args.policy else ""
        own = "each checkpoint its own (below)" if args.checkpoints else ""
        return " -> " + "; ".join(x for x in (baselines, own) if x)
    reader = unread_options(args).get(name)
    if reader:
        return f" (unused: only {reader})"
    return ""


def main(args: Args) -> list:
    """Evaluate every policy of ``args`` and write the CSV; returns the rows.

    Raises:
        SystemExit: status 2 with one line ``eval_fullgame.py: error: --flag value: expected ...`` on stderr
            (``cli.cli_error``, argparse's and tyro's convention for a bad command line) for what
            :func:`check_args` refuses, before any game.
    """
    try:
        check_args(args)
    except ValueError as e:
        cli_error(str(e))
    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    out = Path(args.csv or f"runs/eval_fullgame__{args.seed}__{int(time.time())}.csv")
    print("eval_fullgame configuration:")
    for k, v in asdict(args).items():
        print(f"  {k}: {v}{config_note(args, k, out)}")
    print(f"  games at once: {min(args.num_envs, args.games)}", flush=True)
    for p in args.checkpoints:
        own = trained_step_mul(torch.load(p, map_location="cpu", weights_only=True), p)  # valid: check_args
        step_mul, kind = effective_step_mul(args.step_mul, own)
        source = {
            "given": "--step-mul",
            "trained": "the step_mul it was trained at",
            "default": "the default, it records none",
        }[kind]
        note = f"; it was trained to decide every {own}" if own and own != step_mul else ""
        print(f"  {p}: decides every {step_mul} game loops ({source}{note})")
        if selection_seed(p) == args.seed:  # the pick's figure on its own selection seed is biased upwards
            print(
                f"WARNING: {p} was evaluated for behaviour selection on seed {args.seed}: this seed's figures are "
                "not an unbiased estimate; report a win rate on another --seed"
            )
    rows = []
    print(HEADER)
    print("|" + "---|" * (HEADER.count("|") - 1), flush=True)
    for name in (*args.policy, *args.checkpoints):
        row = evaluate_fullgame(
            name,
            args.games,
            args.seed,
            num_envs=args.num_envs,
            backend=args.backend,
            step_mul=args.step_mul,
            game_steps_per_episode=args.game_steps_per_episode,
            omniscient=args.omniscient,
            greedy=args.greedy and name in args.checkpoints,  # how a network plays; a baseline has none
            mask_action_type=args.mask_action_type,
            temperature=args.temperature if name in args.checkpoints else 1.0,
            enemy_start=args.enemy_start,
            noop_prob=args.noop_prob,
            device=args.device,
        )
        rows.append(row)
        print(format_row(row), flush=True)
    print(
        "columns: army@5 / army@8 = food_army at 5 / 8 minutes of game time (Faster speed) over the games still running "
        "then (n); idle = share of no_op / Stop decisions; errors = share of decisions the game refused; length in "
        "minutes (the docstring of algos/eval_fullgame.py explains each)"
    )
    for r in rows:  # which commands make up the errors column
        print(f"refused commands of {r.policy} (share of decisions): {r.refused_top or 'none'}")
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=CSV_COLUMNS)
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if v is None else v) for k, v in asdict(r).items()})
    print(f"wrote {out}")
    return rows


if __name__ == "__main__":
    main(tyro.cli(Args))
