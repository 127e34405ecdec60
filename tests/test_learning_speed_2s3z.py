"""docs/learning_speed.md's 2s3z table at 122,880 env steps is the per-run file it cites, cell for cell."""

import csv
from pathlib import Path

from sc2_envs.stats import wilson_interval

REPO = Path(__file__).resolve().parents[1]
LABELS = {
    "defaults": "the defaults",
    "mb8": "`--num-minibatches 8`",
    "ent005": "`--ent-coef 0.005`",
    "envs32": "`--num-envs 32 --eval-interval 8`",
}


def test_the_2s3z_budget_table_is_its_runs_file():
    """Per-seed win rates in training-seed order, the median (middle value), the pooled Wilson interval and the
    count of seeds at 0.9 or more, for each configuration and evaluation stream; every run stopped at 122,880
    env steps and played 100 episodes per stream."""
    with open(REPO / "docs" / "data" / "2s3z_minibatches_ab.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert all(int(r["env_steps"]) == 122_880 and int(r["episodes"]) == 100 for r in rows)
    lines = (REPO / "docs" / "learning_speed.md").read_text().splitlines()
    table = [line for line in lines if any(line.startswith(f"| {label} | ") for label in LABELS.values())]
    assert len(table) == 2 * len(LABELS), "a row in the table that the file does not give"
    for config, label in LABELS.items():
        for stream, stream_label in (("run", "the run's"), ("101", "101")):
            by_seed = sorted((int(r["training_seed"]), r) for r in rows if (r["config"], r["eval_seed"]) == (config, stream))
            seeds = [s for s, _ in by_seed]
            assert seeds == list(range(1, len(seeds) + 1)) and len(seeds) in (3, 9), (config, stream)
            assert _table_row(label, stream_label, [r for _, r in by_seed]) in lines, (config, stream)


def test_the_2s3z_wall_time_table_is_its_runs_file():
    """The hidden 64 / hidden 32 table at 180 s of wall time: per-seed win rates, median, pooled Wilson interval and
    seeds at 0.9 or more, for each network and evaluation stream; and the prose's counts of env steps, env steps/s
    and first crossings within 180 s."""
    with open(REPO / "docs" / "data" / "2s3z_wall180_hidden_ab.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    labels = {"hidden64": "`--hidden 64` (the default before)", "hidden32": "`--hidden 32` (the default now)"}
    lines = (REPO / "docs" / "learning_speed.md").read_text().splitlines()
    table = [line for line in lines if any(line.startswith(f"| {label} | ") for label in labels.values())]
    assert len(table) == 3 * len(labels), "a row in the table that the file does not give"
    for config, label in labels.items():
        for stream, stream_label in (("run", "the run's"), ("101", "101"), ("102", "102")):
            by_seed = sorted((int(r["training_seed"]), r) for r in rows if (r["config"], r["eval_seed"]) == (config, stream))
            assert [s for s, _ in by_seed] == list(range(1, 10)), (config, stream)
            assert all(int(r["episodes"]) == 100 and 180 <= float(r["wall_time_s"]) < 190 for _, r in by_seed)
            assert _table_row(label, stream_label, [r for _, r in by_seed]) in lines, (config, stream)
    text = " ".join(lines)
    for config, steps_text, sps_text, crossings in (
        ("hidden32", "161,280-220,160", "880-1,219", 8),
        ("hidden64", "104,960-130,560", "579-711", 3),
    ):
        runs = [r for r in rows if (r["config"], r["eval_seed"]) == (config, "run")]
        steps = [int(r["env_steps"]) for r in runs]
        sps = [int(r["env_steps"]) / float(r["wall_time_s"]) for r in runs]
        assert steps_text == f"{min(steps):,}-{max(steps):,}" and steps_text in text
        assert sps_text == f"{round(min(sps)):,}-{round(max(sps)):,}" and sps_text in text
        within = [r for r in runs if r["first_eval_at_least_0_9_s"] and float(r["first_eval_at_least_0_9_s"]) <= 180]
        assert len(within) == crossings


def _table_row(label: str, stream_label: str, runs: list[dict]) -> str:
    """The table line of one configuration and evaluation stream: ``runs`` in training-seed order, 100 episodes
    each; per-seed win rates, the median (middle value), the pooled Wilson interval and the seeds at 0.9 or more."""
    rates = [int(r["wins"]) / 100 for r in runs]
    wins, n = sum(int(r["wins"]) for r in runs), 100 * len(runs)
    low, high = wilson_interval(wins, n)
    cells = [
        label,
        stream_label,
        " / ".join(f"{x:.2f}" for x in rates),
        f"{sorted(rates)[len(rates) // 2]:.2f}",
        f"{wins / n:.3f} [{low:.3f}, {high:.3f}]",
        f"{sum(x >= 0.9 for x in rates)} of {len(rates)}",
    ]
    return f"| {' | '.join(cells)} |"
