"""Top-down drawings of a SMAC battle, and episode videos.

``render_frame(env.render_data(b))`` turns the simulator's render data (contract: ``pos [U, 2]``,
``radius``, ``health``, ``max_health``, ``shield``, ``max_shield``, ``alive``, ``is_ally`` ``[U]``,
``names``, ``order_kind``, ``order_target`` ``[U]``, ``pathing [32, 32]`` indexed ``[x, y]``) into an
``(H, W, 3)`` uint8 image:

* terrain: walkable cells sand, unwalkable cells dark;
* units: discs of their collision radius, blue for the agents' side and red for the enemy, with a
  type letter (``UNIT_LETTERS``); dead units as a small grey cross;
* bars above each live unit: health (green) and, for units with shields, shield (cyan);
* order lines from a live unit to its live target: yellow (agent attacks), orange (enemy attacks),
  green (medivac heals).

World coordinates have y up (SC2); the image has y down, so rows are flipped. Drawing uses Pillow;
``HumanViewer`` (render_mode ``"human"``) needs matplotlib and ``save_episode_video`` needs imageio
(plus imageio-ffmpeg for MP4); all are imported only when used.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import numpy as np

from sc2_envs.sim.state import ORDER_ATTACK, ORDER_ATTACK_MOVE, ORDER_HEAL

UNIT_LETTERS = {
    "marine": "m",
    "marauder": "M",
    "medivac": "V",
    "stalker": "S",
    "zealot": "Z",
    "colossus": "C",
    "hydralisk": "H",
    "zergling": "g",
    "baneling": "B",
    "spine_crawler": "P",
}
"""Letter drawn on each unit type; other types get the first letter of their name."""

ALLY_COLOUR, ENEMY_COLOUR = (40, 110, 225), (215, 45, 40)
_WALKABLE, _BLOCKED = (205, 195, 165), (55, 58, 66)
_ALLY_SHOT, _ENEMY_SHOT, _HEAL = (255, 215, 0), (255, 130, 20), (60, 220, 80)
_NON_GUI_BACKENDS = {"agg", "cairo", "pdf", "pgf", "ps", "svg", "template"}
_TITLE_H = 32  # pixels; keeps the frame height a multiple of 16 at the default scale (H.264 macro blocks)


def _font(size: int):
    from PIL import ImageFont

    try:
        return ImageFont.load_default(size=size)
    except (TypeError, OSError):  # Pillow without FreeType: fixed-size bitmap font
        return ImageFont.load_default()


def render_frame(
    data: dict, scale: int = 16, title: str | None = None, window: tuple[float, float, float, float] | None = None
) -> np.ndarray:
    """Draw one frame.

    Args:
        data: ``render_data(env_index)`` of a batched env (keys listed in the module docstring).
        scale: pixels per world unit (the map is 32 world units wide, so the default gives 512 px).
        title: text for the bar above the map (map name, step).
        window: ``(x_min, y_min, x_max, y_max)`` in world units to show (a zoom); ``None`` = the whole map.

    Returns:
        ``(32 * scale + 32, 32 * scale, 3)`` uint8 image for the whole map; with a window,
        ``(round((y_max - y_min) * scale) + 32, round((x_max - x_min) * scale), 3)``.

    Raises:
        ValueError: ``scale`` below 2, a window outside the map or empty, or inconsistent array
            lengths in ``data``.
    """
    from PIL import Image, ImageDraw

    if not isinstance(scale, int) or scale < 2:
        raise ValueError(f"scale must be an int >= 2 (pixels per world unit), got {scale!r}")
    pos = np.asarray(data["pos"], dtype=np.float64)
    n_units = len(pos)
    for key in (
        "radius",
        "health",
        "max_health",
        "shield",
        "max_shield",
        "alive",
        "is_ally",
        "order_kind",
        "order_target",
        "names",
    ):
        if len(data[key]) != n_units:
            raise ValueError(f"render data {key!r} has length {len(data[key])}, expected {n_units} (len(pos))")
    pathing = np.asarray(data["pathing"], dtype=bool)
    size_x, size_y = pathing.shape
    terrain = np.where(pathing.T[::-1, :, None], _WALKABLE, _BLOCKED).astype(np.uint8)
    terrain = terrain.repeat(scale, axis=0).repeat(scale, axis=1)
    if window is not None:
        x0, y0, x1, y1 = (float(v) for v in window)
        if not (0 <= x0 < x1 <= size_x and 0 <= y0 < y1 <= size_y):
            raise ValueError(
                f"window {window!r} must satisfy 0 <= x_min < x_max <= {size_x} and "
                f"0 <= y_min < y_max <= {size_y} (world units)"
            )
    img = Image.fromarray(terrain)
    draw = ImageDraw.Draw(img)

    def px(p):
        return float(p[0] * scale), float((size_y - p[1]) * scale)

    alive = np.asarray(data["alive"], bool)
    is_ally = np.asarray(data["is_ally"], bool)
    radius = np.asarray(data["radius"], np.float64)
    kind, target = np.asarray(data["order_kind"]), np.asarray(data["order_target"])
    for u in np.flatnonzero(alive):
        t = int(target[u])
        if 0 <= t < n_units and alive[t] and kind[u] in (ORDER_ATTACK, ORDER_ATTACK_MOVE, ORDER_HEAL):
            colour = _HEAL if kind[u] == ORDER_HEAL else (_ALLY_SHOT if is_ally[u] else _ENEMY_SHOT)
            draw.line([px(pos[u]), px(pos[t])], fill=colour, width=max(1, scale // 8))
    for u in np.flatnonzero(~alive):
        x, y = px(pos[u])
        d = scale * 0.25
        draw.line([(x - d, y - d), (x + d, y + d)], fill=(120, 120, 120), width=2)
        draw.line([(x - d, y + d), (x + d, y - d)], fill=(120, 120, 120), width=2)
    font = _font(max(8, int(scale * 0.8)))
    for u in np.flatnonzero(alive):
        x, y = px(pos[u])
        r = max(radius[u] * scale, 3.0)
        colour = ALLY_COLOUR if is_ally[u] else ENEMY_COLOUR
        draw.ellipse([x - r, y - r, x + r, y + r], fill=colour, outline=(15, 15, 15))
        name = data["names"][u]
        draw.text((x, y), UNIT_LETTERS.get(name, name[:1].upper()), fill=(255, 255, 255), font=font, anchor="mm")
        w = max(2 * r, scale)
        bar_h = max(2, scale // 6)
        top = y - r - 2 - bar_h
        bars = [(float(data["health"][u]) / max(float(data["max_health"][u]), 1e-6), (40, 200, 60))]
        if float(data["max_shield"][u]) > 0:
            bars.append((float(data["shield"][u]) / float(data["max_shield"][u]), (60, 200, 230)))
        for frac, c in bars:
            frac = min(max(frac, 0.0), 1.0)
            draw.rectangle([x - w / 2, top, x + w / 2, top + bar_h], fill=(30, 30, 30))
            draw.rectangle([x - w / 2, top, x - w / 2 + w * frac, top + bar_h], fill=c)
            top -= bar_h + 1
    if window is not None:
        img = img.crop((round(x0 * scale), round((size_y - y1) * scale), round(x1 * scale), round((size_y - y0) * scale)))
    frame = Image.new("RGB", (img.width, img.height + _TITLE_H), (25, 25, 25))
    frame.paste(img, (0, _TITLE_H))
    draw = ImageDraw.Draw(frame)
    if title:
        draw.text((6, _TITLE_H // 2), title, fill=(235, 235, 235), font=_font(18), anchor="lm")
    n_a, n_e = int((alive & is_ally).sum()), int((alive & ~is_ally).sum())
    draw.text((frame.width - 6, _TITLE_H // 2), f"{n_a} vs {n_e}", fill=(235, 235, 235), font=_font(18), anchor="rm")
    return np.asarray(frame, dtype=np.uint8).copy()


def no_display_reason() -> str | None:
    """Why no window can open on this machine (Linux with neither ``DISPLAY`` nor ``WAYLAND_DISPLAY``), or None."""
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return "no display: neither DISPLAY nor WAYLAND_DISPLAY is set (a headless machine or an ssh session without -X)"
    return None


class HumanViewer:
    """A matplotlib window showing frames (render_mode ``"human"``); headless backends draw off-screen.

    With a non-interactive matplotlib backend (``agg``, ...: what matplotlib picks on a machine
    without a display, or what ``matplotlib.use("Agg")`` sets) no window can open: frames are drawn
    off-screen, so headless CI and the API checkers (gymnasium ``check_env``, PettingZoo
    ``render_test``) still run, and a ``UserWarning`` (once per viewer) says that no window opens and why.

    Args:
        fps: frames per second to pace ``show`` with (``metadata["render_fps"]``).

    Raises:
        ImportError: matplotlib is missing.
    """

    def __init__(self, fps: float):
        try:
            import matplotlib.pyplot as plt
        except ImportError as e:
            raise ImportError("render_mode='human' needs matplotlib: pip install matplotlib") from e
        self._plt = plt
        # Off-screen backends (CI, no display) have nothing to pace; pausing would only slow tests down.
        backend = plt.get_backend()
        headless = backend.lower() in _NON_GUI_BACKENDS
        if headless:
            why = f" ({reason})" if (reason := no_display_reason()) else ""
            warnings.warn(
                f"render_mode='human' cannot open a window: matplotlib's backend {backend!r} is non-interactive{why}, "
                "so frames are drawn off-screen and not shown. Use render_mode='rgb_array' for frames, or an "
                "interactive backend (e.g. MPLBACKEND=TkAgg) on a machine with a display",
                UserWarning,
                stacklevel=3,
            )
        self._pause = 0.0 if headless else 1.0 / fps
        self._fig = None
        self._im = None

    def show(self, frame: np.ndarray) -> None:
        """Display ``frame`` ``(H, W, 3)`` uint8."""
        if self._fig is None:
            self._fig, ax = self._plt.subplots(figsize=(frame.shape[1] / 100, frame.shape[0] / 100), dpi=100)
            ax.set_axis_off()
            self._fig.subplots_adjust(0, 0, 1, 1)
            self._im = ax.imshow(frame)
        else:
            self._im.set_data(frame)
        if self._pause:
            self._plt.pause(self._pause)
        else:
            self._fig.canvas.draw()

    def close(self) -> None:
        if self._fig is not None:
            self._plt.close(self._fig)
            self._fig = None


def save_episode_video(frames, path: str | Path, fps: float = 4) -> Path:
    """Write frames to a GIF (loops forever) or MP4 (H.264) chosen by the file suffix.

    Args:
        frames: sequence of ``(H, W, 3)`` uint8 arrays of one size (``render()`` output).
        path: ``*.gif`` or ``*.mp4``.
        fps: frames per second of the video (an env step is 0.5 normal-speed game seconds, so 2 is
            real time; 4 plays at double speed).

    Returns:
        The written path.

    Raises:
        ValueError: no frames, frames of different shapes / not uint8 RGB, a bad ``fps`` or suffix.
        ImportError: imageio (or imageio-ffmpeg for MP4) is missing.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".gif", ".mp4"):
        raise ValueError(f"unsupported video suffix {path.suffix!r} in {str(path)!r}; expected '.gif' or '.mp4'")
    if not fps > 0:
        raise ValueError(f"fps must be > 0, got {fps!r}")
    frames = [np.asarray(f) for f in frames]
    if not frames:
        raise ValueError("no frames to write")
    shape = frames[0].shape
    for k, f in enumerate(frames):
        if f.dtype != np.uint8 or f.ndim != 3 or f.shape[2] != 3 or f.shape != shape:
            raise ValueError(f"frame {k} has shape {f.shape} dtype {f.dtype}; expected {shape} uint8 (H, W, 3)")
    try:
        import imageio.v3 as iio
    except ImportError as e:
        raise ImportError("save_episode_video needs imageio: pip install imageio (and imageio-ffmpeg for MP4)") from e
    stack = np.stack(frames)
    if suffix == ".gif":
        # Pillow's GIF writer takes the frame duration in milliseconds; loop=0 repeats forever.
        iio.imwrite(path, stack, plugin="pillow", duration=1000.0 / fps, loop=0)
    else:
        iio.imwrite(path, stack, plugin="FFMPEG", fps=fps, codec="libx264", macro_block_size=1)
    return path


