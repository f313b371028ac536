"""Each layer's thresholds load from rules/thresholds.yaml, the taxonomy holds the vocabulary
only, and each layer imports only its own thresholds object."""

from __future__ import annotations

import ast
import dataclasses
import typing
from pathlib import Path

import pytest

from advisor.core.checked_data import load_valid
from advisor.core.yamlio import load_data
from advisor.inputs import thresholds
from advisor.inputs.taxonomy import Taxonomy
from advisor.model import DataError

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "rules" / "thresholds.yaml"

# section of rules/thresholds.yaml -> its loader
LOADERS = {
    "readers": thresholds.reader_thresholds,
    "facts": thresholds.fact_thresholds,
    "logs": thresholds.log_thresholds,
    "compare": thresholds.compare_thresholds,
    "planner": thresholds.planner_thresholds,
    "cluster": thresholds.cluster_thresholds,
}

# the thresholds names a package may import: its own layer's (the fact derivers also name the
# readers' small-kernel threshold in a note; the app reads the cluster's and hands the facts'
# to the memory-pressure step; `estimate` on the command line judges a layout's fit)
ALLOWED = {
    "parsers": {"ReaderThresholds", "reader_thresholds"},
    "facts": {
        "FactThresholds",
        "LogThresholds",
        "fact_thresholds",
        "log_thresholds",
        "reader_thresholds",
    },
    "engine": {
        "CompareThresholds",
        "PlannerThresholds",
        "compare_thresholds",
        "planner_thresholds",
    },
    "app": {"ClusterThresholds", "cluster_thresholds", "fact_thresholds"},
    "cli": {"fact_thresholds"},
}


@pytest.mark.parametrize("section", sorted(LOADERS))
def test_each_section_loads_with_the_files_values(section: str) -> None:
    raw = load_data(RULES)[section]
    loaded = dataclasses.asdict(LOADERS[section]())
    assert loaded == {key: pytest.approx(value) for key, value in raw.items()}
    assert set(loaded) == set(raw)


def test_a_missing_section_or_a_wrong_value_is_refused(tmp_path: Path) -> None:
    text = RULES.read_text(encoding="utf-8")
    missing = tmp_path / "missing.yaml"
    missing.write_text(text.replace("compare:\n", "comparing:\n"), encoding="utf-8")
    with pytest.raises(DataError, match=r"missing\.yaml"):
        load_valid(missing, "thresholds.schema.json")
    negative = tmp_path / "negative.yaml"
    negative.write_text(text.replace("z: 3.0", "z: -3.0"), encoding="utf-8")
    with pytest.raises(DataError, match=r"negative\.yaml"):
        load_valid(negative, "thresholds.schema.json")


def test_the_taxonomy_holds_no_numbers() -> None:
    hints = typing.get_type_hints(Taxonomy)
    numeric = [name for name, hint in hints.items() if hint in (int, float)]
    assert numeric == []


def _imported_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "advisor.inputs.thresholds"
        for alias in node.names
    }


def test_each_layer_imports_only_its_own_thresholds() -> None:
    wrong = []
    seen: set[str] = set()
    for path in sorted((ROOT / "advisor").rglob("*.py")):
        package = path.relative_to(ROOT / "advisor").parts[0]
        names = _imported_names(path)
        seen |= names
        if names and package not in ALLOWED:
            wrong.append(f"{path.relative_to(ROOT)}: {sorted(names)}")
        elif names - ALLOWED.get(package, set()):
            wrong.append(f"{path.relative_to(ROOT)}: {sorted(names - ALLOWED[package])}")
    assert wrong == []
    # every loader is used somewhere: no section is dead
    assert {f.__name__ for f in LOADERS.values()} <= seen
