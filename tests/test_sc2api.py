"""The simulator behind the StarCraft II API: pysc2's own launcher and client drive SMAC games on it.

``python -m sc2_envs.sc2api install`` lays out a StarCraft II folder; pysc2's ``run_configs`` (from
PyPI: ``pysc2-evolved``, the project's ``full-game`` dependency, or ``pysc2``) launch its ``SC2_x64``
and ``RemoteController`` talks to it. SMAC's rules applied to the protocol's raw units
(``SMACProtocolEnv``) must give the embedded env's results for the same seed and actions.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from sc2_envs.adapters import StarCraft2Env
from sc2_envs.sc2api.install import install
from sc2_envs.sc2api.raw import raw_units_from_sim

# pysc2-evolved waits TIMEOUT_SECONDS (default 60) for the launched server; a loaded CI box can need more.
os.environ.setdefault("TIMEOUT_SECONDS", "300")
pytest.importorskip("s2clientprotocol", reason="the protocol route needs s2clientprotocol (full-game extra)")
try:
    from sc2_envs.sc2api.client import SMACProtocolEnv, import_pysc2

    import_pysc2()
except ImportError as e:  # pragma: no cover - depends on the extras installed
    pytest.skip(f"needs pysc2 or pysc2-evolved (full-game extra): {e}", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def sc2path(tmp_path_factory):
    path = tmp_path_factory.mktemp("StarCraftII")
    install(path)
    old = os.environ.get("SC2PATH")
    os.environ["SC2PATH"] = str(path)
    yield path
    if old is None:
        os.environ.pop("SC2PATH", None)
    else:
        os.environ["SC2PATH"] = old


def _sim_index(tag: int) -> int:
    return (tag & ((1 << 18) - 1)) - 1


def _embedded_in_client_order(emb, perm):
    """SMAC's rules on the embedded env's records, agents renumbered as the protocol client sees them."""
    agents = emb.agents
    emb.agents = {k: agents[perm[k]] for k in range(emb.n_agents)}
    last = emb.last_action
    relabelled = last[perm].copy()
    for k in range(emb.n_agents):  # a medivac's action 6 + j heals ally j: ally ids differ between the orders
        if emb.map_type == "MMM" and emb.agents[k].unit_type == emb.medivac_id:
            relabelled[k, 6 : 6 + emb.n_agents] = last[perm[k], 6 + np.asarray(perm)]
    emb.last_action = relabelled
    try:
        out = (
            [emb.rules_obs_agent(k) for k in range(emb.n_agents)],
            emb.rules_state(),
            [emb.rules_avail_agent_actions(k) for k in range(emb.n_agents)],
        )
    finally:
        emb._units = None
        emb.last_action = last
    return out


@pytest.mark.parametrize("map_name,seed", [("3m", 7), ("2s3z", 3), ("MMM", 5)])
def test_protocol_route_equals_embedded_env(sc2path, map_name, seed):
    client = SMACProtocolEnv(map_name, seed=seed)
    emb = StarCraft2Env(map_name, seed=seed)
    rng = np.random.default_rng(seed)
    outcomes = []
    try:
        for _episode in range(2):
            client.reset()
            emb.reset()
            perm = [_sim_index(client.agents[k].tag) for k in range(client.n_agents)]
            assert sorted(perm) == list(range(client.n_agents))
            steps = 0
            while True:
                # the raw units on the wire are the simulator's units, bit for bit (float32)
                wire = {u.tag: u for u in client._controller.observe().observation.raw_data.units}
                ref = {u.tag: u for u in raw_units_from_sim(emb.sim)}
                assert wire.keys() == ref.keys()
                for tag, u in ref.items():
                    w = wire[tag]
                    assert (w.unit_type, w.owner, w.health, w.shield, w.energy, w.weapon_cooldown) == (
                        u.unit_type,
                        u.owner,
                        np.float32(u.health),
                        np.float32(u.shield),
                        np.float32(u.energy),
                        np.float32(u.weapon_cooldown),
                    )
                    assert (w.pos.x, w.pos.y) == (np.float32(u.pos.x), np.float32(u.pos.y))
                obs, state, avail = _embedded_in_client_order(emb, perm)
                assert client.get_avail_actions() == avail
                np.testing.assert_allclose(np.stack(client.get_obs()), np.stack(obs), atol=1e-6)
                np.testing.assert_allclose(client.get_state(), state, atol=1e-6)
                acts = [int(rng.choice(np.flatnonzero(a))) for a in client.get_avail_actions()]
                emb_acts = [0] * emb.n_agents
                for k, a in enumerate(acts):
                    healer = client.map_type == "MMM" and client.agents[k].unit_type == client.medivac_id
                    emb_acts[perm[k]] = 6 + perm[a - 6] if (healer and a >= 6) else a
                r_c, t_c, i_c = client.step(acts)
                r_e, t_e, i_e = emb.step(emb_acts)
                assert t_c == t_e and i_c["battle_won"] == i_e["battle_won"]
                assert (i_c["dead_allies"], i_c["dead_enemies"]) == (i_e["dead_allies"], i_e["dead_enemies"])
                assert r_c == pytest.approx(r_e, rel=1e-5, abs=1e-6)
                steps += 1
                if t_c:
                    outcomes.append((steps, i_c["battle_won"]))
                    break
        assert client.get_stats() == emb.get_stats()
        assert client.battles_game == emb.battles_game == 2 and client.battles_won == emb.battles_won
        assert client.max_reward == pytest.approx(emb.max_reward)
    finally:
        client.close()
    assert len(outcomes) == 2


# ---------------------------------------------------------------------- protocol errors and robustness
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_server(port, *extra):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sc2_envs.sc2api.server",
            "-listen",
            "127.0.0.1",
            "-port",
            str(port),
            "-dataDir",
            "/nonexistent/",
            "-tempDir",
            "/tmp/x/",
            *extra,
        ],
        env=env,
    )


def _connect(port, timeout=120):
    import websocket

    t0 = time.time()
    while True:
        try:
            return websocket.create_connection(f"ws://127.0.0.1:{port}/sc2api", timeout=60)
        except (ConnectionRefusedError, OSError):
            if time.time() - t0 > timeout:
                raise
            time.sleep(0.3)


def _rpc(ws, **fields):
    from s2clientprotocol import sc2api_pb2 as sc

    req = sc.Request(**fields)
    ws.send(req.SerializeToString())  # pysc2 sends bytes in text frames
    return sc.Response.FromString(ws.recv())


def _create(ws, map_path="SMAC_Maps/3m.SC2Map"):
    from s2clientprotocol import sc2api_pb2 as sc

    create = sc.RequestCreateGame(local_map=sc.LocalMap(map_path=map_path), realtime=False, random_seed=1)
    create.player_setup.add(type=sc.Participant)
    create.player_setup.add(type=sc.Computer, race=1, difficulty=7)
    return _rpc(ws, create_game=create, id=2)


def test_create_game_refuses_a_computer_difficulty_the_simulator_does_not_play():
    # found by a tester: a Computer of difficulty 1 (VeryEasy) was accepted and played as SMAC's difficulty 7
    from s2clientprotocol import sc2api_pb2 as sc

    from sc2_envs.sc2api.server import SC2APIGame

    def create(difficulty=None):
        req = sc.RequestCreateGame(local_map=sc.LocalMap(map_path="SMAC_Maps/3m.SC2Map"), realtime=False)
        req.player_setup.add(type=sc.Participant)
        computer = req.player_setup.add(type=sc.Computer, race=1)
        if difficulty is not None:
            computer.difficulty = difficulty
        game = SC2APIGame()
        return game, sc.Response.FromString(game.handle(sc.Request(create_game=req, id=1).SerializeToString()))

    game, r = create(sc.VeryEasy)
    assert r.create_game.error == sc.ResponseCreateGame.InvalidPlayerSetup and game.status == "launched"
    assert "difficulty 7 (VeryHard); got Computer difficulty 1" in r.create_game.error_details
    for ok in (sc.VeryHard, None):
        game, r = create(ok)
        assert not r.create_game.HasField("error") and game.status == "init_game"


def test_protocol_errors_crash_and_cleanup():
    from s2clientprotocol import sc2api_pb2 as sc

    port = _free_port()
    proc = _start_server(port, "--idle-exit", "30")
    try:
        ws = _connect(port)
        r = _rpc(ws, ping=sc.RequestPing(), id=1)
        assert r.id == 1 and r.status == sc.launched and r.ping.base_build > 0
        r = _rpc(ws, available_maps=sc.RequestAvailableMaps(), id=5)
        assert "'available_maps' is not supported" in r.error[0] and "ping, create_game" in r.error[0]
        r = _create(ws, "Ladder/Simple64.SC2Map")
        assert r.create_game.error == sc.ResponseCreateGame.InvalidMapPath
        assert "Simple64" in r.create_game.error_details and "3m, 3s5z" in r.create_game.error_details
        assert _create(ws).status == sc.init_game
        r = _rpc(ws, join_game=sc.RequestJoinGame(race=1, options=sc.InterfaceOptions(raw=False)))
        assert "only the raw interface" in r.error[0]
        r = _rpc(ws, join_game=sc.RequestJoinGame(race=1, options=sc.InterfaceOptions(raw=True)))
        assert r.status == sc.in_game
        r = _rpc(ws, restart_game=sc.RequestRestartGame())
        assert "'restart_game' is not supported" in r.error[0] and r.status == sc.in_game
        ws.sock.close()  # client crash: no quit, no close frame
        ws = _connect(port)
        r = _rpc(ws, ping=sc.RequestPing(), id=9)
        assert r.status == sc.launched  # the dead client's game was dropped
        assert _create(ws).status == sc.init_game
        _rpc(ws, quit=sc.RequestQuit(), id=999999999)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_killed_client_leaves_no_process(sc2path, tmp_path):
    """pysc2 launches the server; SIGKILL the client process: the server exits within seconds."""
    script = tmp_path / "client.py"
    script.write_text(
        textwrap.dedent("""
        import os, sys, time
        from sc2_envs.sc2api.client import import_pysc2
        run_configs, _ = import_pysc2()
        proc = run_configs.get().start(want_rgb=False)
        proc.controller.ping()
        print(proc._proc.pid, flush=True)
        time.sleep(600)
    """)
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SC2PATH": str(sc2path), "OMP_NUM_THREADS": "1"}
    client = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=env)
    server_pid = int(client.stdout.readline())
    os.kill(server_pid, 0)  # running
    client.send_signal(signal.SIGKILL)
    client.wait()
    t0 = time.time()
    while time.time() - t0 < 10:
        try:
            os.kill(server_pid, 0)
        except ProcessLookupError:
            break
        try:
            os.waitpid(server_pid, os.WNOHANG)
        except ChildProcessError:
            pass
        time.sleep(0.2)
    else:
        os.kill(server_pid, signal.SIGKILL)
        pytest.fail("the server outlived its killed client by 10 s")
    assert time.time() - t0 < 10


def test_install_refuses_real_maps_and_bad_build(tmp_path):
    (tmp_path / "Maps" / "SMAC_Maps").mkdir(parents=True)
    (tmp_path / "Maps" / "SMAC_Maps" / "3m.SC2Map").write_bytes(b"MPQ\x1a real map")
    with pytest.raises(FileExistsError, match="not an sc2_envs placeholder"):
        install(tmp_path)
    with pytest.raises(ValueError, match="positive int"):
        install(tmp_path / "x", build=0)
    exe = install(tmp_path / "ok", build=69232)
    assert exe.name == "SC2_x64" and exe.parent.name == "Base69232" and os.access(exe, os.X_OK)


def test_throughput_benchmark_does_not_time_the_first_step():
    """``benchmarks/sc2api_throughput.py`` leaves each route's first step (the kernels' compile or cache
    load in the process that steps the game) out of its timing and counts."""
    from conftest import load_algo

    bench = load_algo("sc2api_throughput", folder="benchmarks")

    class SlowFirstStep:
        n_agents, calls = 2, 0

        def reset(self):
            return None

        def get_avail_actions(self):
            return [[0, 1], [0, 1]]

        def step(self, actions):
            self.calls += 1
            if self.calls == 1:
                time.sleep(0.5)  # a compile
            return 0.0, self.calls == 1, {}  # the warm-up step ends an episode: not counted either

    loop = bench.Loop(SlowFirstStep(), seed=0)
    loop.warm_up()
    loop.run(3)
    assert (loop.steps, loop.episodes, loop.env.calls) == (3, 0, 4)
    assert loop.seconds < 0.25


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-port", "99999"], "-port 99999: expected a TCP port in [1, 65535]"),
        (["-port", "0"], "-port 0: expected a TCP port in [1, 65535]"),
        (["-port", "5999", "--idle-exit", "-5"], "--idle-exit -5.0: expected seconds > 0"),
        (["-port", "5999", "--idle-exit", "nan"], "--idle-exit nan: expected seconds > 0"),
        (["-port", "5999", "--build", "0"], "--build 0: expected a positive build number"),
    ],
)
def test_server_command_line_errors_are_one_usage_line(capsys, argv, message):
    """found by a tester: -port 99999 was an OverflowError traceback from bind(), --idle-exit -5 exited at once, silently."""
    from sc2_envs.sc2api.server import main

    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(f"error: {message}")


def test_server_that_cannot_listen_says_where_in_one_line(capsys):
    """found by a tester: an unknown -listen host (or a port in use) was a socket traceback."""
    from sc2_envs.sc2api.server import main

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:
        for host, reason in (("999.1.1.1", "Name or service not known"), ("127.0.0.1", "Address already in use")):
            with pytest.raises(SystemExit) as e:
                main(["-listen", host, "-port", str(port)])
            assert e.value.code == 2
            line = capsys.readouterr().err.strip().splitlines()[-1]
            assert f"error: -listen {host} -port {port}: cannot listen (" in line and reason in line
    finally:
        taken.close()
