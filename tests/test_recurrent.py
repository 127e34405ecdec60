"""The recurrent GNN actor (``--recurrent``): its hidden state, the replay of a rollout in HAPPO's update,
checkpoints that carry the option, and the feed-forward path left as it was."""

import glob
import subprocess
import sys

import pytest
import torch
from conftest import REPO, load_algo

import sc2_envs
from models import RolloutMemory, build_models, load_checkpoint, save_checkpoint
from models.minibatches import sequence_minibatch_indices, sequence_passes, split_rows_by_minibatch
from sc2_envs.smac_actions import alive_mask
from sc2_envs.training.demos import policy_demonstrator
from sc2_envs.training.evaluation import evaluate

happo = load_algo("happo_gnn")


def _policy(map_name, num_envs=3):
    torch.manual_seed(0)
    env = sc2_envs.make_batched(map_name, num_envs=num_envs, seed=1, autoreset=True)
    policy, _ = build_models(env.get_env_info(), "gnn", hidden=32, recurrent=True)
    return env, policy


def test_hidden_state_is_zeroed_where_an_episode_starts():
    env, policy = _policy("3m")
    out = env.reset(seed=1)
    obs, avail = out["obs"], out["avail_actions"]
    stale = torch.randn(3, 3, 32)  # what the agents carried from an episode that ended
    start = torch.tensor([True, False, True])
    with torch.no_grad():
        _, logp, hidden = policy.act_recurrent(obs, avail, stale, start, greedy=True)
        _, logp0, hidden0 = policy.act_recurrent(obs, avail, policy.initial_hidden(3), torch.zeros(3, dtype=torch.bool), True)
    assert torch.equal(hidden[start], hidden0[start]) and torch.equal(logp[start], logp0[start])
    assert not torch.allclose(hidden[~start], hidden0[~start])  # env 1 goes on from its state


def test_dead_agent_keeps_its_hidden_state_and_takes_the_no_op():
    env, policy = _policy("3m")
    out = env.reset(seed=1)
    obs, avail = out["obs"].clone(), out["avail_actions"].clone()
    obs[:, 0], avail[:, 0] = 0.0, False  # agent 0 dead: zero observation, only the no-op (SMAC)
    avail[:, 0, 0] = True
    before = torch.randn(3, 3, 32)
    with torch.no_grad():
        actions, logp, after = policy.act_recurrent(obs, avail, before, torch.zeros(3, dtype=torch.bool))
    assert torch.equal(after[:, 0], before[:, 0]) and not torch.allclose(after[:, 1:], before[:, 1:])
    assert actions[:, 0].tolist() == [0, 0, 0] and logp[:, 0].tolist() == [0.0, 0.0, 0.0]


def _rollout(env, policy, steps, out, hidden, start):
    rec = {key: [] for key in ("obs", "avail", "actions", "logprobs", "starts")}
    for _ in range(steps):
        with torch.no_grad():
            actions, logp, hidden = policy.act_recurrent(out["obs"], out["avail_actions"], hidden, start)
        for key, v in zip(rec, (out["obs"], out["avail_actions"], actions, logp, start), strict=True):
            rec[key].append(v)
        out = env.step(actions)
        start = out["terminated"] | out["truncated"]
    return out, hidden, start, {key: torch.stack(v) for key, v in rec.items()}


@pytest.mark.parametrize("map_name", ["MMM", "protoss_5_vs_5"])  # a healer's heal targets; SMACv2 classes per episode
def test_first_epoch_ratio_is_one_when_the_update_replays_the_rollout(map_name):
    """HAPPO's update replays each class actor over minibatches of whole envs from the stored initial state
    (several passes per minibatch) and gets the rollout's log-probs: every ratio is 1 before any step."""
    T, B = 50, 4
    env, policy = _policy(map_name, B)
    out, start = env.reset(seed=1), torch.ones(B, dtype=torch.bool)
    out, hidden, start, _ = _rollout(env, policy, 7, out, policy.initial_hidden(B), start)  # a non-zero initial state
    _, _, _, r = _rollout(env, policy, T, out, hidden, start)
    assert bool(r["starts"][1:].any()), "the rollout should hold an episode start after its first step"
    memory = RolloutMemory(hidden, r["starts"])
    obs, avail = r["obs"].reshape(T * B, *r["obs"].shape[2:]), r["avail"].reshape(T * B, *r["avail"].shape[2:])
    for c in policy.class_agents:
        rows, pos, flat = policy.class_rows(c, obs, alive_mask(avail))
        mbs = sequence_minibatch_indices([B], T, 2, "cpu")
        for j, positions in enumerate(split_rows_by_minibatch(rows, [mb[0] for mb in mbs], T * B)):
            assert set((rows[positions] % B).tolist()) <= set((mbs[j][0] % B).tolist())
            for i in sequence_passes(positions, rows, B, max_rows=1):  # one env per pass
                with torch.no_grad():
                    dist = policy.class_dist_at(
                        c,
                        obs.reshape(-1, obs.shape[-1])[flat[i]],
                        avail.reshape(-1, avail.shape[-1])[flat[i]],
                        pos[i],
                        rows[i],
                        memory,
                    )
                    ratio = (dist.log_prob(r["actions"].reshape(-1)[flat[i]]) - r["logprobs"].reshape(-1)[flat[i]]).exp()
                torch.testing.assert_close(ratio, torch.ones_like(ratio), atol=1e-6, rtol=0)


