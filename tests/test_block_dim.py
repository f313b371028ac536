"""Low block-dim kernels (Ascend): the kernels launched on fewer blocks than their unit has
cores, against the core counts the profile records (info.json), else the variant --device names
(rules/devices.yaml cores), else unknown; on the real DDP job (text and database exports), the
Qwen3 PP2 job and msprof-analyze's own test kernel table."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from advisor.app.diagnose import run_diagnose
from advisor.app.job import JobOptions
from advisor.app.pipeline import profile_facts, with_memory_pressure
from advisor.model import FactSet
from advisor.parsers.ascend.meta import apply_device_info, device_info_files
from advisor.parsers.profile_data import RankProfile
from tests.conftest import REAL

AICPU_KERNELS = "test__ut__advisor__advisor_backend__compute_advice__kernel_details.csv"
TRACE = "test__ut__advisor__timeline_advice__trace_view.json"


def _real(name: str) -> Path:
    folder = REAL / name
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent: ../shared is not beside the checkout")
    return folder


def _facts(path: Path, device: str | None) -> FactSet:
    facts = profile_facts(path)
    with_memory_pressure(facts, device)
    return facts


def _missing(facts: FactSet, fact_id: str) -> str:
    reasons = [m.reason for m in facts.missing if m.id == fact_id and m.scope == "job"]
    assert reasons, f"{fact_id} is neither known nor missing"
    return reasons[0]


def test_a_profile_that_names_no_variant_leaves_the_share_unknown():
    for name in ("ascend-ddp-2rank-text", "ascend-ddp-2rank-db"):
        facts = _facts(_real(name), None)
        assert facts.value("ops.low_block_dim_share") is None
        # the table is read all the same: the kernels' block dims are in the export
        assert facts.value("ops.block_dim_table")
        reason = _missing(facts, "ops.low_block_dim_share")
        assert "910B variants differ" in reason and "--device" in reason


def test_the_ddp_job_on_a_910b2_runs_two_fifths_of_its_kernel_time_on_too_few_blocks():
    text = _facts(_real("ascend-ddp-2rank-text"), "910B2")
    assert text.value("profile.device_ai_cores") == 24
    assert text.value("profile.device_vector_cores") == 48
    share = text.value("ops.low_block_dim_share")
    assert share == pytest.approx(0.405, abs=0.01)
    ops = text.value("ops.low_block_dim_ops")
    # TransData on 32 of 48 vector cores, Conv2D on 16 of 24 AI Cores lead
    assert [op["type"] for op in ops[:2]] == ["TransData", "Conv2D"]
    assert ops[1]["cores"] == 24
    low = text.value("ops.low_block_dim_ms_per_step")
    idle = text.value("ops.low_block_dim_idle_ms_per_step")
    assert 0 < idle < low
    # the database export of the same job says the same
    db = _facts(_real("ascend-ddp-2rank-db"), "910B2")
    assert db.value("ops.low_block_dim_share") == pytest.approx(share, abs=0.01)


def test_the_symptom_names_the_operators_and_points_at_the_compute_bottleneck():
    run = run_diagnose(JobOptions(profile=_real("ascend-ddp-2rank-text"), device="910B2"))
    found = {s.id: s for s in run.diagnosis.symptoms}
    symptom = found["symptom.low-block-dim"]
    assert symptom.level == "warning"
    assert "TransData (AI_VECTOR_CORE)" in symptom.message
    compute = next(b for b in run.diagnosis.bottlenecks if b.id == "bottleneck.compute")
    assert "symptom.low-block-dim" in compute.evidence


def test_a_device_named_wrongly_is_doubted_not_believed():
    # Qwen3's matmuls all run on 20 blocks: a 910B3/B4's AI Cores, not a 910B2's 24
    wrong = _facts(_real("ascend-qwen3-pp2-4rank"), "910B2")
    assert wrong.value("ops.low_block_dim_share") is None
    assert "20 AI Cores" in _missing(wrong, "ops.low_block_dim_share")
    right = _facts(_real("ascend-qwen3-pp2-4rank"), "910B3")
    share = right.value("ops.low_block_dim_share")
    assert share is not None and share < 0.02


def test_the_core_counts_the_profile_records_come_first(tmp_path):
    source = _real("ascend")
    rank = tmp_path / "rank0_ascend_pt"
    out = rank / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    shutil.copy(source / AICPU_KERNELS, out / "kernel_details.csv")
    shutil.copy(source / TRACE, out / "trace_view.json")
    device = rank / "PROF_000001_20250101_abc" / "device_0"
    device.mkdir(parents=True)
    info = {"DeviceInfo": [{"id": 0, "ai_core_num": 24, "aiv_num": 48}]}
    (device / "info.json.0").write_text(json.dumps(info), encoding="utf-8")
    (device / "info.json.0.done").write_text("", encoding="utf-8")
    # even a --device that says otherwise: what the profiler recorded wins
    facts = _facts(tmp_path, "910B3")
    assert facts.value("profile.device_ai_cores") == 24
    ai_cores = facts.get("profile.device_ai_cores")
    assert ai_cores is not None and "info.json.0" in ai_cores.source
    share = facts.value("ops.low_block_dim_share")
    assert share is not None and 0 < share < 1


def test_device_info_is_read_as_msprof_analyze_reads_it(tmp_path):
    device = tmp_path / "PROF_1" / "device_3"
    device.mkdir(parents=True)
    (device / "info.json.3.done").write_text("", encoding="utf-8")
    path = device / "info.json.3"
    path.write_text("{}", encoding="utf-8")
    assert device_info_files(tmp_path) == [path]
    rank = RankProfile(path=tmp_path, output_dir=None, framework="torch_npu")
    assert not apply_device_info(rank, {"DeviceInfo": [{"id": 3}]}, path)
    assert not apply_device_info(rank, {"DeviceInfo": [{"ai_core_num": 0}]}, path)
    assert rank.ai_cores is None
    assert apply_device_info(rank, {"DeviceInfo": [{"ai_core_num": "20", "aiv_num": 40}]}, path)
    assert (rank.ai_cores, rank.vector_cores) == (20, 40)
    assert rank.cores_source.endswith("device_3/info.json.3:DeviceInfo")


def test_the_report_lists_the_low_block_dim_operators():
    from advisor.render.html_analyzers import analyzer_section

    html = analyzer_section(_facts(_real("ascend-ddp-2rank-text"), "910B2"))
    assert "Kernels on fewer blocks than cores" in html
    assert "<td>TransData</td><td>AI_VECTOR_CORE</td><td>48</td>" in html
    assert "Kernels on fewer blocks" not in analyzer_section(
        _facts(_real("ascend-ddp-2rank-text"), None)
    )
