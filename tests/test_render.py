"""Top-down frames (``sc2_envs.render``) and the wrappers' ``render_mode``s."""

from __future__ import annotations

import warnings

import matplotlib
import numpy as np
import pytest

from sc2_envs import render
from sc2_envs.sim.state import ORDER_ATTACK, ORDER_NONE
from sc2_envs.wrappers import pettingzoo as pz
from sc2_envs.wrappers.gymnasium import SC2JointEnv

matplotlib.use("Agg")

SCALE = 8


def _data(**over):
    """Three units on a map whose two leftmost columns are unwalkable: ally 0 attacks enemy 1; unit 2 is dead."""
    pathing = np.ones((32, 32), bool)
    pathing[:2] = False
    d = dict(
        pos=np.array([[10.0, 16.0], [20.0, 16.0], [25.0, 5.0]], np.float32),
        radius=np.array([1.0, 1.0, 1.0], np.float32),
        health=np.array([45.0, 20.0, 0.0], np.float32),
        max_health=np.full(3, 45.0, np.float32),
        shield=np.zeros(3, np.float32),
        max_shield=np.zeros(3, np.float32),
        alive=np.array([True, True, False]),
        is_ally=np.array([True, False, False]),
        names=["marine", "marine", "marine"],
        order_kind=np.array([ORDER_ATTACK, ORDER_NONE, ORDER_NONE]),
        order_target=np.array([1, -1, -1]),
        pathing=pathing,
    )
    d.update(over)
    return d


def _pixel(frame, x, y):
    """Colour at world point (x, y) (y up) of a frame drawn at SCALE."""
    return tuple(int(c) for c in frame[32 + int((32 - y) * SCALE), int(x * SCALE)])


def test_frame_shape_and_dtype():
    frame = render.render_frame(_data(), scale=SCALE, title="3m  step 0/60")
    assert frame.shape == (32 * SCALE + 32, 32 * SCALE, 3) and frame.dtype == np.uint8


def test_units_terrain_and_attack_line_colours():
    frame = render.render_frame(_data(), scale=SCALE)
    assert _pixel(frame, 10.6, 16.0) == render.ALLY_COLOUR  # inside the ally disc, right of its letter
    assert _pixel(frame, 20.6, 16.0) == render.ENEMY_COLOUR
    assert _pixel(frame, 15.0, 16.0) == render._ALLY_SHOT  # ally 0 -> enemy 1 attack line
    assert _pixel(frame, 1.0, 20.0) == render._BLOCKED
    assert _pixel(frame, 5.0, 20.0) == render._WALKABLE
    assert _pixel(frame, 25.6, 5.0) == render._WALKABLE  # dead unit: no disc


def test_health_bar_shows_the_fraction_left():
    frame = render.render_frame(_data(), scale=SCALE)
    bar_row = 32 + int((32 - 16) * SCALE - 1.0 * SCALE - 3)  # just above each disc
    full, hurt = frame[bar_row, int(9.2 * SCALE) : int(10.8 * SCALE)], frame[bar_row, int(19.2 * SCALE) : int(20.8 * SCALE)]
    green = np.array([40, 200, 60])
    assert (full == green).all(axis=1).mean() > 0.9  # 45/45
    assert 0.3 < (hurt == green).all(axis=1).mean() < 0.6  # 20/45


def test_without_attack_order_there_is_no_line():
    frame = render.render_frame(_data(order_kind=np.array([ORDER_NONE] * 3)), scale=SCALE)
    assert _pixel(frame, 15.0, 16.0) == render._WALKABLE


def test_bad_render_data_and_scale_are_rejected():
    with pytest.raises(ValueError, match="'health' has length 2"):
        render.render_frame(_data(health=np.ones(2, np.float32)))
    with pytest.raises(ValueError, match="scale"):
        render.render_frame(_data(), scale=1)


@pytest.mark.parametrize("map_name", ["3m", "2s3z", "MMM"])
def test_wrappers_return_rgb_frames(map_name):
    penv = pz.parallel_env(map_name, render_mode="rgb_array")
    penv.reset(seed=0)
    genv = SC2JointEnv(map_name, render_mode="rgb_array")
    genv.reset(seed=0)
    for frame in (penv.render(), genv.render()):
        assert frame.shape == (544, 512, 3) and frame.dtype == np.uint8
    assert np.array_equal(penv.render(), genv.render())  # same seed, same battle, same picture