class _RecordingPolicy:
    """A recurrent policy that takes the first available action and records the state and starts it is given."""

    recurrent = True

    def __init__(self):
        self.calls = []

    def initial_hidden(self, num_envs):
        return torch.zeros(num_envs, 1)

    def act_recurrent(self, obs, avail, hidden, episode_start, greedy=False):
        self.calls.append((hidden.clone(), episode_start.clone()))
        return avail.to(torch.int8).argmax(-1), torch.zeros(obs.shape[:2]), hidden + 1


def test_evaluation_carries_the_state_and_starts_episodes_where_the_last_ended():
    env = sc2_envs.make_batched("3m", num_envs=2, autoreset=True)
    policy = _RecordingPolicy()
    ends, step = [], env.step

    def recording_step(actions):
        out = step(actions)
        ends.append(out["terminated"] | out["truncated"])
        return out

    env.step = recording_step
    evaluate(policy, env, 4, seed=101)
    hidden, starts = zip(*policy.calls, strict=True)  # the state goes from call to call; the policy zeroes it
    assert starts[0].all() and all(torch.equal(s, e) for s, e in zip(starts[1:], ends[:-1], strict=True))
    assert bool(torch.cat(ends).any()) and all(torch.equal(h, hidden[0] + t) for t, h in enumerate(hidden))


def test_policy_demonstrator_carries_the_state_and_starts_episodes_where_the_last_ended():
    policy = _RecordingPolicy()
    demo = policy_demonstrator(policy)
    obs, avail = torch.zeros(2, 3, 4), torch.ones(2, 3, 5, dtype=torch.bool)
    demo({"obs": obs, "avail_actions": avail})  # a reset's out: every env starts an episode
    ended = torch.tensor([False, True])
    demo({"obs": obs, "avail_actions": avail, "terminated": torch.zeros(2, dtype=torch.bool), "truncated": ended})
    (h0, s0), (h1, s1) = policy.calls
    assert torch.equal(h0, torch.zeros(2, 1)) and s0.tolist() == [True, True]
    assert torch.equal(h1, torch.ones(2, 1)) and s1.tolist() == [False, True]


