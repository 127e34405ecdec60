"""Tests of algos/a3c_upgo.py: a short run logs every term, a stalled actor stops the run with a stack
dump and the flag that would restart it, no process is left behind, the loss reads what it should,
bad options fail clearly. The actor pool's own fault tests (killed actors, restarts, orphaned
actors) are in test_actor_pool.py.

The runs start the script as a subprocess (its actors are ``spawn``ed, as in real use). Faults are
injected with ``--env-factory test_a3c_upgo:make_faulty_env``: the simulator, where the actor chosen
by the environment variable ``A3C_TEST_FAULT`` hangs or is slowed down.

Timing: the machine running the tests may be loaded (2 cores shared by many jobs), so the tests wait
for events (a line in the output, a file, a process exit) with generous deadlines instead of
sleeping for a guessed time; a deadline only bounds how long a broken run takes to fail.
"""

import copy
import os
import re
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import psutil
import pytest
import torch
from conftest import REPO, load_algo

SCRIPT = REPO / "algos" / "a3c_upgo.py"


def _slot_of(seed) -> int:
    """The actor slot from the actor's seed ``SeedSequence(s, spawn_key=(ACTOR_SPAWN_KEY, slot, gen))``
    (a3c_upgo.actor_seed); -1 for the learner's int-seeded probe env."""
    return int(seed.spawn_key[1]) if isinstance(seed, np.random.SeedSequence) else -1


class _FaultyEnv:
    """The batched simulator; ``step`` hangs at step ``hang_at`` or once the file ``hang_flag`` exists,
    or sleeps ``delay`` seconds every step."""

    def __init__(self, env, hang_at=None, delay=0.0, hang_flag=None):
        self.env, self.hang_at, self.delay, self.hang_flag, self.steps = env, hang_at, delay, hang_flag, 0

    def __getattr__(self, name):
        return getattr(self.env, name)

    def step(self, actions):
        self.steps += 1
        if (self.hang_at is not None and self.steps >= self.hang_at) or (self.hang_flag and os.path.exists(self.hang_flag)):
            time.sleep(3600)  # the stall the learner must detect (and dump the stack of)
        if self.delay:
            time.sleep(self.delay)
        return self.env.step(actions)


def make_faulty_env(map_name, num_envs, seed):
    """``--env-factory`` target. ``A3C_TEST_FAULT``: comma-separated ``hang:<slot>:<step>``,
    ``hangflag:<slot>:<path>`` (hang once the file exists) or ``slow:<slot>:<seconds>``."""
    import sc2_envs

    env = sc2_envs.make_batched(map_name, num_envs=num_envs, seed=seed, autoreset=True)
    for fault in os.environ.get("A3C_TEST_FAULT", "").split(","):
        kind, slot, value = fault.split(":", 2)
        if _slot_of(seed) == int(slot):
            if kind == "hang":
                return _FaultyEnv(env, hang_at=int(value))
            if kind == "hangflag":
                return _FaultyEnv(env, hang_flag=value)
            if kind == "slow":
                return _FaultyEnv(env, delay=float(value))
            raise ValueError(f"A3C_TEST_FAULT kind {kind!r}; expected hang, hangflag or slow")
    return env