# ---------------------------------------------------------------------- simulator replays
REPLAY_FORMAT = "sc2_envs.sim_replay"
"""``format`` entry of a simulator replay file (``StarCraft2Env.save_replay``)."""
REPLAY_VERSION = 1
_REPLAY_STEP_KEYS = ("pos", "health", "shield", "alive", "order_kind", "order_target")


def write_replay(path: str | Path, static: dict, steps: list[dict]) -> Path:
    """Write a simulator replay: one compressed ``.npz`` file (NumPy only, no pickle).

    Args:
        path: file to write (``.npz`` is appended if missing); parent folders are created.
        static: ``map_name`` (str), ``names`` (U str), ``is_ally``, ``radius``, ``max_health``,
            ``max_shield`` (``[U]``) and ``pathing`` (``[32, 32]`` bool, ``[x, y]``).
        steps: per recorded env step, ``pos`` ``[U, 2]``, ``health``, ``shield``, ``alive``,
            ``order_kind``, ``order_target`` ``[U]`` and ``episode_count`` (the simulator's episode
            number; a change starts a new episode in the file).

    Returns:
        The written path.

    Raises:
        ValueError: no steps, or steps whose arrays do not match ``static``'s unit count.
    """
    path = Path(path)
    if path.suffix != ".npz":
        path = path.with_name(path.name + ".npz")
    if not steps:
        raise ValueError("no recorded steps to write (call reset() and step() first)")
    U = len(static["names"])
    arrays = {}
    for k in _REPLAY_STEP_KEYS:
        stacked = np.stack([np.asarray(s[k]) for s in steps])
        if stacked.shape[1] != U:
            raise ValueError(f"replay step field {k!r} has {stacked.shape[1]} units, expected {U}")
        arrays[k] = stacked
    episode = np.array([int(s["episode_count"]) for s in steps], dtype=np.int64)
    step_in_ep = np.zeros(len(steps), dtype=np.int64)
    for t in range(1, len(steps)):
        step_in_ep[t] = 0 if episode[t] != episode[t - 1] else step_in_ep[t - 1] + 1
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        path,
        format=np.array(REPLAY_FORMAT),
        version=np.array(REPLAY_VERSION),
        map_name=np.array(str(static["map_name"])),
        names=np.array(list(static["names"]), dtype=str),
        is_ally=np.asarray(static["is_ally"], bool),
        radius=np.asarray(static["radius"], np.float32),
        max_health=np.asarray(static["max_health"], np.float32),
        max_shield=np.asarray(static["max_shield"], np.float32),
        pathing=np.asarray(static["pathing"], bool),
        episode=episode,
        episode_step=step_in_ep,
        **arrays,
    )
    return path


