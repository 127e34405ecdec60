"""FullGame-v0 on the lite engine: spaces, whole games, the vector form, fog, bad input, the bot."""

import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

from sc2_envs.full_game import ENV_ID, spec
from sc2_envs.full_game.env import FullGameEnv
from sc2_envs.lite.env import LiteFullGameEnv, LiteFullGameVectorEnv
from sc2_envs.lite.policy import RandomLegalPolicy

FN = {f.name: f.id for f in spec.raw_functions()}
E = spec.ENTITY_INDEX


@pytest.fixture(scope="module")
def env():
    e = LiteFullGameEnv(max_selected=16, game_steps_per_episode=2400)
    yield e
    e.close()


def probe_rows(obs):
    return np.flatnonzero((obs["selectable_mask"] == 1) & (obs["entities"][:, E["unit_type"]] == spec.unit_type_index(84)))


def test_lite_env_imports_without_the_real_game_backend():
    # The spaces live in sc2_envs.full_game.spaces, so the lite door needs no import of
    # sc2_envs.full_game.env (which imports the lite door lazily): no import cycle.
    code = "import sys, sc2_envs.lite.env; print('sc2_envs.full_game.env' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_make_runs_the_lite_engine_by_default_with_fullgame_spaces():
    env = gym.make(ENV_ID, max_entities=64, max_selected=8)
    obs, info = env.reset(seed=0)
    assert isinstance(env.unwrapped, LiteFullGameEnv)
    assert env.observation_space == FullGameEnv(max_entities=64, max_selected=8).observation_space
    assert env.observation_space.contains(obs) and info["game_loop"] == 0
    assert isinstance(gym.make(ENV_ID, backend="sc2").unwrapped, FullGameEnv)
    env.close()


def test_random_legal_policy_plays_to_truncation_inside_the_spaces(env):
    obs, _ = env.reset(seed=1)
    policy = RandomLegalPolicy(env.engine.catalog, env.max_entities, env.max_selected, seed=0)
    steps = 0
    while True:
        action = policy(obs)
        assert env.action_space.contains(action)
        obs, reward, terminated, truncated, info = env.step(action)
        steps += 1
        if steps % 100 == 0:
            assert env.observation_space.contains(obs)
        if terminated or truncated:
            break
    assert truncated and not terminated and info["game_loop"] == 2400 and steps == 300


def test_a_probe_rush_destroys_the_bot_and_wins_the_whole_game():
    env = LiteFullGameEnv(max_selected=16, game_steps_per_episode=20000)
    obs, _ = env.reset(seed=3)
    attack = {"action_type": FN["Attack_pt"], "target_location": np.array([40, 44]), "queued": 0}
    sel = np.full(16, env.max_entities)
    rows = probe_rows(obs)
    sel[: len(rows)] = rows
    obs, reward, terminated, truncated, info = env.step(dict(attack, selected_units=sel))
    while not (terminated or truncated):
        obs, reward, terminated, truncated, info = env.step({"action_type": 0})
    assert terminated and reward == 1.0 and info["outcome"] == 1.0


def test_vector_env_steps_batches_and_autoresets():
    venv = LiteFullGameVectorEnv(num_envs=3, max_entities=128, max_selected=8, game_steps_per_episode=80)
    obs, _ = venv.reset(seed=0)
    assert obs["entities"].shape == (3, 128, 38) and obs["action_type_mask"].shape == (3, 564)
    noop = {"action_type": np.zeros(3, np.int64)}
    for _ in range(10):  # 80 loops at step_mul 8
        obs, reward, terminated, truncated, info = venv.step(noop)
    assert truncated.all() and (info["game_loop"] == 80).all()
    obs, reward, terminated, truncated, info = venv.step(noop)
    assert (info["game_loop"] == 0).all() and not truncated.any()


def test_info_counts_the_units_in_view_the_entity_rows_had_no_room_for():
    obs, info = LiteFullGameEnv(max_entities=512, max_selected=8).reset(seed=0)
    in_view = int(obs["entity_mask"].sum())  # every unit has a row: own, enemy seen, neutral
    assert info["entities_left_out"] == 0 and in_view > 16
    env = LiteFullGameEnv(max_entities=16, max_selected=8)
    obs, info = env.reset(seed=0)
    assert obs["entity_mask"].sum() == 16 and info["entities_left_out"] == in_view - 16
    assert env.step({"action_type": 0})[4]["entities_left_out"] == in_view - 16  # no unit born or seen in 8 loops
    venv = LiteFullGameVectorEnv(num_envs=2, max_entities=16, max_selected=8)
    _, vinfo = venv.reset(seed=0)
    assert vinfo["entities_left_out"].dtype == np.int32 and (vinfo["entities_left_out"] == in_view - 16).all()


