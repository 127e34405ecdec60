"""The shipped SMACv2 checkpoints (``checkpoints/smacv2/``) and the figures documented for them.

``checkpoints/smacv2/<scenario>_seed<S>.pt``: HAPPO with the count-invariant GNN actors trained on one
SMACv2 scenario (``checkpoints/README.md``, "SMACv2 scenarios"; ``docs/smacv2.md``). Each
``final_eval_seed<E>.csv`` holds the greedy win rates of the folder's checkpoints on evaluation seed
``E`` (100 episodes per scenario) as ``algos/eval_transfer.py`` wrote them; ``evals/`` the in-training
evaluations of each run.
"""

from __future__ import annotations

import csv

import pytest
import torch
from conftest import REPO, load_algo

import models
import sc2_envs
from sc2_envs.stats import wilson_interval
from sc2_envs.training.checkpoints import CHECKPOINT_FORMAT

FOLDER = REPO / "checkpoints" / "smacv2"
SHIPPED = {  # file -> (training scenario, seed, env steps)
    "protoss_5_vs_5_seed1.pt": ("protoss_5_vs_5", 1, 1_996_800),
    "terran_5_vs_5_seed1.pt": ("terran_5_vs_5", 1, 1_996_800),
    "protoss_5_vs_5_seed2.pt": ("protoss_5_vs_5", 2, 1_996_800),
    "zerg_5_vs_5_seed1.pt": ("zerg_5_vs_5", 1, 1_996_800),
    "protoss_5_vs_5_seed3.pt": ("protoss_5_vs_5", 3, 1_996_800),
    "terran_5_vs_5_seed2.pt": ("terran_5_vs_5", 2, 1_996_800),
    "terran_5_vs_5_seed3.pt": ("terran_5_vs_5", 3, 1_996_800),
    "zerg_5_vs_5_seed2.pt": ("zerg_5_vs_5", 2, 1_996_800),
    "zerg_5_vs_5_seed3.pt": ("zerg_5_vs_5", 3, 1_996_800),
}
EVAL_SEEDS = (101, 102)
RECURRENT = {"terran_5_vs_5", "zerg_5_vs_5"}
"""Scenarios whose shipped files have recurrent actors (``--recurrent``): terran's and zerg's replaced the
feed-forward files by the A/B in docs/learning_speed.md, decided on fresh evaluation seeds 103 and 104."""


def _targets(scenario: str) -> tuple[str, ...]:
    """The training scenario, then its race's 10- and 20-unit scenarios (zero-shot)."""
    race = scenario.split("_")[0]
    return (scenario, f"{race}_10_vs_10", f"{race}_20_vs_20")


