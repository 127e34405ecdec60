"""pymarl2's own entry point (``src/main.py``, sacred) trains Qatten on 3m through ``sc2_envs.adapters.pymarl2``.

pymarl2 (github.com/hijkzzz/pymarl2) is not on the package registries, and its entry point needs
``sacred``, whose current release imports ``pkg_resources`` (gone from setuptools >= 81). Set
``PYMARL2_PATH`` to a checkout and ``PYMARL2_PYTHON`` to an interpreter that imports ``sacred``
(e.g. a venv made with ``--system-site-packages`` plus ``pip install "setuptools<81" sacred``) to
run the end-to-end tests; Route 2 also needs ``SMAC_PATH`` (a checkout of oxwhirl/smac, which
pymarl2's own env imports). They are skipped otherwise. The shim tests need neither.
"""

import collections
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from sc2_envs.adapters import pymarl2 as launcher
from sc2_envs.adapters.smac_compat import StarCraft2Env

ROOT = Path(__file__).parents[2]
PYMARL2_PATH = os.environ.get("PYMARL2_PATH")
PYMARL2_PYTHON = os.environ.get("PYMARL2_PYTHON")
SMAC_PATH = os.environ.get("SMAC_PATH")
needs_pymarl2 = pytest.mark.skipif(
    not PYMARL2_PATH or not (Path(PYMARL2_PATH) / "src" / "main.py").is_file() or not PYMARL2_PYTHON,
    reason="pymarl2 is not on PyPI and needs sacred (<- pkg_resources, setuptools < 81): set PYMARL2_PATH to a "
    "checkout of github.com/hijkzzz/pymarl2 and PYMARL2_PYTHON to a python that imports sacred",
)
needs_smac = pytest.mark.skipif(
    not SMAC_PATH or not (Path(SMAC_PATH) / "smac" / "env" / "__init__.py").is_file(),
    reason="pymarl2's own SMAC env imports oxwhirl SMAC: set SMAC_PATH to a checkout of github.com/oxwhirl/smac",
)

# Qatten (pymarl2's qatten.yaml: parallel runner, td_lambda, agent_own_state_size from SMAC's
# shield_bits_ally / unit_type_bits) shrunk to a few episodes on one env: 4 training updates.
TINY = [
    "--config=qatten",
    "--env-config=sc2",
    "with",
    "env_args.map_name=3m",
    "use_cuda=False",
    "runner=episode",
    "batch_size_run=1",
    "batch_size=2",
    "buffer_size=50",
    "t_max=150",
    "test_interval=100",
    "test_nepisode=1",
    "log_interval=100",
    "runner_log_interval=100",
    "learner_log_interval=100",
    "seed=0",
]


def _run_pymarl2(extra, pythonpath, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "SC2PATH"}
    env.update(PYTHONPATH=os.pathsep.join(pythonpath), OMP_NUM_THREADS="1")
    cmd = [PYMARL2_PYTHON, "-m", "sc2_envs.adapters.pymarl2", "--pymarl2-path", PYMARL2_PATH, *extra, *TINY]
    r = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=500, cwd=tmp_path, env=env)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    assert "Finished Training" in out, out[-4000:]
    t_env = [int(t) for t in re.findall(r"t_env: (\d+) / 150", out)]  # run.py's progress, every log_interval
    assert len(t_env) >= 2 and t_env[-1] >= 100, out[-4000:]
    returns = [float(v) for v in re.findall(r"\breturn_mean:\s+([-\d.]+)", out)]
    assert returns and all(0.0 <= v <= 20.0 for v in returns), returns  # SMAC's scaled return, max 20
    assert re.search(r"\bloss_td:\s+[\d.]+", out), "the learner never logged a TD loss"
    return out


def test_simulator_shims_serve_smac_and_pymarl2_env(monkeypatch):
    for name in ("smac", "smac.env", "envs.starcraft"):
        monkeypatch.setitem(sys.modules, name, None)  # restored (or removed) after the test
    launcher.install_simulator_shims()
    from envs.starcraft import StarCraft2Env as pymarl2_env
    from smac.env import StarCraft2Env as smac_env

    assert pymarl2_env is StarCraft2Env and smac_env is StarCraft2Env
    env = smac_env(map_name="3m", seed=0)
    # pymarl2's run.py sizes Qatten's per-agent state as 4 + shield_bits_ally + unit_type_bits
    assert 4 + env.shield_bits_ally + env.unit_type_bits == 4


def test_compat_shims(monkeypatch, tmp_path):
    monkeypatch.setattr(yaml, "load", yaml.load)
    for name in ("Mapping", "MutableMapping", "Sequence", "Iterable", "Callable"):
        monkeypatch.setattr(collections, name, None, raising=False)
        monkeypatch.delattr(collections, name)
    launcher.install_compat_shims()
    launcher.install_compat_shims()  # idempotent
    assert collections.Mapping is collections.abc.Mapping and isinstance({}, collections.Mapping)
    assert yaml.load("a: [1, 2]") == {"a": [1, 2]}  # pymarl2's main.py passes no Loader
    assert yaml.load("a: 1", Loader=yaml.SafeLoader) == {"a": 1}
    assert np.int is int


def test_launcher_without_pymarl2_says_how(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "sc2_envs.adapters.pymarl2", "--pymarl2-path", str(tmp_path)],
        check=False,
        capture_output=True,
        text=True,
        env={**os.environ, "PYMARL2_PATH": "", "PYTHONPATH": str(ROOT)},
    )
    assert r.returncode != 0 and "not a pymarl2 checkout" in r.stderr


@needs_pymarl2
def test_pymarl2_qatten_trains_on_the_simulator(tmp_path):
    """Route 1: pymarl2's registry and run.py get our StarCraft2Env; no game process is launched."""
    out = _run_pymarl2([], [str(ROOT)], tmp_path)
    assert "Launching SC2" not in out
    assert "'agent_own_state_size': True" in out  # Qatten's setting, sized from shield_bits_ally


@needs_pymarl2
@needs_smac
def test_pymarl2_own_smac_env_trains_over_the_api(tmp_path):
    """Route 2: pymarl2's own pysc2-based env, unedited, launches our API server through SC2PATH."""
    out = _run_pymarl2(["--sc2api"], [str(ROOT), SMAC_PATH], tmp_path)
    assert re.search(r"Launching SC2: \S+/Versions/Base\d+/SC2_x64", out), out[-4000:]
