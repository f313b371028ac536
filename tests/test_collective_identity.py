"""A collective's kind comes from the host range that launched it, the kernel name only as a
fallback: NCCL runs all-to-all, send and recv all as ncclKernel_SendRecv."""

from __future__ import annotations

import json
from bisect import bisect_right
from pathlib import Path
from typing import Any

import pytest

from advisor.app.diagnose import run_diagnose
from advisor.app.job import JobOptions
from advisor.app.pipeline import profile_facts
from advisor.app.rulesets import load_graph
from advisor.app.suggest import SuggestOptions, run_suggest
from advisor.inputs.taxonomy import default_taxonomy
from advisor.parsers.kineto import parallel as kineto_parallel
from advisor.parsers.kineto.reader import read_kineto
from advisor.parsers.kineto.stream import events_span
from advisor.parsers.traces import budget, workers

KINETO = Path(__file__).resolve().parents[2] / "shared" / "real" / "kineto"
TORCHREC = [
    "trace_filter__sampled_rank-0.json.gz",
    "trace_filter__sampled_rank-1.json.gz",
    "trace_diff__control__control.json.gz",
    "trace_diff__test__test.json.gz",
]
HOST, DEVICE = (1, 1), (0, 7)
SENDRECV = "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)"


def _span(cat: str, name: str, where: tuple[int, int], ts: float, dur: float, **args: Any) -> dict:
    pid, tid = where
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
            "args": args}  # fmt: skip


def _trace(
    tmp_path: Path,
    ranges: list[tuple[str, tuple[int, int], dict[str, Any]]],
    filler: int = 0,
    launches_first: bool = False,
) -> Path:
    """Three steps, each a GEMM and a SendRecv kernel; the SendRecv's launch (same thread as
    the steps) is made under `ranges` (name, thread, arguments), each spanning the launch. The
    kernels come before their launches in the file, as in the traces PyTorch writes; `filler`
    host operators between the host ranges and the kernels; `launches_first`: the launches
    written before everything else."""
    host: list[dict] = []
    device: list[dict] = []
    launches: list[dict] = []
    for step in range(3):
        t0 = 1_000_000.0 + step * 10_000
        host.append(_span("user_annotation", f"ProfilerStep#{step + 1}", HOST, t0, 9_000))
        for depth, (name, thread, args) in enumerate(ranges):
            cat = "cpu_op" if "::" in name or name == "record_param_comms" else "user_annotation"
            host.append(_span(cat, name, thread, t0 + 100 + depth, 200 - 2 * depth, **args))
        corr = 10 * step
        launches.append(
            _span("cuda_runtime", "cudaLaunchKernel", HOST, t0 + 50, 5, correlation=corr)
        )
        launches.append(_span("cuda_runtime", "cudaLaunchKernel", HOST, t0 + 150, 5, correlation=corr + 1))  # fmt: skip
        device.append(_span("kernel", "ampere_sgemm_128x64_nn", DEVICE, t0 + 200, 3_000, correlation=corr))  # fmt: skip
        device.append(_span("kernel", SENDRECV, DEVICE, t0 + 3_300, 2_000, correlation=corr + 1))
    for i in range(filler):
        host.append(_span("cpu_op", "aten::add", (1, 3), 1_000_000.0 + i, 0.5))
    path = tmp_path / "rank0.pt.trace.json"
    events = launches + host + device if launches_first else host + device + launches
    data = {"schemaVersion": 1, "traceEvents": events}
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _kinds(path: Path) -> dict[str, float]:
    by_op = profile_facts(path).value("comm.time_ms_by_op")
    assert isinstance(by_op, dict)
    return by_op


