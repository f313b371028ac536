"""compare: verdicts with noise and a convergence guard; the full suggest -> compare loop."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.app.compare import Side, run_compare
from advisor.app.job import JobOptions
from advisor.app.pipeline import log_facts, profile_facts
from advisor.app.suggest import SuggestOptions, run_suggest
from advisor.cli import app
from advisor.core.validation import schema_errors
from advisor.edit.writer import write_patch as write_changes
from advisor.engine.compare import Collect, CompareCode, Verdict, compare
from advisor.inputs.taxonomy import default_taxonomy
from advisor.model import Grounds, RejectCode, Status
from tests.synth import PRESETS, write_profile
from tests.test_trainlog import fsdp2_line

runner = CliRunner()
TAX = default_taxonomy()


def profile(tmp_path: Path, name: str, preset: str = "comm-bound", **changes: object) -> Path:
    write_profile(tmp_path / name, PRESETS[preset].with_(**changes))
    return tmp_path / name


def write_log(
    path: Path,
    step_ms: float,
    losses: list[float],
    noise: float = 0.0,
    tokens_per_step: float = 65536.0,
) -> Path:
    """An FSDP2 log whose tokens/s is the work per step over the step time, as logged (none
    when `tokens_per_step` is 0)."""
    lines = [fsdp2_line(1, 10000.0, loss=losses[0])]
    for i, loss in enumerate(losses[1:], start=2):
        ms = step_ms + noise * ((i * 37) % 11 - 5) / 5
        rate = f"tokens/s: {tokens_per_step * 1000.0 / ms:.1f} | " if tokens_per_step else ""
        rate += "mfu: 30.00 | "
        lines.append(fsdp2_line(i, ms, loss=loss, extra=rate))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_known_improvement_is_kept(tmp_path: Path):
    base = profile_facts(profile(tmp_path, "base", steps=6, jitter=0.01))
    cand = profile_facts(profile(tmp_path, "cand", steps=6, jitter=0.01, comm_exposed_us=400.0))
    result = compare(base, cand, TAX)
    assert result.verdict is Verdict.keep
    step = result.metrics[0]
    assert step.significant and step.better and step.delta_ratio < -0.1
    exposed = next(m for m in result.metrics if m.id == "comm_exposed_ratio")
    assert exposed.better


def test_known_regression_is_reverted(tmp_path: Path):
    base = profile_facts(profile(tmp_path, "base", steps=6, jitter=0.01))
    cand = profile_facts(profile(tmp_path, "cand", steps=6, jitter=0.01, matmul_us=600.0))
    result = compare(base, cand, TAX)
    assert result.verdict is Verdict.revert
    ops = {op["type"]: op for op in result.operators}
    assert ops["MatMulV2"]["delta_ratio"] == pytest.approx(0.5, rel=0.05)


def test_noise_makes_a_small_difference_inconclusive(tmp_path: Path):
    base = profile_facts(profile(tmp_path, "base", steps=8, jitter=0.08))
    cand = profile_facts(
        profile(tmp_path, "cand", steps=8, jitter=0.08, matmul_us=412.0)
    )  # ~2% slower
    result = compare(base, cand, TAX)
    assert result.verdict is Verdict.inconclusive
    assert result.reason.code is CompareCode.within_noise
    values = result.reason.values
    assert abs(float(values["delta_ms"])) < values["z"] * values["noise_ms"]


def test_one_profiled_step_is_inconclusive_and_says_what_to_collect(tmp_path: Path):
    base = profile_facts(profile(tmp_path, "base", steps=2))
    cand = profile_facts(profile(tmp_path, "cand", steps=2, comm_exposed_us=400.0))
    result = compare(base, cand, TAX)
    assert result.verdict is Verdict.inconclusive
    assert result.reason.code is CompareCode.no_noise_estimate
    assert result.reason.values == {"side": "baseline", "steps": 1}
    assert result.collect is Collect.more_steady_steps


def test_loss_regression_flips_a_faster_run_to_revert(tmp_path: Path):
    losses = [2.0 - 0.01 * i for i in range(60)]
    base = log_facts([write_log(tmp_path / "base.log", 2000.0, losses, noise=5.0)])
    faster = log_facts(
        [write_log(tmp_path / "fast.log", 1700.0, [x * 1.05 for x in losses], noise=5.0)]
    )
    result = compare(base, faster, TAX)
    assert result.metrics[0].better  # it is faster ...
    assert result.verdict is Verdict.revert  # ... but converges worse
    assert result.reason.code is CompareCode.loss_regression
    assert result.reason.values["ratio"] == pytest.approx(0.05, rel=0.2)
    good = log_facts([write_log(tmp_path / "good.log", 1700.0, losses, noise=5.0)])
    assert compare(base, good, TAX).verdict is Verdict.keep


def test_more_than_one_changed_setting_is_warned():
    result = compare(
        profile_facts_stub(),
        profile_facts_stub(),
        TAX,
        {"parallel": {"num_to_forward_prefetch": 1, "recompute": False}},
        {"parallel": {"num_to_forward_prefetch": 2, "recompute": True}},
    )
    assert [(w.code, w.values["count"]) for w in result.warnings] == [
        (CompareCode.settings_differ, 2)
    ]


def profile_facts_stub():
    from advisor.model import FactSet

    return FactSet()


def test_compare_json_contract(tmp_path: Path):
    base = profile(tmp_path, "base", steps=6, jitter=0.01)
    cand = profile(tmp_path, "cand", steps=6, jitter=0.01, comm_exposed_us=400.0)
    result = runner.invoke(app, ["compare", str(base), str(cand), "--format", "json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert schema_errors(payload, "comparison.schema.json") == []
    assert payload["schema"] == "advisor/comparison@4" and payload["verdict"] == "keep"
    assert payload["prediction"] is None  # no ledger: nothing predicted to set it against
    assert payload["reason"]["code"] == "beyond-noise"
    assert payload["reason"]["values"]["delta_ratio"] < 0
    assert {m["id"] for m in payload["metrics"]} >= {
        "step_time_ms",
        "comm_exposed_ratio",
        "memory_reserved_peak_bytes",
    }


CONFIG = """\
# loop test
model:
  model_id: qwen3_moe
