"""The real-SC2 backend against a test double of SMAC's ``StarCraft2Env`` (no game needed).

``FakeStarCraft2Env`` has SMAC's method names and episode semantics (oxwhirl/smac d6aab33
``starcraft2.py``): ``step`` returns ``(reward, terminated, info)``; a timeout is terminal and flags
``info["episode_limit"]`` only with ``continuing_episode=True``; ``get_stats`` divides by
``battles_game``; on a lost connection ``step`` returns ``(0, True, {})``; actions are checked with
SMAC's ``assert avail_actions[action] == 1``. Its size methods follow SMAC's formulas, anchored
below to the sizes measured by running SMAC.
"""

from __future__ import annotations

import importlib.metadata
import os

import numpy as np
import pytest
import torch

from sc2_envs.backends import smac_sc2
from sc2_envs.backends.smac_sc2 import (
    SMAC_REQUIREMENT,
    SC2BackendUnavailable,
    SC2GameError,
    make_sc2_backend,
)
from sc2_envs.maps import get_map


class FakeStarCraft2Env:
    """Scripted stand-in for ``smac.env.StarCraft2Env`` (same public methods and attributes).

    Script (class attribute ``script``, a dict): ``win_at`` / ``lose_at`` env step of a battle end,
    ``kill_agent_at`` {step: agent id}, ``conn_error_at`` step of a lost connection.
    """

    instances: list[FakeStarCraft2Env] = []
    script: dict = {}

    def __init__(
        self,
        map_name="8m",
        seed=None,
        continuing_episode=False,
        obs_all_health=True,
        obs_own_health=True,
        obs_last_action=False,
        obs_pathing_grid=False,
        obs_terrain_height=False,
        obs_instead_of_state=False,
        obs_timestep_number=False,
        state_last_action=True,
        state_timestep_number=False,
        reward_scale=True,
        **other,
    ):
        spec = get_map(map_name)
        self.map_name, self._seed, self.kwargs = map_name, seed, dict(other, continuing_episode=continuing_episode)
        self.n_agents, self.n_enemies, self.episode_limit = spec.n_agents, spec.n_enemies, spec.episode_limit
        self.continuing_episode = continuing_episode
        self.obs_all_health = obs_all_health
        self.obs_own_health = True if obs_all_health else obs_own_health
        self.obs_last_action, self.obs_pathing_grid = obs_last_action, obs_pathing_grid
        self.obs_terrain_height, self.obs_instead_of_state = obs_terrain_height, obs_instead_of_state
        self.obs_timestep_number, self.state_last_action = obs_timestep_number, state_last_action
        self.state_timestep_number = state_timestep_number
        self.n_actions_no_attack, self.n_actions_move = 6, 4
        self.n_actions = 6 + self.n_enemies
        self.shield_bits_ally = int(spec.a_race == "P")
        self.shield_bits_enemy = int(spec.b_race == "P")
        self.unit_type_bits = spec.unit_type_bits
        types = [f"type_{i}" for i in range(self.unit_type_bits)]
        self.ally_state_attr_names = ["health", "energy/cooldown", "rel_x", "rel_y"]
        self.ally_state_attr_names += ["shield"] * self.shield_bits_ally + types
        self.enemy_state_attr_names = ["health", "rel_x", "rel_y"] + ["shield"] * self.shield_bits_enemy + types
        self.battles_won = self.battles_game = self.timeouts = self.force_restarts = 0
        self.max_reward = (
            self.n_enemies * 10
            + 200
            + sum(spec.unit_stat(u, "health") + spec.unit_stat(u, "shield") for u in spec.enemy_units())
        )
        self._episode_steps = 0
        self._episode_count = 0
        self.launches = 0
        self.closed = False
        self.sent_actions: list[list[int]] = []
        self.alive = np.ones(self.n_agents, dtype=bool)
        self.enemy_alive = np.ones(self.n_enemies, dtype=bool)
        self.last_action = np.zeros((self.n_agents, self.n_actions))
        FakeStarCraft2Env.instances.append(self)

    # sizes (SMAC's formulas)
    def get_obs_move_feats_size(self):
        return 4 + 8 * self.obs_pathing_grid + 9 * self.obs_terrain_height

    def get_obs_enemy_feats_size(self):
        return self.n_enemies, 4 + self.unit_type_bits + (1 + self.shield_bits_enemy) * self.obs_all_health

    def get_obs_ally_feats_size(self):
        nf = 4 + self.unit_type_bits + (1 + self.shield_bits_ally) * self.obs_all_health
        return self.n_agents - 1, nf + self.n_actions * self.obs_last_action

    def get_obs_own_feats_size(self):
        return self.unit_type_bits + (1 + self.shield_bits_ally) * self.obs_own_health + self.obs_timestep_number

    def get_obs_size(self):
        (ne, fe), (na, fa) = self.get_obs_enemy_feats_size(), self.get_obs_ally_feats_size()
        return self.get_obs_move_feats_size() + ne * fe + na * fa + self.get_obs_own_feats_size()

    def get_state_size(self):
        if self.obs_instead_of_state:
            return self.get_obs_size() * self.n_agents
        size = self.n_agents * len(self.ally_state_attr_names) + self.n_enemies * len(self.enemy_state_attr_names)
        return size + self.n_agents * self.n_actions * self.state_last_action + self.state_timestep_number

    def get_total_actions(self):
        return self.n_actions

    def get_env_info(self):
        return {
            "state_shape": self.get_state_size(),
            "obs_shape": self.get_obs_size(),
            "n_actions": self.n_actions,
            "n_agents": self.n_agents,
            "episode_limit": self.episode_limit,
        }

    # episode
    def reset(self):
        if self._episode_count == 0 and self.launches == 0:
            self.launches += 1
        self._episode_steps = 0
        self.alive[:] = True
        self.enemy_alive[:] = True
        self.last_action = np.zeros((self.n_agents, self.n_actions))
        return self.get_obs(), self.get_state()

    def get_obs_agent(self, a):
        n = self.get_obs_size() + self.obs_timestep_number  # SMAC appends the timestep after own feats
        if not self.alive[a]:
            return np.zeros(n, dtype=np.float32)
        return (np.arange(n, dtype=np.float32) + 100 * a + self._episode_steps) / 1000

    def get_obs(self):
        return [self.get_obs_agent(a) for a in range(self.n_agents)]

    def get_state(self):
        n = self.get_state_size() + (self.n_agents * self.obs_timestep_number if self.obs_instead_of_state else 0)
        return (np.arange(n) * 0.001 + self._episode_steps).astype(np.float32)

    def get_avail_agent_actions(self, a):
        if not self.alive[a]:
            return [1] + [0] * (self.n_actions - 1)
        return [0, 1, 1, 1, 1, 0] + [int(e) for e in self.enemy_alive]

    def get_avail_actions(self):
        return [self.get_avail_agent_actions(a) for a in range(self.n_agents)]

    def step(self, actions):
        actions = [int(a) for a in actions]
        for a, act in enumerate(actions):
            assert self.get_avail_agent_actions(a)[act] == 1, f"Agent {a} cannot perform action {act}"
        self.sent_actions.append(actions)
        self.last_action = np.eye(self.n_actions)[np.array(actions)]
        s = self.script
        if s.get("conn_error_at") == self._episode_steps + 1:
            self.force_restarts += 1
            return 0, True, {}
        self._episode_steps += 1
        t = self._episode_steps
        if t in s.get("kill_agent_at", {}):
            self.alive[s["kill_agent_at"][t]] = False
        end = None
        if s.get("win_at") == t:
            self.enemy_alive[:] = False
            end = 1
        elif s.get("lose_at") == t:
            self.alive[:] = False
            end = -1
        reward = 0.25
        info = {"battle_won": False, "dead_allies": int((~self.alive).sum()), "dead_enemies": int((~self.enemy_alive).sum())}
        terminated = False
        if end is not None:
            terminated = True
            self.battles_game += 1
            if end == 1:
                self.battles_won += 1
                info["battle_won"] = True
                reward += 10
        elif t >= self.episode_limit:
            terminated = True
            if self.continuing_episode:
                info["episode_limit"] = True
            self.battles_game += 1
            self.timeouts += 1
        if terminated:
            self._episode_count += 1
        return reward, terminated, info

    def get_stats(self):
        return {
            "battles_won": self.battles_won,
            "battles_game": self.battles_game,
            "battles_draw": self.timeouts,
            "win_rate": self.battles_won / self.battles_game,
            "timeouts": self.timeouts,
            "restarts": self.force_restarts,
        }

    def close(self):
        self.closed = True


