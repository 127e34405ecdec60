"""Team-size randomisation (``SMACSim.remove_allies``, ``sc2_envs.training.ally_dropout.drop_allies``, ``--ally-dropout``) and
fine-tuning from a checkpoint's weights (``models.init_weights``, ``--init-from``)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from sc2_envs import make_batched
from sc2_envs.policies import random_actions
from sc2_envs.sim import UnitPlacement
from sc2_envs.training.ally_dropout import drop_allies
from sc2_envs.training.cli import check_ally_dropout, check_training_args

REPO = Path(__file__).resolve().parents[1]
MARINE_CKPT = REPO / "checkpoints" / "marine_budget" / "3m8m_seed1_gnn.pt"


@pytest.mark.parametrize("kernel", ["numba", "torch"])
def test_removed_ally_plays_as_the_same_battle_placed_without_it(kernel):
    """Removing agent 2 at step 0 is the battle ``set_units`` places with that slot empty: equal
    observations, states, masks and rewards over a whole seeded episode, on either kernel."""
    a = make_batched("8m", num_envs=2, seed=3, autoreset=False, kernel=kernel)
    b = make_batched("8m", num_envs=2, seed=3, autoreset=False, kernel=kernel)
    a.reset(), b.reset()
    mask = torch.zeros(2, 8, dtype=torch.bool)
    mask[1, 2] = True
    out_a = a.remove_allies(mask)
    pos = b.st.pos[1]
    place = [UnitPlacement(float(x), float(y)) for x, y in pos.tolist()]
    out_b = b.set_units(1, place[:2] + [None] + place[3:8], place[8:])
    for key in ("obs", "state", "avail_actions"):
        assert torch.equal(out_a[key], out_b[key]), key
    assert torch.equal(out_a["obs"][1, 2], torch.zeros_like(out_a["obs"][1, 2]))
    assert out_a["avail_actions"][1, 2].tolist() == [True] + [False] * 13
    assert out_a["avail_actions"][0, 2].any() and bool(out_a["avail_actions"][0, 2, 1:].any())
    gen = torch.Generator().manual_seed(0)
    for _ in range(120):
        act = random_actions(out_a["avail_actions"], gen)
        out_a, out_b = a.step(act), b.step(act)
        for key in ("obs", "state", "avail_actions", "reward", "dead_allies", "terminated"):
            assert torch.equal(out_a[key], out_b[key]), key
        if bool((out_a["terminated"] | out_a["truncated"]).any()):
            break
    assert int(out_a["dead_allies"][1]) >= 1


def test_removed_ally_is_not_a_death_of_the_episode():
    """The reward's death tracker starts the removed ally dead: with ``reward_only_positive=False``
    (ally deaths penalised) the first step's reward equals a full team's that lost no one."""
    e = make_batched("3m", num_envs=2, seed=0, reward_only_positive=False)
    e.reset()
    mask = torch.tensor([[False, False, False], [True, False, False]])
    e.remove_allies(mask)
    noop_stop = torch.tensor([[1, 1, 1], [0, 1, 1]])  # stop for the living, no-op for the removed ally
    out = e.step(noop_stop)
    assert torch.equal(out["reward"][0], out["reward"][1])
    assert out["dead_allies"].tolist() == [0, 1]


def test_remove_allies_refuses_bad_masks_and_late_envs_and_changes_nothing():
    e = make_batched("3m", num_envs=2, seed=0)
    with pytest.raises(RuntimeError, match="reset"):
        e.remove_allies(torch.zeros(2, 3, dtype=torch.bool))
    e.reset()
    before = e.st.clone()
    with pytest.raises(TypeError, match="bool tensor"):
        e.remove_allies(torch.zeros(2, 3))
    with pytest.raises(ValueError, match=r"shape \(num_envs=2, n_agents=3\), got \(2, 4\)"):
        e.remove_allies(torch.zeros(2, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"removes every ally of envs \[1\]"):
        e.remove_allies(torch.tensor([[False, False, False], [True, True, True]]))
    assert torch.equal(e.st.health, before.health) and torch.equal(e.st.alive, before.alive)
    e.step(torch.ones(2, 3, dtype=torch.int64))
    with pytest.raises(ValueError, match=r"envs \[0\] are past the first step .* \(episode_steps \[1\]\)"):
        e.remove_allies(torch.tensor([[True, False, False], [False, False, False]]))
    e.reset()
    e.remove_allies(torch.tensor([[True, False, False], [False, False, False]]))
    with pytest.raises(ValueError, match=r"envs \[0\] already have dead allies"):
        e.remove_allies(torch.tensor([[False, True, False], [False, False, False]]))


def test_drop_allies_draws_nothing_when_off_and_changes_only_new_episodes():
    e = make_batched("8m", num_envs=6, seed=1)
    obs = e.reset()
    rng = torch.get_rng_state()
    same = drop_allies(e, dict(obs), torch.ones(6, dtype=torch.bool), 0.0)
    assert torch.equal(torch.get_rng_state(), rng)  # no draw: a run without dropout is unchanged
    assert all(same[k] is obs[k] for k in obs)
    torch.manual_seed(0)
    started = torch.tensor([True, True, True, True, False, False])
    out = drop_allies(e, dict(obs), started, 0.99)
    dead = (~e.st.alive[:, :8]).sum(1)
    assert dead.tolist() == [1, 1, 1, 1, 0, 0]
    assert torch.equal(out["obs"][4:], obs["obs"][4:]) and not torch.equal(out["obs"][:4], obs["obs"][:4])
    assert torch.equal(out["obs"], e._observe()["obs"])  # the rows replaced are the simulator's own


def test_drop_allies_never_leaves_a_team_of_healers_alone():
    """Found in review: in SMACv2 terran teams, removing the only non-medivac left medivacs that cannot
    fight. Such a draw now removes no one; the other draws are used unchanged."""
    e = make_batched("3m", num_envs=64, seed=1)
    obs = e.reset()
    healer = torch.tensor([False, True, True] + [False] * (e.table.is_healer.shape[-1] - 3))
    e.table.is_healer = healer  # as if allies 1 and 2 were medivacs: ally 0 is the only fighter
    torch.manual_seed(0)
    pick = torch.rand(64) < 0.99
    who = torch.randint(3, (64,))
    torch.manual_seed(0)
    drop_allies(e, dict(obs), torch.ones(64, dtype=torch.bool), 0.99)
    removed = ~e.st.alive[:, :3]
    expected = torch.zeros(64, 3, dtype=torch.bool)
    keep = pick & (who != 0)
    expected[keep, who[keep]] = True
    assert torch.equal(removed, expected) and bool((pick & (who == 0)).any()) and bool(keep.any())


def test_drop_allies_refuses_bad_probabilities_and_started_masks():
    e = make_batched("3m", num_envs=2, seed=0)
    obs = e.reset()
    for prob in (float("nan"), -0.1, 1.0, "0.5", True):
        with pytest.raises(ValueError, match=r"prob must be a probability in \[0, 1\), got"):
            drop_allies(e, obs, torch.ones(2, dtype=torch.bool), prob)
    for started in (torch.ones(3, dtype=torch.bool), torch.ones(2), [True, True]):
        with pytest.raises(ValueError, match=r"started must be a bool tensor of shape \(2,\)"):
            drop_allies(e, obs, started, 0.5)
    assert drop_allies(None, obs, None, 0.0) is obs  # off: nothing of the env (any backend) is read


@pytest.mark.parametrize(
    "value, message",
    [
        ((), "--ally-dropout (no value): expected one probability (used for every map) or one per --map (2: 3m 8m)"),
        (("x",), "--ally-dropout x: expected probabilities in [0, 1) (numbers)"),
        ((float("nan"),), "--ally-dropout nan: expected probabilities in [0, 1) (got [nan])"),
        ((0.5, -0.5), "--ally-dropout 0.5 -0.5: expected probabilities in [0, 1) (got [-0.5])"),
    ],
)
def test_check_ally_dropout_names_the_bad_value(value, message, capsys):
    with pytest.raises(SystemExit) as exc:
        check_ally_dropout(value, ["3m", "8m"], "sim")
    assert exc.value.code == 2
    assert message in capsys.readouterr().err
    assert check_ally_dropout(0.25, ["3m", "8m"], "sim") == [0.25, 0.25]  # one number: every map
    assert check_ally_dropout((0,), ["3m"], "sc2") == [0.0]  # off with the real game


def test_init_weights_copies_a_checkpoint_and_names_what_does_not_fit():
    from models import build_multi_map_models, init_weights

    infos = [make_batched(m, num_envs=1).get_env_info() for m in ("3m", "8m")]
    policy, critic, _, _ = build_multi_map_models(infos, "gnn")
    ckpt = init_weights(str(MARINE_CKPT), policy, critic)
    assert ckpt["global_step"] == 1_658_880
    for k, v in ckpt["actors"].items():
        assert torch.equal(policy.state_dict()[k], v), k
    for k, v in ckpt["critic"].items():
        assert torch.equal(critic.state_dict()[k], v), k
    small, small_critic, _, _ = build_multi_map_models(infos, "gnn", hidden=32)  # the default width since 2026-12-08
    with pytest.raises(
        ValueError, match=r"\(trained on 3m\+8m\) has actors 64 wide; this run's are 32 wide: add --hidden 64$"
    ):
        init_weights(str(MARINE_CKPT), small, small_critic)
    deep, deep_critic, _, _ = build_multi_map_models(infos, "gnn", hidden=64, actor_layers=2)
    with pytest.raises(ValueError, match=r"\(trained on 3m\+8m\): its actors do not fit this run's networks") as e:
        init_weights(str(MARINE_CKPT), deep, deep_critic)
    sizes = "{'hidden': 64, 'heads': 4, 'layers': 1} (this run's: {'hidden': 64, 'heads': 4, 'layers': 2"
    assert f"expected networks of its sizes {sizes}" in str(e.value)
    mlp8, mlp8_critic, _, _ = build_multi_map_models(infos[1:], "mlp")  # an MLP of 3m cannot read 8m's observations
    with pytest.raises(
        ValueError,
        match=r"\(trained on 3m\): its actors read inputs of another layout \(n_actions: 9 vs 14; obs_size: 30 vs 80",
    ):
        init_weights(str(REPO / "checkpoints" / "mlp" / "3m_mlp_seed1.pt"), mlp8, mlp8_critic)
    three = [make_batched(m, num_envs=1).get_env_info() for m in ("1c3s5z", "2s3z", "3s5z")]
    p3, c3, _, _ = build_multi_map_models(three, "gnn")  # classes (and type vocabulary) in 1c3s5z's order
    with pytest.raises(ValueError, match=r"the same classes in another order: give --map in its order, 2s3z\+3s5z\+1c3s5z"):
        init_weights(str(REPO / "checkpoints" / "protoss_2s3z3s5z1c3s5z_gnn.pt"), p3, c3)
    protoss = [make_batched("2s3z", num_envs=1).get_env_info()]
    p2, c2, _, _ = build_multi_map_models(protoss, "gnn")
    with pytest.raises(
        ValueError, match=r"\(trained on 3m\+8m\) has the classes \['marine'\]; expected \['stalker', 'zealot'\]"
    ):
        init_weights(str(MARINE_CKPT), p2, c2)
    mlp, mlp_critic, _, _ = build_multi_map_models(infos[:1], "mlp")
    with pytest.raises(ValueError, match="holds gnn actors; expected mlp"):
        init_weights(str(MARINE_CKPT), mlp, mlp_critic)


@pytest.mark.parametrize("script", ["happo_gnn", "hatrpo_gnn"])
@pytest.mark.parametrize(
    "change, message",
    [
        ({"ally_dropout": (1.0,)}, "--ally-dropout 1.0: expected probabilities in [0, 1) (got [1.0])"),
        ({"ally_dropout": (0.1, 0.2, 0.3)},
         "--ally-dropout 0.1 0.2 0.3: expected one probability (used for every map) or one per --map (2: 3m 8m)"),
        ({"ally_dropout": (0.5,), "backend": "sc2", "num_envs": 2},
         "--ally-dropout 0.5 with --backend sc2: expected --backend sim"),
    ],
)  # fmt: skip
def test_bad_ally_dropout_is_refused(script, change, message, capsys):
    from dataclasses import replace

    from conftest import load_algo

    mod = load_algo(script)
    args = replace(mod.Args(), map=("3m", "8m"), num_steps=8, total_timesteps=64, **{"num_envs": 4, **change})
    with pytest.raises(SystemExit) as exc:
        check_training_args(args)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_fine_tune_run_with_dropout_starts_from_the_checkpoint(tmp_path):
    """A short run with --init-from and --ally-dropout: the config says both, and the first
    evaluation of the fine-tuned marine actors wins 3m as the checkpoint does."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [
        sys.executable, str(REPO / "algos" / "happo_gnn.py"), "--map", "3m", "8m", "--num-envs", "8", "--num-steps", "10",
        "--total-timesteps", "80", "--eval-episodes", "8", "--torch-threads", "1", "--ally-dropout", "0", "0.5",
        "--init-from", str(MARINE_CKPT), "--seed", "2", "--hidden", "64",
    ]  # fmt: skip
    res = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "ally dropout (training episodes that start with one ally removed): 3m 0, 8m 0.5" in res.stdout
    assert (
        f"initial weights: {MARINE_CKPT} (trained 1,658,880 env steps, seed 1; this run's env steps count from 0" in res.stdout
    )
    rows = (next((tmp_path / "runs").iterdir()) / "eval.csv").read_text().splitlines()
    assert float(rows[1].split(",")[5]) >= 0.75, rows  # win_rate/3m: the checkpoint's play, 8 episodes
    # --resume keeps the run's own weights; the line says the checkpoint was only its starting point
    run_dir = next((tmp_path / "runs").iterdir())
    cmd = [sys.executable, str(REPO / "algos" / "happo_gnn.py"), "--resume", str(run_dir), "--total-timesteps", "160"]
    res = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    assert (
        f"initial weights: {MARINE_CKPT} (trained 1,658,880 env steps, seed 1; the run's starting point; "
        "not reloaded on --resume)"
    ) in res.stdout
    # every checkpoint of the run, also after --resume, records where it started and that start's training;
    # a fine-tune of it names the whole chain (found in review: only the nearest start was named)
    ckpt = run_dir / "happo_gnn.pt"
    for path in (ckpt, run_dir / "happo_gnn_best.pt", run_dir / "resume.pt"):
        (start,) = torch.load(path, weights_only=True)["lineage"]
        assert (start["path"], start["training"], start["maps"]) == (str(MARINE_CKPT), "1,658,880 env steps", ["3m", "8m"])
    cmd = [
        sys.executable, str(REPO / "algos" / "happo_gnn.py"), "--map", "3m", "--num-envs", "8", "--num-steps", "10",
        "--total-timesteps", "80", "--eval-episodes", "2", "--torch-threads", "1", "--init-from", str(ckpt), "--hidden", "64",
        "--exp-name", "second",
    ]  # fmt: skip
    res = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    assert (
        f"initial weights: {ckpt} (trained 160 env steps, happo_gnn seed 2, itself fine-tuned from {MARINE_CKPT} "
        "(1,658,880 env steps on 3m+8m, seed 1), "
        "whose steps are not included;"
    ) in res.stdout
    (second,) = [d for d in (tmp_path / "runs").iterdir() if "second" in d.name]
    chain = torch.load(second / "second.pt", weights_only=True)["lineage"]
    assert [(e["path"], e["global_step"]) for e in chain] == [(str(MARINE_CKPT), 1658880), (str(ckpt), 160)]
    meta = json.loads((second / "run_meta.json").read_text())
    assert [e["path"] for e in meta["lineage"]] == [str(MARINE_CKPT), str(ckpt)]
    # eval_transfer's record names where each fine-tuned checkpoint started (its CSV counts its own steps only)
    cmd = [sys.executable, str(REPO / "algos" / "eval_transfer.py"), "--checkpoints", str(second / "second.pt"),
           "--maps", "3m", "--episodes", "2"]  # fmt: skip
    res = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    assert (
        f"(happo_gnn seed 1; fine-tuned from {ckpt} (160 env steps on 3m+8m, happo_gnn seed 2), itself fine-tuned from "
        f"{MARINE_CKPT} (1,658,880 env steps on 3m+8m, seed 1)"
    ) in res.stdout
    (evaluation,) = [d for d in (tmp_path / "runs").iterdir() if d.name.startswith("transfer__")]
    lineages = json.loads((evaluation / "run_meta.json").read_text())["lineages"]
    assert [e["path"] for e in lineages[str(second / "second.pt")]] == [str(MARINE_CKPT), str(ckpt)]