def test_vector_env_reset_info_has_the_step_keys_dtypes_and_shapes_as_the_single_env_gives():
    """TorchRL's info reader and Gymnasium's vector envs take the keys of the reset's info; the single env
    and SyncVectorEnv of it give game_loop, action_errors and invalid_action at reset too."""
    venv = LiteFullGameVectorEnv(num_envs=2, max_entities=64, max_selected=8, game_steps_per_episode=80)
    _, reset_info = venv.reset(seed=0)
    _, _, _, _, step_info = venv.step({"action_type": np.zeros(2, np.int64)})
    layout = {k: (v.dtype, v.shape) for k, v in step_info.items()}
    assert {k: (v.dtype, v.shape) for k, v in reset_info.items()} == layout
    _, single = LiteFullGameEnv(max_entities=64, max_selected=8).reset(seed=0)
    for k, v in single.items():
        assert (reset_info[k] == v).all(), k


def test_fog_hides_the_bot_base_and_omniscient_shows_it():
    fogged = LiteFullGameEnv(max_entities=128)
    seen = LiteFullGameEnv(max_entities=128, omniscient=True)
    a, _ = fogged.reset(seed=0)
    b, _ = seen.reset(seed=0)
    enemy = lambda o: int(((o["entities"][:, E["alliance"]] == 4) & (o["entity_mask"] == 1)).sum())  # noqa: E731
    assert enemy(a) == 0 and enemy(b) == 13  # Command Center + 12 SCVs
    vis = spec.MINIMAP_FEATURES.index("visibility_map")
    on_map = np.s_[:, : int(88 * 64 / 96)]  # the 88-cell-wide map fills 58 of 64 columns
    assert (b["minimap"][vis][on_map] == 2).all() and (a["minimap"][vis][on_map] == 0).any()


def test_bot_opening_lands_in_the_replays_ranges():
    env = LiteFullGameEnv(max_entities=64, game_steps_per_episode=3000)
    env.reset(seed=0)
    first = {}
    while True:
        _, _, terminated, truncated, info = env.step({"action_type": 0})
        st, cat = env.engine.state, env.engine.catalog
        ui = st.ui[0]
        for s in np.flatnonzero((ui[:, 0] == 1) & (ui[:, 2] == 2)):
            first.setdefault(cat.names[ui[s, 1]], info["game_loop"])
        if terminated or truncated:
            break
    # [min, max] over the 80 replays, widened by one 8-loop step (the loop we first see it)
    assert 441 <= first["SupplyDepot"] <= 448 + 8
    assert 825 - 40 <= first["Refinery"] <= 828 + 8
    assert 1013 <= first["Barracks"] <= 1060 + 8
    assert 2460 <= first["Marine"] <= 3915 + 8
    assert 2648 <= first["MULE"] <= 2725 + 8


def test_unserved_games_name_what_is_served():
    with pytest.raises(ValueError, match=r"race='zerg' is not served by the lite engine; served: \['protoss'\]"):
        LiteFullGameEnv(race="zerg")
    with pytest.raises(ValueError, match=r"bot_difficulty='hard' is not served.*very_easy"):
        LiteFullGameEnv(bot_difficulty="hard")
    with pytest.raises(ValueError, match=r"map_name='AbyssalReef' is not served.*Simple64"):
        LiteFullGameEnv(map_name="AbyssalReef")


def test_malformed_actions_raise_and_padding_rows_become_reported_noops(env):
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action_type=564"):
        env.step({"action_type": 564})
    with pytest.raises(ValueError, match="queued"):
        env.step({"action_type": 0, "queued": 2})
    sel = np.full(16, env.max_entities)
    sel[0] = env.max_entities - 1  # a padding row
    _, _, _, _, info = env.step({"action_type": FN["Stop_quick"], "selected_units": sel})
    assert info["invalid_action"] == spec.InvalidAction.SELECTED_UNIT_IS_PADDING
    _, _, _, _, info = env.step({"action_type": FN["Stop_quick"]})  # selected_units all EOF
    assert info["invalid_action"] == spec.InvalidAction.NO_SELECTED_UNITS
    _, _, _, _, info = env.step({"action_type": 0})
    assert info["invalid_action"] == spec.InvalidAction.NONE == 0


