"""The facts command end to end: text table and the JSON contract."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from advisor.cli import app
from advisor.inputs.validation import schema_errors
from tests.synth import PRESETS, write_profile

runner = CliRunner()


def test_facts_json_validates_against_its_schema(tmp_path: Path):
    write_profile(tmp_path, PRESETS["host-bound"])
    result = runner.invoke(app, ["facts", str(tmp_path), "--format", "json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert schema_errors(payload, "facts.schema.json") == []
    by_id = {f["id"]: f for f in payload["facts"]}
    assert by_id["host.dispatch_bound_ratio"]["unit"] == "ratio"
    assert by_id["host.dispatch_bound_ratio"]["value"] > 0.3
    assert by_id["step.time_ms"]["scope"] == "job"
    assert by_id["step.time_ms"]["source"] == "step_trace_time.csv"
    assert "dropped" in by_id["step.time_ms"]["note"]
    assert payload["inputs"] and all(Path(p).exists() for p in payload["inputs"])


def test_facts_text_is_grouped_by_area(tmp_path: Path):
    write_profile(tmp_path, PRESETS["level0"])
    result = runner.invoke(app, ["facts", str(tmp_path), "--notes"])
    assert result.exit_code == 0, result.output
    text = result.output
    for area in ("profile", "step", "ops", "host", "data", "memory"):
        assert f"\n{area}\n" in f"\n{text}"
    assert "missing (not computed, with the reason)" in text
    assert "comm.wait_ratio" in text.split("missing")[1]
    assert "first step 1 dropped" in text


def test_cluster_text_has_a_per_rank_table(tmp_path: Path):
    from tests.synth import write_cluster

    write_cluster(tmp_path, PRESETS["healthy"], ranks=3, slow_rank=1)
    result = runner.invoke(app, ["facts", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "per rank" in result.output
    assert "ranks.slowest" in result.output


def test_version():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.startswith("advisor ")