def test_sequence_minibatches_hold_every_step_of_disjoint_envs():
    T, B = 5, 6
    mbs = sequence_minibatch_indices([B, 2 * B], T, 3, "cpu")
    assert len(mbs) == 3 and all(len(mb) == 2 for mb in mbs)
    for k, n in enumerate([B, 2 * B]):
        envs = [set((mb[k] % n).tolist()) for mb in mbs]
        assert [len(e) for e in envs] == [n // 3] * 3 and set.union(*envs) == set(range(n))
        for mb, e in zip(mbs, envs, strict=True):  # all T steps of each of its envs
            assert sorted(mb[k].tolist()) == sorted(t * n + b for t in range(T) for b in e)
    with pytest.raises(ValueError, match="expected a divisor of 6 envs"):
        sequence_minibatch_indices([B], T, 4, "cpu")


def test_sequence_passes_pack_whole_envs_up_to_max_rows():
    rows = torch.tensor([0, 1, 2, 4, 5, 6, 9, 10, 13, 14, 3, 7, 11, 15, 17])  # env b = row % 4 has 2, 5, 4, 4 rows
    passes = sequence_passes(torch.arange(15), rows, 4, max_rows=7)
    assert [sorted(set((rows[p] % 4).tolist())) for p in passes] == [[0, 1], [2], [3]]  # 2 + 5 <= 7 < 7 + 4
    assert sorted(torch.cat(passes).tolist()) == list(range(15))
    assert [p.numel() for p in sequence_passes(torch.arange(15), rows, 4, max_rows=1)] == [2, 5, 4, 4]  # one env each


def test_recurrent_flag_refuses_minibatches_that_split_an_env_count(capsys):
    args = happo.Args(map=("3m",), recurrent=True, num_envs=6, num_minibatches=4, num_steps=40)
    with pytest.raises(SystemExit):
        happo.check_training_args(args)
    assert "--num-minibatches 4: expected a divisor of the 6 envs of each map with --recurrent" in capsys.readouterr().err


def test_feed_forward_and_recurrent_policies_refuse_the_other_act():
    env, recurrent = _policy("3m")
    feed_forward, _ = build_models(env.get_env_info(), "gnn", hidden=32)
    out = env.reset(seed=1)
    with pytest.raises(ValueError, match="act_recurrent"):
        recurrent.act(out["obs"], out["avail_actions"])
    with pytest.raises(ValueError, match="feed-forward"):
        feed_forward.act_recurrent(out["obs"], out["avail_actions"], torch.zeros(3, 3, 32), torch.ones(3, dtype=torch.bool))


def test_checkpoint_without_the_recurrent_record_loads_feed_forward(tmp_path):
    env = sc2_envs.make_batched("3m", num_envs=1)
    info = env.get_env_info()
    policy, critic = build_models(info, "gnn", hidden=32)
    path = tmp_path / "old.pt"
    save_checkpoint(str(path), policy, critic, info, {})
    raw = torch.load(path, weights_only=True)
    del raw["config"]["policy_hparams"]["recurrent"]  # as written before the option existed
    torch.save(raw, path)
    loaded, _, _ = load_checkpoint(str(path), info)
    assert loaded.recurrent is False and loaded.hparams["recurrent"] is False
    out = env.reset(seed=1)
    with torch.no_grad():
        assert torch.equal(
            loaded.act(out["obs"], out["avail_actions"], True)[0], policy.act(out["obs"], out["avail_actions"], True)[0]
        )


def test_recurrent_checkpoint_round_trips_and_plays_a_larger_team_zero_shot(tmp_path):
    cmd = [sys.executable, str(REPO / "algos" / "happo_gnn.py"), "--no-cuda", "--seed", "3", "--map", "protoss_5_vs_5"]
    cmd += ["--recurrent", "--num-envs", "4", "--num-steps", "5", "--total-timesteps", "20", "--num-minibatches", "2"]
    cmd += ["--eval-episodes", "1", "--hidden", "32", "--torch-threads", "1"]
    res = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    assert "(actors: whole envs, recurrent)" in res.stdout
    (path,) = glob.glob(str(tmp_path / "runs" / "protoss_5_vs_5__happo_gnn__3__*" / "happo_gnn.pt"))
    raw = torch.load(path, weights_only=True)
    assert raw["config"]["policy_hparams"]["recurrent"] is True and any(".gru." in k for k in raw["actors"])
    big = sc2_envs.make_batched("protoss_10_vs_10", num_envs=2, autoreset=True)
    policy, _, _ = load_checkpoint(path, big.get_env_info(), with_critic=False)
    assert policy.recurrent and all(torch.equal(v, raw["actors"][k]) for k, v in policy.state_dict().items())
    assert policy.initial_hidden(2).shape == (2, 10, 32)  # one state per agent of the team it plays
    result = evaluate(policy, big, 2, seed=101)
    assert result["episodes"] == 2 and 0.0 <= result["win_rate"] <= 1.0


def _train(cwd, *extra):
    cmd = [sys.executable, str(REPO / "algos" / "happo_gnn.py"), "--no-cuda", "--torch-threads", "1", *extra]
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600, check=False)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    return res.stdout


def test_recurrent_multi_map_run_resumes_bit_for_bit_with_its_hidden_states(tmp_path):
    """A two-map recurrent run stopped after 1 iteration and resumed ends where the uninterrupted run ends:
    the same weights and the same hidden states, which resume.pt carries."""
    tiny = ["--map", "3m", "8m", "--seed", "3", "--num-envs", "4", "--num-steps", "4", "--hidden", "16", "--recurrent"]
    tiny += ["--num-minibatches", "2", "--eval-episodes", "2", "--eval-interval", "2"]
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    _train(tmp_path / "a", *tiny, "--total-timesteps", "32")
    _train(tmp_path / "b", *tiny, "--total-timesteps", "16")
    (ref_dir,), (stopped,) = (tmp_path / "a" / "runs").iterdir(), (tmp_path / "b" / "runs").iterdir()
    assert "at iteration 1, 16 env steps" in _train(tmp_path / "b", "--resume", str(stopped), "--total-timesteps", "32")
    ref, got = (torch.load(d / "resume.pt", weights_only=True) for d in (ref_dir, stopped))
    for part in ("actors", "critic"):
        assert all(torch.equal(ref[part][k], got[part][k]) for k in ref[part]), part
    for key in ("hidden", "episode_start"):
        assert [tuple(v.shape) for v in got["actor_memory"][key]] == [tuple(v.shape) for v in ref["actor_memory"][key]]
        assert all(torch.equal(a, b) for a, b in zip(ref["actor_memory"][key], got["actor_memory"][key], strict=True))
    assert [tuple(v.shape) for v in got["actor_memory"]["hidden"]] == [(2, 3, 16), (2, 8, 16)]
