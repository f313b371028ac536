"""The operator analyzers on real profiles: the slowest stage's extra kernels named, AI-CPU
operators with their dtypes, dynamic-shape operators (msprof-analyze's own test inputs placed in
a rank folder, as its advisor reads them)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from advisor.app.diagnose import run_diagnose
from advisor.app.job import JobOptions
from advisor.app.pipeline import profile_facts
from advisor.inputs.thresholds import reader_thresholds
from advisor.parsers.ascend.kernels import read_kernels
from tests.cli_run import run_cli
from tests.conftest import REAL

AICPU_KERNELS = "test__ut__advisor__advisor_backend__compute_advice__kernel_details.csv"
DYNAMIC_KERNELS = "test__ut__advisor__compute_advice__data__kernel_details.csv"
TRACE = "test__ut__advisor__timeline_advice__trace_view.json"


def _real(name: str) -> Path:
    folder = REAL / name
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent: ../shared is not beside the checkout")
    return folder


def _rank_folder(tmp_path: Path, kernels: str) -> Path:
    """msprof-analyze's test kernel table and trace in one rank's output folder."""
    source = _real("ascend")
    out = tmp_path / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    shutil.copy(source / kernels, out / "kernel_details.csv")
    shutil.copy(source / TRACE, out / "trace_view.json")
    return tmp_path


def test_the_last_stage_s_extra_kernels_are_the_loss_chain():
    facts = profile_facts(_real("ascend-qwen3-pp2-4rank"))
    assert facts.value("ops.slow_fast_ranks") == {"slow": "2", "fast": "0"}
    assert facts.value("ops.slow_fast_cause") == "loss"
    chain = facts.value("ops.slow_stage_loss_by_type")
    assert {"Cast", "Exp", "Sub", "RealDiv", "Mul"} <= set(chain)
    # SOURCES / the issue: ~90 ms of fp32 loss chain on rank 2
    assert 80 < sum(chain.values()) < 110
    # the tied 152k-vocab head's matmul is the largest single extra, not part of the loss chain
    extra = facts.value("ops.slow_fast_extra_by_type")
    assert next(iter(extra)) == "MatMulV3"
    assert facts.value("ops.slow_fast_counts")["Exp"] == "2 vs 0"


def test_the_pipeline_bottleneck_names_the_loss_kernels():
    run = run_diagnose(JobOptions(profile=_real("ascend-qwen3-pp2-4rank")))
    main = run.diagnosis.main
    assert main is not None and main.id == "bottleneck.pipeline"
    for op_type in ("Cast", "Exp", "Sub", "RealDiv", "Mul"):
        assert op_type in main.message
    assert "cause: loss" in main.message
    fired = {s.id for s in run.diagnosis.symptoms}
    assert "symptom.slow-stage-extra-kernels" in fired
    assert "symptom.slow-rank-extra-kernels" not in fired


def test_msprof_inputs_yield_the_ai_cpu_cast_with_its_dtype(tmp_path: Path):
    profile = _rank_folder(tmp_path, AICPU_KERNELS)
    facts = profile_facts(profile)
    (row,) = facts.value("ops.aicpu_ops")
    assert (row["type"], row["input_dtypes"], row["per_step_count"]) == ("Cast", "INT32", 7.0)
    assert row["fallback_dtypes"] == ["INT32"]
    run = run_diagnose(JobOptions(profile=profile))
    aicpu = next(s for s in run.diagnosis.symptoms if s.id == "symptom.aicpu-kernels")
    assert "Cast(INT32)" in aicpu.message
    # this export predates the OP State column: unknown, not "static"
    assert "ops.dynamic_shape_share" in {m.id for m in facts.missing}


def test_msprof_inputs_yield_dynamic_shape_operators(tmp_path: Path):
    profile = _rank_folder(tmp_path, DYNAMIC_KERNELS)
    facts = profile_facts(profile)
    assert facts.value("ops.dynamic_shape_share") == pytest.approx(1.0)
    run = run_diagnose(JobOptions(profile=profile))
    assert "symptom.dynamic-shape-ops" in {s.id for s in run.diagnosis.symptoms}


def test_every_cann8_operator_is_dynamic_but_without_host_waits_it_is_no_finding():
    profile = _real("ascend-qwen3-pp2-4rank")
    assert profile_facts(profile).value("ops.dynamic_shape_share") == pytest.approx(1.0)
    run = run_diagnose(JobOptions(profile=profile))
    assert "symptom.dynamic-shape-ops" not in {s.id for s in run.diagnosis.symptoms}


def test_the_kernel_reader_keeps_dtypes_and_op_state():
    path = _real("ascend") / DYNAMIC_KERNELS
    table = read_kernels(path, reader_thresholds())
    assert table.has_op_state and table.details is not None
    assert sum(d.count for d in table.details) == table.rows == 29
    assert sum(d.dynamic_count for d in table.details) == 29
    assert any(d.input_dtypes == "DT_BF16;DT_BF16" for d in table.details)


def test_the_report_shows_the_analyzer_tables(tmp_path: Path):
    qwen = tmp_path / "qwen.html"
    assert run_cli("report", str(_real("ascend-qwen3-pp2-4rank")), "-o", str(qwen)).exit_code == 0
    page = qwen.read_text(encoding="utf-8")
    section = page[page.index('id="analyzers"') :]
    assert "The slowest rank against the fastest" in section
    assert "<td>RealDiv</td><td>+15.7 ms</td><td>11 vs 0</td><td>loss chain</td>" in section
    assert "<td>HCCS</td>" in section  # the link table
    msprof = tmp_path / "msprof.html"
    profile = _rank_folder(tmp_path / "in", AICPU_KERNELS)
    assert run_cli("report", str(profile), "-o", str(msprof)).exit_code == 0
    assert "<td>Cast</td><td>INT32</td><td>7.0</td>" in msprof.read_text(encoding="utf-8")


def test_the_last_stage_s_unfused_cross_entropy_is_found_in_launch_order(tmp_path: Path):
    """Qwen3 PP2's last stage runs the vocabulary-parallel cross-entropy as Exp, ReduceSum, Log,
    Sub, RealDiv twice a step (the all-reduces between them skipped); the first stage runs
    none, and its RMSNorm, RoPE and SwiGLU are the fused kernels."""
    folder = _real("ascend-qwen3-pp2-4rank")
    last = read_kernels(
        folder / "rank_2_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv", reader_thresholds()
    )
    assert last.sequences is not None
    [(key, found)] = last.sequences.items()
    assert key == (13, "softmax-cross-entropy") and found.count == 2
    assert found.total_us == pytest.approx(38621, abs=2)
    first = read_kernels(
        folder / "rank_0_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv", reader_thresholds()
    )
    assert first.sequences == {}
    facts = profile_facts(folder)
    [row] = facts.value("ops.unfused_sequences")
    assert row["pattern"] == "softmax-cross-entropy"
    # a fused kernel, not the chunked loss (the same kernels per chunk: a memory remedy)
    assert row["switches"] == {"megatron-script": "--cross-entropy-loss-fusion"}
    page = tmp_path / "qwen.html"
    assert run_cli("report", str(folder), "-o", str(page)).exit_code == 0
    assert "<td>softmax-cross-entropy</td><td>2.0</td><td>38.62 ms</td>" in page.read_text(
        encoding="utf-8"
    )


@pytest.mark.skipif(not REAL.is_dir(), reason="../shared/real is not beside the checkout")
def test_format_conversions_are_measured_on_the_last_stage():
    """Qwen3 PP2: the last stage runs TransData for 10.4 ms per step (the slow-vs-fast diff
    names it too); its share of device compute is the format-conversion fact."""
    facts = profile_facts(REAL / "ascend-qwen3-pp2-4rank")
    assert facts.value("ops.format_conversion_ms_per_step") == pytest.approx(10.37, abs=0.05)
    assert 0.02 < facts.value("ops.format_conversion_share") < 0.05


def test_the_matmul_precision_tells_whether_a_loss_scaler_exists(tmp_path: Path):
    # msprof-analyze's test table computes its matmuls in FLOAT16: an fp16 run
    fp16 = profile_facts(_rank_folder(tmp_path / "fp16", AICPU_KERNELS))
    assert fp16.value("ops.fp16_matmul_share") == pytest.approx(1.0)
    # the Qwen3 PP2 job computes in DT_BF16: no loss scaler, so fp16 overflows are ruled out,
    # not listed as a bottleneck that could lead once a log is given
    bf16 = _real("ascend-qwen3-pp2-4rank")
    assert profile_facts(bf16).value("ops.fp16_matmul_share") == 0.0
    diagnosis = run_diagnose(JobOptions(profile=bf16)).diagnosis
    unknown = {u.rule for u in diagnosis.unknown}
    assert "symptom.fp16-overflows" not in unknown and "bottleneck.numerics" not in unknown
