"""What docs/results.md promises of benchmarks/: every script there has a row in its table of benchmarks
and answers ``--help`` with a description, without running anything."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import REPO

BENCHMARKS = sorted((REPO / "benchmarks").glob("*.py"))


def _benchmark_table() -> str:
    results = (REPO / "docs" / "results.md").read_text()
    return results.split("## The benchmarks", 1)[1].split("\n## ", 1)[0]


def test_every_benchmark_has_a_row_in_the_results_page():
    table = _benchmark_table()
    missing = [b.name for b in BENCHMARKS if f"| `{b.name}` |" not in table]
    assert not missing, f"benchmarks without a row in docs/results.md's 'The benchmarks': {missing}"


def test_the_benchmark_table_names_no_removed_script():
    rows = [line.split("|")[1].strip().strip("`") for line in _benchmark_table().splitlines() if line.startswith("| `")]
    assert rows and all((REPO / "benchmarks" / name).is_file() for name in rows), rows


@pytest.mark.slow
@pytest.mark.parametrize("script", BENCHMARKS, ids=lambda p: p.name)
def test_every_benchmark_answers_help_with_a_description(script):
    r = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("usage:"), r.stdout[:500]
    # argparse and tyro both print: the usage paragraph, a blank line, the description, then the options
    paragraphs = [p.strip() for p in r.stdout.split("\n\n") if p.strip()]
    description = paragraphs[1] if len(paragraphs) > 1 else ""
    assert len(description) > 20 and not description.startswith(("options", "╭", "-")), r.stdout[:800]
