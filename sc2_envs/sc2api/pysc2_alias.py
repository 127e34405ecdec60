"""Let code written for ``pysc2`` import ``pysc2_evolved`` (the maintained fork this project installs).

oxwhirl SMAC, pymarl2's and HARL's SMAC envs do ``from pysc2 import maps, run_configs`` and
``from pysc2.lib import protocol``. PyPI ``pysc2`` 4.0.0 needs an ``s2clientprotocol`` built for
protobuf < 3.21, which cannot live beside this project's protobuf stack; ``pysc2-evolved`` (the
``full-game`` extra) keeps pysc2's module layout under the name ``pysc2_evolved`` with an
``s2clientprotocol`` regenerated for current protobuf. ``install()`` adds an import hook so that
``pysc2`` and every ``pysc2.<sub>`` resolve to the same module objects of ``pysc2_evolved`` (so
``pysc2.lib.actions.ActionSpace`` is the class ``pysc2_evolved``'s own env code checks against); nothing
on disk changes, and a real ``pysc2``, if installed, wins.

Known difference: pysc2-evolved has no absl flags (``FLAGS.sc2_*``); launch and read timeouts come from
its ``TIMEOUT_SECONDS`` environment variable (default 60 s instead of pysc2's 360 s).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys

__all__ = ["install"]


class _Pysc2Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name != "pysc2" and not name.startswith("pysc2."):
            return None
        if name == "pysc2":
            if importlib.machinery.PathFinder.find_spec("pysc2") is not None:
                return None  # a real pysc2 is installed: it wins
        elif getattr(sys.modules.get("pysc2"), "__name__", None) != "pysc2_evolved":
            return None  # pysc2 is a real one (or not imported through this hook)
        # This finder runs before the path finder: otherwise ``pysc2.lib.actions`` would be found on the
        # aliased package's __path__ and executed a second time as a distinct module.
        real = "pysc2_evolved" + name[len("pysc2") :]
        if importlib.util.find_spec(real) is None:
            return None
        module = importlib.import_module(real)
        return importlib.util.spec_from_loader(name, self, is_package=hasattr(module, "__path__"))

    def create_module(self, spec):
        return importlib.import_module("pysc2_evolved" + spec.name[len("pysc2") :])

    def exec_module(self, module):
        pass  # already executed under its real name


def install() -> None:
    """Register the import hook (idempotent).

    Raises:
        ImportError: ``pysc2_evolved`` is not installed (``pip install 'sc2-envs[full-game]'``).
    """
    if importlib.util.find_spec("pysc2_evolved") is None:
        raise ImportError("pysc2_evolved is not installed: pip install 'sc2-envs[full-game]'")
    from sc2_envs.full_game._deps import import_pysc2_evolved_settings

    import_pysc2_evolved_settings()  # before SMAC / HARL import it through the alias: no notice, no root handler
    if not any(isinstance(f, _Pysc2Alias) for f in sys.meta_path):
        sys.meta_path.insert(0, _Pysc2Alias())
