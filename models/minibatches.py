"""Minibatches and passes of a rollout, for the updates of ``algos/happo_gnn.py`` and ``algos/hatrpo_gnn.py``.

A feed-forward actor's and the critic's minibatches hold shuffled env steps (:func:`minibatch_indices`);
a minibatch runs in passes of at most ``pass_rows`` rows (:func:`pass_rows_for`), whose gradients add up
to the whole minibatch's.

A recurrent actor's log-prob at env step ``t`` depends on every earlier step of its episode, so its
update replays the rollout: each minibatch holds all ``T`` env steps of a subset of the envs, and the
GRU is run along them from the state stored at the rollout's start (CleanRL ``ppo_atari_lstm.py``:
``envinds`` shuffled, ``mb_inds = flatinds[:, mbenvinds].ravel()``). A rollout buffer of ``T`` steps of
``B`` envs is flattened t-major: env step ``t`` of env ``b`` is row ``t * B + b``.
"""

from __future__ import annotations

import torch


def sequence_minibatch_indices(num_envs: list[int], num_steps: int, num_minibatches: int, device) -> list[list[torch.Tensor]]:
    """One epoch's minibatches over envs: ``num_minibatches`` lists of one index tensor per map.

    Args:
        num_envs: ``B_k``, the envs of each map's rollout.
        num_steps: ``T``, the env steps of the rollout.
        num_minibatches: minibatches per epoch; it must divide every ``B_k``.
        device: where the indices live.

    Returns:
        ``out[j][k]``: ``[T * B_k / num_minibatches]`` int64, the rows ``t * B_k + b`` of every step ``t`` of
        minibatch ``j``'s envs ``b`` of map ``k`` (shuffled envs, t-major), the structure of
        :func:`minibatch_indices`.

    Raises:
        ValueError: ``num_minibatches`` does not divide a map's env count.
    """
    per_map = []
    for B in num_envs:
        if num_minibatches < 1 or B % num_minibatches:
            raise ValueError(f"{num_minibatches} minibatches of whole env sequences; expected a divisor of {B} envs")
        steps = torch.arange(num_steps, device=device).unsqueeze(1) * B
        per_map.append([(steps + envs).reshape(-1) for envs in torch.randperm(B, device=device).split(B // num_minibatches)])
    return [list(mb) for mb in zip(*per_map, strict=True)]


def sequence_passes(positions: torch.Tensor, rows: torch.Tensor, num_envs: int, max_rows: int) -> list[torch.Tensor]:
    """Split gathered agent-steps into passes of whole env sequences (so that their gradients add up exactly).

    Args:
        positions: ``[P]`` int64, agent-steps (indices into ``rows``) of one minibatch.
        rows: ``[R]`` int64, each gathered agent-step's row ``t * num_envs + b``.
        num_envs: ``B``, the envs of the rollout.
        max_rows: the most agent-steps in one pass; an env with more gets a pass of its own.

    Returns:
        ``[P_i]`` int64 tensors that partition ``positions``, each holding every position of its envs
        (envs packed in increasing order while they fit).
    """
    env = rows.index_select(0, positions) % num_envs
    order = torch.argsort(env, stable=True)
    sizes, size = [], 0
    for count in torch.unique_consecutive(env.index_select(0, order), return_counts=True)[1].tolist():
        if size and size + count > max_rows:
            sizes.append(size)
            size = 0
        size += count
    return list(positions.index_select(0, order).split(sizes + [size] if size else sizes))


def minibatch_indices(sizes: list[int], num_minibatches: int, device) -> list[list[torch.Tensor]]:
    """One epoch's minibatches: ``num_minibatches`` lists of one index tensor per map, each holding
    ``R_k / num_minibatches`` shuffled env steps of map ``k``'s batch of ``sizes[k] = R_k``. With one map,
    CleanRL's ``randperm(R).split(R // num_minibatches)``."""
    splits = [torch.randperm(n, device=device).split(n // num_minibatches) for n in sizes]
    return [list(mb) for mb in zip(*splits, strict=True)]


def split_rows_by_minibatch(rows, mb_inds, n_rows):
    """The positions in ``rows [P]`` (the env step of each gathered agent-step) that fall in each minibatch
    of ``mb_inds`` (one map's env-step indices, equal sizes): one increasing ``[P_j]`` int64 tensor each.

    Minibatches are drawn over env steps, as HARL's over ``(T, threads)``, so an agent-step meets the ``M``
    of its env step; a class actor then runs only on its alive agent-steps in each minibatch."""
    mb_of_row = torch.empty(n_rows, dtype=torch.int64, device=rows.device)
    mb_of_row[torch.cat(mb_inds)] = torch.arange(n_rows, device=rows.device) // mb_inds[0].numel()
    key = mb_of_row[rows]
    counts = torch.bincount(key, minlength=len(mb_inds)).tolist()
    return torch.argsort(key, stable=True).split(counts)


def pass_rows_for(pass_rows: int, device: torch.device) -> int:
    """Rows of one forward/backward pass (``Args.pass_rows``; 0: 1,024 on CPU, where passes reuse heap
    memory instead of page-faulting fresh pages for every large activation, and no limit on CUDA)."""
    if pass_rows > 0:
        return pass_rows
    return 1024 if device.type == "cpu" else 1 << 62