def load_replay(path: str | Path) -> list[dict]:
    """Read a simulator replay into per-step render data (``render_frame`` input).

    Returns:
        One dict per recorded env step with the ``render_frame`` keys plus ``map_name``,
        ``episode`` (0-based episode index in the file) and ``episode_steps``.

    Raises:
        ValueError: the file is not a simulator replay of a supported version.
        FileNotFoundError: no such file.
    """
    try:
        z = np.load(Path(path), allow_pickle=False)
    except ValueError:  # not an .npy/.npz at all (numpy's message is about pickles)
        raise ValueError(f"{str(path)!r} is not a {REPLAY_FORMAT} .npz file (written by StarCraft2Env.save_replay)") from None
    if not hasattr(z, "files"):  # a bare .npy array
        raise ValueError(
            f"{str(path)!r} is a .npy array, not a {REPLAY_FORMAT} .npz file (written by StarCraft2Env.save_replay)"
        )
    with z:
        if "format" not in z.files or str(z["format"]) != REPLAY_FORMAT:
            raise ValueError(f"{str(path)!r} is not a {REPLAY_FORMAT} file (written by StarCraft2Env.save_replay)")
        if int(z["version"]) != REPLAY_VERSION:
            raise ValueError(f"{str(path)!r} has replay version {int(z['version'])}; this reader supports {REPLAY_VERSION}")
        d = {k: z[k] for k in z.files}
    episodes = np.unique(d["episode"], return_inverse=True)[1]
    names = [str(n) for n in d["names"]]
    static = {
        "radius": d["radius"],
        "max_health": d["max_health"],
        "max_shield": d["max_shield"],
        "is_ally": d["is_ally"],
        "names": names,
        "pathing": d["pathing"],
        "map_name": str(d["map_name"]),
    }
    return [
        dict(
            static,
            **{k: d[k][t] for k in _REPLAY_STEP_KEYS},
            episode=int(episodes[t]),
            episode_steps=int(d["episode_step"][t]),
        )
        for t in range(len(d["episode"]))
    ]