def test_a_refused_command_is_an_action_error_not_a_crash(env):
    obs, _ = env.reset(seed=0)
    sel = np.full(16, env.max_entities)
    sel[0] = probe_rows(obs)[0]
    _, _, _, _, info = env.step(
        {"action_type": FN["Build_Gateway_pt"], "selected_units": sel, "target_location": np.array([20, 20])}
    )
    assert info["action_errors"].tolist() == [9, 0]  # 0-padded to spec.MAX_ACTION_ERRORS
    assert spec.action_result_name(int(info["action_errors"][0])) == "NotEnoughMinerals"


@pytest.mark.filterwarnings("ignore:.*observation space (minimum|maximum) value is")  # FullGame-v0's unbounded Boxes
def test_gymnasium_check_env_passes():
    from gymnasium.utils.env_checker import check_env

    check_env(LiteFullGameEnv(max_entities=64, max_selected=8, game_steps_per_episode=64), skip_render_check=True)


def test_bot_army_defends_its_base():
    from sc2_envs.lite import kernels
    from sc2_envs.lite.layout import UF_HP, UF_SHIELD, UI_ALIVE

    env = LiteFullGameEnv(max_entities=128, game_steps_per_episode=6000)
    env.reset(seed=0)
    while env.engine.game_loop[0] < 2700:  # the first Marine is out at ~2,508
        env.step({"action_type": 0})
    st, cat = env.engine.state, env.engine.catalog
    args = (st.uf[0], st.ui[0], st.oi[0], st.pq[0], st.occ[0], cat.ti, cat.tf)
    rally = env.engine.map.start_locations[1]
    zealot = kernels.spawn(*args, cat.ids["Zealot"], 1, rally[0] - 8.0, rally[1] + 2.0, True, env.engine.first_free)
    start = st.uf[0, zealot, UF_HP] + st.uf[0, zealot, UF_SHIELD]
    for _ in range(60):
        env.step({"action_type": 0})
    hurt = st.ui[0, zealot, UI_ALIVE] == 0 or st.uf[0, zealot, UF_HP] + st.uf[0, zealot, UF_SHIELD] < start
    assert hurt


def test_vector_env_plays_random_legal_actions_inside_the_spaces():
    venv = LiteFullGameVectorEnv(num_envs=4, max_entities=128, max_selected=8, game_steps_per_episode=400)
    obs, _ = venv.reset(seed=0)
    policy = RandomLegalPolicy(venv.engine.catalog, 128, 8, seed=0)
    for _ in range(60):
        action = policy(obs)
        assert venv.action_space.contains(action)
        obs, reward, terminated, truncated, info = venv.step(action)
    assert venv.observation_space.contains(obs)
    assert info["action_errors"].shape == (4, spec.MAX_ACTION_ERRORS) and info["invalid_action"].shape == (4,)


@pytest.mark.parametrize("minimap_resolution", [16, 64, 128])
def test_minimap_planes_are_drawn_at_their_own_resolution(minimap_resolution):
    """The minimap is drawn at ``minimap_resolution``, whatever the raw grid's (64): the own Nexus
    and workers cover the same share of the plane (once a smaller minimap was drawn at 64 and wrote
    past its buffer)."""
    env = LiteFullGameEnv(max_entities=64, minimap_resolution=minimap_resolution)
    obs, _ = env.reset(seed=0)
    r = minimap_resolution
    assert obs["minimap"].shape[1:] == (r, r)
    rel = obs["minimap"][spec.MINIMAP_FEATURES.index("player_relative")]
    own = np.argwhere(rel == 1)
    centre = own.mean(axis=0) / r  # the own base's centre as a fraction of the plane
    ref_env = LiteFullGameEnv(max_entities=64, minimap_resolution=64)
    ref = ref_env.reset(seed=0)[0]["minimap"][spec.MINIMAP_FEATURES.index("player_relative")]
    ref_centre = np.argwhere(ref == 1).mean(axis=0) / 64
    assert np.abs(centre - ref_centre).max() < 2.0 / r
    env.close()
    ref_env.close()


