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
    with pytest.raises(ValueError, match=r"\[\.\.\., n_actions\]"):
        alive_mask(torch.ones(3, 1, dtype=torch.bool))
