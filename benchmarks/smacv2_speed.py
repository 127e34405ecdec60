"""Env steps per second of SMACv2 scenarios next to SMAC v1 maps with the same unit count.

Each pair runs in this one process, alternating, with uniformly random available actions and
auto-reset (SMACv2 draws a new roster at every reset, inside ``step``). Prints one line per pair
and the ratio v2 / v1, which is what to compare on a loaded machine.

    python benchmarks/smacv2_speed.py --num-envs 256 --seconds 10
"""

from __future__ import annotations

import argparse
import time

import torch

import sc2_envs

PAIRS = [
    ("protoss_5_vs_5", "2s3z"),  # 10 units, protoss, one of them with colossi possible
    ("terran_10_vs_11", "10m_vs_11m"),  # 21 units
    ("zerg_20_vs_23", "27m_vs_30m"),  # 43 vs 57 units (no v1 map with 43)
]


def steps_per_second(name: str, num_envs: int, seconds: float, seed: int = 0) -> float:
    """Env steps per second (``num_envs`` x batched steps / wall time) over about ``seconds``."""
    sim = sc2_envs.make_batched(name, num_envs=num_envs, seed=seed)
    out = sim.reset()
    g = torch.Generator().manual_seed(seed)

    def act(av):
        return torch.multinomial(av.reshape(-1, av.shape[-1]).float(), 1, generator=g).reshape(av.shape[:2])

    for _ in range(3):  # warm-up
        out = sim.step(act(out["avail_actions"]))
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        out = sim.step(act(out["avail_actions"]))
        n += 1
    return n * num_envs / (time.perf_counter() - t0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--num-envs", type=int, default=256)
    p.add_argument("--seconds", type=float, default=10.0)
    a = p.parse_args()
    if a.num_envs < 1 or a.seconds <= 0:
        p.error("--num-envs must be >= 1 and --seconds > 0")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), B={a.num_envs}, {a.seconds:g} s per run")
    for v2, v1 in PAIRS:
        s2 = steps_per_second(v2, a.num_envs, a.seconds)
        s1 = steps_per_second(v1, a.num_envs, a.seconds)
        print(f"{v2:>16s} {s2:9.0f} steps/s | {v1:>11s} {s1:9.0f} steps/s | ratio v2/v1 {s2 / s1:.2f}")


if __name__ == "__main__":
    main()