def _rows(eval_seed: int) -> list[dict]:
    with open(FOLDER / f"final_eval_seed{eval_seed}.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_the_folder_ships_the_listed_checkpoints_and_each_loads_without_pickled_code():
    assert sorted(p.name for p in FOLDER.glob("*.pt")) == sorted(SHIPPED)
    for file, (scenario, seed, steps) in SHIPPED.items():
        ckpt = torch.load(FOLDER / file, weights_only=True)
        assert ckpt["format"] == CHECKPOINT_FORMAT and ckpt["algorithm"] == "happo_gnn"
        assert ckpt["config"]["map_name"] == scenario and ckpt["config"]["actor_type"] == "gnn"
        assert ckpt["args"]["seed"] == seed and int(ckpt["global_step"]) == steps
        assert (FOLDER / "evals" / f"{file.removesuffix('.pt')}_eval.csv").is_file()


@pytest.mark.parametrize("file", sorted(SHIPPED))
@pytest.mark.parametrize("scale", [5, 10])
def test_each_checkpoint_plays_legal_greedy_actions_on_its_scenario_and_a_larger_one(file, scale):
    target = _targets(SHIPPED[file][0])[0 if scale == 5 else 1]
    env = sc2_envs.make_batched(target, num_envs=3, seed=7)
    info = env.get_env_info()
    policy, critic, _ = models.load_checkpoint(str(FOLDER / file), info)
    policy.eval()
    out = env.reset()
    n = info["n_agents"]
    recurrent = SHIPPED[file][0] in RECURRENT
    assert policy.recurrent == recurrent
    hidden = policy.initial_hidden(3) if recurrent else None
    start = torch.ones(3, dtype=torch.bool)

    def act():
        if not recurrent:
            return (*policy.act(out["obs"], out["avail_actions"], greedy=True), None)
        return policy.act_recurrent(out["obs"], out["avail_actions"], hidden, start, greedy=True)

    with torch.no_grad():
        for _ in range(5):
            actions, logp, after = act()
            again, _, _ = act()
            assert actions.shape == (3, n) and logp.shape == (3, n) and actions.dtype == torch.int64
            assert torch.equal(actions, again)  # greedy: the same observation gives the same actions
            chosen = out["avail_actions"].gather(-1, actions.unsqueeze(-1)).squeeze(-1)
            assert bool(chosen.all()), "a greedy action is not available"
            assert torch.isfinite(logp).all()
            value = critic(out["state"])
            assert value.shape == (3,) and torch.isfinite(value).all()
            if recurrent:
                assert after.shape == hidden.shape and not torch.equal(after, hidden)  # the GRU moved the state
                hidden, start = after, torch.zeros(3, dtype=torch.bool)
            out = env.step(actions)


@pytest.mark.parametrize("eval_seed", EVAL_SEEDS)
def test_each_final_evaluation_file_holds_100_episodes_per_target_of_each_shipped_file(eval_seed):
    rows = _rows(eval_seed)
    want = sorted((f"checkpoints/smacv2/{f}", t) for f, (sc, _, _) in SHIPPED.items() for t in _targets(sc))
    assert sorted((r["checkpoint"], r["target_map"]) for r in rows) == want
    for r in rows:
        scenario, _, steps = SHIPPED[r["checkpoint"].rsplit("/", 1)[1]]
        assert not r["error"] and r["source_map"] == scenario and int(r["source_steps"]) == steps
        assert int(r["episodes"]) == 100 and float(r["win_rate"]) == int(r["wins"]) / 100
        assert float(r["ci_low"]) <= float(r["win_rate"]) <= float(r["ci_high"])


@pytest.mark.slow  # 100 episodes: 5-40 s on a shared 2-core machine
@pytest.mark.parametrize("file", ["protoss_5_vs_5_seed1.pt", "terran_5_vs_5_seed1.pt"])  # feed-forward, recurrent
def test_a_documented_figure_replays_exactly(file):
    """The 5v5 figure on evaluation seed 102: the same episodes, wins and mean length as in its file."""
    et = load_algo("eval_transfer")
    scenario = SHIPPED[file][0]
    (want,) = [r for r in _rows(102) if r["target_map"] == scenario and r["checkpoint"].endswith(file)]
    row = et.evaluate_transfer(str(FOLDER / file), scenario, episodes=100, seed=102)
    assert (row.episodes, row.wins) == (100, int(want["wins"]))
    assert row.mean_length == pytest.approx(float(want["mean_length"]), abs=1e-9)


@pytest.mark.parametrize("file", sorted(SHIPPED))
def test_the_docs_table_shows_the_final_evaluation_files(file):
    """Every ``w [lo, hi] (r x)`` cell of the 2M table in docs/smacv2.md is its final_eval row, and ``r``
    the ratio of a zero-shot win rate to the training scenario's on the same evaluation seed."""
    targets = _targets(SHIPPED[file][0])
    lines = (REPO / "docs" / "smacv2.md").read_text().splitlines()
    table = [line for line in lines if line.startswith(f"| `{file}` |")]
    assert sorted(int(line.split("|")[2]) for line in table) == list(EVAL_SEEDS)
    for line in table:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rate = {r["target_map"]: r for r in _rows(int(cells[1])) if r["checkpoint"].endswith(file)}
        source = float(rate[targets[0]]["win_rate"])
        for target, cell in zip(targets, cells[2:], strict=True):
            r = rate[target]
            want = f"{float(r['win_rate']):.2f} [{float(r['ci_low']):.2f}, {float(r['ci_high']):.2f}]"
            if target != targets[0]:
                want += f" ({float(r['win_rate']) / source:.2f}x)"
            assert cell == want, (cells[1], target)


AB_EVAL_SEEDS = {race: (101, 102, 103, 104) for race in ("protoss", "terran", "zerg")}
"""Evaluation seeds of each race's recurrence A/B (terran's and zerg's 103 and 104 decided which arm is shipped)."""


def _ab_rows(race: str, arm: str, eval_seed: int) -> tuple[list[dict], dict]:
    """One arm's rows of the recurrence A/B and each row's training seed. Protoss's feed-forward arm on 101 / 102
    is the shipped files (``final_eval_seed<E>.csv``); the others are ``variants/<race>_5_vs_5_<arm>_eval_seed<E>.csv``
    (terran's feed-forward files, replaced by the recurrent ones, evaluated from a copy ``.../<scenario>_seed<S>.pt``)."""
    source = f"{race}_5_vs_5"
    if race == "protoss" and arm == "feedforward" and eval_seed in (101, 102):
        rows = [r for r in _rows(eval_seed) if r["checkpoint"].startswith(f"checkpoints/smacv2/{source}_seed")]
    else:
        with open(FOLDER / "variants" / f"{source}_{arm}_eval_seed{eval_seed}.csv", newline="") as f:
            rows = list(csv.DictReader(f))
    if arm == "feedforward":
        return rows, {r["checkpoint"]: int(r["checkpoint"].removesuffix(".pt")[-1]) for r in rows}  # <scenario>_seed<S>.pt
    return rows, {r["checkpoint"]: int(r["checkpoint"].split("__")[2]) for r in rows}  # <map>__<exp_name>__<S>__<time>


@pytest.mark.parametrize("race", sorted(AB_EVAL_SEEDS))
def test_the_recurrence_ab_table_is_its_evaluation_files(race):
    """docs/learning_speed.md's same-budget A/B on ``<race>_5_vs_5``: each arm's per-seed win rates, median and
    pooled Wilson interval on each evaluation seed (100 episodes per cell, the final checkpoints at 1,996,800
    env steps)."""
    lines = (REPO / "docs" / "learning_speed.md").read_text().splitlines()
    source = f"{race}_5_vs_5"
    arms = [("feedforward", "feed-forward"), ("recurrent", "`--recurrent`")]
    if race == "protoss":  # the third arm: recurrent actors with the learning rate annealed to 0 over the 2M env steps
        arms.append(("anneal", "`--recurrent --anneal-lr`"))
        arms.append(("hidden32", "`--hidden 32`"))  # the fourth: feed-forward actors 32 wide (the default since 2026-12-08)
    for arm, label in arms:
        for e in AB_EVAL_SEEDS[race]:
            rows, seed_of = _ab_rows(race, arm, e)
            assert {r["source_map"] for r in rows} == {source}
            cells = [race, label, str(e)]
            for target in (source, f"{race}_10_vs_10"):
                by_seed = sorted((seed_of[r["checkpoint"]], r) for r in rows if r["target_map"] == target)
                assert [s for s, _ in by_seed] == [1, 2, 3] and all(int(r["episodes"]) == 100 for _, r in by_seed)
                assert all(int(r["source_steps"]) == 1_996_800 and not r["error"] for _, r in by_seed)
                rates = [int(r["wins"]) / 100 for _, r in by_seed]
                wins = sum(int(r["wins"]) for _, r in by_seed)
                low, high = wilson_interval(wins, 300)
                cells += [
                    " / ".join(f"{x:.2f}" for x in rates),
                    f"{sorted(rates)[1]:.2f}",
                    f"{wins / 300:.3f} [{low:.3f}, {high:.3f}]",
                ]
            assert f"| {' | '.join(cells)} |" in lines, (arm, e)


@pytest.mark.parametrize("race", ["terran", "zerg"])
def test_the_shipped_files_are_the_recurrent_runs_of_the_ab(race):
    """Each shipped terran and zerg file plays evaluation seeds 101 and 102 as its recurrent run did in the A/B:
    the final_eval rows and the variants rows agree episode for episode (wins and mean length)."""
    for e in EVAL_SEEDS:
        rows, seed_of = _ab_rows(race, "recurrent", e)
        ab = {(seed_of[r["checkpoint"]], r["target_map"]): r for r in rows}
        shipped = [r for r in _rows(e) if r["checkpoint"].startswith(f"checkpoints/smacv2/{race}_5_vs_5_seed")]
        compared = 0
        for r in shipped:
            key = (int(r["checkpoint"].removesuffix(".pt")[-1]), r["target_map"])
            if key in ab:
                assert (r["wins"], r["mean_length"]) == (ab[key]["wins"], ab[key]["mean_length"]), (e, key)
                compared += 1
        assert compared == 6, e


def test_the_zerg_10v10_fine_tune_table_is_its_evaluation_files():
    """docs/smacv2.md's 10v10 -> 20v20 table: per-seed win rates, medians, the median ratio and the per-seed
    ratios on each evaluation seed, from ``variants/zerg_10_vs_10_finetune_eval_seed<E>.csv``."""
    lines = (REPO / "docs" / "smacv2.md").read_text().splitlines()
    for e in EVAL_SEEDS:
        with open(FOLDER / "variants" / f"zerg_10_vs_10_finetune_eval_seed{e}.csv", newline="") as f:
            rows = list(csv.DictReader(f))
        rate = {}
        for target in ("zerg_10_vs_10", "zerg_20_vs_20"):
            by_seed = sorted((int(r["checkpoint"].split("__")[2]), r) for r in rows if r["target_map"] == target)
            assert [s for s, _ in by_seed] == [1, 2, 3]
            assert all(int(r["episodes"]) == 100 and int(r["source_steps"]) == 307_200 for _, r in by_seed)
            rate[target] = [int(r["wins"]) / 100 for _, r in by_seed]
        ten, twenty = rate["zerg_10_vs_10"], rate["zerg_20_vs_20"]
        m10, m20 = sorted(ten)[1], sorted(twenty)[1]
        cells = [
            str(e),
            " / ".join(f"{x:.2f}" for x in ten),
            f"{m10:.2f}",
            " / ".join(f"{x:.2f}" for x in twenty),
            f"{m20:.2f} ({m20 / m10:.2f}x)",
            " / ".join(f"{b / a:.2f}x" for a, b in zip(ten, twenty, strict=True)),
        ]
        assert f"| {' | '.join(cells)} |" in lines, e
