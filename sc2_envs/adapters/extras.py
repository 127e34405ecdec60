"""A clear error when an optional library an integration needs is missing (instead of a bare ``ModuleNotFoundError``)."""

from __future__ import annotations

import importlib.util


def require(module: str, extra: str, what: str) -> None:
    """Raise ``ModuleNotFoundError`` saying how to install ``module`` (the project's ``extra``) when it is missing.

    Args:
        module: the top-level import name (``"ray"``, ``"benchmarl"``, ``"torchrl"``, ``"sb3_contrib"``).
        extra: the ``pyproject.toml`` extra that pins it (``"rllib"``, ``"benchmarl"``, ``"torchrl"``, ``"sb3"``).
        what: who needs it, for the message (e.g. ``"examples/rllib_ppo.py"``).

    Raises:
        ModuleNotFoundError: ``module`` cannot be imported here.
    """
    if importlib.util.find_spec(module) is None:
        raise ModuleNotFoundError(
            f"{what} needs {module}, which is not installed: pip install 'sc2-envs[{extra}]' (from a clone: "
            f"pip install -e '.[{extra}]'; docs/integrations.md lists the versions tested)",
            name=module,
        )