@pytest.fixture
def fake():
    FakeStarCraft2Env.instances = []
    FakeStarCraft2Env.script = {}
    yield FakeStarCraft2Env
    FakeStarCraft2Env.script = {}


def _make(fake, map_name="3m", **kw):
    return make_sc2_backend(map_name, env_factory=fake, **kw)


def _stop_all(env):
    """Stop for living agents, no-op for dead ones (always legal in SMAC)."""
    avail = env._last["avail_actions"] if env._last is not None else None
    return torch.where(avail[0, :, 1], 1, 0).unsqueeze(0).to(torch.int64)


# -- missing dependencies --------------------------------------------------------------------------


def test_missing_smac_message_says_what_to_install_and_where(monkeypatch, tmp_path):
    monkeypatch.setattr(smac_sc2, "_smac_dist_summary", lambda: None)
    real_find_spec = smac_sc2.importlib.util.find_spec
    monkeypatch.setattr(smac_sc2.importlib.util, "find_spec", lambda n, *a: None if n == "smac" else real_find_spec(n, *a))
    monkeypatch.setenv("SC2PATH", str(tmp_path))
    with pytest.raises(SC2BackendUnavailable) as err:
        make_sc2_backend("3m")
    msg = str(err.value)
    assert "oxwhirl SMAC is not installed" in msg
    assert SMAC_REQUIREMENT in msg
    assert "SC2PATH" in msg and str(tmp_path) in msg
    assert os.path.join("Maps", "SMAC_Maps", "3m.SC2Map") in msg
    assert "~/StarCraftII" in msg and "Program Files (x86)" in msg and "/Applications/StarCraft II" in msg


