"""The SMAC demonstrations of a behaviour-cloning run (``algos/bc_reweight.py``), split for training.

:class:`SmacData` holds a recording (``sc2_envs.training.demos.load_demos``) as tensors on the training
device, split by episode; its replay-dataset counterpart is ``sc2_envs.replays.dataset.ReplayData``.
"""

from __future__ import annotations

import numpy as np
import torch

from sc2_envs.smac_actions import alive_mask

__all__ = ["SmacData"]


class SmacData:
    """Frames of a demonstration recording split by episode (``sc2_envs.training.demos`` layout).

    Attributes:
        train_idx, val_idx: ``[T_train]`` / ``[T_val]`` int64 NumPy frame ids of the two splits.
        obs: ``[T, N, obs_size]`` float32; avail: ``[T, N, A]`` bool (``avail_actions``); labels:
            ``[T, N]`` int64 actions; alive: ``[T, N]`` bool (``smac_actions.alive_mask``: SMAC's stop is
            available exactly to the living agents; a dead agent has only no-op); all on ``device``.
        counts: ``[A]`` int64 label counts over the living agents of the training frames.
        dead_frames: dead agent-frames of the training split (left out of the loss).
        n_train_eps, n_val_eps: episodes in each split.

    Args:
        ds: the recording (``sc2_envs.training.demos.DemoDataset``: ``arrays`` with ``episode``, ``obs``,
            ``avail_actions``, ``actions`` per frame).
        val_fraction: share of the episodes held out (at least one when there are two or more).
        seed: the split's seed. device: where the tensors go.

    Raises:
        ValueError: a label that is not in its frame's ``avail_actions`` (naming frame and agent).
    """

    def __init__(self, ds, val_fraction: float, seed: int, device):
        a = ds.arrays
        eps = np.unique(a["episode"])
        rng = np.random.default_rng(seed)
        n_val = max(1, round(val_fraction * len(eps))) if len(eps) > 1 else 0
        val_eps = set(rng.permutation(eps)[:n_val].tolist())
        is_val = np.isin(a["episode"], list(val_eps))
        self.train_idx = np.flatnonzero(~is_val)
        self.val_idx = np.flatnonzero(is_val)
        self.obs = torch.as_tensor(a["obs"], device=device)
        self.avail = torch.as_tensor(a["avail_actions"], device=device)
        self.labels = torch.as_tensor(a["actions"].astype(np.int64), device=device)
        self.alive = alive_mask(self.avail)
        self.n_val_eps, self.n_train_eps = n_val, len(eps) - n_val
        A = self.avail.shape[-1]
        tr = torch.as_tensor(self.train_idx, device=device)
        self.counts = torch.bincount(self.labels[tr][self.alive[tr]], minlength=A).cpu().numpy()
        self.dead_frames = int((~self.alive[tr]).sum())
        bad = ~torch.gather(self.avail, 2, self.labels.unsqueeze(-1)).squeeze(-1)
        if bool(bad.any()):
            i, n = (int(x) for x in bad.nonzero()[0])
            raise ValueError(f"frame {i}, agent {n}: label {int(self.labels[i, n])} is not in avail_actions")
