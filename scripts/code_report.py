"""Print the codebase's shape: lines per file, the longest functions, import cycles, private imports.

The figures issue reports on a restructuring quote (line counts per file, the ten longest functions,
import cycles among the library's modules, imports of another module's ``_private`` names, README
length) come from this script, so that a before/after comparison is one command on each tree:

    python scripts/code_report.py                      # this checkout
    python scripts/code_report.py --root /tmp/old_tree # another checkout, same figures
    python scripts/code_report.py --check              # exit 1 on an import cycle or a private import

Only the library packages (``sc2_envs``, ``models``) are walked for imports; every import counts,
function-local ones included, since a local import hides a cycle without removing it.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

LIBRARY_PACKAGES = ("sc2_envs", "models")
FOLDERS = ("sc2_envs", "models", "algos", "benchmarks", "scripts", "examples")


def module_name(root: Path, path: Path) -> str:
    """``sc2_envs/sim/env.py`` -> ``sc2_envs.sim.env``; a package's ``__init__.py`` -> the package."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def python_files(root: Path, folders: tuple[str, ...]) -> list[Path]:
    files = []
    for folder in folders:
        files.extend(sorted((root / folder).rglob("*.py")))
    return [f for f in files if "__pycache__" not in f.parts]


def non_blank_lines(path: Path) -> int:
    return sum(1 for line in path.read_text().splitlines() if line.strip())


def longest_functions(root: Path, files: list[Path], count: int) -> list[tuple[int, str]]:
    """The ``count`` longest function bodies as (lines, "file:line name"), nested ones included."""
    found = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                found.append((length, f"{path.relative_to(root)}:{node.lineno} {node.name}"))
    return sorted(found, reverse=True)[:count]


def resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module an ``from ... import`` names (relative imports resolved)."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def runtime_nodes(tree: ast.AST):
    """Every node of ``tree`` except those under ``if TYPE_CHECKING:`` (imports for annotations only)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (n for child in node.orelse for n in ast.walk(child))
            continue
        yield node
        yield from runtime_nodes(node)


def import_graph(root: Path, files: list[Path]) -> tuple[dict[str, set[str]], list[str]]:
    """Edges module -> imported library module, and every import of another module's private name."""
    modules = {module_name(root, f): f for f in files}
    edges: dict[str, set[str]] = {m: set() for m in modules}
    private = []
    for module, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in runtime_nodes(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                source = resolve(module, is_package, node)
                for alias in node.names:
                    # "from pkg import sub" depends on the submodule pkg.sub, not on pkg's other names.
                    if f"{source}.{alias.name}" in modules:
                        targets.append(f"{source}.{alias.name}")
                        continue
                    targets.append(source)
                    if alias.name.startswith("_") and not alias.name.startswith("__") and source != module:
                        private.append(f"{path.relative_to(root)}:{node.lineno} imports {source}.{alias.name}")
            for target in targets:
                # An import of a.b.c also runs a and a.b: depend on the deepest existing module.
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != module:
                    edges[module].add(target)
    return edges, private


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))
    for v in edges:
        if v not in index:
            visit(v)
    return components


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1], help="checkout to measure")
    parser.add_argument("--files", type=int, default=25, help="how many of the largest files to list")
    parser.add_argument("--check", action="store_true", help="exit 1 on an import cycle or a private import")
    args = parser.parse_args()
    root = args.root.resolve()

    files = python_files(root, FOLDERS)
    total = sum(non_blank_lines(f) for f in files)
    print(f"root={root}")
    print(f"non-blank Python lines outside tests/: {total:,} in {len(files)} files")
    for folder in FOLDERS:
        in_folder = python_files(root, (folder,))
        print(f"  {folder + '/':<12} {sum(non_blank_lines(f) for f in in_folder):>7,} lines {len(in_folder):>4} files")
    print(f"\nlargest {args.files} files (non-blank lines):")
    for lines, path in sorted(((non_blank_lines(f), f) for f in files), reverse=True)[: args.files]:
        print(f"  {lines:>6}  {path.relative_to(root)}")
    print("\nten longest functions (lines incl. docstring):")
    for length, where in longest_functions(root, files, 10):
        print(f"  {length:>5}  {where}")

    library = python_files(root, LIBRARY_PACKAGES)
    edges, private = import_graph(root, library)
    found = cycles(edges)
    print(f"\nimport cycles among {len(library)} library modules: {len(found)}")
    for component in found:
        print("  " + " <-> ".join(component))
    print(f"imports of another module's private name: {len(private)}")
    for line in private:
        print("  " + line)
    readme = root / "README.md"
    if readme.exists():
        text = readme.read_text()
        print(f"\nREADME.md: {len(text.splitlines())} lines, {len(text.encode()) / 1024:.1f} KB")
    return 1 if args.check and (found or private) else 0


if __name__ == "__main__":
    raise SystemExit(main())
