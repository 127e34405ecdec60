"""Would bfloat16 (``torch.autocast`` on the CPU) make the GNN actor's training pass faster, and how far would it
move the log-probabilities PPO's importance ratio is made of? Measured.

Half of a class actor's forward + backward is matrix products running near fp32 peak (docs/speed.md,
"Training speed"), so lower precision is the one route left that cuts their time without cutting
FLOPs. This script times a whole class actor's forward + backward on ``--rows`` agent-steps of real
battles played by each ``--checkpoints`` file (``gnn_token_packing.battle_rows``), in fp32 and under
``torch.autocast("cpu", dtype=torch.bfloat16)`` (the matrix products, attention included, in bf16 with
fp32 accumulation; layer norms and the loss stay fp32), alternating the two for ``--rounds`` rounds, and
prints the medians, their ratio and what bf16 does to the numbers PPO uses: the largest change of an
available action's log-probability, ``max |log pi_bf16 - log pi_fp32|``, and so how far the importance
ratio ``exp(delta)`` of an unchanged policy strays from 1 (PPO clips it at 1 +- ``clip_coef`` = 0.2)::

    python benchmarks/actor_precision.py --threads 2 --rounds 5

Nothing in training uses bf16; this is the measurement behind that choice.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import torch
import tyro

from models import read_checkpoint
from sc2_envs.runs import plural

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gnn_attention_forms import _alternate  # noqa: E402
from gnn_token_packing import Args as BattleArgs  # noqa: E402
from gnn_token_packing import battle_rows  # noqa: E402


@dataclass
class Args:
    checkpoints: list[str] = field(default_factory=lambda: ["checkpoints/2s3z_gnn.pt", "checkpoints/3s5z_gnn.pt"])
    """GNN checkpoints (``algos/happo_gnn.py --save-model``) whose battles give the rows and whose largest
    non-healer class actor is timed (relative paths are taken from the repository root when not found
    from the current folder)"""
    rows: int = 1024
    """rows (agent-steps) per pass: the training script's ``--pass-rows`` default"""
    threads: int = 2
    """torch threads"""
    rounds: int = 5
    """alternations of the two precisions; medians are printed"""
    reps: int = 5
    """passes per timing window"""
    seed: int = 0
    """seed of the battles that give the rows"""


def _log_probs(logits: torch.Tensor, avail: torch.Tensor) -> torch.Tensor:
    """``[R, A]`` float32 log-probabilities with unavailable actions at -inf (SMAC's masking)."""
    return torch.log_softmax(logits.float().masked_fill(~avail, -math.inf), -1)


def compare(checkpoint: str, args: Args) -> dict[str, float]:
    """Milliseconds per forward + backward in fp32 and bf16 autocast, and the largest log-prob change.

    Returns:
        ``{"fp32_ms", "bf16_ms", "speedup", "max_dlogp", "max_dlogp_top"}``: medians over ``args.rounds``
        windows of ``args.reps`` passes; ``max_dlogp`` the largest change over the available actions of
        every row (unlikely ones included: an upper bound), ``max_dlogp_top`` over each row's most likely
        action (the fp32 argmax, what a greedy or confident policy samples), in nats.
    """
    c, policy, obs, avail = battle_rows(BattleArgs(checkpoint=checkpoint, rows=args.rows, seed=args.seed))
    torch.set_num_threads(args.threads)  # the battles' simulator sets its own thread count
    actor, ent = policy.actors[c], policy.parser(obs)
    with torch.no_grad():
        lp32 = _log_probs(actor(ent), avail)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            lp16 = _log_probs(actor(ent), avail)
    delta = (lp16 - lp32).masked_fill(~avail, 0.0).abs()
    dlogp = delta.max().item()
    dlogp_top = delta.gather(1, lp32.argmax(1, keepdim=True)).max().item()  # each row's most likely action

    def train_pass(bf16: bool):
        def run():
            actor.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                logits = actor(ent)
            _log_probs(logits, avail)[avail].sum().backward()

        return run

    med = _alternate({"fp32": train_pass(False), "bf16": train_pass(True)}, args.rounds, args.reps)
    print(
        f"  {Path(checkpoint).name}: class actor {c!r}, {len(obs)} agent-steps, forward + backward: fp32 "
        f"{med['fp32']:.1f} ms, bf16 {med['bf16']:.1f} ms; bf16 is {med['fp32'] / med['bf16']:.2f}x the fp32 speed; "
        f"max |delta log pi| {dlogp:.3f} nats over the available actions, {dlogp_top:.3f} over each row's most "
        f"likely one (ratio of an unchanged policy up to {math.exp(dlogp):.3f} / {math.exp(dlogp_top):.3f})",
        flush=True,
    )
    return {
        "fp32_ms": med["fp32"],
        "bf16_ms": med["bf16"],
        "speedup": med["fp32"] / med["bf16"],
        "max_dlogp": dlogp,
        "max_dlogp_top": dlogp_top,
    }


def main(args: Args) -> None:
    for name in ("rows", "threads", "rounds", "reps"):
        if getattr(args, name) < 1:
            raise SystemExit(f"--{name} {getattr(args, name)}: expected an integer >= 1")
    if not args.checkpoints:
        raise SystemExit("--checkpoints: expected at least one checkpoint file")
    repo = Path(__file__).resolve().parents[1]
    for checkpoint in args.checkpoints:  # every file checked before the first (slow) measurement
        path = next((p for p in (Path(checkpoint), repo / checkpoint) if p.exists()), None)
        if path is None:
            raise SystemExit(f"--checkpoints {checkpoint}: no such file (from the current folder or the repository root)")
        try:
            actor_type = read_checkpoint(str(path))["config"]["actor_type"]
        except (FileNotFoundError, ValueError) as e:
            raise SystemExit(f"--checkpoints {checkpoint}: {e}") from None
        if actor_type != "gnn":
            raise SystemExit(f"--checkpoints {checkpoint}: a {actor_type!r} checkpoint; expected a GNN one (models.GNNActor)")
    print(
        f"actor_precision: {args.rows} rows per pass, {plural(args.threads, 'torch thread')}, {plural(args.rounds, 'round')} x "
        f"{plural(args.reps, 'pass', 'passes')}, torch {torch.__version__}, CPU capability "
        f"{torch.backends.cpu.get_cpu_capability()}; checkpoints: {' '.join(args.checkpoints)}",
        flush=True,
    )
    if args.rounds == 1:
        print(
            "note: --rounds 1 times each form once, with no median over alternating rounds; one busy moment of a "
            "shared machine moves the speed-up (docs/speed.md's figures use --rounds 5)",
            flush=True,
        )
    for checkpoint in args.checkpoints:
        compare(checkpoint, args)


if __name__ == "__main__":
    from sc2_envs.runs import flowing_help

    main(tyro.cli(flowing_help(Args)))
