"""compare judged in the job's units: time per token or sample when the work per step differs,
the baseline conditions that differ, the loss at matched consumed work, shares in points."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from advisor.app.compare import Side, run_compare
from advisor.app.pipeline import log_facts
from advisor.cli import app
from advisor.core.validation import schema_errors
from advisor.engine.compare import CompareCode, Metric, Verdict, compare
from advisor.engine.compare_work import Unit
from advisor.inputs.taxonomy import default_taxonomy
from advisor.model import JOB_SCOPE, Fact, FactSet
from advisor.render.compare import comparison_text
from advisor.render.compare_words import metric_change
from tests.test_compare import profile, write_log

runner = CliRunner()


def facts(**values: float) -> FactSet:
    """A side of measured values, by fact id with '__' for '.'."""
    return FactSet(
        facts=[Fact(k.replace("__", "."), v, "", JOB_SCOPE, "test") for k, v in values.items()]
    )


TAX = default_taxonomy()
SEQ = 8192
FLAT = [2.0 - 0.005 * i for i in range(60)]
# the loss per 8 x 8192 tokens seen; a run with twice the batch logs every second value
PER_TOKEN = [2.0 - 0.005 * i for i in range(120)]


def fsdp2_config(path: Path, per_device: int, seq: int = SEQ, fsdp: int = 8) -> Path:
    path.write_text(
        "model:\n  model_id: qwen3\n"
        f"data:\n  dataset: /data/corpus\n  cutoff_len: {seq}\n"
        f"parallel:\n  fsdp_size: {fsdp}\n"
        f"training:\n  per_device_train_batch_size: {per_device}\n"
        "  gradient_accumulation_steps: 1\n  seed: 42\n"
    )
    return path


def gbs_logs(tmp_path: Path, candidate_rate: float) -> tuple[Path, Path]:
    """The issue's two FSDP2 logs: global batch 8 -> 16 at 8192 tokens, the candidate's
    tokens/s `candidate_rate` (the baseline's is 36,454)."""
    base_tokens, cand_tokens = 8 * SEQ, 16 * SEQ
    base = write_log(tmp_path / "base.log", base_tokens * 1000 / 36454, FLAT, 3.0, base_tokens)
    cand_ms = cand_tokens * 1000 / candidate_rate
    cand = write_log(tmp_path / "cand.log", cand_ms, PER_TOKEN[::2][:30], 3.0, cand_tokens)
    return base, cand


def test_a_larger_batch_that_raises_tokens_per_s_is_kept_though_the_step_is_slower(
    tmp_path: Path,
):
    base, cand = gbs_logs(tmp_path, 36454 * 1.059)
    result = compare(log_facts([base]), log_facts([cand]), TAX)
    step = result.metrics[0]
    assert step.delta_ratio is not None and step.delta_ratio > 0.85  # the step is ~89% slower
    assert result.verdict is Verdict.keep
    assert result.judged_on.unit is Unit.token
    assert result.judged_on.source == "log tokens/s x step time"
    assert result.reason.code is CompareCode.beyond_noise
    assert result.reason.values["unit"] == "token"
    per_token = result.metrics[1]
    assert per_token.id == "time_per_token_us" and per_token.better
    assert per_token.delta_ratio is not None
    assert abs(per_token.delta_ratio - (1 / 1.059 - 1)) < 0.005
    text = comparison_text(result, None)
    assert "Verdict: KEEP — time per token" in text
    assert "Judged on: time per token: the work per step differs (65,5" in text


def test_a_larger_batch_that_lowers_tokens_per_s_is_reverted(tmp_path: Path):
    base, cand = gbs_logs(tmp_path, 36454 * (1 - 0.077))
    result = compare(log_facts([base]), log_facts([cand]), TAX)
    assert result.verdict is Verdict.revert
    assert result.judged_on.unit is Unit.token
    assert result.reason.values["delta_ratio"] > 0.05  # time per token rose


def test_the_same_work_per_step_is_still_judged_on_the_step(tmp_path: Path):
    base = write_log(tmp_path / "a.log", 2000.0, FLAT, 3.0)
    cand = write_log(tmp_path / "b.log", 1800.0, FLAT, 3.0)
    result = compare(log_facts([base]), log_facts([cand]), TAX)
    assert (result.verdict, result.judged_on.unit) == (Verdict.keep, Unit.step)
    assert result.reason.values["unit"] == "step"
    assert all(m.id != "time_per_token_us" for m in result.metrics)


def test_the_configs_give_the_tokens_when_the_log_has_no_rate(tmp_path: Path):
    # logs without tokens/s: the work per step is global batch x sequence length of the configs
    base = write_log(tmp_path / "a.log", 2000.0, FLAT, 3.0, tokens_per_step=0.0)
    cand = write_log(tmp_path / "b.log", 3000.0, PER_TOKEN[::2][:30], 3.0, tokens_per_step=0.0)
    configs = fsdp2_config(tmp_path / "a.yaml", 1), fsdp2_config(tmp_path / "b.yaml", 2)
    result, _ = run_compare(Side(log=base, config=configs[0]), Side(log=cand, config=configs[1]))
    # 16 samples in 3.0 s beats 8 samples in 2.0 s
    assert (result.verdict, result.judged_on.unit) == (Verdict.keep, Unit.token)
    assert result.judged_on.source == "global batch x sequence length"
    assert (result.judged_on.baseline_per_step, result.judged_on.candidate_per_step) == (
        8 * SEQ,
        16 * SEQ,
    )
    warned = {
        w.values["condition"]: w for w in result.warnings if w.code.value == "baseline-differs"
    }
    assert warned["global_batch"].values["baseline"] == 8
    assert warned["global_batch"].values["candidate"] == 16


def test_samples_decide_when_tokens_are_unknown():
    base, cand = facts(log__step_time_ms=2000.0), facts(log__step_time_ms=3000.0)
    # no sequence length: the Megatron layout states only the global batch
    result = compare(
        base,
        cand,
        TAX,
        {"layout": {"global_batch_size": 8}},
        {"layout": {"global_batch_size": 16}},
    )
    assert result.judged_on.unit is Unit.sample
    assert result.metrics[1].id == "time_per_sample_ms"
    assert result.metrics[1].baseline == 250.0 and result.metrics[1].candidate == 187.5


def test_world_size_and_sequence_length_changes_are_warned_in_text_and_json(tmp_path: Path):
    base = write_log(tmp_path / "a.log", 2000.0, FLAT, 3.0)
    cand = write_log(tmp_path / "b.log", 1800.0, FLAT, 3.0)
    configs = (
        fsdp2_config(tmp_path / "a.yaml", 1, seq=4096, fsdp=8),
        fsdp2_config(tmp_path / "b.yaml", 1, seq=8192, fsdp=16),
    )
    result = runner.invoke(
        app,
        [
            "compare",
            "--baseline-log",
            str(base),
            "--candidate-log",
            str(cand),
            "--baseline-config",
            str(configs[0]),
            "--candidate-config",
            str(configs[1]),
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert schema_errors(payload, "comparison.schema.json") == []
    differs = {
        w["values"]["condition"]: w for w in payload["warnings"] if w["code"] == "baseline-differs"
    }
    assert differs["world_size"]["values"] == {
        "condition": "world_size",
        "baseline": 8,
        "candidate": 16,
    }
    assert differs["seq_length"]["message"].startswith("sequence length differs: 4096 -> 8192")
    text = runner.invoke(
        app,
        [
            "compare",
            "--baseline-log",
            str(base),
            "--candidate-log",
            str(cand),
            "--baseline-config",
            str(configs[0]),
            "--candidate-config",
            str(configs[1]),
        ],
    ).output
    assert "warning: world size differs: 8 -> 16" in text
    assert "warning: sequence length differs: 4096 -> 8192" in text


def test_the_loss_guard_matches_consumed_tokens_not_iterations(tmp_path: Path):
    # the same loss per token seen: the doubled batch's iteration n is the baseline's 2n
    per_token = [2.0 - 0.01 * i for i in range(80)]
    base = write_log(tmp_path / "a.log", 2000.0, per_token, 3.0, 8 * SEQ)
    cand = write_log(tmp_path / "b.log", 3600.0, per_token[::2][:40], 3.0, 16 * SEQ)
    same = compare(log_facts([base]), log_facts([cand]), TAX)
    # matched on iterations the candidate's loss would look 50% ahead (lower), here it is equal
    assert same.reason.code is CompareCode.beyond_noise and same.verdict is Verdict.keep
    worse = write_log(
        tmp_path / "c.log", 3600.0, [x * 1.05 for x in per_token[::2][:40]], 3.0, 16 * SEQ
    )
    regressed = compare(log_facts([base]), log_facts([worse]), TAX)
    assert regressed.verdict is Verdict.revert
    assert regressed.reason.code is CompareCode.loss_regression
    assert regressed.reason.values["matched_on"] == "token"
    assert abs(float(regressed.reason.values["ratio"]) - 0.05) < 0.01
    assert "matched consumed tokens" in comparison_text(regressed, None)


def test_a_share_changes_in_percentage_points():
    exposed = Metric(
        "comm_exposed_ratio", "exposed communication", "s", 0.306, 0.035, -0.886, True, True, -27.1
    )
    assert metric_change(exposed) == "-27.1 pp"
    step = Metric("step_time_ms", "step time (ms)", "s", 10.0, 9.0, -0.1, True, True)
    assert metric_change(step) == "-10.0%"


def test_a_small_share_doubling_is_not_significant():
    base, cand = facts(step__free_ratio=0.001), facts(step__free_ratio=0.002)
    free = next(m for m in compare(base, cand, TAX).metrics if m.id == "free_ratio")
    assert free.delta_ratio == 1.0 and free.delta_pp is not None
    assert abs(free.delta_pp - 0.1) < 1e-9 and not free.significant


def test_a_profile_takes_its_work_from_the_config_and_the_recorded_world_size(tmp_path: Path):
    base = profile(tmp_path, "base", steps=6, jitter=0.01)
    # twice the batch per device, a slower step but less time per token
    slower = profile(tmp_path, "cand", steps=6, jitter=0.01, matmul_us=600.0)
    configs = (
        fsdp2_config(tmp_path / "a.yaml", 1, fsdp=1),
        fsdp2_config(tmp_path / "b.yaml", 2, fsdp=1),
    )
    result, _ = run_compare(Side(base, config=configs[0]), Side(slower, config=configs[1]))
    assert result.metrics[0].better is False  # the step is slower
    assert result.judged_on.unit is Unit.token and result.verdict is Verdict.keep
    # 8 recorded ranks (not the configs' fsdp_size 1) x the per-device batch x 8192
    assert (result.judged_on.baseline_per_step, result.judged_on.candidate_per_step) == (
        8 * SEQ,
        16 * SEQ,
    )
    assert not [w for w in result.warnings if w.values.get("condition") == "world_size"]


def test_every_compare_format_shows_the_exposed_communication_in_points(tmp_path: Path):
    base = profile(tmp_path, "base", steps=6, jitter=0.01)
    cand = profile(tmp_path, "cand", steps=6, jitter=0.01, comm_exposed_us=400.0)
    for fmt, row in (
        ("text", "  exposed communication "),
        ("markdown", "| exposed communication |"),
    ):
        out = runner.invoke(app, ["compare", str(base), str(cand), "--format", fmt]).output
        line = next(x for x in out.splitlines() if x.startswith(row))
        assert line.rstrip(" |").endswith(("pp  better", "pp (better)")), line


def test_a_parallel_layout_change_in_the_configs_is_warned():
    step = facts(log__step_time_ms=2000.0)
    result = compare(
        step,
        facts(log__step_time_ms=2000.0),
        TAX,
        {"parallel": {"cp_size": 1, "ep_size": 4}},
        {"parallel": {"cp_size": 2, "ep_size": 4}},
    )
    differs = [w.values for w in result.warnings if w.code is CompareCode.baseline_differs]
    assert differs == [{"condition": "parallel_layout", "baseline": "cp=1", "candidate": "cp=2"}]


def test_a_job_level_step_count_taken_as_a_median_over_ranks_still_counts():
    # over several ranks step.steady_steps is a median, a float: 6.0 steps are six samples
    from advisor.engine.compare import _noise

    side = facts(step__time_mad_ms=2.0, step__steady_steps=6.0)
    error, samples = _noise(side, "step.time_ms")
    assert samples == 6 and error is not None and error > 0
    assert _noise(facts(step__time_mad_ms=2.0, step__steady_steps=2.5), "step.time_ms")[1] == 2