class Run:
    """The script in a subprocess; stdout lines are collected with their arrival time."""

    def __init__(self, tmp_path, *extra, fault=None):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "tests"), str(REPO), os.environ.get("PYTHONPATH", "")]))
        if fault:
            env["A3C_TEST_FAULT"] = fault
        cmd = [
            sys.executable,
            str(SCRIPT),
            "--map",
            "3m",
            "--num-actors",
            "2",
            "--envs-per-actor",
            "4",
            "--unroll-length",
            "8",
            "--batch-unrolls",
            "2",
            "--print-interval-s",
            "0",
            "--run-dir",
            str(tmp_path),
            "--seed",
            "1",
            *extra,
        ]
        self.proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: list[tuple[float, str]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append((time.monotonic(), line.rstrip("\n")))

    def text(self) -> str:
        return "\n".join(line for _, line in self.lines)

    def wait_for(self, pattern: str, timeout: float, after: float = 0.0):
        """The first line matching ``pattern`` that arrived after ``after``, with its time; fails after ``timeout``."""
        deadline = time.monotonic() + timeout
        rx = re.compile(pattern)
        while time.monotonic() < deadline:
            for t, line in list(self.lines):
                if t >= after and rx.search(line):
                    return t, line
            if self.proc.poll() is not None and not self._reader.is_alive():
                break
            time.sleep(0.05)
        raise AssertionError(f"no line matching {pattern!r} within {timeout} s; output:\n{self.text()}")

    def finish(self, timeout: float) -> int:
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError(f"the run did not exit within {timeout} s; output:\n{self.text()}") from None
        self._reader.join(timeout=5)
        return rc

    def actor_pids(self) -> list[int]:
        return [int(m.group(1)) for m in re.finditer(r"started \(pid (\d+)\)", self.text())]


def assert_no_processes_left(pids, timeout: float = 30.0):
    """Every pid exits (or is a zombie) within ``timeout`` seconds; returns as soon as they have."""
    deadline = time.monotonic() + timeout
    while True:
        alive = []
        for pid in pids:
            try:
                p = psutil.Process(pid)
                if p.status() != psutil.STATUS_ZOMBIE:
                    alive.append((pid, p.cmdline()))
            except psutil.NoSuchProcess:
                pass
        if not alive or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert not alive, f"actor processes still running {timeout} s after the run ended: {alive}"


def make_checkpoint(path):
    import sc2_envs
    from models import build_models, save_checkpoint

    env = sc2_envs.make_batched("3m", num_envs=1)
    info = env.get_env_info()
    torch.manual_seed(0)
    policy, critic = build_models(info, "gnn")
    save_checkpoint(str(path), policy, critic, info, {"note": "stand-in teacher for the test"})
    return path


def test_short_run_with_two_actors_finishes_and_logs(tmp_path):
    ckpt = make_checkpoint(tmp_path / "teacher.pt")
    run = Run(
        tmp_path, "--total-timesteps", "192", "--teacher", str(ckpt), "--init", str(ckpt), "--kl-coef", "0.1", "--save-model"
    )
    rc = run.finish(timeout=300)
    out = run.text()
    assert rc == 0, out
    assert out.index("effective configuration:") < out.index("actor 0 gen 0 started")
    assert "kl_coef = 0.1" in out and "total_timesteps reached" in out and "all actors stopped" in out
    # the stop flag is shared memory, not an Event's five semaphores that os._exit left to the resource tracker
    assert "leaked semaphore" not in out
    assert_no_processes_left(run.actor_pids())
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    # each actor wrote its own log
    logs = sorted(p.name for p in run_dir.glob("actor_*.log"))
    assert logs == ["actor_0_gen0.log", "actor_1_gen0.log"]
    for name in logs:
        text = (run_dir / name).read_text()
        slot = name.split("_")[1]
        assert f"[actor {slot} gen 0]" in text and f"[actor {1 - int(slot)} " not in text
        assert f"[actor {slot} gen 0] allocator: " in text  # the allocator setting it ran with
    # the student's checkpoints name where it started (models.lineage_after)
    saved = torch.load(run_dir / "a3c_upgo.pt", weights_only=True)
    (start,) = saved["lineage"]
    assert (start["path"], start["training"], start["maps"]) == (str(ckpt), "0 env steps", ["3m"])
    assert saved["algorithm"] == "a3c_upgo" and (start["algorithm"], start["seed"]) == (
        None,
        None,
    )  # the test's file records neither
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run_dir))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    want = {
        "losses/policy_loss",
        "losses/upgo_loss",
        "losses/value_loss",
        "losses/entropy",
        "losses/kl_teacher",
        "losses/total_loss",
        "kl_per_agent/agent_0",
        "kl_per_agent/agent_2",
        "kl_per_class/marine",
        "charts/win_rate_window",
        "charts/env_SPS",
        "charts/learner_SPS",
        "charts/queue_depth",
        "charts/policy_lag",
        "charts/actor_restarts",
    }
    assert want <= tags, f"missing TensorBoard tags: {sorted(want - tags)}"
    kl = [e.value for e in acc.Scalars("losses/kl_teacher")]
    # the student starts as the teacher, so the KL starts at 0 and stays non-negative
    assert kl[0] < 1e-6 and min(kl) >= 0.0
    assert (run_dir / "a3c_upgo.pt").is_file()
    ck = torch.load(run_dir / "a3c_upgo.pt", weights_only=True)
    assert ck["global_step"] >= 192


def test_anneal_lr_decays_the_learning_rate_linearly_to_zero_at_total_timesteps(tmp_path):
    # 2 unrolls x 4 envs x 8 steps = 64 env steps per update: 4 updates in 256 env steps
    run = Run(tmp_path, "--total-timesteps", "256", "--anneal-lr", "--learning-rate", "0.001")
    rc = run.finish(timeout=300)
    assert rc == 0, run.text()
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    acc = EventAccumulator(str(run_dir))
    acc.Reload()
    logged = [(e.step, e.value) for e in acc.Scalars("charts/learning_rate")]
    assert [step for step, _ in logged] == [64, 128, 192, 256]
    assert [lr for _, lr in logged] == pytest.approx([0.001 * (1 - step / 256) for step, _ in logged])


