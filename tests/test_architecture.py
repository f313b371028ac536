"""Module boundaries: layered packages, one importer per third-party library, small modules."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "advisor"
ONLY = {
    "networkx": {"engine/graph.py", "facts/order.py"},
    "ruamel": {"core/yamlio.py"},
    "typer": {"cli/"},
    "click": {"cli/"},
    "jsonschema": {"core/validation.py"},
    "msgspec": {
        "parsers/trace_view/events.py",
        "parsers/trace_view/decode.py",
        "parsers/kineto/stream.py",
    },
}
# Each layer may import only the layers listed for it (and itself). The walk of a command goes
# down: cli -> app -> dialects -> engine -> facts -> parsers -> inputs -> core, and
# dialects -> edit -> shell -> core; render turns results into text. The policy engine knows no
# dialect (it reads documents through a protocol); each dialect brings its structural checks.
LAYERS: dict[str, set[str]] = {
    "model": set(),
    "core": {"model"},
    "shell": {"model", "core"},
    "inputs": {"model", "core"},
    "parsers": {"model", "core", "inputs"},
    "facts": {"model", "core", "inputs", "parsers"},
    "engine": {"model", "core", "inputs", "facts"},
    "edit": {"model", "core", "shell"},
    "dialects": {"model", "core", "shell", "edit", "engine"},
    "render": {"model", "core", "inputs", "facts", "engine", "dialects"},
    "app": {"model", "core", "shell", "inputs", "parsers", "facts", "engine", "edit", "dialects"},
    "cli": {
        "model",
        "core",
        "shell",
        "inputs",
        "parsers",
        "facts",
        "engine",
        "edit",
        "dialects",
        "render",
        "app",
    },
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


def _layer(rel: str) -> str | None:
    head = rel.split("/", 1)[0]
    return head.removesuffix(".py") if head.removesuffix(".py") in LAYERS else None


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


def test_every_module_belongs_to_a_layer():
    loose = [
        p.relative_to(PACKAGE).as_posix()
        for p in PACKAGE.rglob("*.py")
        if _layer(p.relative_to(PACKAGE).as_posix()) is None
    ]
    assert sorted(loose) == ["__init__.py", "__main__.py"]


def test_layers_import_only_downwards():
    wrong = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        layer = _layer(rel)
        if layer is None:
            continue
        for name in _imports(path):
            parts = name.split(".")
            if parts[0] != "advisor" or len(parts) < 2:
                continue
            target = parts[1]
            if target != layer and target in LAYERS and target not in LAYERS[layer]:
                wrong.append(f"{rel} ({layer}) imports {name} ({target})")
    assert wrong == []


def test_model_imports_nothing_from_the_package():
    assert not [n for n in _imports(PACKAGE / "model.py") if n.startswith("advisor")]


def test_the_wheel_does_not_ship_the_profile_writer():
    assert not (PACKAGE / "synth").exists()


def test_modules_stay_small():
    sizes = {
        p.relative_to(PACKAGE).as_posix(): len(p.read_text().splitlines())
        for p in PACKAGE.rglob("*.py")
    }
    # every module keeps to one reason to change (the facts catalogue is data: rules/facts.yaml)
    assert {k: v for k, v in sizes.items() if v > 400} == {}


def _loaded_after(code: str) -> set[str]:
    import subprocess
    import sys

    probe = f"{code}\nimport sys\nprint(' '.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    return set(out.split())


def test_the_command_line_starts_without_heavy_libraries():
    # `advisor --help` and pre-commit's `advisor check` are run most: they import only what
    # they use (the start-up times are in benchmarks/bench_startup.py)
    loaded = _loaded_after("import advisor.cli")
    heavy = {"networkx", "jsonschema", "msgspec", "ruamel", "advisor.parsers", "advisor.engine"}
    assert loaded & heavy == set()


def test_check_needs_no_graph_and_no_profile_parsers():
    loaded = _loaded_after(
        "import advisor.cli.check_cmds, advisor.app.check, advisor.app.rulesets,"
        " advisor.render.check"
    )
    assert loaded & {"networkx", "msgspec", "advisor.parsers", "advisor.engine.graph"} == set()


def test_reading_a_profile_imports_no_validator_once_the_data_files_are_cached():
    # the taxonomy is validated on its first use, then read back from the cache as JSON:
    # jsonschema and ruamel together take longer to import than a small profile to analyse
    code = (
        "import advisor.app.pipeline\n"
        "from advisor.inputs.taxonomy import default_taxonomy\n"
        "default_taxonomy()"
    )
    first = _loaded_after(code)
    assert "jsonschema" in first or "advisor.core.validation" not in first  # warmed
    assert _loaded_after(code) & {"jsonschema", "ruamel", "advisor.core.validation"} == set()


def _modules_imported(path: Path) -> set[str]:
    """Every advisor module a file imports anywhere (module level, inside functions, under
    TYPE_CHECKING): `from advisor.render import words` names advisor.render.words."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {n for n in names if n.startswith("advisor.")}


@pytest.mark.parametrize("package", ["engine", "render"])
def test_no_import_cycle_inside_the_package(package: str):
    import networkx as nx

    modules = {
        f"advisor.{package}.{p.stem}": p
        for p in (PACKAGE / package).glob("*.py")
        if p.name != "__init__.py"
    }
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for name, path in modules.items():
        graph.add_edges_from((name, other) for other in _modules_imported(path) if other in modules)
    assert list(nx.simple_cycles(graph)) == []
