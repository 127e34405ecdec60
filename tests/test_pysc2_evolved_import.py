"""Importing pysc2-evolved for ``backend="sc2"`` prints nothing and leaves the process's logging alone.

pysc2-evolved 1.1.1's ``settings.py`` logs ``pysc2_evolved: TIMEOUT_SECONDS=60`` with a module-level
``logging.warning`` at import, which also runs ``logging.basicConfig()``. The tests use a stand-in
package with those lines (so they run without the ``full-game`` extra, and ahead of an installed
pysc2-evolved on ``sys.path``) in a fresh interpreter each, whose logging is unconfigured.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

SETTINGS = """\
import logging
import os

TIMEOUT_SECONDS = int(os.getenv("TIMEOUT_SECONDS", 60))
logging.warning(f"pysc2_evolved: TIMEOUT_SECONDS={TIMEOUT_SECONDS}")
"""


@pytest.fixture
def stand_in(tmp_path: Path) -> Path:
    """A ``pysc2_evolved`` package whose ``settings`` is 1.1.1's logging lines; ``maps`` and
    ``run_configs`` import it, as the real ones do."""
    pkg = tmp_path / "pysc2_evolved"
    (pkg / "lib").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "settings.py").write_text(SETTINGS)
    (pkg / "maps.py").write_text("from pysc2_evolved.settings import TIMEOUT_SECONDS\n")
    (pkg / "run_configs.py").write_text("from pysc2_evolved.settings import TIMEOUT_SECONDS\n")
    (pkg / "lib" / "__init__.py").write_text("")
    (pkg / "lib" / "protocol.py").write_text("")
    return tmp_path


def run(code: str, path: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(path), str(REPO)]))
    env.pop("TIMEOUT_SECONDS", None)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env, timeout=120, check=False
    )


AFTERWARDS = """
import logging
assert logging.getLogger().handlers == [] and logging.getLogger().filters == []
logging.basicConfig(format="USER %(message)s")  # the user's own configuration still takes effect
logging.warning("mine")
"""


def test_the_stand_in_shows_the_notice_and_the_root_handler(stand_in):
    out = run("import logging, pysc2_evolved.maps; print(len(logging.getLogger().handlers))", stand_in)
    assert "WARNING:root:pysc2_evolved: TIMEOUT_SECONDS=60" in out.stderr and out.stdout.strip() == "1"


@pytest.mark.parametrize(
    "first",
    [
        'from sc2_envs.full_game._deps import require; require("pysc2_evolved.maps", "finding the map file")',
        "from sc2_envs.sc2api import pysc2_alias; pysc2_alias.install(); import pysc2.run_configs",
        "from sc2_envs.sc2api.client import import_pysc2; import_pysc2()",
    ],
    ids=["full_game_require", "pysc2_alias", "sc2api_client"],
)
def test_backend_sc2_imports_print_no_timeout_notice_and_leave_logging_unconfigured(stand_in, first):
    out = run(first + AFTERWARDS, stand_in)
    assert out.returncode == 0, out.stderr
    assert out.stderr.strip() == "USER mine"


def test_other_root_warnings_during_the_import_still_show(stand_in):
    (stand_in / "pysc2_evolved" / "settings.py").write_text(SETTINGS + 'logging.warning("something else")\n')
    out = run('from sc2_envs.full_game._deps import require; require("pysc2_evolved.maps", "x")', stand_in)
    assert "TIMEOUT_SECONDS" not in out.stderr and "something else" in out.stderr