def test_keep_checkpoints_keeps_one_file_per_checkpoint_named_by_its_env_steps(tmp_path):
    # 64 env steps per update (as above), a checkpoint every 2 updates: at 128 and 256 env steps, then the end's
    run = Run(tmp_path, "--total-timesteps", "256", "--checkpoint-interval", "2", "--keep-checkpoints")
    rc = run.finish(timeout=300)
    assert rc == 0, run.text()
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    kept = sorted(run_dir.glob("a3c_upgo_step*.pt"), key=lambda p: int(p.stem.rsplit("step", 1)[1]))
    assert [p.name for p in kept] == ["a3c_upgo_step128.pt", "a3c_upgo_step256.pt"]
    for path in kept:  # each is the checkpoint of its own step, loadable like the last one
        assert torch.load(path, weights_only=True)["global_step"] == int(path.stem.rsplit("step", 1)[1])
    last = torch.load(run_dir / "a3c_upgo.pt", weights_only=True)
    assert all(torch.equal(v, last["actors"][k]) for k, v in torch.load(kept[-1], weights_only=True)["actors"].items())


@pytest.mark.parametrize(
    ("kw", "expected"),
    [
        ({"save_model": False}, "--keep-checkpoints: only --save-model writes checkpoints (here --no-save-model)"),
        ({"exp_name": "x_step64"}, "--exp-name 'x_step64' with --keep-checkpoints: expected a name not ending in"),
    ],
)
def test_keep_checkpoints_that_would_write_nothing_or_misname_a_file_is_refused(capsys, kw, expected):
    """found by a tester: with --no-save-model it wrote nothing, silently; with --exp-name x_step64 the last
    checkpoint x_step64.pt read as a kept one of step 64."""
    algo = load_algo("a3c_upgo")
    with pytest.raises(SystemExit) as e:
        algo.check_args(algo.Args(map="3m", keep_checkpoints=True, **kw))
    assert e.value.code == 2
    assert f"error: {expected}" in capsys.readouterr().err


def test_stalled_actor_is_detected_with_a_stack_dump(tmp_path):
    # Actor 0 runs normally until the learner has updated once, then hangs inside env.step (the test
    # creates the flag file on seeing "update 1", whatever the machine's load made that take). Actor 1
    # is slow but healthy: 0.3 s per step, >= 2.4 s per unroll, many times the learner's 0.1 s queue
    # poll, and far below the 5 s stall timeout, so only actor 0 may be reported.
    flag = tmp_path / "hang_now"
    run = Run(
        tmp_path,
        "--total-timesteps",
        "100000000",
        "--time-budget-s",
        "900",
        "--stall-timeout",
        "5",
        "--env-factory",
        "test_a3c_upgo:make_faulty_env",
        fault=f"hangflag:0:{flag},slow:1:0.3",
    )
    try:
        run.wait_for(r"update 1 ", timeout=300)
        flag.touch()
        rc = run.finish(timeout=300)
    finally:
        if run.proc.poll() is None:
            run.proc.kill()
    out = run.text()
    assert rc == 1, out
    assert out.index("update 1 ") < out.index("ACTOR STALLED")
    assert "ACTOR STALLED: actor 0 gen 0" in out and "no env step for" in out
    assert "Stack dump (faulthandler, SIGUSR1)" in out
    # the dump shows where it hangs: the faulty step in this file
    assert re.search(r'File ".*test_a3c_upgo.py", line \d+ in step', out), out
    assert "rerun with --restart-actors" in out
    assert "ACTOR STALLED: actor 1" not in out
    assert_no_processes_left(run.actor_pids())


def _unroll(algo, T=8, B=4):
    """One real unroll of 3m from run_actor (in this process) and the models that produced it."""
    import sc2_envs
    from models import build_models

    info = sc2_envs.make_batched("3m", num_envs=1).get_env_info()
    torch.manual_seed(0)
    policy, critic = build_models(info, "gnn")
    sent = []

    class Channel:
        def beat_step(self):
            pass

        def send(self, traj):
            sent.append(traj)

        def pull_weights(self, module, version):
            if version == 0:
                return None
            module.load_state_dict(policy.state_dict())
            return 0

        def stopped(self):
            return len(sent) >= 1

    args = algo.Args(map="3m", envs_per_actor=B, unroll_length=T)
    algo.run_actor(args, policy.config(), 0, 0, Channel())
    return args, policy, critic, sent[0]


