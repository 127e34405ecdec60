"""Two more routes to a faster HAPPO update on the CPU, measured: concurrent passes and ``torch.compile``.

The update is ~90 % of a 2s3z training iteration (actors ~72 %, critic ~20 %, the rollout ~8 %; the env
1 %) and is bound by the class actors' forward + backward passes (docs/speed.md, "Training speed").
This script times one class actor's forward + backward over ``--rows`` agent-steps of real battles
(``gnn_token_packing.battle_rows``) cut into passes of ``--pass-rows``, as the training script's
update runs a minibatch, three ways, alternating for ``--rounds`` rounds (medians printed):

* ``passes``: the passes one after another, torch on ``--threads`` threads (what training does);
* ``concurrent``: the passes spread over ``--threads`` Python threads with one torch thread each, every
  pass's gradient taken with ``torch.autograd.grad`` and the gradients summed in pass order (so the
  sum does not depend on which thread finishes first); it checks that the gradients equal the
  sequential passes' up to float rounding (relative to the largest entry);
* ``compiled``: the passes one after another through ``torch.compile`` of the actor's loss (the
  compile time, paid once per shape, is printed apart).

::

    python benchmarks/actor_update_routes.py --threads 2 --rounds 5
"""

from __future__ import annotations

import math
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import torch
import tyro

from sc2_envs.runs import plural

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from gnn_attention_forms import _alternate  # noqa: E402
from gnn_token_packing import Args as BattleArgs  # noqa: E402
from gnn_token_packing import battle_rows  # noqa: E402


@dataclass
class Args:
    checkpoint: str = "checkpoints/2s3z_gnn.pt"
    """the GNN checkpoint whose battles give the rows and whose largest non-healer class actor is timed"""
    rows: int = 4096
    """agent-steps per timed minibatch"""
    pass_rows: int = 1024
    """agent-steps per forward + backward pass (the training script's ``--pass-rows`` default)"""
    threads: int = 2
    """torch threads of ``passes`` and ``compiled``; Python threads (one torch thread each) of ``concurrent``"""
    rounds: int = 5
    """alternations of the three routes; medians are printed"""
    reps: int = 3
    """minibatches per timing window"""
    seed: int = 0
    """seed of the battles that give the rows"""


def check_args(args: Args) -> None:
    """Raise ValueError naming a bad count, seed or checkpoint."""
    for name in ("rows", "pass_rows", "threads", "rounds", "reps"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} {getattr(args, name)}: expected an integer >= 1")
    if args.seed < 0:
        raise ValueError(f"--seed {args.seed}: expected an integer >= 0")
    path = Path(args.checkpoint)
    if not path.is_file() and not (not path.is_absolute() and (REPO / path).is_file()):
        raise ValueError(f"--checkpoint {args.checkpoint}: no such file (from the current folder or the repository root)")


def compare(args: Args) -> dict[str, float]:
    """Milliseconds per minibatch of each route, the compile seconds, and the largest gradient difference.

    Returns:
        ``{"passes", "concurrent", "compiled"}`` median ms per minibatch of ``args.rows`` agent-steps,
        ``"compile_s"`` (the first compiled minibatch, every pass shape included; torch's on-disk compile
        cache makes it shorter in later processes) and ``"max_grad_diff"`` (concurrent against sequential
        passes, the largest absolute difference of any gradient entry over the largest gradient entry).
    """
    c, policy, obs, avail = battle_rows(BattleArgs(checkpoint=args.checkpoint, rows=args.rows, seed=args.seed))
    actor = policy.actors[c]
    params = list(actor.parameters())
    passes = [(policy.parser(o), a) for o, a in zip(obs.split(args.pass_rows), avail.split(args.pass_rows), strict=True)]

    def loss(ent, a):  # a stand-in for the PPO loss: the log-probabilities of every available action
        lp = torch.log_softmax(actor(ent).masked_fill(~a, -math.inf), -1)
        return torch.where(a, lp, 0.0).sum()

    compiled = torch.compile(loss, dynamic=False)

    def sequential(fn):
        def run():
            torch.set_num_threads(args.threads)
            for p in params:
                p.grad = None
            for ent, a in passes:
                fn(ent, a).backward()

        return run

    pool = ThreadPoolExecutor(args.threads)

    def one_pass(ent, a):
        torch.set_num_threads(1)  # intra-op threads are per process: every worker sets the same count
        return torch.autograd.grad(loss(ent, a), params)

    def concurrent():
        torch.set_num_threads(1)
        grads = [f.result() for f in [pool.submit(one_pass, ent, a) for ent, a in passes]]
        for i, p in enumerate(params):
            p.grad = sum(g[i] for g in grads)  # pass order, whatever order the threads finished in

    t0 = time.perf_counter()
    sequential(compiled)()
    compile_s = time.perf_counter() - t0
    sequential(loss)()
    want = [p.grad.clone() for p in params]
    concurrent()
    scale = max(w.abs().max().item() for w in want)
    diff = max((p.grad - w).abs().max().item() for p, w in zip(params, want, strict=True)) / scale
    med = _alternate(
        {"passes": sequential(loss), "concurrent": concurrent, "compiled": sequential(compiled)}, args.rounds, args.reps
    )
    pool.shutdown()
    torch.set_num_threads(args.threads)
    print(
        f"  {Path(args.checkpoint).name}: class actor {c!r}, {len(obs)} agent-steps in passes of {args.pass_rows}, forward + "
        f"backward per minibatch: passes {med['passes']:.1f} ms, concurrent {med['concurrent']:.1f} ms "
        f"({med['passes'] / med['concurrent']:.2f}x), compiled {med['compiled']:.1f} ms ({med['passes'] / med['compiled']:.2f}x; "
        f"compile {compile_s:.1f} s once); concurrent gradients differ from sequential ones by at most {diff:.1e} of the largest entry",
        flush=True,
    )
    return {**med, "compile_s": compile_s, "max_grad_diff": diff}


def main(args: Args) -> dict[str, float]:
    check_args(args)
    print(
        f"actor_update_routes: {args.rows} rows in passes of {args.pass_rows}, {plural(args.threads, 'thread')}, "
        f"{plural(args.rounds, 'round')} x {plural(args.reps, 'minibatch', 'minibatches')}, torch {torch.__version__}; "
        f"checkpoint {args.checkpoint}",
        flush=True,
    )
    return compare(args)


if __name__ == "__main__":
    from sc2_envs.runs import flowing_help

    try:
        main(tyro.cli(flowing_help(Args)))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