@pytest.mark.parametrize(
    ("ranges", "kind"),
    [
        ([("nccl:all_to_all", HOST, {})], "alltoall"),
        ([("c10d::alltoall_base_", HOST, {}), ("nccl:all_to_all", HOST, {})], "alltoall"),
        ([("record_param_comms", HOST, {"Collective name": "all_to_allv"})], "alltoall"),
        ([("nccl:recv", HOST, {})], "recv"),
        # no range names it: the kernel name decides (SendRecv is read as send)
        ([], "send"),
        # a range of another thread says nothing about this thread's launch
        ([("nccl:all_to_all", (1, 2), {})], "send"),
        # a range naming no known kind (a barrier) leaves the kernel's name to decide
        ([("c10d::barrier", HOST, {})], "send"),
    ],
)
def test_the_launching_range_names_the_collective(
    tmp_path: Path, ranges: list[tuple[str, tuple[int, int], dict[str, Any]]], kind: str
) -> None:
    assert set(_kinds(_trace(tmp_path, ranges))) == {kind}


def test_a_range_written_after_its_launch_still_names_the_collective(tmp_path: Path) -> None:
    path = _trace(tmp_path, [("nccl:all_to_all", HOST, {})], launches_first=True)
    assert set(_kinds(path)) == {"alltoall"}


def test_a_range_and_its_launch_read_by_different_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large plain trace is cut in byte ranges decoded by worker processes: the host ranges
    fall in the first, the launches under them in the last; the join happens once all are
    read, so the kind is the range's, as when the trace is read in one process."""
    path = _trace(tmp_path, [("nccl:all_to_all", HOST, {})], filler=3_000)
    sequential = read_kineto(path, default_taxonomy(), split=False)
    monkeypatch.setattr(workers, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(workers.os, "cpu_count", lambda: 4)
    span = events_span(path)
    assert span is not None
    points = workers.split_points(path, span[0], span[1], 4)
    data = path.read_bytes()
    first_range, last_launch = data.index(b"nccl:all_to_all"), data.rindex(b"cudaLaunchKernel")
    assert bisect_right(points, first_range) == 1 and bisect_right(points, last_launch) == 4
    merged: list[object] = []
    merge = kineto_parallel._merge

    def counted(out: Any, part: Any) -> None:
        merged.append(part)
        merge(out, part)

    monkeypatch.setattr(kineto_parallel, "_merge", counted)
    parallel = read_kineto(path, default_taxonomy(), split=True)
    assert len(merged) == 4  # read by four workers
    assert parallel == sequential
    assert set(_kinds(path)) == {"alltoall"}


def test_all_to_all_is_not_a_pipeline(tmp_path: Path) -> None:
    facts = profile_facts(_trace(tmp_path, [("nccl:all_to_all", HOST, {})]))
    assert facts.value("comm.p2p_share") == 0.0
    assert facts.value("job.pipeline_parallel") is False
    piped = profile_facts(_trace(tmp_path, []))
    assert piped.value("comm.p2p_share") == 1.0
    assert piped.value("job.pipeline_parallel") is True


@pytest.mark.parametrize("group_rows", [1_000, 2])
def test_spilled_rows_take_their_launching_range_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, group_rows: int
) -> None:
    """Rows written out while decoding, read back at once (1000) or in groups of two."""
    monkeypatch.setattr(budget, "FLUSH_BYTES", 64)
    monkeypatch.setattr(budget, "SAMPLE_EVERY", 1)
    monkeypatch.setattr(budget, "GROUP_ROWS", group_rows)
    path = _trace(tmp_path, [("nccl:all_to_all", HOST, {})])
    assert set(_kinds(path)) == {"alltoall"}


@pytest.fixture
def real_kineto() -> Path:
    if not KINETO.is_dir():
        pytest.skip(f"real PyTorch traces not available ({KINETO} is absent)")
    return KINETO


@pytest.mark.parametrize("name", TORCHREC)
def test_torchrec_all_to_all_is_not_pipeline_send_recv(real_kineto: Path, name: str) -> None:
    facts = profile_facts(real_kineto / name)
    by_op = facts.value("comm.time_ms_by_op")
    assert isinstance(by_op, dict)
    assert by_op.get("alltoall", 0.0) > 0.0
    assert not {"send", "recv", "batchsendrecv"} & set(by_op)
    assert facts.value("comm.p2p_share") == 0.0
    assert facts.value("job.pipeline_parallel") is False
    diagnosis = run_diagnose(JobOptions(profile=real_kineto / name)).diagnosis
    assert not [b for b in diagnosis.bottlenecks if "pipeline" in b.id]


