"""The peer simulators beside ours (``benchmarks/peers.py``): SMAClite's fidelity column and the
``env_throughput.py --peers`` run. Tests that need SMAClite or JaxMARL skip, saying why, when they are
not importable (see ``tests/conftest.py``: ``SMACLITE_PATH``; the ``peers`` extra)."""

from __future__ import annotations

import csv
import math

import pytest
from conftest import load_algo

from sc2_envs import make_batched


def test_smaclite_column_of_fidelity_table_on_2s3z(smaclite_module):
    fidelity_table = load_algo("fidelity_table", folder="benchmarks")
    args = fidelity_table.Args(maps=["2s3z"], episodes=1, seed=3)
    r = fidelity_table.evaluate_smaclite("2s3z", "heuristic", args)
    assert r["episodes"] == 1 and r["wins"] + r["timeouts"] <= 1
    assert 1 <= r["mean_length"] <= 120  # 2s3z's SMAC episode limit, imposed on SMAClite
    assert r["win_ci"][0] <= r["wins"] <= r["win_ci"][1]
    # seeded: the same episode again (SMAClite's only randomness is its per-tick unit order)
    again = fidelity_table.evaluate_smaclite("2s3z", "heuristic", args)
    assert {k: again[k] for k in ("wins", "timeouts", "mean_length")} == {k: r[k] for k in ("wins", "timeouts", "mean_length")}
    # maps SMAClite does not ship have no column
    assert fidelity_table.evaluate_smaclite("3m", "heuristic", args) is None


def test_smaclite_env_has_smacs_sizes_on_2s3z(smaclite_module):
    """SMAClite keeps SMAC's obs / state / action sizes, so its column compares like with like."""
    peers = load_algo("peers", folder="benchmarks")
    env = peers.make_smaclite("2s3z", seed=0)
    obs, _ = env.reset(seed=0)
    u = env.unwrapped
    info = make_batched("2s3z", num_envs=1).get_env_info()
    assert (u.n_agents, u.n_actions, len(obs[0]), len(u.get_state())) == (
        info["n_agents"],
        info["n_actions"],
        info["obs_shape"],
        info["state_shape"],
    )
    with pytest.raises(ValueError, match="SMAClite has no map '3m'"):
        peers.make_smaclite("3m", seed=0)


def test_env_throughput_peers_runs_and_says_why_a_peer_is_missing(tmp_path, capsys):
    env_throughput = load_algo("env_throughput", folder="benchmarks")
    peers = load_algo("peers", folder="benchmarks")
    # 2m_vs_1z: neither SMAX nor SMAClite has it, so this runs fast with or without them installed
    args = env_throughput.Args(
        maps=["2m_vs_1z"], batch_sizes=[2], peers=True, peer_windows=2, peer_window_s=0.05, out=str(tmp_path / "t.csv")
    )
    env_throughput.main(args)
    out = capsys.readouterr().out
    smax_reason = peers.import_smax()[1]
    assert (f"SMAX skipped: {smax_reason}" if smax_reason else "2m_vs_1z: SMAX has no such scenario") in out
    with open(tmp_path / "t_peers.csv", newline="") as f:
        (fields,) = list(csv.DictReader(f))
    assert fields["map"] == "2m_vs_1z" and fields["B"] == "2" and float(fields["ours_env_steps_per_s"]) > 0
    assert math.isnan(float(fields["smax_env_steps_per_s"])) and math.isnan(float(fields["ours_over_smax"]))
    assert float(fields["ours_mib_per_env_last_window"]) >= 0
    with pytest.raises(SystemExit, match="--peer-windows 0"):
        env_throughput.main(env_throughput.Args(maps=["3m"], batch_sizes=[1], peers=True, peer_windows=0))


@pytest.mark.slow
def test_smax_stepper_counts_b_envs_per_step():
    peers = load_algo("peers", folder="benchmarks")
    if peers.import_smax()[0] is None:
        pytest.skip(peers.import_smax()[1])
    s = peers.SMAXStepper("3m", 4, seed=0)  # compiles (tens of seconds on CPU)
    assert s.num_envs == 4 and peers.time_window(s, 0.01, chunk=2) > 0
    with pytest.raises(ValueError, match="SMAX has no scenario 'MMM'"):
        peers.SMAXStepper("MMM", 4)
