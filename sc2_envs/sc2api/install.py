"""Lay out a StarCraft II folder whose "game" is the simulator's API server.

``python -m sc2_envs.sc2api install --path DIR [--build 75689]`` creates::

    DIR/Versions/Base<build>/SC2_x64    # executable: starts sc2_envs.sc2api.server with this Python
    DIR/Maps/SMAC_Maps/<map>.SC2Map     # one placeholder per SMAC map (pysc2 reads and sends the bytes)
    DIR/Maps/Melee/Simple64.SC2Map      # placeholder of Simple64, served from the lite engine
    DIR/Libs/                           # pysc2 adds it to LD_LIBRARY_PATH (empty)

With ``SC2PATH=DIR``, pysc2's ``run_configs.get().start()`` (what SMAC, pymarl2's and HARL's SMAC envs
call) launches the server as it launches the game. The placeholders are not SC2 map archives: the
server recognises a map by its path (``SMAC_Maps/<name>.SC2Map``, ``Melee/Simple64.SC2Map``); do not
install into a real game folder (the files would shadow the real maps).
"""

from __future__ import annotations

import shlex
import stat
import sys
from pathlib import Path

from sc2_envs.maps import list_maps
from sc2_envs.sc2api.lite_game import LITE_MAP_PATH
from sc2_envs.sc2api.server import DEFAULT_BUILD

__all__ = ["MAP_PLACEHOLDER_HEADER", "install"]

MAP_PLACEHOLDER_HEADER = b"sc2_envs simulated SMAC map\n"  # also heads the Simple64 placeholder (kept for old installs)
"""First line of every placeholder map file (how ``install`` recognises its own files)."""


def install(path: str | Path, build: int = DEFAULT_BUILD, python: str | None = None) -> Path:
    """Create the folder layout (module docstring); returns the ``SC2_x64`` path.

    Args:
        path: the StarCraft II root to create or update (``SC2PATH``).
        build: the ``Base<build>`` folder name; pysc2 picks the largest when no version is asked for.
        python: interpreter the launcher runs (default: this one).

    Raises:
        ValueError: ``build`` not a positive int.
        FileExistsError: a map file that is not one of ours already exists (a real game folder).
    """
    if not isinstance(build, int) or isinstance(build, bool) or build <= 0:
        raise ValueError(f"build must be a positive int (e.g. {DEFAULT_BUILD}), got {build!r}")
    root = Path(path).expanduser().resolve()
    files = [root / "Maps" / "SMAC_Maps" / f"{name}.SC2Map" for name in list_maps()]
    files.append(root / "Maps" / LITE_MAP_PATH)
    for f in files:  # check all before writing any: a real game folder is left untouched
        if f.exists() and not f.read_bytes().startswith(MAP_PLACEHOLDER_HEADER):
            raise FileExistsError(
                f"{f} exists and is not an sc2_envs placeholder (a real map?); install into an empty folder instead"
            )
    for f in files:
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(MAP_PLACEHOLDER_HEADER + f"name: {f.stem}\n".encode())
    (root / "Libs").mkdir(exist_ok=True)
    exe_dir = root / "Versions" / f"Base{build:05d}"
    exe_dir.mkdir(parents=True, exist_ok=True)
    exe = exe_dir / "SC2_x64"
    package_root = Path(__file__).resolve().parents[2]
    py = python or sys.executable
    exe.write_text(
        "#!/bin/sh\n"
        "# sc2_envs: the embedded simulator behind the StarCraft II API (python -m sc2_envs.sc2api install)\n"
        f"PYTHONPATH={shlex.quote(str(package_root))}${{PYTHONPATH:+:$PYTHONPATH}}\n"
        "export PYTHONPATH\n"
        "OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}\nexport OMP_NUM_THREADS\n"
        f'exec {shlex.quote(py)} -m sc2_envs.sc2api.server --build {build} "$@"\n'
    )
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return exe
