"""PyTorch profiler (Kineto) traces from GPUs (../shared/real/kineto; skipped without it)."""

from __future__ import annotations

import gzip
import json
import shutil
import statistics
from pathlib import Path

import pytest

from advisor.app.diagnose import run_diagnose
from advisor.app.job import JobOptions
from advisor.app.pipeline import profile_facts
from advisor.model import InputError
from advisor.parsers.kineto.reader import short_name

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


def _device_paced(events: list[dict]) -> list[tuple[int, float, float]]:
    """Device-paced step windows by independent arithmetic on the raw events: a kernel belongs
    to the host step its launch (same correlation id) fell in; step k starts when its host
    window has started and the earlier steps' work has finished, at the latest at its own
    first kernel."""
    steps = sorted(
        (float(e["ts"]), float(e["ts"]) + float(e["dur"]), int(e["name"].split("#")[1]))
        for e in events
        if str(e.get("name", "")).startswith("ProfilerStep#")
        and e.get("cat") in ("user_annotation", "cpu_op", "Operator")
    )
    launch = {
        e["args"]["correlation"]: float(e["ts"])
        for e in events
        if e.get("cat") in ("cuda_runtime", "cuda_driver", "Runtime")
        and "correlation" in e.get("args", {})
    }
    last_end = {n: float("-inf") for _, _, n in steps}
    first_kernel = {n: float("inf") for _, _, n in steps}
    for e in events:
        if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset"):
            continue
        t = launch.get(e.get("args", {}).get("correlation"))
        owner = [n for a, b, n in steps if t is not None and a <= t] if t is not None else []
        if owner and t <= steps[-1][1]:
            last_end[owner[-1]] = max(last_end[owner[-1]], float(e["ts"]) + float(e["dur"]))
            if e["cat"] in ("kernel", "Kernel"):
                first_kernel[owner[-1]] = min(first_kernel[owner[-1]], float(e["ts"]))
    starts, done = [], float("-inf")
    for a, _, n in steps:
        # not later than the step's own first kernel (copies of the next batch may run early)
        starts.append(max(a, min(done, first_kernel[n])))
        done = max(done, last_end[n])
    windows = []
    for i, (_, b, n) in enumerate(steps):
        end = starts[i + 1] if i + 1 < len(steps) else max(b, last_end[n])
        windows.append((n, starts[i], end))
    return windows


def test_step_model_of_a_real_nccl_trace(real_kineto: Path):
    facts = profile_facts(real_kineto / NCCL)
    assert facts.value("profile.framework") == "pytorch"
    assert facts.value("profile.platform") == "cuda"
    assert facts.value("profile.world_size") == 2
    assert facts.value("profile.device") == "NVIDIA A100-PG509-200"
    parts = [
        "step.compute_ratio",
        "step.comm_exposed_ratio",
        "step.memory_ratio",
        "step.free_ratio",
        "step.preparing_ratio",
    ]
    assert sum(facts.value(p) for p in parts) == pytest.approx(1.0, abs=1e-6)
    data = json.loads(gzip.decompress((real_kineto / NCCL).read_bytes()))
    events = data["traceEvents"]
    windows = _device_paced(events)
    steady = windows[1:]  # the first step is warm-up
    assert facts.value("step.time_ms") == pytest.approx(
        statistics.median(hi - lo for _, lo, hi in steady) / 1000.0
    )
    _, lo, hi = windows[1]
    kernels = [
        (max(float(e["ts"]), lo), min(float(e["ts"]) + float(e["dur"]), hi), e["name"])
        for e in events
        if e.get("cat") == "kernel" and float(e["ts"]) < hi and float(e["ts"]) + e["dur"] > lo
    ]
    compute = _union([(a, b) for a, b, n in kernels if "nccl" not in n.lower()])
    comm = _union([(a, b) for a, b, n in kernels if "nccl" in n.lower()])
    assert comm > 0
    assert facts.value("comm.time_ms_by_op")["allreduce"] > 0
    reasons = {m.id: m.reason for m in facts.missing}
    assert "no wait time" in reasons["comm.wait_ratio"]
    # the fact sums the steady steps; this one step alone must be close to it
    assert compute / (hi - lo) == pytest.approx(facts.value("step.compute_ratio"), rel=0.25)