def replay_to_video(replay: str | Path, out: str | Path, fps: float = 4, scale: int = 16) -> Path:
    """Play a simulator replay back into a GIF or MP4 (``save_episode_video``).

    Args:
        replay: a ``.npz`` written by ``StarCraft2Env.save_replay``.
        out: ``*.gif`` or ``*.mp4``.
        fps: frames (env steps) per second; 2 is real time (an env step is 0.5 normal-speed s).
        scale: pixels per world unit.

    Returns:
        The written video path.
    """
    frames = [
        render_frame(d, scale=scale, title=f"{d['map_name']}  episode {d['episode']}  step {d['episode_steps']}")
        for d in load_replay(replay)
    ]
    return save_episode_video(frames, out, fps=fps)


def main(argv: list[str] | None = None) -> int:
    """``python -m sc2_envs.render REPLAY.npz --out battle.gif [--fps 4] [--scale 16]``."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m sc2_envs.render", description="Play a simulator replay (StarCraft2Env.save_replay) back to GIF/MP4."
    )
    parser.add_argument("replay", help="replay .npz file")
    parser.add_argument("--out", required=True, help="output .gif or .mp4")
    parser.add_argument("--fps", type=float, default=4.0, help="env steps per second of video (2 = real time)")
    parser.add_argument("--scale", type=int, default=16, help="pixels per world unit")
    args = parser.parse_args(argv)
    if not args.fps > 0:
        parser.error(f"--fps {args.fps}: expected env steps per second > 0")
    if args.scale < 1:
        parser.error(f"--scale {args.scale}: expected pixels per world unit >= 1")
    try:
        path = replay_to_video(args.replay, args.out, fps=args.fps, scale=args.scale)
    except (OSError, ValueError) as e:  # a missing or foreign replay, an unwritable output: one line, exit 2
        parser.error(str(e))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
