"""Unmodified oxwhirl SMAC runs on the simulator's StarCraft II API server, with the embedded env's results.

oxwhirl SMAC is not on PyPI and needs PyPI ``pysc2``, which pins protobuf < 3.21 (this project's
``full-game`` extra uses protobuf >= 4), so SMAC runs in its own interpreter:

    python -m venv /tmp/smacvenv && /tmp/smacvenv/bin/pip install "pysc2==4.0.0" "protobuf<3.21"
    git clone https://github.com/oxwhirl/smac /tmp/smac
    SMAC_PYTHON=/tmp/smacvenv/bin/python SMAC_PATH=/tmp/smac python -m pytest tests/test_sc2api_smac.py

Those tests are skipped (with this reason) when ``SMAC_PYTHON`` / ``SMAC_PATH`` are not set. The
backend test runs SMAC in this interpreter (``import pysc2`` served by pysc2-evolved) and needs only
``SMAC_PATH``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sc2_envs.adapters import StarCraft2Env
from sc2_envs.sc2api.install import install

SMAC_PYTHON, SMAC_PATH = os.environ.get("SMAC_PYTHON"), os.environ.get("SMAC_PATH")
needs_smac_venv = pytest.mark.skipif(
    not (SMAC_PYTHON and SMAC_PATH and (Path(SMAC_PATH) / "smac" / "env" / "starcraft2" / "starcraft2.py").is_file()),
    reason="needs oxwhirl SMAC (not on PyPI) and an interpreter with PyPI pysc2: set SMAC_PATH to a checkout of "
    "github.com/oxwhirl/smac and SMAC_PYTHON to a python with pysc2==4.0.0 and protobuf<3.21",
)


@needs_smac_venv
@pytest.mark.parametrize("map_name,seed", [("3m", 7), ("2s3z", 3), ("MMM", 5)])
def test_unmodified_smac_equals_embedded_env(tmp_path, map_name, seed):
    install(tmp_path / "StarCraftII")
    out = tmp_path / "smac.npz"
    env = {**os.environ, "SC2PATH": str(tmp_path / "StarCraftII"), "PYTHONPATH": SMAC_PATH, "OMP_NUM_THREADS": "1"}
    script = Path(__file__).parent / "scripts" / "smac_episodes.py"
    r = subprocess.run(
        [SMAC_PYTHON, str(script), map_name, str(seed), "2", str(out)],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    smac = np.load(out)
    emb = StarCraft2Env(map_name, seed=seed)
    episode = -1
    for t in range(len(smac["reward"])):
        if smac["episode"][t] != episode:
            episode = smac["episode"][t]
            emb.reset()
            perm = [(int(tag) & ((1 << 18) - 1)) - 1 for tag in smac["tags"][t]]
        # SMAC's vectors equal SMAC's rules on the embedded env's units, in SMAC's agent order
        agents, last = emb.agents, emb.last_action
        relabelled = last[perm].copy()
        for k in range(emb.n_agents):
            if emb.map_type == "MMM" and agents[perm[k]].unit_type == emb.medivac_id:
                relabelled[k, 6 : 6 + emb.n_agents] = last[perm[k], 6 + np.asarray(perm)]
        emb.agents = {k: agents[perm[k]] for k in range(emb.n_agents)}
        emb.last_action = relabelled
        try:
            assert smac["avail"][t].tolist() == [emb.rules_avail_agent_actions(k) for k in range(emb.n_agents)]
            np.testing.assert_allclose(
                smac["obs"][t], np.stack([emb.rules_obs_agent(k) for k in range(emb.n_agents)]), atol=1e-6
            )
            np.testing.assert_allclose(smac["state"][t], emb.rules_state(), atol=1e-6)
        finally:
            emb._units, emb.last_action = None, last
        acts = [0] * emb.n_agents
        for k, a in enumerate(smac["actions"][t]):
            healer = emb.map_type == "MMM" and emb.agents[perm[k]].unit_type == emb.medivac_id
            acts[perm[k]] = 6 + perm[a - 6] if (healer and a >= 6) else int(a)
        reward, terminated, info = emb.step(acts)
        assert reward == pytest.approx(float(smac["reward"][t]), rel=1e-5, abs=1e-6)
        assert terminated == bool(smac["terminated"][t]) and info["battle_won"] == bool(smac["won"][t])
    assert emb.battles_game == 2


needs_smac_checkout = pytest.mark.skipif(
    not (SMAC_PATH and (Path(SMAC_PATH) / "smac" / "env" / "starcraft2" / "starcraft2.py").is_file()),
    reason="needs a checkout of github.com/oxwhirl/smac (not on PyPI) in SMAC_PATH",
)


@needs_smac_checkout
def test_sc2_backend_runs_on_the_api_server(tmp_path, monkeypatch):
    """``StarCraft2Env(backend="sc2")`` (oxwhirl SMAC inside this package, pysc2 served by pysc2-evolved)
    on the API server: same rewards, ends and wins as the embedded env."""
    pytest.importorskip("pysc2_evolved", reason="the in-process route needs pysc2-evolved (full-game extra)")
    install(tmp_path / "StarCraftII")
    monkeypatch.setenv("SC2PATH", str(tmp_path / "StarCraftII"))
    monkeypatch.syspath_prepend(SMAC_PATH)
    game = StarCraft2Env("3m", backend="sc2", seed=7)
    emb = StarCraft2Env("3m", seed=7)
    rng = np.random.default_rng(0)
    try:
        for _ in range(2):
            game.reset()
            emb.reset()
            perm = [(int(u.tag) & ((1 << 18) - 1)) - 1 for u in game.agents.values()]
            while True:
                acts = [int(rng.choice(np.flatnonzero(a))) for a in game.get_avail_actions()]
                emb_acts = [0] * 3
                for k, a in enumerate(acts):
                    emb_acts[perm[k]] = a
                r_g, t_g, i_g = game.step(acts)
                r_e, t_e, i_e = emb.step(emb_acts)
                assert r_g == pytest.approx(r_e, rel=1e-5, abs=1e-6)
                assert (t_g, i_g["battle_won"], i_g["dead_allies"]) == (t_e, i_e["battle_won"], i_e["dead_allies"])
                if t_g:
                    break
        assert game.get_stats()["battles_game"] == 2
    finally:
        game.close()


@needs_smac_checkout
def test_smac_example_script_runs_unchanged(tmp_path):
    """oxwhirl SMAC's own ``smac/examples/random_agents.py`` (10 episodes of 8m) through ``sc2api run``."""
    pytest.importorskip("pysc2_evolved", reason="sc2api run serves import pysc2 from pysc2-evolved")
    root = Path(__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if k != "SC2PATH"}
    env.update(PYTHONPATH=os.pathsep.join([str(root), SMAC_PATH]), OMP_NUM_THREADS="1")
    script = Path(SMAC_PATH) / "smac" / "examples" / "random_agents.py"
    r = subprocess.run(
        [sys.executable, "-m", "sc2_envs.sc2api", "run", str(script)],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    assert r.stdout.count("Total reward in episode") == 10
