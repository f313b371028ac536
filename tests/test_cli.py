"""The facts command end to end: text table and the JSON contract."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from advisor.cli import app
from advisor.core.validation import schema_errors
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


def test_short_help_and_python_dash_m():
    assert runner.invoke(app, ["-h"]).exit_code == 0
    assert "--fail-on" in runner.invoke(app, ["check", "-h"]).output
    proc = subprocess.run(
        [sys.executable, "-m", "advisor", "--version"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0 and proc.stdout.startswith("advisor ")


def test_a_mark_on_no_feature_is_refused_with_the_closest_id(tmp_path: Path):
    ledger = tmp_path / "ledger.jsonl"
    result = runner.invoke(
        app, ["ledger", "--ledger", str(ledger), "--mark", "feature.task-queue-leve2=rejected"]
    )
    assert result.exit_code != 0 and not ledger.exists()
    assert "did you mean feature.task-queue-level2" in str(result.exception)
    ok = runner.invoke(
        app, ["ledger", "--ledger", str(ledger), "--mark", "feature.task-queue-level2=rejected"]
    )
    assert ok.exit_code == 0 and "rejected" in ledger.read_text()


def test_compare_exit_codes_let_a_ci_gate_on_the_verdict(tmp_path: Path):
    from tests.synth import PRESETS, write_profile

    base, worse = tmp_path / "base", tmp_path / "worse"
    write_profile(base, PRESETS["comm-bound"].with_(steps=6, jitter=0.01))
    write_profile(worse, PRESETS["comm-bound"].with_(steps=6, jitter=0.01, comm_exposed_us=4000.0))
    assert runner.invoke(app, ["compare", str(worse), str(base)]).exit_code == 0  # keep
    assert runner.invoke(app, ["compare", str(base), str(worse)]).exit_code == 1  # revert
    assert runner.invoke(app, ["compare", str(base), str(base)]).exit_code == 3  # inconclusive


def test_check_recurses_folders_and_skips_what_is_not_a_training_file(tmp_path: Path):
    root = Path(__file__).resolve().parents[1] / "examples"
    repo = tmp_path / "repo"
    (repo / "configs").mkdir(parents=True)
    (repo / ".github" / "workflows").mkdir(parents=True)
    (repo / "configs" / "config.yaml").write_text((root / "fsdp2" / "config.yaml").read_text())
    (repo / "configs" / "mf.yaml").write_text((root / "mindformers" / "config.yaml").read_text())
    (repo / ".github" / "workflows" / "ci.yml").write_text("on: [push]\njobs: {}\n")
    (repo / ".pre-commit-config.yaml").write_text("repos: []\n")
    (repo / "env.sh").write_text("export TASK_QUEUE_ENABLE=2\n")
    result = runner.invoke(app, ["check", str(repo), "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    payload = json.loads(result.output)
    assert sorted(Path(f).name for f in payload["files"]) == ["config.yaml", "mf.yaml"]
    assert payload["skipped"] == []  # found in a folder: skipped quietly


def test_markdown_for_a_pull_request_comment(tmp_path: Path):
    root = Path(__file__).resolve().parents[1] / "examples"
    prof = root / "profiles" / "comm-bound"
    args = [str(root / "fsdp2" / "config.yaml"), "--launch", str(root / "fsdp2" / "run.sh")]
    out = runner.invoke(app, ["suggest", str(prof), *args, "--format", "markdown", "--no-ledger"])
    assert out.exit_code == 0, out.output
    assert out.output.startswith("### advisor — Next change")
    assert "```diff\n--- a/" in out.output and "<details>" in out.output
    diag = runner.invoke(app, ["diagnose", str(prof), "--format", "markdown"])
    assert diag.exit_code == 0 and "| 1 | `bottleneck.communication` |" in diag.output
    comp = runner.invoke(app, ["compare", str(prof), str(prof), "--format", "markdown"])
    assert comp.exit_code == 3 and "verdict: **INCONCLUSIVE**" in comp.output
    assert "| metric | baseline | candidate | change |" in comp.output


def test_check_reads_standard_input_under_a_given_name():
    proc = subprocess.run(
        [sys.executable, "-m", "advisor", "check", "-", "--stdin-filename", "configs/train.yaml"],
        input="model:\n  model_id: qwen3\noptimization:\n  use_flash_attn: true\n",
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "configs/train.yaml:4:3: warning [policy.flash-attn-not-read]" in proc.stdout
    refused = subprocess.run(
        [sys.executable, "-m", "advisor", "check", "-", "--fix"],
        input="model: {}\n",
        capture_output=True,
        text=True,
        check=False,
    )
    assert refused.returncode == 2 and "standard input" in refused.stderr
