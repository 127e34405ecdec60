"""Seed splitting: every (base seed, env index) pair has its own stream.

Env ``b`` of a batch seeded with ``s`` draws from ``SeedSequence(s, spawn_key=(b,))``; evaluation
envs from ``eval_seed(s, ...)`` (spawn key ``(EVAL_SPAWN_KEY, ..., b)``). Before the fix env ``b``
used ``s + b``, so seed 1's env 0 replayed seed 0's env 1.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import sc2_envs
from sc2_envs import make_batched
from sc2_envs.policies import HeuristicPolicy
from sc2_envs.sim import rng

B_BIG, SEEDS = 4096, range(8)


def test_env_keys_are_numpys_spawned_children_and_independent_of_batch_size():
    root = np.random.SeedSequence(5)
    children = root.spawn(6)
    assert rng.env_keys(5, 6) == [rng.key_of(c) for c in children]
    assert rng.env_keys(5, 3, first_index=3) == rng.env_keys(5, 6)[3:]
    a, b = make_batched("3m", num_envs=4, seed=5), make_batched("3m", num_envs=8, seed=5)
    assert torch.equal(a.reset()["obs"], b.reset()["obs"][:4])  # env b's battle does not depend on B


def test_no_two_streams_share_a_key_over_4096_envs_and_base_seeds_0_to_7():
    keys = np.array([k for s in SEEDS for k in rng.env_keys(s, B_BIG)], dtype=np.int64)
    assert keys.size == B_BIG * len(SEEDS) and np.unique(keys).size == keys.size
    eval_keys = np.array([k for s in SEEDS for k in rng.env_keys(sc2_envs.eval_seed(s), B_BIG)], dtype=np.int64)
    assert np.unique(eval_keys).size == eval_keys.size
    assert not np.isin(eval_keys, keys).any()  # evaluation battles never repeat a training battle
    # the old scheme (seed + b) shared B - 1 of B streams between adjacent base seeds
    old = [[s + b for b in range(B_BIG)] for s in SEEDS]
    assert len(set(old[0]) & set(old[1])) == B_BIG - 1


def test_first_observations_of_4096_envs_times_8_seeds_all_differ():
    states = []
    for s in SEEDS:
        env = make_batched("2s3z", num_envs=B_BIG, seed=s)
        states.append(env.reset()["state"])
    states = torch.cat(states)
    assert states.shape[0] == B_BIG * len(SEEDS)
    assert torch.unique(states, dim=0).shape[0] == states.shape[0]


def test_sampled_pairs_of_streams_play_different_battles():
    """64 random pairs ((s1, b1), (s2, b2)) over the 8 x 4096 grid, stepped together under the heuristic."""
    gen = np.random.default_rng(0)
    picks = gen.integers(0, [len(SEEDS), B_BIG], size=(128, 2))
    seqs = [np.random.SeedSequence(int(s), spawn_key=(int(b),)) for s, b in picks]
    env = make_batched("2s3z", num_envs=len(seqs), seed=seqs)  # per-env SeedSequence: env i plays (s_i, b_i)
    out = env.reset()
    # the same battle as env b of the batch seeded with s
    s0, b0 = (int(v) for v in picks[0])
    assert torch.equal(out["state"][0], make_batched("2s3z", num_envs=b0 + 1, seed=s0).reset()["state"][b0])
    policy = HeuristicPolicy(env)
    states, rewards = [out["state"]], []
    for _ in range(10):
        out = env.step(policy(out["avail_actions"]))
        states.append(out["final_state"])
        rewards.append(out["reward"])
    states = torch.stack(states, 1)  # [128, 11, S]
    for i in range(0, len(seqs), 2):
        if tuple(picks[i]) == tuple(picks[i + 1]):
            continue
        assert not torch.equal(states[i], states[i + 1]), (picks[i], picks[i + 1])
        for t in range(states.shape[1]):  # no step of the two trajectories coincides
            assert not torch.equal(states[i, t], states[i + 1, t]), (picks[i], picks[i + 1], t)


def test_adjacent_base_seeds_no_longer_share_battles():
    """The issue's repro: seed 0's env b + 1 and seed 1's env b under the heuristic for 60 steps."""
    a, b = make_batched("2s3z", num_envs=4, seed=0), make_batched("2s3z", num_envs=4, seed=1)
    oa, ob = a.reset(), b.reset()
    pa, pb = HeuristicPolicy(a), HeuristicPolicy(b)
    ra, rb = [], []
    for b_ in range(3):
        assert not torch.equal(oa["obs"][b_ + 1], ob["obs"][b_])
    for _ in range(60):
        oa, ob = a.step(pa(oa["avail_actions"])), b.step(pb(ob["avail_actions"]))
        ra.append(oa["reward"])
        rb.append(ob["reward"])
    ra, rb = torch.stack(ra, 1), torch.stack(rb, 1)
    for b_ in range(3):
        assert not torch.equal(ra[b_ + 1], rb[b_])


