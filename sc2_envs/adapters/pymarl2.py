"""Train pymarl2 (hijkzzz/pymarl2: QMIX, Qatten, QPLEX, ...) on the simulator, pymarl2 unedited.

pymarl2 is not on the package registries; clone it (github.com/hijkzzz/pymarl2) and launch its own
training entry point (``src/main.py``, sacred-based) through this module::

    pip install "setuptools<81" sacred        # sacred imports pkg_resources, gone from setuptools >= 81
    python -m sc2_envs.adapters.pymarl2 --pymarl2-path /path/to/pymarl2 \\
        --config=qatten --env-config=sc2 with env_args.map_name=3m use_cuda=False t_max=20000

Every argument after ``--pymarl2-path`` / ``--sc2api`` goes to pymarl2's ``main.py`` unchanged
(its ``--config=``/``--env-config=`` and sacred ``with key=value`` overrides).

Two routes (docs/smac_codebases.md):

* default (Route 1): pymarl2's ``env="sc2"`` registry entry is its own copy of SMAC's env
  (``src/envs/starcraft/StarCraft2Env.py``, pysc2-based), and ``src/run/run.py`` builds oxwhirl
  SMAC's ``StarCraft2Env`` to size Qatten's per-agent state (``shield_bits_ally``,
  ``unit_type_bits``). The launcher serves ``envs.starcraft`` and ``smac.env`` from
  :class:`sc2_envs.adapters.smac_compat.StarCraft2Env` before pymarl2 is imported, so both run on
  the embedded simulator.
* ``--sc2api`` (Route 2): pymarl2's own pysc2-based env and oxwhirl SMAC (which it imports: put a
  checkout of oxwhirl/smac on ``PYTHONPATH`` or install it) run unedited against the simulator's
  StarCraft II API server: ``SC2PATH`` is pointed at a simulator install (a temporary one unless it
  already is one) and ``import pysc2`` is served by pysc2-evolved when PyPI pysc2 is absent, as
  ``python -m sc2_envs.sc2api run`` does.

Either way, before pymarl2 is imported, the launcher restores what pymarl2's ``main.py`` needs from
older Pythons and libraries (without touching its files): ``collections.Mapping`` and friends
(moved to ``collections.abc`` in Python 3.3, removed in 3.10), ``yaml.load(f)`` without a
``Loader`` (required since PyYAML 6; the launcher defaults it to ``yaml.FullLoader``, PyYAML 5's
default) and NumPy's removed ``np.int`` / ``np.float`` / ``np.bool`` / ``np.object`` aliases.
"""

from __future__ import annotations

import argparse
import collections
import collections.abc
import functools
import importlib.util
import os
import runpy
import sys
import types
from pathlib import Path

from sc2_envs.numpy_aliases import restore_numpy_aliases

__all__ = ["install_compat_shims", "install_simulator_shims", "main"]


def install_compat_shims() -> None:
    """Python 3.10+ / PyYAML 6 / NumPy 2 compatibility for pymarl2's unedited code; idempotent.

    Sets ``collections.Mapping`` / ``Sequence`` / ``MutableMapping`` / ``Iterable`` to their
    ``collections.abc`` classes when absent, makes ``yaml.load`` default ``Loader`` to
    ``yaml.FullLoader`` when none is passed, and restores NumPy's ``np.int`` / ``np.float`` /
    ``np.bool`` / ``np.object`` aliases (the builtins) when absent.
    """
    for name in ("Mapping", "MutableMapping", "Sequence", "Iterable", "Callable"):
        if not hasattr(collections, name):
            setattr(collections, name, getattr(collections.abc, name))
    restore_numpy_aliases()
    import yaml

    if not getattr(yaml.load, "_sc2_envs_default_loader", False):
        original = yaml.load

        @functools.wraps(original)
        def load(stream, Loader=None):  # noqa: N803 (PyYAML's keyword)
            return original(stream, Loader=Loader or yaml.FullLoader)

        load._sc2_envs_default_loader = True
        yaml.load = load


