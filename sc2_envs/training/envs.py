"""The batched envs a training script steps, and each map's seed.

HAPPO and HATRPO (``algos/happo_gnn.py``, ``algos/hatrpo_gnn.py``) and the harness's zero-shot maps build
their envs here, so the choice between the embedded simulator and the real game has one home.
"""

from __future__ import annotations

import numpy as np
import torch


def make_env(backend: str, map_name: str, num_envs: int, device: torch.device, seed: int | np.random.SeedSequence):
    """The batched env of the contract: the embedded simulator, or one real-SC2 env through SMAC.

    Args:
        backend: ``"sim"`` (``sc2_envs.make_batched``, ``num_envs`` battles at once on ``device``) or
            ``"sc2"`` (one StarCraft II game through oxwhirl's SMAC, ``sc2_envs.backends.make_sc2_backend``).
        map_name: a SMAC map or SMACv2 scenario (``sc2_envs.list_maps("all")``).
        num_envs: battles stepped together (``"sc2"``: exactly 1).
        device: where observations and actions live.
        seed: the env's seed (an int or a ``SeedSequence``, ``sc2_envs.sim.rng``).

    Returns:
        The env, auto-resetting; its step takes ``actions [num_envs, n_agents]`` int64.

    Raises:
        ValueError: an unknown ``backend``, or ``"sc2"`` with ``num_envs != 1``.
        ImportError: ``"sc2"`` without SMAC, the game or its maps (``SC2BackendUnavailable``).
    """
    if backend == "sim":
        import sc2_envs

        # the script's thread count (--torch-threads), not the simulator's automatic one: the update's
        # matrix products run on every thread, and the env is a small share of the time
        return sc2_envs.make_batched(
            map_name, num_envs=num_envs, device=device, seed=seed, autoreset=True, num_threads=torch.get_num_threads()
        )
    if backend == "sc2":
        if num_envs != 1:
            raise ValueError(f"--backend sc2 runs one StarCraft II game: use --num-envs 1 (got {num_envs})")
        from sc2_envs.backends import make_sc2_backend

        return make_sc2_backend(map_name, seed=seed, device=device, autoreset=True)
    raise ValueError(f"--backend {backend!r}; expected 'sim' or 'sc2'")


def map_seeds(seed: int, n_maps: int) -> list[int | np.random.SeedSequence]:
    """Each map's training seed: the run's ``seed`` for one map, else ``SeedSequence(seed, spawn_key=(k,))``,
    so that no two maps and no evaluation share a stream (``sc2_envs.sim.rng``)."""
    return [seed] if n_maps == 1 else [np.random.SeedSequence(seed, spawn_key=(k,)) for k in range(n_maps)]