def test_pypi_smac3_is_recognised_and_named(monkeypatch):
    summary = "SMAC3, a Python implementation of 'Sequential Model-based Algorithm Configuration'."

    def metadata(name):
        if name == "smac":
            return {"Summary": summary, "Version": "2.3.1"}
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(smac_sc2.importlib.metadata, "metadata", metadata)
    with pytest.raises(SC2BackendUnavailable) as err:
        make_sc2_backend("3m")
    msg = str(err.value)
    assert "SMAC3" in msg and "AutoML" in msg and "pip uninstall smac" in msg and SMAC_REQUIREMENT in msg


def test_missing_game_and_missing_map_messages(monkeypatch, tmp_path, fake):
    monkeypatch.setattr(smac_sc2, "_import_starcraft2env", lambda map_name: fake)
    monkeypatch.setenv("SC2PATH", str(tmp_path))
    with pytest.raises(SC2BackendUnavailable, match="StarCraft II was not found") as err:
        make_sc2_backend("2s3z")
    assert str(tmp_path / "Versions") in str(err.value)
    (tmp_path / "Versions").mkdir()
    with pytest.raises(SC2BackendUnavailable, match="SMAC map file") as err:
        make_sc2_backend("2s3z")
    assert str(tmp_path / "Maps" / "SMAC_Maps" / "2s3z.SC2Map") in str(err.value)
    (tmp_path / "Maps" / "SMAC_Maps").mkdir(parents=True)
    (tmp_path / "Maps" / "SMAC_Maps" / "2s3z.SC2Map").write_bytes(b"")
    env = make_sc2_backend("2s3z")
    assert env.n_agents == 5 and fake.instances[-1].launches == 0  # building does not launch the game