def test_unroll_layout_and_the_loss_uses_final_state_only_at_truncations():
    algo = load_algo("a3c_upgo")
    args, policy, critic, traj = _unroll(algo)
    T, B = 8, 4
    assert traj["obs"].shape == (T, B, 3, 30) and traj["avail_actions"].shape == (T, B, 3, 9)
    assert traj["actions"].dtype.name == "int64" and traj["next_state"].shape == (B, 48)
    # every sampled action was available
    taken = torch.as_tensor(traj["avail_actions"]).gather(-1, torch.as_tensor(traj["actions"]).unsqueeze(-1))
    assert bool(taken.all())
    batch = algo.collate([traj], torch.device("cpu"))
    batch["truncated"][3, 1] = True  # pretend env 1 hit the time limit at step 3

    def loss_with(final_state):
        b = dict(batch, final_state=final_state)
        # a fresh copy of the critic: learner_loss updates the value normaliser
        loss, logs = algo.learner_loss(policy, copy.deepcopy(critic), None, b, args)
        return float(loss.detach()), float(logs["losses/value_loss"].detach())

    base = loss_with(batch["final_state"].clone())
    elsewhere = batch["final_state"].clone()
    elsewhere[2, 1] += 5.0  # not an episode end: never read
    assert loss_with(elsewhere) == base
    at_cut = batch["final_state"].clone()
    at_cut[3, 1] += 5.0  # the truncated step's final state: its value is the bootstrap
    assert loss_with(at_cut) != base


def test_a_critic_warmup_update_on_a_smac_map_trains_only_the_central_critic():
    from sc2_envs.training.critic_warmup import trainable_only

    algo = load_algo("a3c_upgo")
    args, policy, critic, traj = _unroll(algo)
    batch = algo.collate([traj], torch.device("cpu"))
    start = copy.deepcopy(policy.state_dict())
    optimizer = torch.optim.Adam([*policy.parameters(), *critic.parameters()], lr=1e-2, eps=1e-5)
    with trainable_only([policy, critic], critic.parameters()):  # smac_pieces' value_params: the critic
        loss, _ = algo.learner_loss(policy, critic, None, batch, args)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    assert all(p.grad is None and p.requires_grad for p in policy.parameters())
    assert all(torch.equal(v, start[k]) for k, v in policy.state_dict().items())
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in critic.parameters())


def test_dead_agents_drop_out_of_the_policy_terms():
    algo = load_algo("a3c_upgo")
    args, policy, critic, traj = _unroll(algo)
    batch = algo.collate([traj], torch.device("cpu"))
    # agent 2 dead for the whole unroll: only the no-op available, the no-op taken
    batch["avail_actions"][:, :, 2] = False
    batch["avail_actions"][:, :, 2, 0] = True
    batch["actions"][:, :, 2] = 0
    batch["behaviour_logp"][:, :, 2] = 0.0
    _, logs = algo.learner_loss(policy, copy.deepcopy(critic), policy, batch, args)
    assert float(logs["kl_per_agent/agent_2"].detach()) == 0.0
    batch["behaviour_logp"][:, :, 2] = -3.0  # a behaviour log-prob of a dead agent must not matter
    _, logs2 = algo.learner_loss(policy, copy.deepcopy(critic), policy, batch, args)
    assert float(logs2["losses/policy_loss"].detach()) == pytest.approx(float(logs["losses/policy_loss"].detach()))
    assert float(logs2["losses/upgo_loss"].detach()) == pytest.approx(float(logs["losses/upgo_loss"].detach()))
    assert float(logs["losses/kl_teacher"].detach()) < 1e-6  # the teacher is the student


def test_kl_without_teacher_and_missing_paths_fail_clearly(tmp_path):
    algo = load_algo("a3c_upgo")
    with pytest.raises(SystemExit, match="needs --teacher PATH"):
        algo.check_args(algo.Args(kl_coef=0.5))
    with pytest.raises(SystemExit, match="is not a file"):
        algo.check_args(algo.Args(kl_coef=0.5, teacher=str(tmp_path / "nope.pt")))
    with pytest.raises(SystemExit, match="is not a file"):
        algo.check_args(algo.Args(init=str(tmp_path)))
    with pytest.raises(SystemExit, match="expected 'process' or 'ray'"):
        algo.check_args(algo.Args(backend="threads"))