@pytest.mark.parametrize(
    "name", sorted(p.name for p in KINETO.glob("*.gz")) if KINETO.is_dir() else []
)
def test_device_work_never_exceeds_the_step(real_kineto: Path, name: str):
    # host windows let the device's backlog spill into the last step (a V100 trace once
    # reported 110.8 ms of device compute per 95.7 ms step); device-paced windows cannot
    if name.startswith("cpu_only"):
        pytest.skip("no device activity")
    facts = profile_facts(real_kineto / name)
    compute = facts.value("ops.device_compute_ms_per_step")
    step = facts.value("step.time_ms")
    if step is None:
        assert facts.value("profile.steps") == 0
        return
    assert compute <= step * 1.001
    for ratio in ("step.compute_ratio", "step.memory_ratio", "step.free_ratio"):
        assert 0.0 <= facts.value(ratio) <= 1.0


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


def test_cpu_only_trace_is_a_clear_error(real_kineto: Path):
    with pytest.raises(InputError, match="CPU-only"):
        profile_facts(real_kineto / "cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")


def test_stepless_trace_is_one_window_without_per_step_claims(real_kineto: Path):
    facts = profile_facts(
        real_kineto / "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz"
    )
    assert facts.value("profile.steps") == 0
    assert any("no ProfilerStep#N markers" in w for w in facts.warnings)
    reasons = {m.id: m.reason for m in facts.missing}
    for fact_id in ("step.time_ms", "ops.kernels_per_step", "attrib.compute_ms"):
        assert facts.value(fact_id) is None
        assert "no ProfilerStep#N markers" in reasons[fact_id]
    shares = ["step.compute_ratio", "step.memory_ratio", "step.free_ratio", "step.preparing_ratio"]
    assert sum(facts.value(s) for s in shares) == pytest.approx(1.0, abs=1e-6)
    assert facts.value("step.free_ratio") > 0.9  # a benchmark loop with long host pauses


def test_diagnose_a_gpu_trace(real_kineto: Path):
    run = run_diagnose(JobOptions(profile=real_kineto / NCCL))
    assert run.diagnosis.main is not None
    assert run.diagnosis.main.id == "bottleneck.host-dispatch"  # 73% of the step the GPUs are idle


def test_a_trace_read_in_small_blocks_gives_the_facts_of_one_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """PyTorch's own layout ("},\\n  {" between events, keys after traceEvents), gzipped, read
    a few kilobytes at a time: the same facts as one block, the trailing keys still read."""
    import gzip
    import json

    from advisor.app.pipeline import profile_facts
    from advisor.parsers.kineto import stream as kineto_stream
    from advisor.render.facts import facts_json
    from tests.synth.kineto_file import kineto_trace

    data = kineto_trace(steps=5, kernels_per_step=30)
    events = data.pop("traceEvents")
    text = json.dumps({**data, "traceEvents": events}, indent=2)
    # the device's name after the events, as some exporters write it
    text = (
        text[: text.rindex("}")] + ',\n  "deviceProperties": [{"name": "AMD Instinct MI300X"}]\n}'
    )
    path = tmp_path / "rank0.pt.trace.json.gz"
    path.write_bytes(gzip.compress(text.encode()))
    whole = facts_json(profile_facts(path))
    monkeypatch.setattr(kineto_stream, "BLOCK_BYTES", 4096)
    monkeypatch.setattr(kineto_stream, "TAIL_BYTES", 512)
    pieces = facts_json(profile_facts(path))
    assert pieces == whole
    assert json.loads(pieces)["facts"][0]["id"] == "profile.framework"
    platform = [f for f in json.loads(pieces)["facts"] if f["id"] == "profile.platform"]
    assert platform[0]["value"] == "rocm"  # the key after the events was read


def test_a_trace_cut_short_is_one_line(tmp_path: Path):
    from advisor.app.pipeline import profile_facts
    from advisor.model import InputError
    from tests.synth.kineto_file import write_kineto

    path = write_kineto(tmp_path / "rank0.pt.trace.json", steps=3)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) * 2 // 3])
    with pytest.raises(InputError, match=r"rank0\.pt\.trace\.json"):
        profile_facts(path)
