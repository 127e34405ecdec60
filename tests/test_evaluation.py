"""Tests of sc2_envs/training/evaluation.py: one quota rule, exact episode counts, determinism, behaviour measures."""

import pytest
import torch

import sc2_envs
from models import build_models
from sc2_envs.stats import wilson_interval
from sc2_envs.training.evaluation import behaviour_key, episode_quota, evaluate, format_result


class _ScriptedEnv:
    """Fake batched env: env b's episodes last b+1 steps, every episode of env 0 is won, reward 1 per step."""

    def __init__(self, num_envs):
        self.num_envs, self.device = num_envs, torch.device("cpu")
        self.t = torch.zeros(num_envs, dtype=torch.int64)

    def _out(self):
        return {"obs": torch.zeros(self.num_envs, 1, 1), "avail_actions": torch.ones(self.num_envs, 1, 1, dtype=torch.bool)}

    def reset(self, seed=None):
        self.t.zero_()
        return self._out()

    def step(self, actions):
        self.t += 1
        done = self.t == torch.arange(1, self.num_envs + 1)
        self.t = torch.where(done, 0, self.t)
        won = done & (torch.arange(self.num_envs) == 0)
        return {
            **self._out(),
            "reward": torch.ones(self.num_envs),
            "terminated": done,
            "truncated": torch.zeros_like(done),
            "battle_won": won,
        }


class _NoopPolicy:
    def act(self, obs, avail, greedy=False):
        return torch.zeros(obs.shape[:2], dtype=torch.int64), torch.zeros(obs.shape[:2])


def test_exactly_n_episodes_are_counted_with_a_quota_per_env():
    # 5 episodes over 3 envs: quotas 2, 2, 1; lengths 1,1 (env 0, both won), 2,2 (env 1), 3 (env 2).
    res = evaluate(_NoopPolicy(), _ScriptedEnv(3), 5, seed=0)
    assert res == {
        "episodes": 5,
        "wins": 2,
        "win_rate": 2 / 5,
        "win_ci": wilson_interval(2, 5),
        "mean_return": 9 / 5,
        "mean_length": 9 / 5,
    }


def test_quota_splits_n_over_the_envs_first_envs_first():
    assert episode_quota(5, 3).tolist() == [2, 2, 1]
    assert episode_quota(64, 32).tolist() == [2] * 32
    assert episode_quota(2, 4).tolist() == [1, 1, 0, 0]  # more envs than episodes: the last ones count none
    with pytest.raises(ValueError, match="n_episodes=0"):
        episode_quota(0, 4)


def test_more_envs_than_episodes_still_counts_exactly_n():
    res = evaluate(_NoopPolicy(), _ScriptedEnv(4), 2, seed=0)
    assert res["episodes"] == 2 and res["mean_length"] == 1.5  # envs 0 and 1: lengths 1 and 2


def test_same_seed_same_result_and_behaviour_measures_on_the_simulator():
    env = sc2_envs.make_batched("3m", num_envs=4, seed=0)
    torch.manual_seed(0)
    policy, _ = build_models(env.get_env_info(), "mlp")
    a = evaluate(policy, env, 6, seed=3, behaviour=True)
    b = evaluate(policy, env, 6, seed=3, behaviour=True)
    assert a == b and a["episodes"] == 6
    lo, hi = a["win_ci"]
    assert 0.0 <= lo <= a["win_rate"] <= hi <= 1.0
    assert sum(a["action_shares"]) == pytest.approx(1.0) and a["idle_share"] == a["action_shares"][1]
    assert a["damage_per_episode"] >= 0.0 and a["mean_length"] >= 1.0
    assert behaviour_key(a) == (a["win_rate"], -a["idle_share"], a["damage_per_episode"])
    assert format_result("ckpt", a).startswith(f"ckpt: win {a['win_rate']:.3f} [")


def test_sample_seed_repeats_sampled_episodes_and_leaves_the_callers_stream_alone():
    drawn = []

    class _SamplingPolicy:
        def act(self, obs, avail, greedy=False):
            u = torch.rand(obs.shape[0])
            drawn.append(u)
            return torch.zeros(obs.shape[:2], dtype=torch.int64), None

    env = _ScriptedEnv(3)
    torch.manual_seed(123)
    before = torch.get_rng_state()
    evaluate(_SamplingPolicy(), env, 6, seed=0, greedy=False, sample_seed=7)
    assert torch.equal(torch.get_rng_state(), before)
    first, drawn[:] = list(drawn), []
    torch.rand(5)
    evaluate(_SamplingPolicy(), env, 6, seed=0, greedy=False, sample_seed=7)
    assert all(torch.equal(a, b) for a, b in zip(first, drawn, strict=True))


@pytest.mark.parametrize("map_name", ["3s5z", "protoss_5_vs_5", "terran_5_vs_5"])
def test_enemy_hp_at_a_reset_is_the_rosters_maxima_and_behaviour_runs_on_smacv2(map_name, tmp_path):
    """Found by a tester: on SMACv2 the unit table is per env (``[B, U]``), so slicing its maxima as ``[U]``
    broke ``evaluate(behaviour=True)`` and ``record_demos``. At a reset every enemy is at full health, so the
    absolute enemy hit points are each env's own maxima summed; after autoresets (new rosters) the damage
    measure stays finite and non-negative."""
    from sc2_envs.training.demos import heuristic_demonstrator, record_demos
    from sc2_envs.training.evaluation import enemy_hp, enemy_maxima

    env = sc2_envs.make_batched(map_name, num_envs=4, seed=2)
    out = env.reset(seed=5)
    max_h, max_s = enemy_maxima(env)
    v2 = map_name.endswith("_5_vs_5")
    assert max_h.shape == ((4, env.n_enemies) if v2 else (env.n_enemies,))
    want = (max_h + max_s).sum(-1).expand(4)
    assert torch.allclose(enemy_hp(out["state"], env.get_env_info(), max_h, max_s), want, rtol=1e-5)
    if v2:
        assert not torch.equal(max_h[0], max_h[1]) or not torch.equal(max_h[1], max_h[2])  # rosters differ per env
    policy, _ = build_models(env.get_env_info(), "gnn")
    result = evaluate(policy, env, 8, seed=1, greedy=False, behaviour=True)
    assert result["episodes"] == 8 and result["damage_per_episode"] >= 0
    summary = record_demos(env, heuristic_demonstrator(env), 6, tmp_path / "demos", seed=3, log=lambda *_: None)
    assert summary.episodes == 6
