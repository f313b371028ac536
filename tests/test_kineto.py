"""PyTorch profiler (Kineto) traces from GPUs (../shared/real/kineto; skipped without it)."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from advisor.app.diagnose import run_diagnose
from advisor.app.job import JobOptions
from advisor.app.pipeline import profile_facts
from advisor.model import InputError
from advisor.parsers.kineto import short_name

KINETO = Path(__file__).resolve().parents[2] / "shared" / "real" / "kineto"
NCCL = "nccl_parser_config__nccl_data.json.gz"


@pytest.fixture
def real_kineto() -> Path:
    if not KINETO.is_dir():
        pytest.skip(
            f"real PyTorch traces not available ({KINETO} is absent: ../shared is not beside the checkout)"
        )
    return KINETO


def _union(intervals: list[tuple[float, float]]) -> float:
    total, cur = 0.0, None
    for a, b in sorted(intervals):
        if cur is None or a > cur[1]:
            if cur:
                total += cur[1] - cur[0]
            cur = [a, b]
        else:
            cur[1] = max(cur[1], b)
    return total + (cur[1] - cur[0] if cur else 0.0)


def test_short_kernel_names():
    assert (
        short_name("void at::native::vectorized_elementwise_kernel<4, at::native::X>(int, float)")
        == "at::native::vectorized_elementwise_kernel"
    )
    assert (
        short_name(
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
        )
        == "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
    )


def test_step_model_of_a_real_nccl_trace(real_kineto: Path):
    facts = profile_facts(real_kineto / NCCL)
    assert facts.value("profile.framework") == "pytorch"
    assert facts.value("profile.world_size") == 2
    assert facts.value("profile.device") == "NVIDIA A100-PG509-200"
    parts = [
        "step.compute_ratio",
        "step.comm_exposed_ratio",
        "step.free_ratio",
        "step.preparing_ratio",
    ]
    assert sum(facts.value(p) for p in parts) == pytest.approx(1.0, abs=1e-6)
    # independent arithmetic on the raw events of the steady steps
    data = json.loads(gzip.decompress((real_kineto / NCCL).read_bytes()))
    events = data["traceEvents"]
    steps = sorted(
        (float(e["ts"]), e["name"])
        for e in events
        if str(e.get("name", "")).startswith("ProfilerStep#")
    )
    lo, hi = steps[1][0], steps[2][0]  # the second step, bounded by the third's start
    kernels = [
        (float(e["ts"]), float(e["ts"]) + float(e["dur"]), e["name"])
        for e in events
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and lo <= float(e["ts"]) < hi
    ]
    compute = _union([(a, min(b, hi)) for a, b, n in kernels if "nccl" not in n.lower()])
    comm = _union([(a, min(b, hi)) for a, b, n in kernels if "nccl" in n.lower()])
    assert comm > 0
    assert facts.value("comm.time_ms_by_op")["allreduce"] > 0
    reasons = {m.id: m.reason for m in facts.missing}
    assert "no wait time" in reasons["comm.wait_ratio"]
    assert facts.value("step.comm_total_ratio") > 0
    # the fact sums the two steady steps; this one step alone must be close to it
    assert compute / (hi - lo) == pytest.approx(facts.value("step.compute_ratio"), rel=0.25)


def test_two_ranks_in_a_folder(tmp_path: Path, real_kineto: Path):
    for rank in (0, 1):
        shutil.copy(
            real_kineto / f"trace_filter__sampled_rank-{rank}.json.gz",
            tmp_path / f"rank{rank}.pt.trace.json.gz",
        )
    facts = profile_facts(tmp_path)
    assert facts.value("ranks.count") == 2
    assert (
        facts.get("step.time_ms", "rank:0") is not None
        and facts.get("step.time_ms", "rank:1") is not None
    )


def test_cpu_only_and_stepless_traces_are_clear_errors(real_kineto: Path):
    with pytest.raises(InputError, match="CPU-only"):
        profile_facts(real_kineto / "cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")
    with pytest.raises(InputError, match="no ProfilerStep"):
        profile_facts(
            real_kineto
            / "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz"
        )


def test_diagnose_a_gpu_trace(real_kineto: Path):
    run = run_diagnose(JobOptions(profile=real_kineto / NCCL))
    assert run.diagnosis.main is not None
    assert run.diagnosis.main.id == "bottleneck.host-dispatch"  # 73% of the step the GPUs are idle
