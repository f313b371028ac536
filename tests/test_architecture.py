"""Module boundaries: layered packages, one importer per third-party library, small modules."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "advisor"
ONLY = {
    "networkx": {"engine/graph.py", "facts/order.py"},
    "ruamel": {"core/yamlio.py"},
    "typer": {"cli/"},
    "click": {"cli/"},
    "jsonschema": {"core/validation.py"},
    "msgspec": {
        "core/json_text.py",
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


def _loaded_running(*argv: str) -> set[str]:
    """The modules loaded once `advisor ARGV...` has run (in a fresh interpreter)."""
    code = (
        "import sys\n"
        f"sys.argv = ['advisor', *{list(argv)!r}]\n"
        "from advisor.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass"
    )
    return _loaded_after(code)


# pydantic: typer's own parameter conversion (cli.coercion converts without it); rich: typer's
# boxed help; the rest: what the commands' work needs, never the help
HEAVY_FOR_HELP = {
    "pydantic",
    "rich",
    "networkx",
    "jsonschema",
    "msgspec",
    "ruamel",
    "advisor.model",
    "advisor.app",
    "advisor.parsers",
    "advisor.facts",
    "advisor.engine",
    "advisor.render",
    "advisor.edit",
}


@pytest.mark.parametrize("argv", [("--help",), ("suggest", "--help"), ("check", "-h")])
def test_help_imports_none_of_the_heavy_modules(argv: tuple[str, ...]):
    # `advisor --help` is run most: it imports the command tree and nothing the commands do (the
    # start-up times are in benchmarks/bench_startup.py)
    loaded = _loaded_running(*argv)
    assert "advisor.cli.commands" in loaded  # the probe ran the program
    packages = {m.split(".")[0] for m in loaded}
    packages |= {".".join(m.split(".")[:2]) for m in loaded if m.startswith("advisor.")}
    assert packages & HEAVY_FOR_HELP == set()


def test_check_of_one_config_converts_its_options_without_pydantic_or_rich():
    loaded = _loaded_running("check", "-q", str(ROOT / "examples" / "fsdp2" / "config.yaml"))
    assert "advisor.app.check" in loaded
    assert {m.split(".")[0] for m in loaded} & {"pydantic", "rich", "networkx", "msgspec"} == set()


# a launch script's reader: the shell reader, Megatron's argument model, the editors
SCRIPT_READER = {
    "advisor.shell.launch",
    "advisor.shell.reader",
    "advisor.edit.patch",
    "advisor.dialects.fsdp2.launch",
    "advisor.dialects.megatron.document",
}


def test_check_of_a_yaml_config_never_loads_the_script_reader():
    # pre-commit runs `check` on every commit: a YAML config's check pays no script's imports
    loaded = _loaded_running("check", "-q", str(ROOT / "examples" / "fsdp2" / "config.yaml"))
    assert "advisor.dialects.fsdp2.config" in loaded  # the config was read
    assert loaded & SCRIPT_READER == set()
    scripts = _loaded_running("check", "-q", str(ROOT / "examples" / "fsdp2" / "run.sh"))
    assert scripts >= SCRIPT_READER  # the names are the modules a script's check loads


def test_checking_a_config_again_imports_no_validator():
    # the verdict on a config's exact data is cached: jsonschema's import is most of `check`'s
    # start-up (benchmarks/bench_startup.py)
    argv = ("check", "-q", str(ROOT / "examples" / "fsdp2" / "config.yaml"))
    _loaded_running(*argv)  # warms the cache
    assert "jsonschema" not in {m.split(".")[0] for m in _loaded_running(*argv)}


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


# Import cycles still being removed, each the exact set of modules of one cycle (a strongly
# connected part of the import graph). The list only shrinks: an entry goes when the cycle is
# broken (the test below says so), and a cycle that is not listed — new, or a listed one grown
# by another module — fails.
KNOWN_CYCLES: list[frozenset[str]] = []


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_modules(path: Path, name: str, known: set[str]) -> set[str]:
    """Every module of the package this file imports, wherever the import statement stands:
    at the top, inside a function, under `if TYPE_CHECKING:`. `from pkg import x` imports pkg
    (its __init__ runs) and pkg.x when x is a module."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[: len(package) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {m for m in found if m in known and m != name}


def import_graph() -> nx.DiGraph:
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = nx.DiGraph()
    graph.add_nodes_from(files)
    for name, path in files.items():
        graph.add_edges_from((name, target) for target in _imported_modules(path, name, set(files)))
    return graph


def _cycles(graph: nx.DiGraph) -> list[frozenset[str]]:
    return [frozenset(part) for part in nx.strongly_connected_components(graph) if len(part) > 1]


def test_the_import_graph_sees_every_kind_of_import(tmp_path: Path):
    # the graph is built from the source: a function-level or TYPE_CHECKING import counts
    module = tmp_path / "probe.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from advisor.cli import options\n"
        "def f():\n    import advisor.cli.console\n    from . import entry\n",
        encoding="utf-8",
    )
    known = {"advisor.cli", "advisor.cli.options", "advisor.cli.console", "advisor.cli.entry"}
    imported = _imported_modules(module, "advisor.cli.probe", known)
    assert imported == known


def test_no_import_cycle_inside_any_package():
    graph = import_graph()
    assert graph.has_edge("advisor.cli", "advisor.cli.entry")  # the graph is not empty
    new = [
        sorted(cycle)
        for cycle in _cycles(graph)
        if not any(cycle <= known for known in KNOWN_CYCLES)
    ]
    assert new == [], f"import cycles: {new}"


def test_the_list_of_known_cycles_only_shrinks():
    cycles = _cycles(import_graph())
    broken = [
        sorted(known) for known in KNOWN_CYCLES if not any(cycle <= known for cycle in cycles)
    ]
    assert broken == [], f"no longer cyclic, remove from KNOWN_CYCLES: {broken}"
