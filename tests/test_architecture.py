"""Module boundaries: one importer per third-party library, value objects import nothing."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "advisor"
ONLY = {
    "networkx": {"graph.py"},
    "ruamel": {"yamlio.py"},
    "typer": {"cli/"},
    "msgspec": {"parsers/trace.py"},
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_each_library_has_one_importer():
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        for name in _imports(path):
            top = name.split(".")[0]
            if top in ONLY:
                allowed = any(
                    rel == a or (a.endswith("/") and rel.startswith(a)) for a in ONLY[top]
                )
                assert allowed, f"{rel} imports {name}; only {ONLY[top]} may"


def test_model_imports_nothing_from_the_package():
    assert not [n for n in _imports(PACKAGE / "model.py") if n.startswith("advisor")]


def test_modules_stay_small():
    sizes = {
        p.relative_to(PACKAGE).as_posix(): len(p.read_text().splitlines())
        for p in PACKAGE.rglob("*.py")
    }
    # the facts catalogue is a data table; everything else keeps to one reason to change
    assert {k: v for k, v in sizes.items() if v > 450 and k != "facts/catalogue.py"} == {}
