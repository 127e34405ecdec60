"""Lazy imports of the optional full-game dependencies with an actionable error."""

from __future__ import annotations

import importlib
from types import ModuleType

INSTALL_HINT = (
    "Install the full-game extra: pip install -e '.[full-game]' "
    "(pysc2-evolved, s2protocol, sc2reader; pysc2-evolved brings pys2clientprotocol, the "
    "s2clientprotocol modules regenerated for protobuf 7)."
)


class MissingDependencyError(ImportError):
    """An optional dependency of ``sc2_envs.full_game`` / ``sc2_envs.replays`` is missing."""


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
