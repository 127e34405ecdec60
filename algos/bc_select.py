# Behaviour-based checkpoint selection and weight averaging for behaviour cloning.
# Validation action accuracy can run against behaviour (mini-AlphaStar's supervised learning,
# liuruoze/mini-AlphaStar), so checkpoints are compared by what they do when they play (win rate with
# a Wilson interval, idle share, damage dealt); averaging 2-3 adjacent epochs of one run can help.
"""Evaluate BC checkpoints on the simulator, and average checkpoints of one run.

    python algos/bc_select.py eval runs/RUN/epoch_*.pt --map 3m --episodes 128
    python algos/bc_select.py eval runs/REPLAY_RUN/epoch_*.pt --episodes 100   # full-game checkpoints
    python algos/bc_select.py average runs/RUN/epoch_004.pt runs/RUN/epoch_005.pt --out runs/RUN/avg_4_5.pt
    python algos/bc_select.py record runs/RUN/happo_gnn.pt --episodes 100 --out demos/2s3z_ppo

``eval`` plays SMAC checkpoints on the simulator and full-game checkpoints (``AlphaStarPolicy``,
``models.alphastar.save_alphastar``: ``bc_reweight.py`` on a replay dataset) on FullGame-v0 against
the very_easy bot through the full-game actor loop (``sc2_envs.training.fullgame_evaluation``; the
lite engine, ``--backend sc2`` for the real game; ``--episodes`` games of up to ``--game-steps-per-episode``
game loops; "damage" is then the killed value, minerals + gas). It prints a first line saying what it plays, with sampled
actions by default (``--greedy``: argmax, as ``eval_transfer.py`` plays), then one line per checkpoint
(``sc2_envs.training.evaluation.format_result``): win rate and its Wilson 95% interval, idle share (stop among living
agent-steps; no-op is available only to dead SMAC agents), damage dealt per episode (enemy health + shield lost, absolute HP),
mean return and episode length. ``average`` writes the element-wise mean of the checkpoints' floating-point tensors
(``models.average_checkpoints``). ``record`` records demonstrations of a checkpoint
(``sc2_envs.training.demos.record_demos``; the heuristic demonstrator is ``python -m sc2_envs.training.demos``).
"""

from __future__ import annotations

import os

# Idle OpenMP threads spin ~10 us, not libgomp's ~3 ms, before they sleep: long spins starve the working
# thread on shared cores (sc2_envs.training.wait_policy). Set before torch loads OpenMP; your own setting wins.
if not (os.environ.get("OMP_WAIT_POLICY") or os.environ.get("GOMP_SPINCOUNT")):
    os.environ["GOMP_SPINCOUNT"] = "1000"

from dataclasses import dataclass, field

import torch
import tyro

import sc2_envs
from sc2_envs.training.checkpoints import average_checkpoints, load_checkpoint, read_checkpoint
from sc2_envs.training.demos import SamplingConfig, policy_demonstrator, record_demos
from sc2_envs.training.evaluation import evaluate, format_result
from sc2_envs.training.fullgame_evaluation import behaviour_result, evaluate_fullgame, is_fullgame_checkpoint
from sc2_envs.validation import check_out_dir


def evaluate_checkpoint(
    path: str,
    map_name: str | None = None,
    episodes: int = 64,
    num_envs: int = 32,
    seed: int = 10_000,
    greedy: bool = False,
    device: str = "cpu",
) -> dict:
    """Load a ``models`` checkpoint (``models.load_checkpoint``) and evaluate its behaviour on ``map_name``
    (default: the map it was trained on); ``sc2_envs.training.evaluation.evaluate(..., behaviour=True)``.
    At most ``episodes`` envs are built: by the quota rule the envs past it would play no counted
    episode, so the result equals that of ``num_envs`` envs (greedy; sampled figures depend on the
    env count, ``evaluate``'s ``sample_seed``).

    Raises:
        ValueError: not a ``models`` checkpoint (:func:`models.read_checkpoint`), or it does not fit ``map_name``.
    """
    meta = read_checkpoint(path)
    map_name = map_name or meta["config"]["map_name"]
    env = sc2_envs.make_batched(map_name, num_envs=min(num_envs, episodes), device=device, seed=seed, autoreset=True)
    policy, _, _ = load_checkpoint(path, env.get_env_info(), device=device, with_critic=False)
    policy.eval()
    return evaluate(policy, env, episodes, seed=sc2_envs.eval_seed(seed), greedy=greedy, behaviour=True, sample_seed=seed)