@pytest.mark.parametrize("kernel", ["numba", "torch"])
def test_smacv2_removed_ally_first_observation_is_a_fresh_battles(kernel):
    """SMACv2: the reset's observation tags the enemies in sight (``enemy_tag``); ``remove_allies``
    tags them afresh, so the first observation equals the battle ``set_units`` places without the ally
    (terran_5_vs_5, seed 11: an enemy in sight at step 0; a kept tag made every agent observe it)."""
    a = make_batched("terran_5_vs_5", num_envs=1, seed=11, autoreset=False, kernel=kernel)
    b = make_batched("terran_5_vs_5", num_envs=1, seed=11, autoreset=False, kernel=kernel)
    a.reset(), b.reset()
    assert bool((a.st.enemy_tag >= 0).any())  # the case: enemies tagged at the reset
    mask = torch.tensor([[False, True, False, False, False]])
    out_a = a.remove_allies(mask)
    place = [UnitPlacement(float(x), float(y)) for x, y in b.st.pos[0].tolist()]
    place[1] = None
    out_b = b.set_units(0, place[:5], place[5:])
    for key in ("obs", "state", "avail_actions", "unit_kind"):
        assert torch.equal(out_a[key], out_b[key]), key
    assert torch.equal(a.st.enemy_tag, b.st.enemy_tag)