def test_default_sc2_paths_per_platform():
    assert str(smac_sc2.default_sc2_path("win32")).replace("\\", "/") == "C:/Program Files (x86)/StarCraft II"
    assert str(smac_sc2.default_sc2_path("darwin")) == "/Applications/StarCraft II"
    assert smac_sc2.default_sc2_path("linux").name == "StarCraftII"


# -- layouts ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "map_name, obs_size, state_size",
    [("3m", 30, 48), ("2s3z", 80, 120), ("MMM", 160, 290), ("3s_vs_5z", 48, 68), ("bane_vs_bane", 336, 984)],
)
def test_layout_sizes_match_smac_measured_sizes(fake, map_name, obs_size, state_size):
    env = _make(fake, map_name)
    info = env.get_env_info()
    assert (info["obs_shape"], info["state_shape"]) == (obs_size, state_size)
    lay = info["obs_layout"]
    total = (
        lay["move_feats"]
        + lay["n_enemies"] * lay["enemy_feats"]
        + lay["n_allies"] * lay["ally_feats"]
        + lay["own_feats"]
        + lay["timestep_feats"]
    )
    assert total == obs_size
    assert len(lay["enemy_feature_names"]) == lay["enemy_feats"]
    assert len(lay["ally_feature_names"]) == lay["ally_feats"]
    assert len(lay["own_feature_names"]) == lay["own_feats"]
    sl = info["state_layout"]
    assert (
        sl["n_agents"] * sl["ally_state_feats"]
        + sl["n_enemies"] * sl["enemy_state_feats"]
        + sl["last_action_feats"]
        + sl["timestep_feats"]
    ) == state_size
    assert fake.instances[-1].launches == 0  # env info never launches SC2


def test_obs_timestep_number_reports_the_real_vector_length(fake):
    env = _make(fake, "3m", obs_timestep_number=True)
    smac_size = fake.instances[-1].get_obs_size()
    assert smac_size == 31 and env.obs_size == 32  # SMAC's get_obs_size is one short
    assert env.reset()["obs"].shape == (1, 3, 32)
    assert env.get_env_info()["obs_layout"]["own_feature_names"][-1] == "timestep_pad"


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"obs_last_action": True, "obs_pathing_grid": True, "obs_terrain_height": True},
        {"obs_timestep_number": True, "state_timestep_number": True, "state_last_action": False},
        {"obs_instead_of_state": True, "obs_all_health": False, "obs_own_health": False},
    ],
    ids=["defaults", "extra-obs", "timesteps", "obs-as-state"],
)
def test_layout_matches_embedded_simulator(fake, options):
    sim_env = pytest.importorskip("sc2_envs.sim.env", reason="embedded simulator (sc2_envs.sim.env) not built yet")
    for map_name in ("3m", "2s3z", "MMM", "3s_vs_5z", "bane_vs_bane"):
        ours = _make(fake, map_name, **options).get_env_info()
        sim = sim_env.make_batched(map_name, num_envs=1, **options).get_env_info()
        for key in (
            "obs_shape",
            "state_shape",
            "n_actions",
            "n_agents",
            "n_enemies",
            "episode_limit",
            "agent_features",
            "enemy_features",
            "unit_type_bits",
            "agent_unit_types",
            "enemy_unit_types",
            "ally_type_order",
            "enemy_type_order",
            "max_reward",
            "obs_layout",
            "state_layout",
        ):
            assert ours[key] == sim[key], (map_name, key)


# -- reset / step semantics ------------------------------------------------------------------------


def test_reset_returns_contract_shapes_and_dtypes(fake):
    env = _make(fake, "2s3z")
    out = env.reset()
    assert set(out) == {"obs", "state", "avail_actions"}
    assert out["obs"].shape == (1, 5, 80) and out["obs"].dtype == torch.float32
    assert out["state"].shape == (1, 120) and out["state"].dtype == torch.float32
    assert out["avail_actions"].shape == (1, 5, 11) and out["avail_actions"].dtype == torch.bool
    smac = fake.instances[-1]
    np.testing.assert_array_equal(out["obs"][0].numpy(), np.stack(smac.get_obs()))
    np.testing.assert_array_equal(out["state"][0].numpy(), smac.get_state())
    assert smac.kwargs["continuing_episode"] is True and smac.launches == 1


