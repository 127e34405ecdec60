"""Tests of sc2_envs.training.demos: recorder shapes, label model (stride, repeats), damage bookkeeping, loading."""

import json

import numpy as np
import pytest
import torch

import sc2_envs
from sc2_envs.training.demos import (
    ARRAY_KEYS,
    SamplingConfig,
    heuristic_demonstrator,
    load_demos,
    record_demos,
)


def _record(tmp_path, name="d", map_name="3m", episodes=4, num_envs=4, sampling=None, seed=0, **kw):
    sampling = sampling or SamplingConfig()
    env = sc2_envs.make_batched(map_name, num_envs=num_envs, seed=seed)
    out = tmp_path / name
    summary = record_demos(env, heuristic_demonstrator(env), episodes, out, sampling, seed=seed, log=lambda s: None, **kw)
    return env, out, summary


def test_recorder_shapes_dtypes_and_episode_structure(tmp_path):
    env, out, summary = _record(tmp_path)
    ds = load_demos(out)
    a = ds.arrays
    T, N, A = ds.rows, env.n_agents, env.n_actions
    assert set(a) == set(ARRAY_KEYS)
    assert a["obs"].shape == (T, N, env.obs_size) and a["obs"].dtype == np.float32
    assert a["state"].shape == (T, env.state_size)
    assert a["avail_actions"].shape == (T, N, A) and a["avail_actions"].dtype == bool
    assert a["actions"].shape == (T, N) and a["executed_actions"].shape == (T, N)
    for k in ("reward", "terminated", "truncated", "battle_won", "damage_dealt", "episode", "t"):
        assert a[k].shape == (T,), k
    assert summary.episodes == 4 == ds.episodes and summary.rows == T
    # episodes are contiguous, start at t = 0, count up by 1 and end exactly at their last row
    for e in np.unique(a["episode"]):
        rows = np.flatnonzero(a["episode"] == e)
        assert np.array_equal(rows, np.arange(rows[0], rows[-1] + 1))
        assert np.array_equal(a["t"][rows], np.arange(len(rows)))
        ends = a["terminated"][rows] | a["truncated"][rows]
        assert ends[-1] and not ends[:-1].any()
    assert summary.wins == int(a["battle_won"].sum())
    # labels and executed actions are available; clean sampling: label == executed
    labels_ok = np.take_along_axis(a["avail_actions"], a["actions"][..., None].astype(np.int64), 2)
    assert labels_ok.all()
    assert np.array_equal(a["actions"], a["executed_actions"])
    meta = json.loads((out / "meta.json").read_text())
    alive = a["avail_actions"][..., 1]
    assert meta["label_counts"] == np.bincount(a["actions"][alive], minlength=A).tolist()


def test_damage_of_a_won_3m_episode_is_the_enemies_total_health(tmp_path):
    _, out, _ = _record(tmp_path, episodes=8, num_envs=8)
    a = load_demos(out).arrays
    won = np.unique(a["episode"][a["battle_won"]])
    assert len(won) > 0, "the heuristic wins some 3m battles"
    for e in won:
        total = a["damage_dealt"][a["episode"] == e].sum()
        assert total == pytest.approx(3 * 45.0, abs=1e-3)  # three marines, 45 HP, no shields


def test_stride_labels_frames_between_decisions_as_stop_and_holds_the_command(tmp_path):
    _, out, summary = _record(tmp_path, sampling=SamplingConfig(stride=3))
    a = load_demos(out).arrays
    alive = a["avail_actions"][..., 1]
    between = (a["t"] % 3 != 0)[:, None] & alive & ~a["decision"]
    assert between.any()
    assert (a["actions"][between] == 1).all()
    # a decision frame's label is the command executed
    dec = a["decision"]
    assert np.array_equal(a["actions"][dec], a["executed_actions"][dec])
    # dead agents are labelled no-op
    assert (a["actions"][~alive] == 0).all()
    assert summary.idle_label_share > 0.3


def test_repeat_as_idle_labels_repeated_commands_as_stop(tmp_path):
    _, out, s_rep = _record(tmp_path, "rep", sampling=SamplingConfig(stride=1, repeat_as_idle=True))
    _, out2, s_plain = _record(tmp_path, "plain", sampling=SamplingConfig(stride=1))
    a = load_demos(out).arrays
    # same seed, same demonstrator: identical behaviour, only the labels differ
    assert np.array_equal(a["executed_actions"], load_demos(out2).arrays["executed_actions"])
    prev = np.full_like(a["executed_actions"], -1)
    prev[1:] = a["executed_actions"][:-1]
    prev[a["t"] == 0] = -1
    alive = a["avail_actions"][..., 1]
    repeat = alive & (a["executed_actions"] == prev)
    assert repeat.any() and (a["actions"][repeat] == 1).all()
    assert s_rep.idle_label_share > s_plain.idle_label_share


def test_bad_arguments_and_existing_recordings_are_refused(tmp_path):
    with pytest.raises(ValueError, match="stride"):
        SamplingConfig(stride=0)
    env, out, _ = _record(tmp_path, episodes=1, num_envs=1)
    with pytest.raises(ValueError, match="already holds a recording"):
        record_demos(env, heuristic_demonstrator(env), 1, out, log=lambda s: None)
    with pytest.raises(ValueError, match="n_episodes"):
        record_demos(env, heuristic_demonstrator(env), 0, tmp_path / "x", log=lambda s: None)
    with pytest.raises(FileNotFoundError, match="meta.json"):
        load_demos(tmp_path / "missing")

    def bad(o):
        return torch.full(o["avail_actions"].shape[:2], 6, dtype=torch.int64)  # attack enemy 0: out of range at the start

    env2 = sc2_envs.make_batched("3m", num_envs=2, seed=0)
    with pytest.raises(ValueError, match="unavailable action"):
        record_demos(env2, bad, 2, tmp_path / "bad", log=lambda s: None)


def test_shards_and_describe_list_every_file(tmp_path):
    _, out, summary = _record(tmp_path, episodes=4, num_envs=2, episodes_per_shard=2)
    assert summary.shards == 2
    ds = load_demos(out)
    text = ds.describe()
    assert "shard_00000.npz" in text and "shard_00001.npz" in text and f"{ds.rows} frames" in text
    one = load_demos(out, max_files=1)
    assert len(one.files) == 1 and one.episodes == 2


def test_a_checkpoint_can_be_the_demonstrator(tmp_path):
    from models import build_models, load_checkpoint, save_checkpoint
    from sc2_envs.training.demos import policy_demonstrator

    env = sc2_envs.make_batched("3m", num_envs=2, seed=0)
    info = env.get_env_info()
    pol, cri = build_models(info, "mlp")
    save_checkpoint(str(tmp_path / "c.pt"), pol, cri, info, {})
    policy, _, _ = load_checkpoint(str(tmp_path / "c.pt"), info, with_critic=False)
    summary = record_demos(env, policy_demonstrator(policy), 2, tmp_path / "d", log=lambda s: None)
    assert summary.episodes == 2 and summary.rows > 0


def test_command_line_prints_its_configuration_first(tmp_path, capsys):
    from sc2_envs.training.demos import main

    assert main(["--map", "3m", "--episodes", "2", "--num-envs", "2", "--out", str(tmp_path / "d"), "--stride", "2"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("demos: 2 episodes of 3m by the heuristic demonstrator") and "2 envs" in first
    assert "stride 2 env steps" in first and str(tmp_path / "d") in first
