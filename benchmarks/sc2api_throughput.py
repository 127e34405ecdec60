"""Env steps/s of SMAC's interface through the StarCraft II API route versus in process, in one run.

Both sides run the same SMAC loop with random available actions and the same seed:

* in process: ``sc2_envs.adapters.StarCraft2Env`` (the embedded simulator, one env);
* protocol: ``sc2_envs.sc2api.client.SMACProtocolEnv`` (SMAC's requests through pysc2's
  ``run_configs`` and ``RemoteController`` to the simulator's API server laid out by
  ``python -m sc2_envs.sc2api install``, SMAC's rules on the raw units). Launching is not timed, and
  neither is each route's first env step (``Loop.warm_up``): in a fresh install that step compiles the
  simulator's kernels in the server process (tens of seconds), which timed would have read as
  1.7 protocol env steps/s on 3m against 260 once compiled.

    python benchmarks/sc2api_throughput.py --maps 3m 2s3z MMM --steps 300

Both routes alternate chunks of ``--chunk`` steps so that they share the machine's load. Prints one row
per (map, route): env steps/s (resets included, as in a training loop), requests per env step on the
protocol route, and the protocol/in-process ratio.
"""

from __future__ import annotations

import os
import platform
import tempfile
import time
from dataclasses import dataclass, field

import numpy as np
import torch
import tyro

from sc2_envs.adapters import StarCraft2Env
from sc2_envs.sc2api.client import SMACProtocolEnv
from sc2_envs.sc2api.install import install


@dataclass
class Args:
    maps: list[str] = field(default_factory=lambda: ["3m", "2s3z", "MMM"])
    """SMAC maps to measure"""
    steps: int = 300
    """env steps per (map, route)"""
    seed: int = 0
    """game seed and action seed"""
    chunk: int = 20
    """env steps per alternating chunk"""


class Loop:
    """A SMAC loop with random available actions that can run in chunks (the routes alternate chunks,
    so both see the same machine load)."""

    def __init__(self, env, seed: int):
        self.env, self.rng = env, np.random.default_rng(seed)
        self.seconds, self.steps, self.episodes = 0.0, 0, 0
        env.reset()

    def _step(self) -> None:
        acts = [int(self.rng.choice(np.flatnonzero(a))) for a in self.env.get_avail_actions()]
        _, terminated, _ = self.env.step(acts)
        if terminated:
            self.episodes += 1
            self.env.reset()

    def warm_up(self) -> None:
        """One untimed, uncounted env step: it compiles (or loads from the cache) the simulator's kernels
        in whichever process steps the game, which must not be counted as stepping speed."""
        episodes = self.episodes
        self._step()
        self.episodes = episodes

    def run(self, n: int) -> None:
        t0 = time.perf_counter()
        for _ in range(n):
            self._step()
        self.seconds += time.perf_counter() - t0
        self.steps += n


def main(args: Args) -> None:
    torch.set_num_threads(1)
    print(
        f"# {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, "
        f"torch {torch.__version__}, {args.steps} env steps per route, chunks of {args.chunk} alternating, "
        f"random available actions, seed {args.seed}"
    )
    with tempfile.TemporaryDirectory() as root:
        install(root)
        os.environ["SC2PATH"] = root
        print(f"{'map':8s} {'route':10s} {'env steps/s':>12s} {'episodes':>9s} {'req/step':>9s} {'ratio':>7s}")
        for m in args.maps:
            inproc = Loop(StarCraft2Env(m, seed=args.seed), args.seed)
            proto_env = SMACProtocolEnv(m, seed=args.seed)
            try:
                proto = Loop(proto_env, args.seed)  # the first reset launches the server (not timed)
                inproc.warm_up()
                proto.warm_up()
                r0 = proto_env.requests
                while inproc.steps < args.steps:
                    inproc.run(args.chunk)
                    proto.run(args.chunk)
                reqs = (proto_env.requests - r0) / proto.steps
            finally:
                proto_env.close()
            sps_in, sps_p = inproc.steps / inproc.seconds, proto.steps / proto.seconds
            print(f"{m:8s} {'in-process':10s} {sps_in:12.1f} {inproc.episodes:9d} {'-':>9s} {'':>7s}")
            print(f"{m:8s} {'protocol':10s} {sps_p:12.1f} {proto.episodes:9d} {reqs:9.2f} {sps_p / sps_in:7.2f}")


if __name__ == "__main__":
    from sc2_envs.runs import flowing_help

    main(tyro.cli(flowing_help(Args)))