def evaluate_fullgame_checkpoint(
    path: str,
    episodes: int = 64,
    num_envs: int = 32,
    seed: int = 10_000,
    greedy: bool = False,
    device: str = "cpu",
    backend: str = "lite",
    game_steps_per_episode: int = 18000,
) -> dict:
    """Play a full-game checkpoint (``AlphaStarPolicy``) against the bot and report its behaviour in the
    form :func:`sc2_envs.training.evaluation.evaluate` gives (``behaviour=True``), so ``behaviour_key`` ranks it
    (``sc2_envs.training.fullgame_evaluation.behaviour_result``; the full table row under ``fullgame``).

    Raises:
        ValueError: not an ``AlphaStarPolicy`` checkpoint.
    """
    row = evaluate_fullgame(
        path,
        episodes,
        seed,
        num_envs=num_envs,
        backend=backend,
        game_steps_per_episode=game_steps_per_episode,
        greedy=greedy,
        device=device,
    )
    return behaviour_result(row)


@dataclass
class Eval:
    """Evaluate checkpoints on the simulator (one line each)."""

    checkpoints: tyro.conf.Positional[list[str]] = field(default_factory=list)
    """checkpoint files (``models`` format: HAPPO or BC on SMAC maps)"""
    map: str | None = None
    """map to play (default: the checkpoint's)"""
    episodes: int = 64
    """episodes per checkpoint"""
    num_envs: int = 32
    """parallel envs"""
    seed: int = 10_000
    """reset seed (the same for every checkpoint)"""
    greedy: bool = False
    """argmax actions instead of sampling. Default: sampled, as a cloned policy plays and as bc_reweight.py's
    selection evaluates (--eval-greedy off); eval_transfer.py and the training scripts' evaluations are greedy"""
    backend: str = "lite"
    """full-game checkpoints: lite (the embedded engine) or sc2 (StarCraft II)"""
    game_steps_per_episode: int = 18000
    """full-game checkpoints: game loops before a game is cut (mini-AlphaStar's 18,000)"""


@dataclass
class Record:
    """Record demonstrations of a checkpoint (``sc2_envs.training.demos`` layout)."""

    checkpoint: tyro.conf.Positional[str] = ""
    """checkpoint file (``models`` format: HAPPO or BC on SMAC maps)"""
    out: str = ""
    """output folder (empty or new)"""
    map: str | None = None
    """map to play (default: the checkpoint's)"""
    episodes: int = 100
    """episodes to record"""
    num_envs: int = 32
    """parallel envs"""
    stride: int = 1
    """env steps between the demonstrator's decisions"""
    repeat_as_idle: bool = False
    """label repeated commands as idle (stop)"""
    seed: int = 0
    """reset seed"""
    episodes_per_shard: int = 200
    """episodes per npz shard"""
    greedy: bool = True
    """argmax actions instead of sampling"""


@dataclass
class Average:
    """Average checkpoints of one run."""

    checkpoints: tyro.conf.Positional[list[str]] = field(default_factory=list)
    """two or more checkpoint files"""
    out: str = "averaged.pt"
    """output file"""
    allow_different_runs: bool = False
    """also average files of different training seeds (fine-tunes of one start, a "model soup")"""


def eval_header(cmd: Eval) -> str:
    """The first line ``eval`` prints: what it plays, and whether the actions are sampled or greedy
    (sampled by default, unlike ``eval_transfer.py``; the figures of the two differ)."""
    how = (
        "greedy (argmax) actions, as eval_transfer.py"
        if cmd.greedy
        else "sampled actions (the default, as a cloned policy plays; --greedy for argmax, as eval_transfer.py)"
    )
    where = cmd.map or "each checkpoint's own map"
    full = sum(is_fullgame_checkpoint(p) for p in cmd.checkpoints)
    if full:
        where += f" (FullGame-v0 Simple64 vs the very_easy bot, {cmd.backend} backend, for the {full} full-game one(s))"
    return (
        f"eval: {len(cmd.checkpoints)} checkpoint(s) on {where}, {cmd.episodes} episodes each ({cmd.num_envs} envs), "
        f"seed {cmd.seed}, {how}"
    )


