"""Command line of the StarCraft II API route.

* ``python -m sc2_envs.sc2api install --path DIR [--build N]``: lay out a StarCraft II folder whose
  game is the simulator's API server (``sc2_envs.sc2api.install``).
* ``python -m sc2_envs.sc2api run SCRIPT [ARGS...]``: run an unmodified pysc2 / SMAC script (e.g.
  oxwhirl SMAC's ``smac/examples/random_agents.py``) against it: ``SC2PATH`` is pointed at a
  simulator install (a temporary one unless it already is one), ``import pysc2`` is served by
  pysc2-evolved when PyPI pysc2 is absent (``sc2_envs.sc2api.pysc2_alias``) and NumPy's removed
  ``np.int`` / ``np.float`` / ``np.bool`` aliases are restored; then SCRIPT runs as ``__main__``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sc2_envs.sc2api.install import install
from sc2_envs.sc2api.server import DEFAULT_BUILD


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sc2_envs.sc2api")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("install", help="lay out a StarCraft II folder that launches the simulator's API server")
    p.add_argument("--path", required=True, help="folder to use as SC2PATH")
    p.add_argument("--build", type=int, default=DEFAULT_BUILD, help=f"Versions/Base<build> (default {DEFAULT_BUILD})")
    r = sub.add_parser("run", help="run an unmodified pysc2/SMAC script against the simulator's API server")
    r.add_argument("script", help="Python script to run as __main__")
    r.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    args = parser.parse_args(argv)
    if args.command == "run":
        return _run(args.script, args.args)
    try:
        exe = install(args.path, build=args.build)
    except (OSError, ValueError) as e:  # an unusable folder or build: one line naming it, exit 2, no traceback
        p.error(f"--path {args.path!r} --build {args.build}: {e}")
    root = exe.parents[2]
    print(
        f"installed {exe}\nmaps in {root / 'Maps' / 'SMAC_Maps'} and {root / 'Maps' / 'Melee'}\n"
        f"use it with: export SC2PATH={root}"
    )
    return 0


def prepare_environment() -> Path:
    """Set up the process for unmodified pysc2 / SMAC code on the API server (what ``run`` does).

    Points ``SC2PATH`` at a simulator install (a temporary one, removed at exit, unless ``SC2PATH``
    already holds an ``SC2_x64`` of ours), serves ``import pysc2`` from pysc2-evolved when PyPI pysc2
    is absent and restores NumPy's removed ``np.int`` / ``np.float`` / ``np.bool`` / ``np.object``.

    Returns:
        The ``SC2PATH`` in use.
    """
    import importlib.util
    import os
    import tempfile

    from sc2_envs.numpy_aliases import restore_numpy_aliases
    from sc2_envs.sc2api import pysc2_alias

    root = Path(os.environ["SC2PATH"]).expanduser() if os.environ.get("SC2PATH") else None
    if root is None or not any(b"sc2_envs" in p.read_bytes() for p in root.glob("Versions/Base*/SC2_x64")):
        import atexit
        import shutil

        root = Path(tempfile.mkdtemp(prefix="sc2sim-"))
        atexit.register(shutil.rmtree, root, True)
        install(root)
        os.environ["SC2PATH"] = str(root)
    if importlib.util.find_spec("pysc2") is None:
        pysc2_alias.install()
    restore_numpy_aliases()
    return root


def _run(script: str, script_args: list[str]) -> int:
    import runpy

    path = Path(script).resolve()
    if not path.is_file():
        raise SystemExit(f"no such script: {script}")
    prepare_environment()
    sys.argv = [str(path), *script_args]
    sys.path.insert(0, str(path.parent))
    runpy.run_path(str(path), run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
