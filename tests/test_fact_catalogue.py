"""The facts catalogue as data: rules/facts.yaml checked against its schema, read once, its
own consistency (ids listed once, hints that exist), and read without the validator when
cached."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from advisor.core.checked_data import load_checked
from advisor.core.resources import rules_dir
from advisor.core.yamlio import load_data
from advisor.facts import catalogue
from advisor.model import DataError

FILE = rules_dir() / catalogue.CATALOGUE_FILE


def _raw() -> Any:
    return load_data(FILE)


def test_the_catalogue_file_is_valid_and_lists_each_fact_once() -> None:
    data, errors = load_checked(FILE, catalogue.SCHEMA)
    assert errors == []
    ids = [entry["id"] for entry in data["facts"]]
    assert len(ids) == len(set(ids)) == len(catalogue.CATALOGUE)
    assert [spec.id for spec in catalogue.CATALOGUE] == ids  # listed in the file's order


def test_a_shared_hint_is_resolved_with_its_gpu_counterpart() -> None:
    spec = catalogue.spec_for("step.time_ms")
    assert "step_trace_time.csv" in spec.collect
    assert "torch.profiler.schedule" in catalogue.collect_hint("step.time_ms", "cuda")
    assert catalogue.collect_hint("step.time_ms", "ascend") == spec.collect


def test_a_log_or_config_fact_keeps_its_hint_on_a_gpu_trace() -> None:
    # a training log is read the same whatever the profiler: its hint is not "not recorded"
    for fact_id in ("log.overflow_ratio", "model.params", "pipeline.bubble_expected_ratio"):
        assert catalogue.collect_hint(fact_id, "cuda") == catalogue.spec_for(fact_id).collect
    # a PyTorch trace records memory with profile_memory=True, not Ascend's profile_with_memory
    for fact_id in ("memory.fragmentation_ratio", "memory.pressure_ratio"):
        hint = catalogue.collect_hint(fact_id, "cuda")
        assert "profile_memory=True" in hint and "profile_with_memory" not in hint
    # what PyTorch traces do not carry is still said so
    assert catalogue.collect_hint("ops.aicore_freq_min_ratio", "cuda") == (
        "not recorded in PyTorch profiler traces"
    )


def test_environment_variables_share_one_entry() -> None:
    spec = catalogue.spec_for("env.HCCL_BUFFSIZE")
    assert (spec.id, spec.area, spec.combine) == ("env.HCCL_BUFFSIZE", "env", "first")
    assert catalogue.is_known("env.X") and not catalogue.is_known("env.")


def test_a_fact_listed_twice_is_an_error_naming_the_file() -> None:
    raw = _raw()
    raw["facts"].append(dict(raw["facts"][0]))
    with pytest.raises(
        DataError, match=f"facts.yaml: fact {raw['facts'][0]['id']} is listed twice"
    ):
        catalogue._build(raw, str(FILE))


def test_an_unknown_hint_is_an_error() -> None:
    raw = _raw()
    raw["facts"][0] = {**raw["facts"][0], "hint": "nowhere"}
    with pytest.raises(DataError, match="no hint named nowhere"):
        catalogue._build(raw, str(FILE))


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"unit": "furlongs"}, "furlongs"),
        ({"combine": "sum"}, "sum"),
        ({"hint": "steps", "collect": "both"}, "should not be valid"),
        ({"id": "Not An Id"}, "Not An Id"),
    ],
)
def test_the_schema_rejects_a_bad_entry(
    tmp_path: Path, change: dict[str, str], fragment: str
) -> None:
    raw = _raw()
    raw["facts"][0] = {**raw["facts"][0], **change}
    broken = tmp_path / "facts.yaml"
    broken.write_text(json.dumps(raw), encoding="utf-8")  # YAML reads JSON
    _, errors = load_checked(broken, catalogue.SCHEMA)
    assert any(fragment in e for e in errors), errors


def test_a_cached_catalogue_is_read_without_the_validator(tmp_path: Path) -> None:
    code = (
        "import sys\nfrom advisor.facts.catalogue import spec_for\nspec_for('step.time_ms')\n"
        "print(sorted({'jsonschema', 'ruamel'} & {m.split('.')[0] for m in sys.modules}))"
    )

    def loaded() -> str:
        env = {"ADVISOR_CACHE_DIR": str(tmp_path)}
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        return run.stdout.strip()

    assert loaded() == "['jsonschema', 'ruamel']"  # the first read validates
    assert loaded() == "[]"


def test_importing_the_catalogue_reads_nothing(tmp_path: Path) -> None:
    code = "from advisor.facts import catalogue\nprint(catalogue.catalogue.cache_info().currsize)"
    env = {"ADVISOR_CACHE_DIR": str(tmp_path)}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert run.stdout.strip() == "0"
