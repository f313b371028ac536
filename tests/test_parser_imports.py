"""The readers' import graph: the trace engine knows no format, and no package imports in a circle.

Every import counts, at module level or inside a function or a TYPE_CHECKING block: a cycle
hidden in a function still ties the modules' meanings together.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

PARSERS = Path(__file__).resolve().parents[1] / "advisor" / "parsers"
ENGINE = "advisor.parsers.traces"
# the concepts the readers are split by; the engine is one of them
FORMATS = ("trace_view", "kineto", "ascend", "ascend_db", "cluster", "trainlog")


def _module(path: Path) -> str:
    parts = path.relative_to(PARSERS.parents[1]).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(path: Path) -> set[str]:
    """Every advisor module a file imports, `from package import module` named as the module."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("advisor."))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("advisor."):
            base = str(node.module)
            for alias in node.names:
                child = f"{base}.{alias.name}"
                is_module = (PARSERS.parents[1] / (child.replace(".", "/") + ".py")).is_file()
                found.add(child if is_module else base)
    return found


def _graph() -> nx.DiGraph:
    graph = nx.DiGraph()
    for path in PARSERS.rglob("*.py"):
        source = _module(path)
        graph.add_node(source)
        for target in _imported(path):
            if target.startswith("advisor.parsers"):
                graph.add_edge(source, target)
    return graph


def _package(module: str, depth: int) -> str:
    return ".".join(module.split(".")[:depth])


def test_no_module_of_the_readers_imports_in_a_circle() -> None:
    graph = _graph()
    # a package's __init__ is its own node: a module importing its package's face is an edge
    assert list(nx.simple_cycles(graph)) == []


def test_no_reader_package_imports_in_a_circle() -> None:
    packages = nx.DiGraph()
    for source, target in _graph().edges:
        a, b = _package(source, 3), _package(target, 3)
        if a != b:
            packages.add_edge(a, b)
    assert list(nx.simple_cycles(packages)) == []


def test_the_trace_engine_imports_no_format() -> None:
    wrong = [
        (source, target)
        for source, target in _graph().edges
        if source.startswith(ENGINE)
        and any(target.startswith(f"advisor.parsers.{name}") for name in FORMATS)
    ]
    assert wrong == []


def test_the_reader_packages_are_the_formats_and_the_engine() -> None:
    packages = {p.name for p in PARSERS.iterdir() if (p / "__init__.py").is_file()}
    assert packages == {*FORMATS, "traces"}


def test_the_engine_budget_is_defined_once() -> None:
    # both trace formats spill and group by the engine's sizes, never by their own
    defined = {
        path.relative_to(PARSERS).as_posix()
        for path in PARSERS.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name) and target.id in ("GROUP_ROWS", "FLUSH_BYTES")
    }
    assert defined == {"traces/budget.py"}
