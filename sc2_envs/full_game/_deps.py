"""Lazy imports of the optional full-game dependencies with an actionable error."""

from __future__ import annotations

import importlib
import importlib.util
import logging
import sys
from types import ModuleType

INSTALL_HINT = (
    "Install the full-game extra: pip install -e '.[full-game]' "
    "(pysc2-evolved, s2protocol, sc2reader; pysc2-evolved brings pys2clientprotocol, the "
    "s2clientprotocol modules regenerated for protobuf 7)."
)


class MissingDependencyError(ImportError):
    """An optional dependency of ``sc2_envs.full_game`` / ``sc2_envs.replays`` is missing."""


PYSC2_EVOLVED_TIMEOUT_NOTICE = "pysc2_evolved: TIMEOUT_SECONDS="
"""Start of the line ``pysc2_evolved/settings.py`` (pysc2-evolved 1.1.1, lines 11-12) logs when imported."""


def import_pysc2_evolved_settings() -> None:
    """Import ``pysc2_evolved.settings`` without what its import does to the process's logging.

    pysc2-evolved 1.1.1's ``settings.py`` runs ``logging.warning(f"pysc2_evolved: TIMEOUT_SECONDS=...")``
    at import, and every module of it that reaches the game imports ``settings`` (``maps``,
    ``run_configs``, ``lib.sc_process``, ``lib.remote_controller``). That prints a ``WARNING:root:`` line
    on stderr whenever ``backend="sc2"`` (FullGame-v0, SMAC, the SC2-API client) starts, and, because the
    module-level ``logging.warning`` runs ``logging.basicConfig()`` on a root logger without handlers,
    it also installs a stderr handler on the root logger, so a later ``logging.basicConfig(...)`` of the
    user's does nothing. Here the module is imported with that one record filtered out and, while the
    root logger has no handler, Python's ``logging.lastResort`` on it (so ``basicConfig`` leaves it alone
    and any other warning prints as it would have); both are removed afterwards. The timeout itself is
    documented where it matters (docs/smac_codebases.md).

    Does nothing when ``pysc2_evolved`` is not installed or ``settings`` is already imported.
    """
    name = "pysc2_evolved.settings"
    if name in sys.modules or importlib.util.find_spec("pysc2_evolved") is None:
        return
    root = logging.getLogger()

    def keep(record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(PYSC2_EVOLVED_TIMEOUT_NOTICE)

    placeholder = (logging.lastResort or logging.NullHandler()) if not root.handlers else None
    if placeholder is not None:
        root.addHandler(placeholder)
    root.addFilter(keep)
    try:
        importlib.import_module(name)
    except ImportError:
        pass  # require() names the missing piece when the caller's own import fails
    finally:
        root.removeFilter(keep)
        if placeholder is not None:
            root.removeHandler(placeholder)


def require(module: str, purpose: str) -> ModuleType:
    """Import ``module`` or raise ``MissingDependencyError`` naming what needs it.

    Args:
        module: dotted module name, e.g. ``"s2clientprotocol.sc2api_pb2"``.
        purpose: what the caller needs it for, shown in the error.

    Raises:
        MissingDependencyError: the module (or one it imports) is not installed, or its
            protobuf code does not load (e.g. the old ``s2clientprotocol`` dist under
            protobuf >= 4 raises ``TypeError: Descriptors cannot be created directly``).
    """
    if module.split(".")[0] == "pysc2_evolved":
        import_pysc2_evolved_settings()
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise MissingDependencyError(
            f"{module} is needed for {purpose} but could not be imported ({e}). {INSTALL_HINT}"
        ) from e
    except TypeError as e:
        raise MissingDependencyError(
            f"{module} is installed but its protobuf code does not load with this protobuf ({e}). "
            f"Uninstall 's2clientprotocol' and {INSTALL_HINT}"
        ) from e