def test_teacher_with_kl_coef_zero_is_refused(tmp_path, capsys):
    # found by a reviewer: the teacher was loaded, then its KL was multiplied by 0 (the default --kl-coef)
    algo = load_algo("a3c_upgo")
    teacher = str(REPO / "checkpoints" / "2s3z_gnn.pt")
    message = (
        f"--teacher {teacher!r} with --kl-coef 0: the teacher would have no effect (its KL is weighted by 0); "
        "set --kl-coef > 0 (e.g. 0.02) or drop --teacher"
    )
    with pytest.raises(SystemExit, match=re.escape(message)):
        algo.check_args(algo.Args(map="2s3z", teacher=teacher))
    algo.check_args(algo.Args(map="2s3z", teacher=teacher, kl_coef=0.02))
    # a run saved before the refusal cannot change either flag on --resume: it goes on, and says so
    algo.check_args(algo.Args(map="2s3z", teacher=teacher, resume=str(tmp_path)))
    assert "note: --teacher" in capsys.readouterr().out


def test_bad_actor_and_win_window_are_refused_by_check_args():
    algo = load_algo("a3c_upgo")
    # before: --actor was only refused by build_models in the learner, --win-window 0 ran and logged
    # "win rate nan over the last 0 episodes" for the whole run
    with pytest.raises(SystemExit, match="--actor 'lstm'; expected one of gnn, mlp"):
        algo.check_args(algo.Args(actor="lstm"))
    with pytest.raises(SystemExit, match="--win-window 0; expected >= 1"):
        algo.check_args(algo.Args(win_window=0))


@pytest.mark.parametrize(
    ("flag", "value", "expected"),
    [
        ("kl_coef", float("nan"), "--kl-coef nan: expected a finite number"),
        ("ent_coef", float("nan"), "--ent-coef nan: expected a finite number"),
        ("gamma", float("inf"), "--gamma inf: expected a finite number"),
        ("gamma", 1.5, "--gamma 1.5: expected a discount in [0, 1]"),
        ("vtrace_lambda", 3.0, "--vtrace-lambda 3.0: expected a trace lambda in [0, 1]"),
        ("td_lambda", -2.0, "--td-lambda -2.0: expected a TD(lambda) lambda in [0, 1]"),
        ("rho_bar", -1.0, "--rho-bar -1.0: expected an importance-ratio clip > 0"),
        ("c_bar", 0.0, "--c-bar 0.0: expected a trace-ratio clip > 0"),
        ("learning_rate", -1.0, "--learning-rate -1.0: expected an Adam learning rate > 0"),
        ("kl_coef", -0.5, "--kl-coef -0.5: expected a coefficient >= 0"),
        ("vf_coef", -1.0, "--vf-coef -1.0: expected a coefficient >= 0"),
        # found by a tester: these started a run that stopped at once, failed in the actors or the learner, or spun
        ("total_timesteps", 0, "--total-timesteps 0: expected env steps >= 1"),
        ("time_budget_s", -5.0, "--time-budget-s -5.0: expected seconds >= 0 (0: no limit)"),
        ("hidden", 0, "--hidden 0: expected a network width >= 1"),
        ("hidden", 6, "--hidden 6: expected a width divisible by the GNN's 4 attention heads"),
        ("actor_layers", 0, "--actor-layers 0: expected attention blocks >= 1"),
        ("torch_threads", -1, "--torch-threads -1: expected threads >= 0 (0: torch's default)"),
        ("max_restarts", -1, "--max-restarts -1: expected restarts >= 0"),
        ("heartbeat_interval", -1.0, "--heartbeat-interval -1.0: expected seconds > 0"),
        ("stall_timeout", -1.0, "--stall-timeout -1.0: expected seconds > 0"),
        ("startup_timeout", 0.0, "--startup-timeout 0.0: expected seconds > 0"),
        ("print_interval_s", -1.0, "--print-interval-s -1.0: expected seconds >= 0 (0: a line every update)"),
        ("ray_actor_cpus", -1.0, "--ray-actor-cpus -1.0: expected CPUs per actor > 0"),
        ("exp_name", "a/b", "--exp-name 'a/b': expected a name without path separators"),  # was make_run_dir's traceback
    ],
)
def test_out_of_range_numeric_flags_are_a_one_line_argument_error(capsys, flag, value, expected):
    # before: --kl-coef nan started a run, --learning-rate -1 was a torch traceback from Adam
    algo = load_algo("a3c_upgo")
    with pytest.raises(SystemExit) as e:
        algo.check_args(algo.Args(map="3m", **{flag: value}))
    assert e.value.code == 2
    assert f"error: {expected}" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flag", "value"), [("step_mul", 16), ("game_steps_per_episode", 100), ("max_entities", 64), ("banked_minerals_cost", 0.5)]
)
def test_full_game_only_flags_on_a_smac_map_are_refused_naming_the_flag(capsys, flag, value):
    algo = load_algo("a3c_upgo")
    with pytest.raises(SystemExit) as e:
        algo.check_args(algo.Args(map="3m", **{flag: value}))
    assert e.value.code == 2
    assert f"--{flag.replace('_', '-')} {value}: only the full game" in capsys.readouterr().err


