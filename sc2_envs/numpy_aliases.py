"""NumPy's removed scalar aliases, restored for third-party code run unedited.

``np.int``, ``np.float``, ``np.bool`` and ``np.object`` were deprecated in NumPy 1.20 and removed in
1.24 (NumPy 1.24.0 release notes, "Expired deprecations"); older code still uses them (HARL's SMAC
logger and off-policy runner use ``np.int``). The launchers that run third-party code unedited
(``sc2_envs.adapters.pymarl2``, ``sc2_envs.adapters.harl_smac``, ``python -m sc2_envs.sc2api run``)
call :func:`restore_numpy_aliases` before importing it.
"""

from __future__ import annotations

import numpy as np

ALIASES = (("int", int), ("float", float), ("bool", bool), ("object", object))
"""Each removed alias and the builtin it named."""


def restore_numpy_aliases() -> None:
    """Set each of :data:`ALIASES` on ``numpy`` to its builtin where NumPy lacks it; idempotent.

    NumPy 2 has its own ``np.bool`` (the bool_ scalar type), which is kept.
    """
    for alias, builtin in ALIASES:
        if alias not in np.__dict__:
            setattr(np, alias, builtin)