def test_human_mode_draws_off_screen_and_returns_none():
    env = pz.parallel_env("3m", render_mode="human")
    env.reset(seed=0)
    with pytest.warns(UserWarning, match="(?i)render_mode='human' cannot open a window: matplotlib's backend 'agg'"):
        assert env.render() is None
    env.close()


def test_human_mode_without_a_display_warns_once_why_no_window_opens(monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setattr("sys.platform", "linux")
    for env in (pz.parallel_env("3m", render_mode="human"), SC2JointEnv("3m", render_mode="human")):
        env.reset(seed=0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert env.render() is None and env.render() is None
        assert len(caught) == 1  # once per viewer, not once per frame
        assert "no display: neither DISPLAY nor WAYLAND_DISPLAY is set" in str(caught[0].message)
        assert "render_mode='rgb_array'" in str(caught[0].message)
        env.close()


def test_render_before_reset_raises_like_state():
    from sc2_envs.adapters import StarCraft2Env

    for env in (pz.parallel_env("3m", render_mode="rgb_array"), SC2JointEnv("3m", render_mode="human")):
        with pytest.raises(RuntimeError, match=r"render\(\) called before reset\(\); call reset\(\) first"):
            env.render()
        env.reset(seed=0)
        env.render()
        env.close()
    v1 = StarCraft2Env("3m", seed=0)
    with pytest.raises(RuntimeError, match=r"render\(\) called before reset\(\)"):
        v1.render("rgb_array")
    v1.reset()
    assert v1.render("rgb_array").dtype == np.uint8


def test_render_without_mode_warns_and_returns_none():
    env = pz.parallel_env("3m")
    env.reset(seed=0)
    with pytest.warns(UserWarning, match="render_mode"):
        assert env.render() is None


def _frames(n=6):
    env = pz.parallel_env("3m", render_mode="rgb_array")
    obs, _ = env.reset(seed=0)
    frames = [env.render()]
    for _ in range(n - 1):
        _obs, *_ = env.step({ag: 1 for ag in env.agents})
        frames.append(env.render())
    return frames


def test_gif_round_trip(tmp_path):
    iio = pytest.importorskip("imageio.v3")
    path = render.save_episode_video(_frames(), tmp_path / "battle.gif", fps=4)
    back = iio.imread(path, index=None)
    assert back.shape[0] == 6 and back.shape[1:3] == (544, 512)


def test_mp4_is_written(tmp_path):
    iio = pytest.importorskip("imageio.v3")
    pytest.importorskip("imageio_ffmpeg")
    path = render.save_episode_video(_frames(), tmp_path / "battle.mp4", fps=4)
    back = iio.imread(path, plugin="FFMPEG", index=None)
    assert back.shape[0] == 6 and back.shape[1:3] == (544, 512)


def test_bad_video_arguments_are_rejected(tmp_path):
    frames = _frames(2)
    with pytest.raises(ValueError, match="'.avi'"):
        render.save_episode_video(frames, tmp_path / "x.avi")
    with pytest.raises(ValueError, match="no frames"):
        render.save_episode_video([], tmp_path / "x.gif")
    with pytest.raises(ValueError, match="frame 1"):
        render.save_episode_video([frames[0], frames[1][:10]], tmp_path / "x.gif")
    with pytest.raises(ValueError, match="fps"):
        render.save_episode_video(frames, tmp_path / "x.gif", fps=0)


def test_window_zooms_into_world_coordinates():
    frame = render.render_frame(_data(), scale=SCALE, window=(5.0, 10.0, 25.0, 20.0))
    assert frame.shape == (10 * SCALE + 32, 20 * SCALE, 3)
    # ally at world (10.6, 16): (10.6 - 5) * SCALE across, (20 - 16) * SCALE down from the title bar
    assert tuple(frame[32 + 4 * SCALE, int(5.6 * SCALE)]) == render.ALLY_COLOUR
    with pytest.raises(ValueError, match="window"):
        render.render_frame(_data(), window=(5.0, 10.0, 40.0, 20.0))