def test_run_dir_that_is_a_file_is_refused_by_check_args(tmp_path):
    # before: make_run_dir raised FileExistsError with a traceback
    algo = load_algo("a3c_upgo")
    (tmp_path / "f").write_text("x")
    with pytest.raises(SystemExit, match=re.escape(f"--run-dir {str(tmp_path / 'f')!r} is a file; expected a folder")):
        algo.check_args(algo.Args(run_dir=str(tmp_path / "f")))


def test_teacher_of_another_map_is_refused_before_the_actors_start(tmp_path, monkeypatch, capsys):
    # before: the actors were spawned first, then load_checkpoint raised inside the training loop
    # and the run folder (with its learner log) was left behind; since, it is one usage line (exit status 2)
    from sc2_envs.training import async_learner

    algo = load_algo("a3c_upgo")
    monkeypatch.setattr(async_learner, "make_actor_pool", lambda *a, **k: pytest.fail("actors started"))
    args = algo.Args(
        map="3m", teacher=str(REPO / "checkpoints" / "2s3z_gnn.pt"), kl_coef=0.1, cuda=False, run_dir=str(tmp_path)
    )
    with pytest.raises(SystemExit) as e:
        algo.main(args)
    assert e.value.code == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith("a3c_upgo.py: error: checkpoint ") and "has unit classes ['marine'] for which" in last
    assert list(tmp_path.iterdir()) == []


def test_network_flags_given_with_init_ray_flags_without_ray_and_bad_env_factories_are_refused(capsys):
    # found by a tester: --actor gnn (its default) with an MLP --init trained the MLP while the records said gnn;
    # --ray-address / --ray-actor-cpus with the process backend were ignored; a bad --env-factory was a traceback
    algo = load_algo("a3c_upgo")
    mlp = str(REPO / "checkpoints" / "mlp" / "2s3z_mlp_seed1.pt")
    cases = [
        (algo.Args(map="2s3z", init=mlp), frozenset({"actor"}), "--actor gnn with --init"),
        (algo.Args(ray_address="auto"), None, "--ray-address 'auto' is read only with --backend ray"),
        (algo.Args(ray_actor_cpus=2.0), None, "--ray-actor-cpus 2.0 is read only with --backend ray"),
        (algo.Args(env_factory="os.path"), None, "expected module:function"),
        (algo.Args(env_factory="no_such_module_xyz:f"), None, "cannot import 'no_such_module_xyz'"),
        (algo.Args(env_factory="os.path:no_such_fn"), None, "'os.path' has no function 'no_such_fn'"),
    ]
    for args, given, message in cases:
        with pytest.raises(SystemExit):
            algo.check_args(args, given)
        assert message in capsys.readouterr().err, message
    args = algo.Args(map="2s3z", init=mlp)  # not given: the checkpoint's network is recorded
    algo.check_args(args, frozenset())
    from sc2_envs.training.async_learner_checks import adopt_init_networks

    adopt_init_networks(args)
    assert (args.actor, args.hidden, args.actor_layers) == ("mlp", 64, 1)