@pytest.mark.parametrize("continuing_episode", [True, False])
def test_timeout_is_truncation_not_termination(fake, continuing_episode):
    env = _make(fake, "3m", autoreset=False, continuing_episode=continuing_episode)
    env.reset()
    for t in range(1, env.episode_limit + 1):
        out = env.step(_stop_all(env))
        ended = t == env.episode_limit
        assert out["truncated"].tolist() == [ended] and out["episode_limit"].tolist() == [ended]
        assert out["terminated"].tolist() == [False] and out["battle_won"].tolist() == [False]
    stats = env.get_stats()
    assert (stats["timeouts"], stats["battles_game"], stats["battles_draw"], stats["win_rate"]) == (1, 1, 1, 0.0)


def test_win_on_the_last_step_is_a_termination(fake):
    fake.script = {"win_at": 60}
    env = _make(fake, "3m", autoreset=False)
    env.reset()
    for _ in range(59):
        env.step(_stop_all(env))
    out = env.step(_stop_all(env))
    assert out["terminated"].tolist() == [True] and out["truncated"].tolist() == [False]
    assert out["battle_won"].tolist() == [True] and out["episode_limit"].tolist() == [False]
    assert out["dead_enemies"].tolist() == [3] and out["dead_enemies"].dtype == torch.int64
    assert env.get_stats()["battles_won"] == 1 and env.get_stats()["win_rate"] == 1.0


def test_loss_terminates_and_marks_every_agent_dead(fake):
    fake.script = {"lose_at": 3}
    env = _make(fake, "3m", autoreset=False)
    env.reset()
    env.step(_stop_all(env))
    env.step(_stop_all(env))
    out = env.step(_stop_all(env))
    assert out["terminated"].tolist() == [True] and out["battle_won"].tolist() == [False]
    assert out["agent_alive"].tolist() == [[False, False, False]] and out["dead_allies"].tolist() == [3]
    assert out["avail_actions"][0, :, 0].all() and not out["avail_actions"][0, :, 1:].any()
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(_stop_all(env))


def test_dead_agent_reported_and_only_noop_accepted(fake):
    fake.script = {"kill_agent_at": {2: 1}}
    env = _make(fake, "3m")
    env.reset()
    env.step(_stop_all(env))
    out = env.step(_stop_all(env))
    assert out["agent_alive"].tolist() == [[True, False, True]] and out["dead_allies"].tolist() == [1]
    assert not out["obs"][0, 1].any()
    with pytest.raises(ValueError, match=r"agent 1 cannot take action 1: available actions are \[0\]"):
        env.step(torch.tensor([[1, 1, 1]]))


def test_autoreset_returns_final_obs_of_the_ended_episode(fake):
    fake.script = {"win_at": 2}
    env = _make(fake, "3m")
    env.reset()
    env.step(_stop_all(env))
    smac = fake.instances[-1]
    out = env.step(_stop_all(env))
    assert out["terminated"].tolist() == [True]
    assert out["final_avail_actions"][0, :, 6:].sum() == 0  # enemies dead at the end of the episode
    assert out["avail_actions"][0, :, 6:].all()  # a fresh episode after the auto-reset
    np.testing.assert_array_equal(out["obs"][0].numpy(), np.stack(smac.get_obs()))
    assert not torch.equal(out["final_obs"], out["obs"])


def test_unavailable_action_raises_in_strict_mode_and_is_replaced_in_lenient_mode(fake):
    env = _make(fake, "3m")
    env.reset()
    with pytest.raises(ValueError, match=r"agent 0 cannot take action 0: available actions are \[1, 2, 3, 4, 6, 7, 8\]"):
        env.step(torch.tensor([[0, 1, 1]]))
    lenient = _make(fake, "3m", lenient_actions=True)
    lenient.reset()
    out = lenient.step(torch.tensor([[0, 5, 6]]))
    assert fake.instances[-1].sent_actions[-1] == [1, 1, 6]
    assert out["invalid_actions"].tolist() == [[True, True, False]]


