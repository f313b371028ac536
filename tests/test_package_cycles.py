"""No import cycle inside the packages that read and edit configs: every import counts (at
module level, inside a function, under TYPE_CHECKING), between modules and between the
sub-packages of a package."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "advisor"
PACKAGES = ["core", "shell", "dialects", "edit", "app"]


def _module(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _targets(node: ast.AST, known: set[str]) -> set[str]:
    """The package modules an import statement loads (a name imported from a package may be
    one of its modules)."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name in known}
    if isinstance(node, ast.ImportFrom) and node.module:
        found = {f"{node.module}.{a.name}" for a in node.names} & known
        return found or ({node.module} & known)
    return set()


def _graph(folder: Path, depth: int) -> nx.DiGraph:
    """Imports between the modules under `folder`, each named by its first `depth` name parts
    below the package (depth 1: a sub-package counts as one node)."""
    files = {_module(p): p for p in folder.rglob("*.py")}
    base = len(_module(folder / "__init__.py").split("."))

    def node(name: str) -> str:
        return ".".join(name.split(".")[: base + depth])

    graph = nx.DiGraph()
    for name, path in files.items():
        for stmt in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for target in _targets(stmt, set(files)):
                if node(target) != node(name):
                    graph.add_edge(node(name), node(target))
    return graph


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycle_inside(package: str):
    folder = PACKAGE / package
    for depth in (1, 9):  # sub-packages as one node, then every module
        cycles = list(nx.simple_cycles(_graph(folder, depth)))
        assert cycles == [], f"{package}: {cycles}"
