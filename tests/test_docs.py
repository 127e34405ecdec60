"""Every ```python block in README.md, docs/*.md and checkpoints/README.md runs as documented.

Each markdown file's blocks run in order, in one namespace, as one script in a fresh Python process
(so a block may use names an earlier block of the same file defined, and ``if __name__ ==
"__main__":`` examples behave as they do when a user pastes the file into a script). The script
keeps the markdown's line numbers: every line outside the executed blocks is blank, so a traceback
names the markdown line that failed. It runs in a temporary folder where ``checkpoints/`` and
``examples/`` point at the repository's, so relative paths in the docs work and nothing is written
into the checkout.

A block is tagged by an HTML comment (invisible on GitHub) on the line just before its fence,
blank lines allowed in between:

* ``<!-- doctest: slow -->``: runs only with ``-m slow`` (the whole file, with every slow block).
* ``<!-- doctest: requires MODULE[, MODULE...] -->``: runs only when those modules import
  (optional extras); otherwise the block is reported as a skip naming the missing module.
* ``<!-- doctest: skip REASON -->``: never runs (needs StarCraft II, a GPU, or is a fragment of
  another project's file); reported as a skip with the reason.
* Tags combine with ``;``: ``<!-- doctest: slow; requires sb3_contrib -->``.

Untagged blocks run in the default suite; keep them cheap.
"""

from __future__ import annotations

import fnmatch
import importlib.util
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOC_FILES = sorted([REPO / "README.md", *(REPO / "docs").glob("*.md"), REPO / "checkpoints" / "README.md"])
LINKED = ("checkpoints", "examples")  # relative paths the docs use, linked into the run folder
TIMEOUT_S = 600  # generous: the default blocks take a few seconds, but the CI box may be loaded
COMMENT = re.compile(r"<!--\s*doctest:(.*?)-->")
TAGS = ("slow", "skip", "requires")


@dataclass
class Block:
    path: Path
    start: int  # 1-based line of the first code line
    lines: list[str]
    tags: dict[str, str] = field(default_factory=dict)  # "slow" / "skip" / "requires" -> argument

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.start}"

    def missing_modules(self) -> list[str]:
        names = [m.strip() for m in self.tags.get("requires", "").split(",") if m.strip()]
        return [m for m in names if importlib.util.find_spec(m) is None]


def _parse_tags(comment: str, where: str) -> dict[str, str]:
    m = COMMENT.search(comment)
    if m is None:
        raise ValueError(f"{where}: malformed doctest comment {comment.strip()!r}; expected <!-- doctest: TAG ... -->")
    tags = {}
    for part in m.group(1).split(";"):
        tag, _, arg = part.strip().partition(" ")
        if tag not in TAGS:
            raise ValueError(f"{where}: unknown doctest tag {tag!r}; expected one of {TAGS}")
        if tag in ("skip", "requires") and not arg.strip():
            raise ValueError(f"{where}: 'doctest: {tag}' needs a reason / module list")
        tags[tag] = arg.strip()
    return tags


def python_blocks(path: Path) -> list[Block]:
    """The ```python blocks of a markdown file, with their doctest tags.

    Raises:
        ValueError: an unclosed fence, or a doctest comment with an unknown tag or no argument.
    """
    lines = path.read_text().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            if j == len(lines):
                raise ValueError(f"{path}:{i + 1}: ```python block is never closed")
            block = Block(path, i + 2, lines[i + 1 : j])
            k = i - 1
            while k >= 0 and not lines[k].strip():
                k -= 1
            if k >= 0 and "doctest:" in lines[k]:
                block.tags = _parse_tags(lines[k], f"{path}:{k + 1}")
            blocks.append(block)
            i = j
        i += 1
    return blocks


def script_for(path: Path, blocks: list[Block]) -> str:
    """The markdown with every line outside ``blocks`` blanked: a script with the doc's line numbers."""
    out = [""] * len(path.read_text().splitlines())
    for b in blocks:
        out[b.start - 1 : b.start - 1 + len(b.lines)] = b.lines
    return "\n".join(out) + "\n"


def run_blocks(path: Path, blocks: list[Block], tmp_path: Path) -> None:
    """Run ``blocks`` of ``path`` as one script in a fresh process; fail with its output on error."""
    for name in LINKED:
        (tmp_path / name).symlink_to(REPO / name, target_is_directory=True)
    script = tmp_path / (path.name.replace(".", "_") + ".py")
    script.write_text(script_for(path, blocks))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    env.setdefault("OMP_NUM_THREADS", "1")
    env["MPLBACKEND"] = "Agg"
    try:
        proc = subprocess.run(
            [sys.executable, script.name],
            check=False,
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"")[-3000:] if isinstance(e.stdout, bytes) else (e.stdout or "")[-3000:]
        pytest.fail(f"{path.relative_to(REPO)}: its python blocks did not finish in {TIMEOUT_S} s\n{out}")
    if proc.returncode != 0:
        where = ", ".join(b.where for b in blocks)
        pytest.fail(
            f"{path.relative_to(REPO)}: python blocks ({where}) exited with {proc.returncode}; line numbers "
            f"below are the markdown's\n--- stdout ---\n{proc.stdout[-3000:]}\n--- stderr ---\n{proc.stderr[-5000:]}"
        )