@pytest.mark.parametrize(
    "actions, error",
    [
        (torch.tensor([1, 1, 1]), ValueError),
        (torch.tensor([[1.0, 1.0, 1.0]]), ValueError),
        (torch.tensor([[1, 1, 9]]), ValueError),
        ([[1, 1, 1]], TypeError),
    ],
    ids=["shape", "float", "range", "list"],
)
def test_bad_actions_rejected_with_clear_errors(fake, actions, error):
    env = _make(fake, "3m")
    env.reset()
    with pytest.raises(error, match="action"):
        env.step(actions)


def test_lost_connection_raises_or_truncates_uncounted(fake):
    fake.script = {"conn_error_at": 2}
    env = _make(fake, "3m")
    env.reset()
    env.step(_stop_all(env))
    with pytest.raises(SC2GameError, match="relaunched the game"):
        env.step(_stop_all(env))
    env2 = _make(fake, "3m", on_game_error="truncate")
    env2.reset()
    before = env2.step(_stop_all(env2))
    out = env2.step(_stop_all(env2))
    assert out["truncated"].tolist() == [True] and out["terminated"].tolist() == [False]
    assert out["episode_limit"].tolist() == [False] and out["battle_won"].tolist() == [False]
    assert torch.equal(out["final_obs"], before["obs"])
    stats = env2.get_stats()
    assert stats["battles_game"] == 0 and stats["restarts"] == 1


def test_seeded_reset_relaunches_with_that_seed(fake):
    env = _make(fake, "3m", seed=7)
    assert fake.instances[-1]._seed == 7
    env.reset(seed=3)  # not launched yet: the seed is given to the first launch
    first = fake.instances[-1]
    assert first._seed == 3 and first.launches == 1
    env.reset()
    assert fake.instances[-1] is first
    env.reset(seed=[11])
    assert first.closed and fake.instances[-1]._seed == 11 and fake.instances[-1].launches == 1
    warn_env = _make(fake, "3m", reseed="warn")
    warn_env.reset()
    with pytest.warns(UserWarning, match="takes a seed only at launch"):
        warn_env.reset(seed=5)
    with pytest.raises(ValueError, match="num_envs=1"):
        env.reset(seed=[1, 2])


def test_stats_survive_a_relaunch_and_win_rate_is_zero_before_any_game(fake):
    fake.script = {"win_at": 1}
    env = _make(fake, "3m")
    assert env.get_stats()["win_rate"] == 0.0
    env.reset()
    env.step(_stop_all(env))
    env.reset(seed=4)
    env.step(_stop_all(env))
    stats = env.get_stats()
    assert (stats["battles_won"], stats["battles_game"], stats["win_rate"]) == (2, 2, 1.0)


def test_close_is_idempotent_and_blocks_further_use(fake):
    env = _make(fake, "3m")
    env.reset()
    env.close()
    env.close()
    assert fake.instances[-1].closed
    with pytest.raises(RuntimeError, match="closed"):
        env.reset()


def test_bad_options_are_named(fake):
    with pytest.raises(ValueError, match="reseed='sometimes'"):
        _make(fake, "3m", reseed="sometimes")
    with pytest.raises(ValueError, match="unknown map '4m'"):
        _make(fake, "4m")


def test_smacv2_scenario_is_named_as_not_served_by_the_sc2_backend(fake):
    import sc2_envs

    words = r"'protoss_5_vs_5' is a SMACv2 scenario: backend='sc2' .* does not serve SMACv2 scenarios. Use backend='sim'"
    with pytest.raises(ValueError, match=words):
        _make(fake, "protoss_5_vs_5")
    with pytest.raises(ValueError, match=words):
        sc2_envs.parallel_env("protoss_5_vs_5", backend="sc2")