def _trajectory(num_threads: int, games: int = 16, steps: int = 40) -> list:
    import numba

    from sc2_envs.sim.runtime import keeping_torch_threads

    before = numba.get_num_threads()
    keeping_torch_threads(numba.set_num_threads, num_threads)
    try:
        venv = LiteFullGameVectorEnv(num_envs=games, max_entities=96, max_selected=8, game_steps_per_episode=1200)
        policy = RandomLegalPolicy(venv.engine.catalog, 96, 8, seed=3)
        obs, _ = venv.reset(seed=11)
        out = [{k: v.copy() for k, v in obs.items()}]  # the vector env returns views of its buffers
        for _ in range(steps):
            obs, reward, term, trunc, _ = venv.step(policy(obs))
            out += [{k: v.copy() for k, v in obs.items()}, {"reward": reward, "term": term, "trunc": trunc}]
        return out
    finally:
        keeping_torch_threads(numba.set_num_threads, before)


def test_batches_stepped_on_threads_play_the_serial_games_bit_for_bit():
    # >= kernels.PARALLEL_MIN_GAMES games: advance and observe run as ranges of games on threads,
    # each range through the serial build, so the trajectory equals the one-thread run exactly.
    import numba

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has one thread here (NUMBA_NUM_THREADS=1): nothing runs on threads")
    serial, threaded = _trajectory(1), _trajectory(2)
    for a, b in zip(serial, threaded, strict=True):
        assert a.keys() == b.keys()
        for k in a:
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)


def test_builds_refused_on_arrival_in_one_step_are_each_reported_none_overwritten():
    """Three Probes sent to build a Pylon at one site arrive together after the minerals are spent: the game
    refuses each placement (NotEnoughMinerals), and each refusal reaches ``action_errors``, in a later
    step when the step's columns are full (the real game reports them in a later observation too)."""
    from sc2_envs.lite.env import LiteGames
    from sc2_envs.lite.layout import (
        CK_KIND,
        CK_PARAM,
        CK_PLAYER,
        CMD_BUILD_PT,
        NCK,
        PF_MINERALS,
        UF_X,
        UF_Y,
        UI_ALIVE,
        UI_OWNER,
        UI_TYPE,
    )

    core = LiteGames(1, step_mul=8, max_entities=128, max_selected=8)
    core.reset(np.array([0]), [0])
    eng = core.engine
    ui, uf = eng.state.ui[0], eng.state.uf[0]
    probes = np.flatnonzero((ui[:, UI_ALIVE] == 1) & (ui[:, UI_OWNER] == 1) & (ui[:, UI_TYPE] == eng.catalog.ids["Probe"]))
    uf[probes[1:3], UF_X], uf[probes[1:3], UF_Y] = uf[probes[0], UF_X], uf[probes[0], UF_Y]
    eng.state.pf[0, 1, PF_MINERALS] = 300
    for p in probes[:3]:
        ck = np.zeros((1, NCK), np.int64)
        ck[0, CK_KIND], ck[0, CK_PARAM], ck[0, CK_PLAYER] = CMD_BUILD_PT, eng.catalog.ids["Pylon"], 1
        cs = np.array([[p, -1]], np.int64)
        assert eng.apply(ck, np.array([[23.0, 55.0]], np.float32), cs)[0] == 1  # AR Success: the site is valid
    eng.state.pf[0, 1, PF_MINERALS] = 0
    codes = []
    for _ in range(60):
        errors = core.step({"action_type": np.zeros(1, np.int64)})[3]
        codes += [int(c) for c in errors[0] if c]
    assert codes == [9, 9, 9]  # ActionResult NotEnoughMinerals, once per Probe


def test_a_step_after_the_episode_ended_is_refused_not_played_on_a_frozen_game():
    """After truncation the engine runs no more loops, yet the step's commands were still applied (a Train
    paid for in a game that no longer runs) and each step returned truncated again."""
    env = LiteFullGameEnv(max_entities=64, max_selected=8, game_steps_per_episode=16)
    env.reset(seed=0)
    truncated = False
    while not truncated:
        _, _, _, truncated, _ = env.step({"action_type": np.int64(0)})
    with pytest.raises(
        RuntimeError, match=r"step\(\) called after the episode ended \(truncated at game loop 16\); call reset\(\)"
    ):
        env.step({"action_type": np.int64(0)})
    env.reset(seed=0)
    assert env.step({"action_type": np.int64(0)})[4]["game_loop"] == 8