def install_simulator_shims() -> None:
    """Route 1: serve pymarl2's ``envs.starcraft`` and oxwhirl SMAC's ``smac.env`` from the simulator.

    Registers ``smac``, ``smac.env`` and ``envs.starcraft`` in ``sys.modules`` (idempotent); the
    last two expose :class:`sc2_envs.adapters.smac_compat.StarCraft2Env` as ``StarCraft2Env``
    (pymarl2's ``src/envs/__init__.py`` and ``src/run/run.py`` import nothing else from them).
    Must run before pymarl2's ``envs`` package is imported.
    """
    from sc2_envs.adapters import smac_compat

    env_cls = smac_compat.StarCraft2Env
    doc = "sc2_envs shim: SMAC's StarCraft2Env on the embedded simulator (sc2_envs.adapters.pymarl2)."
    smac = types.ModuleType("smac")
    smac.__path__ = []  # a package, so ``smac.env`` resolves from sys.modules
    smac_env = types.ModuleType("smac.env")
    smac_env.__path__ = []
    smac_env.StarCraft2Env = env_cls
    smac.env = smac_env
    starcraft = types.ModuleType("envs.starcraft")
    starcraft.StarCraft2Env = env_cls
    for mod in (smac, smac_env, starcraft):
        mod.__doc__ = doc
    sys.modules.update({"smac": smac, "smac.env": smac_env, "envs.starcraft": starcraft})


def _find_pymarl2(path: str | None) -> Path:
    for c in (path, os.environ.get("PYMARL2_PATH")):
        if c:
            root = Path(c).expanduser().resolve()
            if not (root / "src" / "main.py").is_file() or not (root / "src" / "envs" / "starcraft").is_dir():
                raise FileNotFoundError(
                    f"{root} is not a pymarl2 checkout (expected src/main.py and src/envs/starcraft/); "
                    "git clone https://github.com/hijkzzz/pymarl2"
                )
            return root
    raise FileNotFoundError(
        "no pymarl2 checkout given: pass --pymarl2-path DIR or set PYMARL2_PATH (git clone https://github.com/hijkzzz/pymarl2)"
    )


def _missing(module: str) -> bool:
    return importlib.util.find_spec(module) is None


def main(argv: list[str] | None = None) -> None:
    """``python -m sc2_envs.adapters.pymarl2 --pymarl2-path DIR [--sc2api] <pymarl2 main.py arguments>``.

    Raises:
        FileNotFoundError: no pymarl2 checkout at ``--pymarl2-path`` / ``$PYMARL2_PATH``.
        SystemExit: sacred (or its ``pkg_resources``) or, with ``--sc2api``, oxwhirl SMAC cannot be imported.
    """
    parser = argparse.ArgumentParser(
        prog="python -m sc2_envs.adapters.pymarl2",
        description="Run pymarl2's src/main.py with env=sc2 on the simulator (pymarl2 unedited).",
    )
    parser.add_argument("--pymarl2-path", default=None, help="pymarl2 checkout (default: $PYMARL2_PATH)")
    parser.add_argument(
        "--sc2api",
        action="store_true",
        help="run pymarl2's own pysc2-based SMAC env against the simulator's StarCraft II API server "
        "($SC2PATH from 'python -m sc2_envs.sc2api install', else a temporary one)",
    )
    args, rest = parser.parse_known_args(argv)
    root = _find_pymarl2(args.pymarl2_path)
    if _missing("pkg_resources"):
        raise SystemExit(
            "sacred (pymarl2's entry point) imports pkg_resources, which setuptools >= 81 dropped: "
            'pip install "setuptools<81" sacred'
        )
    if _missing("sacred"):
        raise SystemExit('pymarl2 needs sacred: pip install "setuptools<81" sacred')
    install_compat_shims()
    if args.sc2api:
        if _missing("smac"):
            raise SystemExit(
                "pymarl2's own SMAC env imports oxwhirl SMAC: put a checkout of github.com/oxwhirl/smac "
                "on PYTHONPATH (or pip install it from the checkout)"
            )
        from sc2_envs.sc2api.__main__ import prepare_environment

        prepare_environment()
    else:
        install_simulator_shims()
    script = root / "src" / "main.py"
    sys.path.insert(0, str(script.parent))
    sys.argv = [str(script), *rest]
    runpy.run_path(str(script), run_name="__main__")


if __name__ == "__main__":
    main()