def test_real_game_backend_without_starcraft_exits_2_with_the_install_steps(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SC2PATH", str(tmp_path / "no_sc2_here"))
    algo = load_algo("a3c_upgo")
    with pytest.raises(SystemExit) as e:
        algo.check_args(algo.Args(env_backend="sc2", envs_per_actor=1))
    assert e.value.code == 2
    assert "--env-backend sc2: No SC2_x64 under SC2PATH=" in capsys.readouterr().err


@pytest.mark.slow
def test_ray_backend_reports_and_replaces_a_killed_actor(tmp_path):
    pytest.importorskip("ray")
    run = Run(tmp_path, "--backend", "ray", "--total-timesteps", "100000000", "--time-budget-s", "90", "--restart-actors")
    try:
        deadline = time.monotonic() + 120
        pid = None
        while pid is None and time.monotonic() < deadline:
            log = next(tmp_path.glob("*/actor_1_gen0.log"), None)
            found = re.search(r"pid (\d+)", log.read_text()) if log else None
            pid = int(found.group(1)) if found and "update 1 " in run.text() else None
            time.sleep(0.2)
        assert pid is not None, run.text()
        os.kill(pid, signal.SIGKILL)
        killed = time.monotonic()
        t_report, _ = run.wait_for(r"ACTOR DIED: actor 1 gen 0", timeout=60, after=killed - 1)
        assert t_report - killed < 15.0, f"reported {t_report - killed:.1f} s after the kill"
        run.wait_for(r"actor 1 gen 1 started", timeout=60, after=killed - 1)
    finally:
        rc = run.finish(timeout=300)
    assert rc == 0, run.text()
    learner = run.proc.pid
    left = [
        p.pid
        for p in psutil.process_iter(["cmdline"])
        if any(f"_{learner}/" in a or a.endswith(f"_{learner}") for a in (p.info["cmdline"] or []))
    ]
    assert not left, f"Ray processes of this run still alive: {left}"


def test_actor_streams_are_split_not_offset():
    """Actor (slot, generation) env streams come from seed splitting: run seeds 10,000 apart used to share
    actors (``seed + 10_000 * (slot + 1)``: seed 10,000's slot 0 was seed 0's slot 1); now no actor env of
    runs 0..7 and 10,000..10,007 (8 slots x 3 generations x 4 envs) coincides with another, nor with a
    training or evaluation env of those runs."""
    from sc2_envs.sim import rng

    algo = load_algo("a3c_upgo")
    seeds = [*range(8), *range(10_000, 10_008)]
    actor = [k for s in seeds for slot in range(8) for gen in range(3) for k in rng.env_keys(algo.actor_seed(s, slot, gen), 4)]
    assert len(set(actor)) == len(actor) == 16 * 8 * 3 * 4
    others = {k for s in seeds for k in rng.env_keys(s, 64) + rng.env_keys(rng.eval_seed(s), 64)}
    assert not others & set(actor)
    assert algo.actor_seed(10_000, 0, 0).spawn_key == (algo.ACTOR_SPAWN_KEY, 0, 0)
    with pytest.raises(ValueError, match="slot must be a non-negative int, got -1"):
        algo.actor_seed(0, -1, 0)


def test_docs_say_same_seed_runs_differ_and_how_resumed_actors_are_seeded():
    """The actors are asynchronous: --help and docs/a3c_upgo.md say a seed does not make a run repeatable, and
    the docs describe the resumed actors' seeds as ``actor_seed`` draws them (they once claimed a 1e9 offset)."""
    algo = load_algo("a3c_upgo")
    res = subprocess.run(
        [sys.executable, str(REPO / "algos" / "a3c_upgo.py"), "--help"], capture_output=True, text=True, check=True
    )
    assert "Not reproducible" in " ".join(res.stdout.replace("│", " ").split())  # the words may wrap across box lines
    doc = " ".join((REPO / "docs" / "a3c_upgo.md").read_text().split())
    assert "Runs are not reproducible" in doc and "1_000_000_000" not in doc
    assert "actor_seed(seed, slot, gen, s)" in doc
    assert algo.actor_seed(1, 0, 0, 2).spawn_key == (algo.ACTOR_SPAWN_KEY, 0, 0, 2)


def test_first_screen_names_the_torch_thread_count_that_was_set(tmp_path, monkeypatch, capsys):
    algo = load_algo("a3c_upgo")
    monkeypatch.setattr(algo, "train", lambda args, run_dir, resumed, device, notes=(): 0)  # the first screen only
    before = torch.get_num_threads()
    want = 3 if before != 3 else 2
    try:
        assert algo.main(algo.Args(map="3m", torch_threads=want, run_dir=str(tmp_path))) == 0
    finally:
        torch.set_num_threads(before)
    assert f"threads: torch {want}," in capsys.readouterr().out


def test_env_rate_is_measured_only_over_a_positive_interval():
    from sc2_envs.training.async_learner import env_rate

    assert env_rate(0, 0.0) is None  # the update that the first unroll completes
    assert env_rate(16, 0.0) is None
    assert env_rate(0, 2.0) is None
    assert env_rate(100, 2.0) == 50.0


def test_a_file_that_is_not_a_torch_checkpoint_is_a_one_line_argument_error(tmp_path, capsys):
    algo = load_algo("a3c_upgo")
    text = tmp_path / "README.md"
    text.write_text("# not a checkpoint\n")
    truncated = tmp_path / "cut.pt"
    truncated.write_bytes(make_checkpoint(tmp_path / "whole.pt").read_bytes()[:300])
    for path in (text, truncated):
        with pytest.raises(SystemExit) as e:
            algo.check_args(algo.Args(map="3m", init=str(path), run_dir=str(tmp_path)))
        assert e.value.code == 2
        err = capsys.readouterr().err
        assert f"--init {path} is not a torch checkpoint (" in err and len(err.strip().splitlines()) == 1
        assert "weights_only" not in err  # torch's advice to unpickle arbitrary code is not passed on


def test_a_full_game_checkpoint_on_a_smac_map_is_refused_naming_simple64(tmp_path, capsys):
    from models.alphastar import AlphaStarConfig, AlphaStarPolicy, save_alphastar

    algo = load_algo("a3c_upgo")
    path = str(tmp_path / "sl.pt")
    save_alphastar(path, AlphaStarPolicy(AlphaStarConfig.tiny(max_entities=32)))
    with pytest.raises(SystemExit) as e:
        algo.check_args(algo.Args(map="3m", init=path, run_dir=str(tmp_path)))
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "full-game (AlphaStarPolicy" in err and "--map Simple64" in err and "Traceback" not in err


@pytest.mark.parametrize("flag", ["init", "teacher"])
def test_a_recurrent_checkpoint_is_a_one_line_argument_error_before_any_process(tmp_path, capsys, flag):
    """found by a tester: a happo_gnn.py --recurrent checkpoint as --init killed every actor ("this actor is
    recurrent"), as --teacher the learner, each with a traceback, after the run folder was made."""
    import sc2_envs
    from models import build_models, save_checkpoint

    info = sc2_envs.make_batched("3m", num_envs=1).get_env_info()
    policy, critic = build_models(info, "gnn", hidden=16, recurrent=True)
    path = str(tmp_path / "gru.pt")
    save_checkpoint(path, policy, critic, info, {})
    algo = load_algo("a3c_upgo")
    kw = {"init": path} if flag == "init" else {"teacher": path, "kl_coef": 0.1}
    with pytest.raises(SystemExit) as e:
        algo.check_args(algo.Args(map="3m", run_dir=str(tmp_path / "runs"), **kw))
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert f"--{flag} {path} is a recurrent checkpoint (a GRU per agent: happo_gnn.py --recurrent)" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "runs").exists()