ALL_BLOCKS = {p: python_blocks(p) for p in DOC_FILES if p.is_file()}
FAST_FILES = [p for p, bs in ALL_BLOCKS.items() if any(set(b.tags) <= {"requires"} for b in bs)]  # untagged or requires-only
SLOW_FILES = [p for p, bs in ALL_BLOCKS.items() if any("slow" in b.tags and "skip" not in b.tags for b in bs)]
NOT_RUN = [b for bs in ALL_BLOCKS.values() for b in bs if "skip" in b.tags or b.missing_modules()]


def _runnable(blocks: list[Block], slow: bool) -> list[Block]:
    """The blocks to execute: never skip-tagged ones or ones missing a module; slow ones only if ``slow``."""
    return [b for b in blocks if not ("skip" in b.tags or b.missing_modules() or ("slow" in b.tags and not slow))]


@pytest.mark.parametrize("path", FAST_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_doc_python_blocks_run(path, tmp_path):
    run_blocks(path, _runnable(ALL_BLOCKS[path], slow=False), tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("path", SLOW_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_doc_python_blocks_run_with_slow_ones(path, tmp_path):
    run_blocks(path, _runnable(ALL_BLOCKS[path], slow=True), tmp_path)


@pytest.mark.parametrize("block", NOT_RUN, ids=lambda b: b.where)
def test_doc_block_not_run_here(block):
    """One visible skip per block that cannot run here, with the reason."""
    if "skip" in block.tags:
        pytest.skip(f"{block.where}: {block.tags['skip']}")
    pytest.skip(f"{block.where}: needs {', '.join(block.missing_modules())} (an optional extra)")


def test_every_doc_python_block_is_collected():
    """The parser finds each ```python fence, and blocks the default suite runs (untagged, or tagged only
    ``requires`` an installed extra) are the majority (docs stay tested)."""
    fences = sum(p.read_text().count("```python") for p in DOC_FILES if p.is_file())
    blocks = [b for bs in ALL_BLOCKS.values() for b in bs]
    assert len(blocks) == fences > 0
    assert sum(set(b.tags) <= {"requires"} for b in blocks) >= len(blocks) / 2


def test_marker_parsing(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text(
        "# t\n```python\na = 1\n```\n<!-- doctest: slow -->\n\n```python\nb = a\n```\n"
        "<!-- doctest: skip needs StarCraft II -->\n```python\nc\n```\n"
        "<!-- doctest: slow; requires no_such_module_xyz, os -->\n```python\nd\n```\n"
    )
    blocks = python_blocks(doc)
    assert [(b.start, b.tags, b.lines) for b in blocks] == [
        (3, {}, ["a = 1"]),
        (8, {"slow": ""}, ["b = a"]),
        (12, {"skip": "needs StarCraft II"}, ["c"]),
        (16, {"slow": "", "requires": "no_such_module_xyz, os"}, ["d"]),
    ]
    assert blocks[3].missing_modules() == ["no_such_module_xyz"]
    assert script_for(doc, blocks[:2]).splitlines()[2:8] == ["a = 1", "", "", "", "", "b = a"]
    doc.write_text("<!-- doctest: slwo -->\n```python\nx\n```\n")
    with pytest.raises(ValueError, match="unknown doctest tag"):
        python_blocks(doc)
    doc.write_text("```python\nx\n")
    with pytest.raises(ValueError, match="never closed"):
        python_blocks(doc)


def test_readme_links_every_doc_page_and_lists_the_shipped_checkpoints():
    """'Where to go next' links every page of docs/ and the Layout names every top-level checkpoint (the
    Layout once listed 4 of the 7 shipped checkpoints and a subset of docs/)."""
    readme = (REPO / "README.md").read_text()
    next_steps, layout = readme.split("## Where to go next", 1)[1].split("## Layout", 1)
    for doc in sorted((REPO / "docs").glob("*.md")):
        assert f"(docs/{doc.name})" in next_steps, f"docs/{doc.name} is not linked from the README's 'Where to go next'"
    for ckpt in sorted((REPO / "checkpoints").glob("*.pt")):
        assert ckpt.name in layout, f"checkpoints/{ckpt.name} is not in the README's Layout"
    assert "checkpoints/README.md" in layout


def test_readme_names_what_the_simulators_thread_message_points_to():
    """``make_batched`` prints "see README 'Threads (torch path)'" when it changes torch's thread count;
    that README item explains the choice and says it is that line's target."""
    threads_src = (REPO / "sc2_envs" / "sim" / "runtime" / "threads.py").read_text()
    assert "see README 'Threads (torch path)'" in threads_src  # when this changes, update the pointer below
    readme = (REPO / "README.md").read_text()
    item = readme.split("- Threads (torch path", 1)[1][:400]
    assert "see README 'Threads (torch path)'" in item and "points here" in item


def _named_patterns(markdown: str) -> set[str]:
    """The file names and paths a markdown text names in backticks, as fnmatch patterns: ``a.{csv,md}``
    gives ``a.csv`` and ``a.md``, a ``<placeholder>`` becomes ``*``, a leading ``checkpoints/`` is dropped."""

    def expand(token: str) -> list[str]:
        m = re.search(r"\{([^{}]*)\}", token)
        if m is None:
            return [token]
        return [x for alt in m.group(1).split(",") for x in expand(token[: m.start()] + alt + token[m.end() :])]

    patterns = set()
    for token in re.findall(r"`([^`\s]+)`", markdown):
        for name in expand(token.removeprefix("checkpoints/")):
            patterns.add(re.sub(r"<[^>]*>", "*", name))
    return patterns


def test_the_checkpoint_index_names_every_shipped_file_and_family_folder():
    """checkpoints/README.md is the one index of checkpoints/: each folder has a row in its Index table, and
    each file is named (by its path, by its name in its family's section, or by a pattern such as
    ``evals/<map>_seed<S>_eval.csv``), so no file is shipped that no page explains."""
    index = (REPO / "checkpoints" / "README.md").read_text()
    table = index.split("## Index", 1)[1].split("\n## ", 1)[0]
    for folder in sorted(p for p in (REPO / "checkpoints").iterdir() if p.is_dir()):
        assert f"`{folder.name}/" in table, f"checkpoints/{folder.name}/ has no row in checkpoints/README.md's Index"
    patterns = _named_patterns(index)
    for path in sorted((REPO / "checkpoints").rglob("*")):
        if path.is_dir() or path.name == "README.md":
            continue
        rel = path.relative_to(REPO / "checkpoints").as_posix()
        names = {rel, path.name, rel.partition("/")[2]}
        assert any(fnmatch.fnmatchcase(n, p) for n in names for p in patterns), (
            f"checkpoints/{rel} is not named in checkpoints/README.md"
        )


LINKED_PAGES = sorted({*DOC_FILES, *(REPO / "tests" / "data").rglob("*.md")})


def _prose_lines(path: Path):
    """``(line number, line)`` of a markdown file outside its code fences (a ``#`` there is a comment)."""
    fenced = False
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            yield number, line


def heading_anchors(path: Path) -> set[str]:
    """The fragments GitHub gives the headings of a markdown file: the text of links kept, lower case,
    punctuation but ``-`` and ``_`` dropped, spaces to hyphens, ``-1``, ``-2``, ... on repeats
    (github/cmark-gfm's anchors, as github-slugger computes them), plus explicit ``<a id=...>`` anchors."""
    anchors, seen = set(), {}
    for _, line in _prose_lines(path):
        heading = re.match(r"#{1,6} (.*)", line)
        if heading:
            text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.group(1)).strip().lower()
            slug = "".join(c for c in text if c.isalnum() or c in " -_").replace(" ", "-")
            anchors.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
            seen[slug] = seen.get(slug, 0) + 1
        anchors.update(re.findall(r'<a (?:id|name)="([^"]+)"', line))
    return anchors


def test_heading_anchors_follow_github():
    doc = REPO / "docs" / "api.md"
    assert {"native-batched-api-the-fast-path", "pettingzoo-parallel-api"} <= heading_anchors(doc)
    assert "threads-torch-path" in heading_anchors(REPO / "docs" / "speed.md")


@pytest.mark.parametrize("page", LINKED_PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_names_a_file_and_heading_that_exist(page):
    """Each relative link of the README, docs/ and the checkpoint and test-data pages opens an existing
    file, at an existing heading when it names one (full_game_program.md linked a3c_upgo.md's section by a
    title it no longer had)."""
    broken = []
    for number, line in _prose_lines(page):
        for target in re.findall(r"\]\(([^)\s]+)\)", re.sub(r"`[^`]*`", "", line)):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                continue
            path, _, fragment = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists():
                broken.append(f"{page.relative_to(REPO)}:{number}: {target}: no such file")
            elif fragment and linked.suffix == ".md" and fragment not in heading_anchors(linked):
                broken.append(f"{page.relative_to(REPO)}:{number}: {target}: no such heading in {linked.name}")
    assert not broken, "\n".join(broken)