def test_init_weights_names_a_recurrence_mismatch_and_the_flag_that_fixes_it():
    """Found by a tester: a recurrent checkpoint (the shipped terran_5_vs_5 and zerg_5_vs_5 files) given to a feed-forward run
    failed with a dump of state-dict keys; the message now says which side is recurrent and what to pass."""
    from models import build_multi_map_models, init_weights

    infos = [make_batched("terran_5_vs_5", num_envs=1).get_env_info()]
    terran = str(REPO / "checkpoints" / "smacv2" / "terran_5_vs_5_seed1.pt")
    protoss = str(REPO / "checkpoints" / "smacv2" / "protoss_5_vs_5_seed1.pt")  # feed-forward
    ff, ff_critic, _, _ = build_multi_map_models(infos, "gnn")
    with pytest.raises(
        ValueError, match=r"has recurrent actors \(a GRU per agent.*this run's are feed-forward: add --recurrent"
    ):
        init_weights(terran, ff, ff_critic)
    rec, rec_critic, _, _ = build_multi_map_models(infos, "gnn", recurrent=True)
    assert init_weights(terran, rec, rec_critic)["global_step"] == 1_996_800
    pinfos = [make_batched("protoss_5_vs_5", num_envs=1).get_env_info()]
    prec, prec_critic, _, _ = build_multi_map_models(pinfos, "gnn", recurrent=True)
    with pytest.raises(ValueError, match=r"has feed-forward actors; this run's are recurrent \(--recurrent\): leave out"):
        init_weights(protoss, prec, prec_critic)