parallel:
  fsdp_size: 8
training:
  stage: pt
  output_dir: ./out
"""
RUN = "#!/bin/bash\nexport TASK_QUEUE_ENABLE=2\ntorchrun --nproc_per_node 8 train_fsdp2.py config.yaml\n"


def test_full_loop_suggest_write_profile_compare_ledger_next(tmp_path: Path):
    config, script, ledger = (
        tmp_path / "config.yaml",
        tmp_path / "run.sh",
        tmp_path / "ledger.jsonl",
    )
    config.write_text(CONFIG)
    script.write_text(RUN)
    base = profile(tmp_path, "base", steps=6, jitter=0.01)
    first = run_suggest(
        JobOptions(profile=base, config=config, launch=script),
        options=SuggestOptions(ledger=ledger),
    )
    rec = first.suggestion.recommendation
    assert rec.feature == "feature.fsdp-forward-prefetch"
    write_changes(rec.patch)  # what --write does
    assert "num_to_forward_prefetch: 2" in config.read_text()
    # the same profile again: nothing was measured since the change
    again = run_suggest(
        JobOptions(profile=base, config=config, launch=script),
        options=SuggestOptions(ledger=ledger),
    )
    assert again.suggestion.status is Status.awaiting_measurement
    assert again.suggestion.recommendation is None
    assert again.suggestion.reason.code is Grounds.awaiting_measurement
    assert again.suggestion.reason.values["feature"] == "feature.fsdp-forward-prefetch"
    # the next run: prefetch hides part of the exposed communication
    cand = profile(tmp_path, "cand", steps=6, jitter=0.01, comm_exposed_us=1200.0)
    result, note = run_compare(Side(base), Side(cand), ledger_path=ledger)
    assert result.verdict is Verdict.keep
    assert "marked kept" in (note or "")
    second = run_suggest(
        JobOptions(profile=cand, config=config, launch=script),
        options=SuggestOptions(ledger=ledger),
    )
    assert second.suggestion.recommendation.feature == "feature.fsdp-backward-prefetch"
    events = [json.loads(line)["event"] for line in ledger.read_text().splitlines()]
    assert events == ["proposed", "applied", "kept", "proposed"]


def test_revert_becomes_the_next_suggestion_and_is_never_proposed_again(tmp_path: Path):
    config, script, ledger = (
        tmp_path / "config.yaml",
        tmp_path / "run.sh",
        tmp_path / "ledger.jsonl",
    )
    config.write_text(CONFIG)
    script.write_text(RUN)
    base = profile(tmp_path, "base", steps=6, jitter=0.01)
    rec = run_suggest(
        JobOptions(profile=base, config=config, launch=script),
        options=SuggestOptions(ledger=ledger),
    ).suggestion.recommendation
    write_changes(rec.patch)
    worse = profile(tmp_path, "worse", steps=6, jitter=0.01, comm_exposed_us=4000.0)
    result, _ = run_compare(Side(base), Side(worse), ledger_path=ledger)
    assert result.verdict is Verdict.revert
    undo = run_suggest(
        JobOptions(profile=worse, config=config, launch=script),
        options=SuggestOptions(ledger=ledger),
    ).suggestion
    reverted = [json.loads(line) for line in ledger.read_text().splitlines()][-1]
    assert (reverted["event"], reverted["note"]) == ("reverted", CompareCode.beyond_noise.value)
    assert undo.recommendation.undo and undo.reason.code is Grounds.undo
    assert undo.recommendation.revert_note == CompareCode.beyond_noise.value
    assert "-  num_to_forward_prefetch: 2" in undo.recommendation.diff
    write_changes(undo.recommendation.patch)
    assert config.read_text() == CONFIG  # byte for byte back to the baseline
    after = run_suggest(
        JobOptions(profile=base, config=config, launch=script),
        options=SuggestOptions(ledger=ledger),
    ).suggestion
    reasons = {r.feature: r.code for r in after.rejected}
    assert reasons["feature.fsdp-forward-prefetch"] is RejectCode.rejected_before
    assert after.recommendation.feature == "feature.fsdp-backward-prefetch"
