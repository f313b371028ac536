"""Real torch_npu output pieces from ../shared/real/ascend (skipped when ../shared is absent)."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import pytest

from advisor.app.pipeline import profile_facts
from advisor.inputs.taxonomy import default_taxonomy
from advisor.inputs.thresholds import reader_thresholds
from advisor.parsers.ascend.files import read_cluster_step_trace
from advisor.parsers.bounds import BadValues
from advisor.parsers.trace_view.decode import read_trace

TRACE = "test__ut__advisor__timeline_advice__trace_view.json"
# an older kernel_details.csv layout (no pipe ratios) and a current one with PipeUtilization columns
KERNELS = "test__ut__advisor__advisor_backend__compute_advice__kernel_details.csv"
KERNELS_PMU = "test__ut__advisor__compute_advice__data__kernel_details.csv"
CLUSTER = "test__resource__advisor__cluster_analysis_output__cluster_step_trace_time.csv"


def _rank_dir(
    tmp_path: Path, real: Path, trace: bool = True, kernels: str | None = KERNELS
) -> Path:
    out = tmp_path / "host_1_20240101_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    if trace:
        shutil.copy(real / TRACE, out / "trace_view.json")
    if kernels:
        shutil.copy(real / kernels, out / "kernel_details.csv")
    return out.parent


def test_real_trace_reduces_to_one_step(real_ascend: Path):
    trace = read_trace(real_ascend / TRACE, default_taxonomy())
    events = json.loads((real_ascend / TRACE).read_text())
    assert trace.events == len(events)
    assert [s.number for s in trace.steps] == [1]
    assert trace.flow_category == "HostToDevice"
    assert {"Ascend Hardware", "CANN", "Python", "Overlap Analysis"} <= set(trace.lanes)
    step = trace.steps[0]
    # independent count of the synchronisation calls inside the step window
    window = next(e for e in events if e.get("name") == "ProfilerStep#1")
    lo = float(window["ts"])
    hi = lo + window["dur"]
    syncs = [
        e
        for e in events
        if str(e.get("name")).startswith("AscendCL@aclrtSynchronize") and lo <= float(e["ts"]) < hi
    ]
    assert step.sync_calls == len(syncs) > 0
    free = sum(
        e["dur"]
        for e in events
        if e.get("name") == "Free" and e.get("ph") == "X" and lo <= float(e["ts"]) < hi
    )
    assert step.overlap_us["Free"] == pytest.approx(free, rel=1e-3)


def test_real_profile_facts(tmp_path: Path, real_ascend: Path):
    facts = profile_facts(_rank_dir(tmp_path, real_ascend))
    assert facts.value("profile.steps") == 1
    assert "single step" in facts.get("step.time_ms").note
    assert facts.value("host.launch_gap_ms_per_step") > 0
    # a toy model on an NPU: the device mostly waits for the host
    assert facts.value("step.free_ratio") > 0.5
    assert facts.value("host.dispatch_bound_ratio") <= facts.value("step.free_ratio") + 1e-9
    assert facts.value("data.loader_ms_per_step") > 0


def test_real_kernel_details_with_pmu(tmp_path: Path, real_ascend: Path):
    facts = profile_facts(_rank_dir(tmp_path, real_ascend, kernels=KERNELS_PMU))
    with (real_ascend / KERNELS_PMU).open() as f:
        rows = list(csv.DictReader(f))
    durations = [float(r["Duration(us)"]) for r in rows if not r["Type"].startswith("hcom")]
    matmul = [
        float(r["Duration(us)"])
        for r in rows
        if re.fullmatch(r"(Batch)?MatMul(V[0-9])?", r["Type"])
    ]
    assert facts.value("ops.top")[0]["type"] == "MatMulV3"
    limits = reader_thresholds()
    assert facts.value("ops.matmul_share") == pytest.approx(sum(matmul) / sum(durations), rel=1e-6)

    def memory_bound(r: dict[str, str]) -> bool:
        if r["aic_mte2_ratio"] in ("N/A", ""):
            return False
        cube = (float(r["aic_mac_ratio"]), float(r["aic_mte2_ratio"]))
        vector = (float(r["aiv_vec_ratio"]), float(r["aiv_mte2_ratio"]))
        compute, mte2 = cube if any(cube) else vector  # the unit that actually ran the kernel
        # the vendor's mte2-bound rule (mte2 >= 80%), not a well-used compute pipe
        return (
            mte2 > compute
            and mte2 >= limits.mte2_bound_min_ratio
            and compute < limits.compute_well_used_ratio
        )

    mte2 = [float(r["Duration(us)"]) for r in rows if memory_bound(r)]
    assert 0 < len(mte2) < len(rows)
    top = facts.value("ops.top")[0]
    matmul_bound = [
        float(r["Duration(us)"]) for r in rows if r["Type"] == top["type"] and memory_bound(r)
    ]
    matmul_all = [float(r["Duration(us)"]) for r in rows if r["Type"] == top["type"]]
    assert top["bound"] == ("memory" if sum(matmul_bound) > sum(matmul_all) / 2 else "compute")
    assert facts.value("ops.mte2_bound_share") == pytest.approx(
        sum(mte2) / sum(durations), rel=1e-6
    )


def test_real_cluster_step_trace(tmp_path: Path, real_ascend: Path):
    folder = tmp_path / "cluster" / "cluster_analysis_output"
    folder.mkdir(parents=True)
    shutil.copy(real_ascend / CLUSTER, folder / "cluster_step_trace_time.csv")
    facts = profile_facts(tmp_path / "cluster")
    with (real_ascend / CLUSTER).open() as f:
        rows = [r for r in csv.DictReader(f) if r["Type"] == "rank"]
    totals = {
        int(r["Index"]): float(r["Computing"])
        + float(r["Communication(Not Overlapped)"])
        + float(r["Free"])
        for r in rows
    }
    busy = {
        int(r["Index"]): totals[int(r["Index"])] - float(r["Communication(Not Overlapped)"])
        for r in rows
    }
    assert facts.value("ranks.count") == 8
    assert facts.value("ranks.slowest") == max(busy, key=busy.get)
    assert facts.value("step.time_ms") == pytest.approx(max(totals.values()) / 1000)
    assert facts.value("step.comm_exposed_ratio", "rank:0") == pytest.approx(
        683731.2897031249 / totals[0]
    )


def test_real_cluster_stage_row_is_a_stage_not_a_rank_nor_a_bad_row(real_ascend: Path):
    """The file's last row (Type stage, Index "(0, 1, ..., 7)") holds each column's highest over
    the stage's ranks: no rank of its own, and its columns need not add up like one rank's."""
    bad = BadValues()
    ranks, stages = read_cluster_step_trace(real_ascend / CLUSTER, bad)
    assert sorted(r.rank for r in ranks) == list(range(8))
    assert [s.ranks for s in stages] == [tuple(range(8))]
    assert bad.warnings() == []
    assert stages[0].row.computing == max(r.row.computing for r in ranks)
    assert stages[0].row.free == max(r.row.free for r in ranks)


def test_older_kernel_layout_without_pipe_ratios(tmp_path: Path, real_ascend: Path):
    facts = profile_facts(_rank_dir(tmp_path, real_ascend, kernels=KERNELS))
    reasons = {m.id: m.reason for m in facts.missing}
    assert "PipeUtilization" in reasons["ops.mte2_bound_share"]
    with (real_ascend / KERNELS).open() as f:
        rows = list(csv.DictReader(f))
    aicpu = sum(float(r["Duration(us)"]) for r in rows if r["Accelerator Core"] == "AI_CPU")
    compute = sum(float(r["Duration(us)"]) for r in rows if r["Accelerator Core"] != "HCCL")
    assert facts.value("ops.aicpu_share") == pytest.approx(aicpu / compute, rel=1e-6)
    assert all(row["bound"] == "unknown" for row in facts.value("ops.top"))


COMM_CLUSTER = "test__resource__advisor__cluster_analysis_output__cluster_communication.json"


def test_real_cluster_communication(tmp_path: Path, real_ascend: Path):
    folder = tmp_path / "cluster" / "cluster_analysis_output"
    folder.mkdir(parents=True)
    shutil.copy(real_ascend / COMM_CLUSTER, folder / "cluster_communication.json")
    shutil.copy(real_ascend / CLUSTER, folder / "cluster_step_trace_time.csv")
    facts = profile_facts(tmp_path / "cluster")
    data = json.loads((real_ascend / COMM_CLUSTER).read_text())
    ops = data["(0, 1)"]["step"]
    for rank in ("0", "1"):
        infos = [op[rank]["Communication Time Info"] for op in ops.values()]
        wait = sum(i["Wait Time(ms)"] for i in infos) / sum(i["Elapse Time(ms)"] for i in infos)
        assert facts.value("comm.wait_ratio", f"rank:{rank}") == pytest.approx(wait)
        assert facts.value("comm.time_ms_by_op", f"rank:{rank}") == {
            "broadcast": pytest.approx(sum(i["Elapse Time(ms)"] for i in infos))
        }
        hccs = [op[rank]["Communication Bandwidth Info"]["HCCS"] for op in ops.values()]
        expected = sum(h["Transit Size(MB)"] for h in hccs) / sum(
            h["Transit Time(ms)"] for h in hccs
        )
        assert facts.value("comm.bandwidth_gbps_by_link", f"rank:{rank}")["HCCS"] == pytest.approx(
            expected, rel=1e-3
        )
    # rank 0 waits almost the whole time: the others are the slow ones
    assert facts.value("comm.wait_ratio", "rank:0") > 0.9 > facts.value("comm.wait_ratio", "rank:1")
    assert facts.get("comm.wait_ratio").source.startswith("cluster_communication.json")