def check_eval(cmd: Eval) -> None:
    """Refuse an ``eval`` command line before the first checkpoint is played.

    Raises:
        SystemExit: no checkpoint, a checkpoint path that is not a file or not a ``models`` checkpoint
            (:func:`models.read_checkpoint`), ``--episodes`` or ``--num-envs`` below 1, or a ``--map`` that is neither a SMAC
            map nor a SMACv2 scenario.
    """
    if not cmd.checkpoints:
        raise SystemExit("eval needs at least one checkpoint file")
    missing = [p for p in cmd.checkpoints if not os.path.isfile(p)]
    if missing:
        raise SystemExit(f"eval: no such checkpoint file(s) {missing}")
    for p in cmd.checkpoints:  # before: a text file or a resume.pt ended the loop with a KeyError in its turn
        try:
            if is_fullgame_checkpoint(p):
                if cmd.map is not None:
                    raise SystemExit(
                        f"eval: {p} is a full-game checkpoint (FullGame-v0 on Simple64); --map is for SMAC checkpoints"
                    )
                continue
            read_checkpoint(p)
        except ValueError as e:
            raise SystemExit(f"eval: {e}") from None
    for name in ("episodes", "num_envs"):
        if getattr(cmd, name) < 1:
            raise SystemExit(f"eval --{name.replace('_', '-')} {getattr(cmd, name)}: expected an integer >= 1")
    if cmd.map is not None and cmd.map not in sc2_envs.list_maps("all"):
        raise SystemExit(f"eval --map {cmd.map!r}; expected one of {', '.join(sc2_envs.list_maps('all'))}")


def main() -> None:
    cmd = tyro.extras.subcommand_cli_from_dict({"eval": Eval, "average": Average, "record": Record})
    if isinstance(cmd, Eval):
        check_eval(cmd)  # before: no checkpoint printed a header and exited 0; a missing file ended the loop midway
    if isinstance(cmd, Average):
        try:
            average_checkpoints(cmd.checkpoints, cmd.out, cmd.allow_different_runs)
        except ValueError as e:
            raise SystemExit(f"average: {e}") from None
        print(f"wrote {cmd.out} = mean of {cmd.checkpoints}")
        return
    torch.set_num_threads(1)
    if isinstance(cmd, Record):
        if not cmd.checkpoint or not cmd.out:
            raise SystemExit("record needs a checkpoint file and --out FOLDER")
        if not os.path.isfile(cmd.checkpoint):
            raise SystemExit(f"record: no such checkpoint file {cmd.checkpoint!r}")
        try:
            meta = read_checkpoint(cmd.checkpoint)
            check_out_dir(cmd.out, "--out")
        except ValueError as e:
            raise SystemExit(f"record: {e}") from None
        map_name = cmd.map or meta["config"]["map_name"]
        env = sc2_envs.make_batched(map_name, num_envs=cmd.num_envs, seed=cmd.seed, autoreset=True)
        policy, _, _ = load_checkpoint(cmd.checkpoint, env.get_env_info(), device=env.device, with_critic=False)
        policy.eval()
        try:  # its arguments are checked before the first episode (--episodes, --out holding a recording)
            record_demos(
                env,
                policy_demonstrator(policy, greedy=cmd.greedy),
                cmd.episodes,
                cmd.out,
                SamplingConfig(cmd.stride, cmd.repeat_as_idle),
                seed=cmd.seed,
                episodes_per_shard=cmd.episodes_per_shard,
                description=cmd.checkpoint,
            )
        except ValueError as e:
            raise SystemExit(f"record: {e}") from None
        return
    print(eval_header(cmd), flush=True)
    for p in cmd.checkpoints:
        if is_fullgame_checkpoint(p):
            r = evaluate_fullgame_checkpoint(
                p, cmd.episodes, cmd.num_envs, cmd.seed, cmd.greedy, backend=cmd.backend,
                game_steps_per_episode=cmd.game_steps_per_episode,
            )  # fmt: skip
        else:
            r = evaluate_checkpoint(p, cmd.map, cmd.episodes, cmd.num_envs, cmd.seed, cmd.greedy)
        print(format_result(p, r), flush=True)


if __name__ == "__main__":
    main()
