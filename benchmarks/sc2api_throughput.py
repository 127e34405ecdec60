"""Env steps/s through the StarCraft II API route versus in process, in one run: SMAC maps and Simple64.

On a SMAC map both sides run the same SMAC loop with random available actions and the same seed:

* in process: ``sc2_envs.adapters.StarCraft2Env`` (the embedded simulator, one env);
* protocol: ``sc2_envs.sc2api.client.SMACProtocolEnv`` (SMAC's requests through pysc2's
  ``run_configs`` and ``RemoteController`` to the simulator's API server laid out by
  ``python -m sc2_envs.sc2api install``, SMAC's rules on the raw units). Launching is not timed, and
  neither is each route's first env step (``Loop.warm_up``): in a fresh install that step compiles the
  simulator's kernels in the server process (tens of seconds), which timed would have read as
  1.7 protocol env steps/s on 3m against 260 once compiled.

    python benchmarks/sc2api_throughput.py --maps 3m 2s3z MMM --steps 300

On ``Simple64`` (``--maps Simple64``) both sides run FullGame-v0 with the lite engine's random legal actions
(``sc2_envs.lite.policy.RandomLegalPolicy``, step_mul 8, games truncated at ``--episode-loops`` and reset):

* in process: ``gym.make("sc2_envs/FullGame-v0")`` (the lite engine's direct door);
* protocol: ``gym.make("sc2_envs/FullGame-v0", backend="sc2")`` against the same install: pysc2's launcher
  starts the API server, which plays the game on the lite engine (per step ``action`` when the action is not
  a no-op, ``step``, ``observation`` and ``query`` of available abilities, and the conversion of the
  protobufs to the spec's arrays). The policy's time is left out of both, and the first
  ``--warm-up`` steps are not timed.

Wall-clock rates fall with the load of other processes on a shared machine, so Simple64's rows also give env
steps per CPU second: this process's CPU time in ``step`` / ``reset`` plus, on the protocol route, the server
process's CPU time over the same calls. The route is synchronous (the client waits for each response), so on
an idle machine its wall-clock rate approaches that figure, less the socket round trips.

    python benchmarks/sc2api_throughput.py --maps Simple64 --steps 1000

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
from sc2_envs.lite.catalog import build_catalog
from sc2_envs.lite.policy import RandomLegalPolicy
from sc2_envs.sc2api.client import SMACProtocolEnv
from sc2_envs.sc2api.install import install


@dataclass
class Args:
    maps: list[str] = field(default_factory=lambda: ["3m", "2s3z", "MMM"])
    """maps to measure: SMAC maps, and Simple64 (FullGame-v0 on the lite engine)"""
    steps: int = 300
    """env steps per (map, route)"""
    seed: int = 0
    """game seed and action seed"""
    chunk: int = 20
    """env steps per alternating chunk"""
    episode_loops: int = 1600
    """Simple64: game loops per game before it is truncated and reset"""
    warm_up: int = 20
    """Simple64: untimed env steps per route before timing"""


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


class FullGameLoop:
    """FullGame-v0 under random legal actions, run in chunks; only ``step`` and ``reset`` are timed.

    ``cpu_seconds`` adds this process's CPU time in them and, when ``server_cpu`` is given (a function
    returning the server process's CPU seconds so far), the server's over each chunk (it works only while
    this process waits in ``step`` / ``reset``)."""

    def __init__(self, env, seed: int, server_cpu=None):
        self.env = env
        self.server_cpu = server_cpu
        self.policy = RandomLegalPolicy(build_catalog("3.16.1"), env.max_entities, env.max_selected, seed=seed)
        self.seconds, self.cpu_seconds, self.steps, self.episodes = 0.0, 0.0, 0, 0
        self.obs, _ = env.reset(seed=seed)

    def run(self, n: int, timed: bool = True) -> None:
        seconds = cpu = 0.0
        server0 = self.server_cpu() if self.server_cpu else 0.0
        for _ in range(n):
            action = self.policy(self.obs)
            t0, c0 = time.perf_counter(), time.process_time()
            self.obs, _, terminated, truncated, _ = self.env.step(action)
            if terminated or truncated:
                self.obs, _ = self.env.reset()
                self.episodes += timed
            seconds += time.perf_counter() - t0
            cpu += time.process_time() - c0
        if timed:
            self.seconds += seconds
            self.cpu_seconds += cpu + (self.server_cpu() - server0 if self.server_cpu else 0.0)
            self.steps += n


def children_cpu_seconds() -> float:
    """User + system CPU seconds of this process's live child processes (the API server pysc2 launched)."""
    import psutil

    total = 0.0
    for child in psutil.Process().children(recursive=True):
        try:
            t = child.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += t.user + t.system
    return total


def run_simple64(args: Args) -> None:
    """One row per route for Simple64 (module docstring)."""
    import gymnasium as gym

    import sc2_envs  # noqa: F401  (registers FullGame-v0)

    inproc_env = gym.make("sc2_envs/FullGame-v0", game_steps_per_episode=args.episode_loops).unwrapped
    proto_env = gym.make("sc2_envs/FullGame-v0", backend="sc2", game_steps_per_episode=args.episode_loops).unwrapped
    try:
        inproc = FullGameLoop(inproc_env, args.seed)
        proto = FullGameLoop(proto_env, args.seed, children_cpu_seconds)  # its first reset launches the server
        inproc.run(args.warm_up, timed=False)
        proto.run(args.warm_up, timed=False)
        while inproc.steps < args.steps:
            inproc.run(args.chunk)
            proto.run(args.chunk)
    finally:
        proto_env.close()
    sps_in, sps_p = inproc.steps / inproc.seconds, proto.steps / proto.seconds
    cpu_in, cpu_p = inproc.steps / inproc.cpu_seconds, proto.steps / proto.cpu_seconds
    m = "Simple64"
    print(f"{m:8s} {'in-process':10s} {sps_in:12.1f} {inproc.episodes:9d} {'-':>9s} {'':>7s} {cpu_in:12.1f}")
    print(f"{m:8s} {'protocol':10s} {sps_p:12.1f} {proto.episodes:9d} {'-':>9s} {sps_p / sps_in:7.2f} {cpu_p:12.1f}")
    print(f"SUMMARY simple64_protocol_env_steps_per_s={sps_p:.1f} simple64_protocol_env_steps_per_cpu_s={cpu_p:.1f}")


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
        print(
            f"{'map':8s} {'route':10s} {'env steps/s':>12s} {'episodes':>9s} {'req/step':>9s} {'ratio':>7s}"
            + (f" {'per CPU s':>12s}" if "Simple64" in args.maps else "")
        )
        for m in args.maps:
            if m == "Simple64":
                run_simple64(args)
                continue
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
    from sc2_envs.training.cli import flowing_help

    main(tyro.cli(flowing_help(Args)))
