"""Which form of the GNN's attention trains faster on the CPU: SDPA's fused kernel or two matrix products? Measured.

``models.gnn.attention`` computes ``softmax(q k^T / sqrt(d) + mask) v`` either with
``F.scaled_dot_product_attention`` or explicitly (two ``matmul`` around a softmax); the results are equal
up to float rounding (printed below). SMAC's observations give few tokens per agent (2s3z: 10, 3s5z: 17,
27m_vs_30m: 57), where the fused CPU kernel's tiling may cost more than the arithmetic. Two measurements,
each alternating the forms for ``--rounds`` rounds (medians and ratios printed):

1. the attention alone on ``[--rows, 4 heads, T, 16]`` random inputs with ~70 % of the keys visible, for
   each ``--tokens`` T: forward + backward, and forward only (no grad: the rollout's and evaluation's case);
2. a whole class actor's forward + backward on ``--rows`` agent-steps of real 2s3z battles played by the
   shipped checkpoint (``gnn_token_packing.battle_rows``), the training update's unit of work.

``models.gnn.ATTENTION_FORM`` sets the form (default ``"sdpa"``); whole training runs compare with
``benchmarks/train_sps.py`` and a baseline tree::

    python benchmarks/gnn_attention_forms.py --threads 1 --rounds 5
    python benchmarks/gnn_attention_forms.py --threads 2 --rounds 5
"""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
import tyro

import models.gnn as gnn
from sc2_envs.runs import plural

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gnn_token_packing import Args as BattleArgs  # noqa: E402
from gnn_token_packing import battle_rows  # noqa: E402

FORMS = ("sdpa", "explicit")


@dataclass
class Args:
    rows: int = 1024
    """rows (agent-steps) per pass: the training script's ``--pass-rows`` default"""
    tokens: list[int] = field(default_factory=lambda: [10, 17, 32, 57])
    """token counts T of the attention-alone measurement (2s3z 10, 3s5z 17, 27m_vs_30m 57)"""
    threads: int = 1
    """torch threads"""
    rounds: int = 5
    """alternations of the two forms; medians are printed"""
    reps: int = 5
    """passes per timing window"""
    checkpoint: str = BattleArgs.checkpoint
    """the policy whose 2s3z battles give the whole-actor measurement's rows"""
    seed: int = 0
    """seed of the random attention inputs and of the 2s3z battles of the whole-actor measurement"""


def _time(fn, reps: int) -> float:
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t) / reps * 1e3


def _alternate(windows: dict, rounds: int, reps: int) -> dict[str, float]:
    """Median ms per pass of each form, the forms alternating within every round."""
    for fn in windows.values():  # warm-up
        fn()
    times: dict[str, list[float]] = {f: [] for f in windows}
    for _ in range(rounds):
        for f, fn in windows.items():
            times[f].append(_time(fn, reps))
    return {f: statistics.median(t) for f, t in times.items()}


def _with_form(form: str, fn):
    def run():
        gnn.ATTENTION_FORM = form
        try:
            return fn()
        finally:
            gnn.ATTENTION_FORM = "sdpa"

    return run


def attention_alone(args: Args, T: int) -> None:
    g = torch.Generator().manual_seed(args.seed)
    q, k, v = (torch.randn(args.rows, 4, T, 16, generator=g, requires_grad=True) for _ in range(3))
    valid = torch.rand(args.rows, T, generator=g) < 0.7
    valid[:, 0] = True  # the agent's own token: no row without a key
    mask = valid[:, None, None, :]
    grad = torch.randn(args.rows, 4, T, 16, generator=g)
    out = {f: _with_form(f, lambda: gnn.attention(q, k, v, mask))() for f in FORMS}
    diff = (out["sdpa"] - out["explicit"]).abs().max().item()

    def train_pass():
        q.grad = k.grad = v.grad = None
        gnn.attention(q, k, v, mask).backward(grad)

    def no_grad_pass():
        with torch.no_grad():
            gnn.attention(q, k, v, mask)

    for what, fn in (("forward + backward", train_pass), ("forward only", no_grad_pass)):
        med = _alternate({f: _with_form(f, fn) for f in FORMS}, args.rounds, args.reps)
        print(
            f"  T={T:3d} {what:18s}: sdpa {med['sdpa']:7.2f} ms, explicit {med['explicit']:7.2f} ms; "
            f"explicit is {med['sdpa'] / med['explicit']:.2f}x the sdpa speed (max |diff| {diff:.1e})",
            flush=True,
        )


def whole_actor(args: Args) -> None:
    c, policy, obs, avail = battle_rows(BattleArgs(checkpoint=args.checkpoint, rows=args.rows, seed=args.seed))
    torch.set_num_threads(args.threads)  # the battles' simulator sets its own thread count
    actor, ent = policy.actors[c], policy.parser(obs)
    logits = {f: _with_form(f, lambda: actor(ent))().detach() for f in FORMS}
    diff = (logits["sdpa"] - logits["explicit"])[avail].abs().max().item()

    def train_pass():
        actor.zero_grad(set_to_none=True)
        actor(ent).masked_fill(~avail, 0.0).square().sum().backward()

    med = _alternate({f: _with_form(f, train_pass) for f in FORMS}, args.rounds, args.reps)
    print(
        f"  class actor {c!r} ({Path(args.checkpoint).name}), {len(obs)} agent-steps of 2s3z, forward + backward: "
        f"sdpa {med['sdpa']:.1f} ms, explicit {med['explicit']:.1f} ms; explicit is "
        f"{med['sdpa'] / med['explicit']:.2f}x the sdpa speed (max |diff| of available logits {diff:.1e})"
    )


def main(args: Args) -> None:
    for name in ("rows", "threads", "rounds", "reps"):
        if getattr(args, name) < 1:
            raise SystemExit(f"--{name} {getattr(args, name)}: expected an integer >= 1")
    if not args.tokens or min(args.tokens) < 1:
        raise SystemExit(f"--tokens {' '.join(map(str, args.tokens))}: expected token counts >= 1")
    torch.set_num_threads(args.threads)
    print(
        f"gnn_attention_forms: {args.rows} rows per pass, {plural(args.threads, 'torch thread')}, {plural(args.rounds, 'round')} x "
        f"{plural(args.reps, 'pass', 'passes')}, torch {torch.__version__}; models.gnn's default form: {gnn.ATTENTION_FORM!r}",
        flush=True,
    )
    print("attention alone (4 heads of 16):")
    for T in args.tokens:
        attention_alone(args, T)
    print("whole class actor:")
    whole_actor(args)


if __name__ == "__main__":
    from sc2_envs.runs import flowing_help

    main(tyro.cli(flowing_help(Args)))