@pytest.mark.parametrize(("flag", "value"), [("hidden", 128), ("actor", "mlp"), ("actor_layers", 2)])
def test_network_flags_given_with_init_are_refused_not_ignored(tmp_path, capsys, flag, value):
    """found by a tester: --hidden / --actor / --actor-layers with --init were ignored (the checkpoint's networks)."""
    algo = load_algo("a3c_upgo")
    path = make_checkpoint(tmp_path / "bc.pt")
    with pytest.raises(SystemExit) as e:
        algo.check_args(algo.Args(map="3m", init=str(path), run_dir=str(tmp_path / "runs"), **{flag: value}))
    assert e.value.code == 2
    option = "--" + flag.replace("_", "-")
    assert f"{option} {value} with --init {path}: the networks are the checkpoint's" in capsys.readouterr().err


def test_end_of_run_line_names_only_the_model_files_that_exist(tmp_path):
    from sc2_envs.training.async_learner import saved_models_text

    assert saved_models_text(tmp_path, "a3c_upgo") == f"no model file in {tmp_path}"
    (tmp_path / "a3c_upgo.pt").write_bytes(b"")
    text = saved_models_text(tmp_path, "a3c_upgo")
    assert text.startswith(f"model saved to {tmp_path / 'a3c_upgo.pt'} (no a3c_upgo_best.pt:")
    (tmp_path / "a3c_upgo_best.pt").write_bytes(b"")
    assert saved_models_text(tmp_path, "a3c_upgo") == f"model saved to {tmp_path / 'a3c_upgo.pt'} (best: a3c_upgo_best.pt)"


def test_docs_start_runs_from_checkpoints_that_exist_or_that_bc_reweight_writes():
    doc = (REPO / "docs" / "a3c_upgo.md").read_text()
    quick_start = doc[: doc.index("## Topology")]  # the commands to copy; later sections use placeholders (SL.pt)
    paths = set(re.findall(r"--(?:init|teacher) (\S+)", quick_start))
    assert paths, "docs/a3c_upgo.md's first commands show no --init / --teacher"
    for path in paths:
        # bc_reweight.py writes <run folder>/best.pt (its selection) and <run folder>/epoch_<NNN>.pt (one per epoch)
        shipped = (REPO / path).is_file()
        assert shipped or re.fullmatch(r"runs/[^/]+/(best|epoch_\d{3})\.pt", path), path


def test_episode_stats_report_each_ended_episode_once_with_its_return_length_and_result():
    from sc2_envs.training.async_learner import EpisodeStats

    stats = EpisodeStats(2)
    no, yes = torch.tensor([False, False]), torch.tensor([True, False])
    stats.step(torch.tensor([1.0, 0.5]), no, no)
    stats.step(torch.tensor([2.0, 0.5]), yes, yes)  # env 0 ends (won) after 2 env steps
    assert stats.take() == [(3.0, 2, True)] and stats.take() == []
    stats.step(torch.tensor([4.0, 0.5]), torch.tensor([True, True]), no)  # env 0's new episode, env 1's first
    assert stats.take() == [(4.0, 1, False), (1.5, 3, False)]
