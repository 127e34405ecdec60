"""sc2_envs.smac_actions: the alive mask read from SMAC's available actions."""

from __future__ import annotations

import pytest
import torch

import sc2_envs
from sc2_envs.policies import random_actions
from sc2_envs.smac_actions import NO_OP, STOP, alive_mask


def test_alive_mask_is_stop_available_and_no_op_unavailable_on_a_map_where_agents_die():
    env = sc2_envs.make_batched("3m", num_envs=8, seed=0, autoreset=True)
    out = env.reset(seed=0)
    gen = torch.Generator().manual_seed(0)
    dead_rows = 0
    for _ in range(80):
        avail = out["avail_actions"]
        alive = alive_mask(avail)
        assert torch.equal(alive, ~avail[..., NO_OP])
        assert torch.equal(alive, avail[..., STOP])
        assert bool((avail[~alive].sum(-1) == 1).all())  # a dead agent's only action is the no-op
        dead_rows += int((~alive).sum())
        out = env.step(random_actions(avail, gen))
    assert dead_rows > 0  # the claim was tested on dead agents too


def test_alive_mask_refuses_a_mask_without_a_stop_column():
    with pytest.raises(ValueError, match=r"n_actions >= 2 \(no-op 0 and stop 1\)"):
        alive_mask(torch.ones(3, 1, dtype=torch.bool))


@pytest.mark.parametrize(
    "avail, error, message",
    [
        ([[0, 1], [1, 0]], TypeError, "avail_actions is a list; expected a torch.Tensor"),
        (torch.ones(5, dtype=torch.bool), ValueError, r"shape \(5,\); expected \[\.\.\., n_agents, n_actions\]"),
        (torch.ones(3, 1, dtype=torch.bool), ValueError, r"n_actions >= 2"),
        (torch.ones(2, 3, dtype=torch.complex64), TypeError, "dtype torch.complex64; expected bool"),
        (torch.tensor([[0.0, 0.5, 1.0]]), ValueError, "holds 0.5 \\(dtype torch.float32\\); expected a mask of 0s and 1s"),
        (torch.tensor([[0, 2, 1]]), ValueError, "holds 2 \\(dtype torch.int64\\)"),
        (torch.tensor([[0.0, float("nan"), 1.0]]), ValueError, "holds nan"),
    ],
)
def test_alive_mask_refuses_what_is_not_a_0_1_mask_of_agents_by_actions(avail, error, message):
    with pytest.raises(error, match=message):
        alive_mask(avail)


def test_alive_mask_reads_only_the_stop_column_of_0_1_masks_of_any_dtype():
    rows = [[1, 0, 0], [0, 1, 1], [0, 0, 1]]  # dead, alive, neither no-op nor stop (SMAC never makes it): dead
    for dtype in (torch.bool, torch.uint8, torch.int64, torch.float32):
        assert alive_mask(torch.tensor(rows).to(dtype)).tolist() == [False, True, False]