def test_reset_seed_replays_and_per_env_int_seed_is_a_one_env_batch():
    env = make_batched("3m", num_envs=3, seed=11)
    first = env.reset()["obs"]
    env.step(torch.where(first.new_ones(3, 3, dtype=torch.bool), 1, 0))
    assert torch.equal(env.reset(seed=11)["obs"], first)
    # a per-env int v plays what a 1-env batch seeded with v plays
    lst = make_batched("3m", num_envs=2, seed=[4, 9]).reset()["obs"]
    assert torch.equal(lst[1], make_batched("3m", num_envs=1, seed=9).reset()["obs"][0])
    assert not torch.equal(lst[0], lst[1])


def test_eval_seed_is_disjoint_and_indexed():
    s = sc2_envs.eval_seed(3, 2)
    assert s.entropy == 3 and s.spawn_key == (rng.EVAL_SPAWN_KEY, 2)
    train = make_batched("3m", num_envs=4, seed=3).reset()["obs"]
    ev = make_batched("3m", num_envs=4, seed=sc2_envs.eval_seed(3)).reset()["obs"]
    assert all(not torch.equal(ev[i], train[j]) for i in range(4) for j in range(4))
    with pytest.raises(ValueError, match="-1"):
        sc2_envs.eval_seed(3, -1)


def test_mix_uses_all_64_bits_of_the_env_key():
    lo = torch.tensor([12345], dtype=torch.int64)
    hi = lo + (7 << 32)  # same low word, different high word
    counters = torch.arange(1000, dtype=torch.int64)
    a, b = rng.mix(counters, rng.STREAM_SPAWN, lo), rng.mix(counters, rng.STREAM_SPAWN, hi)
    assert not torch.equal(a, b) and int((a == b).sum()) == 0
    assert int(a.min()) >= 0 and int(a.max()) < 2**32


@pytest.mark.parametrize(
    "bad, err, text",
    [
        (-1, ValueError, "-1"),
        (1.5, TypeError, "1.5"),
        (True, TypeError, "True"),
        ("7", TypeError, "'7'"),
        ([1, 2], ValueError, "2 values"),
        ([1, -2, 3], ValueError, "-2"),
        (torch.tensor(1.7), TypeError, r"tensor\(1\.7"),
        (torch.tensor(True), TypeError, r"tensor\(True\)"),
        (np.float64(1.7), TypeError, "1.7"),
        (np.bool_(True), TypeError, "True"),
        (np.array(1.7), TypeError, r"array\(1\.7\)"),
        (torch.tensor(-1), ValueError, "-1"),
    ],
)
def test_bad_seeds_are_rejected_with_the_value_named(bad, err, text):
    with pytest.raises(err, match=text):
        make_batched("3m", num_envs=3, seed=bad)
    env = make_batched("3m", num_envs=3)
    with pytest.raises(err, match=text):
        env.reset(seed=bad)


def test_zero_d_integer_tensor_and_array_seeds_are_the_int():
    want = make_batched("3m", num_envs=2, seed=3).reset()["obs"]
    for seed in (torch.tensor(3), np.array(3), np.int64(3)):
        assert torch.equal(make_batched("3m", num_envs=2, seed=seed).reset()["obs"], want)


def test_float_tensor_seeds_are_refused_by_the_wrappers_too():
    from sc2_envs.wrappers.pettingzoo import parallel_env

    env = parallel_env("3m")
    with pytest.raises(TypeError, match=r"tensor\(3\.9"):
        env.reset(seed=torch.tensor(3.9))


def test_unseeded_envs_record_their_entropy_and_can_be_replayed():
    env = make_batched("3m", num_envs=2)
    obs = env.reset()["obs"]
    assert env.seed_entropy is not None
    again = make_batched("3m", num_envs=2, seed=np.random.SeedSequence(env.seed_entropy)).reset()["obs"]
    assert torch.equal(obs, again)
    env.reset(seed=3)  # the streams now come from the seed: the entropy no longer describes them
    assert env.seed_entropy is None


def test_random_actions_repeat_with_a_generator_or_a_seed_and_name_bad_input():
    from sc2_envs.policies import random_actions

    avail = make_batched("2s3z", num_envs=64, seed=0).reset()["avail_actions"]
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    a1 = [random_actions(avail, g1) for _ in range(3)]
    a2 = [random_actions(avail, g2) for _ in range(3)]
    assert all(torch.equal(x, y) for x, y in zip(a1, a2, strict=False)) and not torch.equal(a1[0], a1[1])
    assert torch.equal(random_actions(avail, seed=9), random_actions(avail, seed=9))
    assert torch.gather(avail, 2, random_actions(avail, seed=9).unsqueeze(-1)).all()
    with pytest.raises(ValueError, match="not both"):
        random_actions(avail, g1, seed=1)
    with pytest.raises(ValueError, match="-1"):
        random_actions(avail, seed=-1)
    bad = avail.clone()
    bad[3, 1] = False
    with pytest.raises(ValueError, match=r"avail_actions\[3, 1\] has no available action"):
        random_actions(bad, g1)


def test_pettingzoo_reset_seed_also_seeds_the_action_spaces():
    from sc2_envs.wrappers.pettingzoo import env as aec_env

    def run():
        env = aec_env("3m")
        env.reset(seed=0)
        acts = []
        for agent in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            act = None if term or trunc else env.action_space(agent).sample(obs["action_mask"])
            acts.append(act)
            env.step(act)
        return acts

    first = run()
    assert first == run() and len(first) > 3