# msprof-analyze's cluster output alone is an Ascend job's: no GPU advice on it
ASCEND = KINETO.parent / "ascend"
CLUSTER_FILES = {
    "cluster_step_trace_time.csv": "test__resource__advisor__cluster_analysis_output__cluster_step_trace_time.csv",
    "cluster_communication.json": "test__resource__advisor__cluster_analysis_output__cluster_communication.json",
}  # fmt: skip
EXAMPLE_CONFIG = Path(__file__).resolve().parents[1] / "examples" / "fsdp2" / "config.yaml"


@pytest.mark.parametrize(
    "names",
    [["cluster_step_trace_time.csv"], ["cluster_communication.json"], list(CLUSTER_FILES)],
)
def test_cluster_output_alone_is_ascend_and_gets_no_gpu_advice(
    tmp_path: Path, names: list[str]
) -> None:
    if not ASCEND.is_dir():
        pytest.skip(f"real Ascend data not available ({ASCEND} is absent)")
    folder = tmp_path / "cluster_analysis_output"
    folder.mkdir()
    for name in names:
        (folder / name).write_bytes((ASCEND / CLUSTER_FILES[name]).read_bytes())
    facts = profile_facts(tmp_path)
    assert facts.value("profile.platform") == "ascend"
    run = run_suggest(
        JobOptions(profile=tmp_path, config=EXAMPLE_CONFIG),
        options=SuggestOptions(use_ledger=False),
    )
    graph = load_graph()
    rules = graph.ruleset.rules.values()
    gpu_only = {r.id for r in rules if r.platforms and "ascend" not in r.platforms}
    proposed = {r.feature for r in run.suggestion.rejected}
    if run.suggestion.recommendation is not None:
        proposed.add(run.suggestion.recommendation.feature)
    assert not gpu_only & proposed


def test_cluster_database_alone_is_ascend(tmp_path: Path) -> None:
    from tests.synth import PRESETS
    from tests.synth.cluster_file import StageSpec, write_cluster_analysis_db

    base = PRESETS["healthy"]
    specs = [StageSpec(list(range(4)), base.with_(world_size=4), bubble_us=0.0)]
    folder = write_cluster_analysis_db(tmp_path / "db", specs)
    assert profile_facts(folder).value("profile.platform") == "ascend"


# facts on a GPU trace cite what the trace holds, never Ascend files, columns or tasks
ASCEND_WORDS = ("hcom_", "HCCL", "Accelerator Core", "Elapse Time", "communication.json")
GPU_TRACES = [
    *(f"kineto/{p.name}" for p in sorted(KINETO.glob("*.json.gz")) if "cpu_only" not in p.name),
    "kineto-rocm/mi300__resnet_act_checkpoint.json.gz",
    "kineto-legacy/resnet50_num_workers_0",
]


@pytest.mark.parametrize("name", GPU_TRACES)
def test_gpu_trace_facts_cite_the_trace_in_its_own_words(real_kineto: Path, name: str) -> None:
    path = real_kineto.parent / name
    if not path.exists():
        pytest.skip(f"{path} is absent")
    facts = profile_facts(path)
    cited = [f"{f.id}: {f.source} {f.note}" for f in facts.facts]
    cited += [f"{m.id}: {m.reason}" for m in facts.missing]
    assert not [c for c in cited if any(word in c for word in ASCEND_WORDS)]
    stepless = facts.get("profile.steps") is None or any(
        "no ProfilerStep#N markers" in c for c in cited
    )
    if stepless:
        assert not [c for c in cited if "ProfilerStep windows" in c]
