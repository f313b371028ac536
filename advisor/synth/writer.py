"""Write a simulated scenario as a torch_npu (or MindSpore) profiler directory.

The layout and file formats follow what torch_npu writes (including its quirks: string
timestamps, TAB-terminated quoted start times, shapes wrapped in literal quotes, N/A PMU cells
for AI-CPU kernels), so the readers are exercised on the same shapes as real output.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from advisor.synth.scenario import Scenario
from advisor.synth.timeline import NS, StepPlan, StepTruth, plan_steps

BASE_US = 1_700_000_000_000_000  # an epoch-like origin: absolute timestamps as torch_npu writes
PID_PYTHON, PID_CANN, PID_DEVICE, PID_HCCL, PID_OVERLAP = (
    437675,
    43767502,
    800,
    43767503,
    4376751100,
)
STREAM_COMPUTE, STREAM_COMM = 2, 8
HCCS_GBPS, SDMA_GBPS = 18.0, 25.0
GROUP = "10.0.0.1%enp_60000_0_1700000000000"
# Host operator args as torch_npu records them with record_shapes: real events are 250-400 bytes.
HOST_ARGS = (
    '{"Sequence number": -1, "Fwd thread id": 0, "Input Dims": [[4096, 4096], [4096, 4096], []], '
    '"Input type": ["c10::BFloat16", "c10::BFloat16", "Scalar"]}'
)


@dataclass(frozen=True)
class Written:
    """What was written, and the ground truth a reader must recover."""

    directory: Path
    steps: list[StepPlan]

    @property
    def truths(self) -> list[StepTruth]:
        return [p.truth for p in self.steps]


def ts(ns: int) -> str:
    return f"{BASE_US + ns // NS}.{ns % NS:03d}"


def us(ns: int) -> str:
    return f"{ns / NS:.3f}"


def _subtract(
    intervals: list[tuple[int, int]], cover: list[tuple[int, int]]
) -> list[tuple[int, int]]:
    out = []
    merged = _merge(cover)
    for a, b in intervals:
        cur = a
        for x, y in merged:
            if y <= cur or x >= b:
                continue
            if x > cur:
                out.append((cur, x))
            cur = max(cur, y)
        if cur < b:
            out.append((cur, b))
    return out


def _merge(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for a, b in sorted(intervals):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


class _TraceWriter:
    def __init__(self, handle: IO[str]) -> None:
        self.handle = handle
        self.first = True
        handle.write("[")

    def raw(self, text: str) -> None:
        self.handle.write(text if self.first else ", " + text)
        self.first = False

    def event(self, event: dict[str, Any]) -> None:
        self.raw(json.dumps(event, separators=(", ", ": ")))

    def x(
        self,
        name: str,
        pid: int,
        tid: int,
        start: int,
        dur: int,
        cat: str | None = None,
        args: str = "{}",
    ) -> None:
        cat_part = f'"cat": "{cat}", ' if cat else ""
        self.raw(
            f'{{"ph": "X", "name": {json.dumps(name)}, "pid": {pid}, "tid": {tid}, '
            f'"ts": "{ts(start)}", "dur": {us(dur)}, {cat_part}"args": {args}}}'
        )

    def flow(self, ph: str, name: str, cat: str, flow_id: str, pid: int, tid: int, at: int) -> None:
        bp = ', "bp": "e"' if ph == "f" else ""
        self.raw(
            f'{{"ph": "{ph}", "name": "{name}", "cat": "{cat}", "id": {flow_id}, "pid": {pid}, '
            f'"tid": {tid}, "ts": "{ts(at)}"{bp}}}'
        )

    def close(self) -> None:
        self.handle.write("]\n")


def _meta(w: _TraceWriter, pid: int, name: str, threads: dict[int, str]) -> None:
    w.event({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}})
    for tid, thread in threads.items():
        w.event(
            {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": thread}}
        )


def write_trace(path: Path, s: Scenario, plans: list[StepPlan]) -> None:
    launch = round(s.launch_us * NS)
    with path.open("w", encoding="utf-8") as handle:
        w = _TraceWriter(handle)
        _meta(w, PID_PYTHON, "Python", {PID_PYTHON: f"Thread {PID_PYTHON}"})
        for plan in plans:
            w.x(
                f"ProfilerStep#{plan.number}",
                PID_PYTHON,
                PID_PYTHON,
                plan.start,
                plan.end - plan.start,
                "cpu_op",
            )
            lo, hi = plan.loader
            w.x(
                "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__",
                PID_PYTHON,
                PID_PYTHON,
                lo,
                hi - lo,
                "cpu_op",
            )
            for p in plan.kernels:
                k = p.kernel
                host_start = p.launch - launch
                for j in range(s.host_ops_per_kernel):
                    op = "aten::" + (k.op_type.lower() if j == 0 else "empty")
                    w.x(
                        op,
                        PID_PYTHON,
                        PID_PYTHON,
                        host_start + j,
                        max(1, launch // 2),
                        "cpu_op",
                        HOST_ARGS,
                    )
                w.flow(
                    "s",
                    "torch_to_npu",
                    "async_npu",
                    str(p.flow_id),
                    PID_PYTHON,
                    PID_PYTHON,
                    host_start,
                )
                w.x(
                    f"AscendCL@aclnn{k.op_type}",
                    PID_CANN,
                    PID_PYTHON,
                    p.launch - launch // 2,
                    launch // 2,
                )
                w.flow(
                    "s",
                    f"HostToDevice{p.flow_id}",
                    "HostToDevice",
                    f'"{p.flow_id}"',
                    PID_CANN,
                    PID_PYTHON,
                    p.launch,
                )
                args = (
                    f'{{"Model Id": 4294967295, "Task Type": "{k.core}", "Stream Id": {STREAM_COMPUTE}, '
                    f'"Task Id": {p.flow_id}, "Batch Id": 0, "Subtask Id": 4294967295, "connection_id": {p.flow_id}}}'
                )
                w.x(k.name, PID_DEVICE, STREAM_COMPUTE, p.start, k.dur, None, args)
                w.flow(
                    "f",
                    f"HostToDevice{p.flow_id}",
                    "HostToDevice",
                    f'"{p.flow_id}"',
                    PID_DEVICE,
                    STREAM_COMPUTE,
                    p.start,
                )
                w.flow(
                    "f",
                    "torch_to_npu",
                    "async_npu",
                    str(p.flow_id),
                    PID_DEVICE,
                    STREAM_COMPUTE,
                    p.start,
                )
            for c in plan.comm:
                w.x(
                    c.name,
                    PID_DEVICE,
                    STREAM_COMM,
                    c.start,
                    c.dur,
                    None,
                    '{"Task Type": "COMMUNICATION"}',
                )
                w.x(c.name, PID_HCCL, 0, c.start, c.dur)
            for name, times in (
                ("AscendCL@aclrtSynchronizeStream", plan.sync),
                ("AscendCL@aclMallocMemInner", plan.malloc),
                ("AscendCL@aclrtFree", plan.free),
            ):
                for at in times:
                    w.x(name, PID_CANN, PID_PYTHON, at, 1000)
            _overlap_lanes(w, plan)
        _meta(w, PID_CANN, "CANN", {PID_PYTHON: f"Thread {PID_PYTHON}"})
        _meta(
            w, PID_DEVICE, "Ascend Hardware", {STREAM_COMPUTE: "Stream 2", STREAM_COMM: "Stream 8"}
        )
        _meta(w, PID_HCCL, "HCCL", {0: f"Group {GROUP} Communication"})
        _meta(
            w,
            PID_OVERLAP,
            "Overlap Analysis",
            {0: "Computing", 1: "Communication", 2: "Communication(Not Overlapped)", 3: "Free"},
        )
        w.close()


def _overlap_lanes(w: _TraceWriter, plan: StepPlan) -> None:
    compute = _merge([(p.start, p.start + p.kernel.dur) for p in plan.kernels])
    comm = _merge([(c.start, c.start + c.dur) for c in plan.comm])
    exposed = _subtract(comm, compute)
    first = compute[0][0]
    free = _subtract([(first, plan.end)], compute + comm)
    for tid, name, intervals in (
        (0, "Computing", compute),
        (1, "Communication", comm),
        (2, "Communication(Not Overlapped)", exposed),
        (3, "Free", free),
    ):
        for a, b in intervals:
            if b > a:
                w.x(name, PID_OVERLAP, tid, a, b - a)


def _cell(value: str) -> str:
    if any(ch in value for ch in ',"\n\t'):
        return '"' + value.replace('"', '""') + '"'
    return value


def _csv_line(cells: list[str]) -> str:
    return ",".join(_cell(c) for c in cells) + "\n"


KERNEL_BASE = [
    "Step Id",
    "Model ID",
    "Task ID",
    "Stream ID",
    "Name",
    "Type",
    "OP State",
    "Accelerator Core",
    "Start Time(us)",
    "Duration(us)",
    "Wait Time(us)",
    "Block Dim",
    "Mix Block Dim",
    "HF32 Eligible",
    "Input Shapes",
    "Input Data Types",
    "Input Formats",
    "Output Shapes",
    "Output Data Types",
    "Output Formats",
    "Context ID",
]
KERNEL_PMU = [
    "aicore_time(us)",
    "aic_total_cycles",
    "aic_mac_time(us)",
    "aic_mac_ratio",
    "aic_scalar_time(us)",
    "aic_scalar_ratio",
    "aic_mte1_time(us)",
    "aic_mte1_ratio",
    "aic_mte2_time(us)",
    "aic_mte2_ratio",
    "aic_fixpipe_time(us)",
    "aic_fixpipe_ratio",
    "aic_icache_miss_rate",
    "aiv_time(us)",
    "aiv_total_cycles",
    "aiv_vec_time(us)",
    "aiv_vec_ratio",
    "aiv_scalar_time(us)",
    "aiv_scalar_ratio",
    "aiv_mte2_time(us)",
    "aiv_mte2_ratio",
    "aiv_mte3_time(us)",
    "aiv_mte3_ratio",
    "aiv_icache_miss_rate",
    "cube_utilization(%)",
]


def _pmu(core: str, dur: int, compute: float | None, mte2: float | None) -> list[str]:
    if compute is None or mte2 is None:
        return ["N/A"] * len(KERNEL_PMU)
    d = dur / NS
    zeros_cube = ["0"] * 13
    zeros_vec = ["0"] * 11
    if core == "AI_VECTOR_CORE":
        vec = [
            f"{d:.3f}",
            "1000",
            f"{d * compute:.3f}",
            f"{compute}",
            "0",
            "0",
            f"{d * mte2:.3f}",
            f"{mte2}",
            "0",
            "0",
            "0",
        ]
        return zeros_cube + vec + ["0"]
    cube = [
        f"{d:.3f}",
        "1000",
        f"{d * compute:.3f}",
        f"{compute}",
        "0",
        "0",
        "0",
        "0",
        f"{d * mte2:.3f}",
        f"{mte2}",
        "0",
        "0",
        "0",
    ]
    return cube + zeros_vec + [f"{compute * 100:.1f}"]


def write_kernels(path: Path, s: Scenario, plans: list[StepPlan]) -> None:
    level1 = s.level != "Level0"
    header = list(KERNEL_BASE) + (KERNEL_PMU if level1 else [])
    if not s.kernel_step_ids:
        header.remove("Step Id")
    with path.open("w", encoding="utf-8", newline="") as f:
        f.write(_csv_line(header))
        for plan in plans:
            rows = [
                (
                    p.kernel.name,
                    p.kernel.op_type,
                    p.kernel.core,
                    p.start,
                    p.kernel.dur,
                    p.kernel.compute_ratio,
                    p.kernel.mte2_ratio,
                    STREAM_COMPUTE,
                    p.flow_id,
                )
                for p in plan.kernels
            ]
            rows += [
                (
                    c.name,
                    c.name.split("__")[0] + "_",
                    "HCCL",
                    c.start,
                    c.dur,
                    None,
                    None,
                    STREAM_COMM,
                    0,
                )
                for c in plan.comm
            ]
            for name, op_type, core, start, dur, compute, mte2, stream, task in rows:
                cells = [str(plan.number)] if s.kernel_step_ids else []
                cells += [
                    "4294967295",
                    str(task),
                    str(stream),
                    name,
                    op_type,
                    "dynamic",
                    core,
                    ts(start) + "\t",
                    us(dur),
                    "0.5",
                    "24",
                    "0",
                    "NO",
                    '"4096,4096;4096,4096"',
                    "DT_BF16;DT_BF16",
                    "ND;ND",
                    '"4096,4096"',
                    "DT_BF16",
                    "ND",
                    "N/A",
                ]
                if level1:
                    cells += _pmu(core, dur, compute, mte2)
                f.write(_csv_line(cells))


def write_op_statistic(path: Path, plans: list[StepPlan]) -> None:
    stats: dict[tuple[str, str], list[int]] = defaultdict(list)
    for plan in plans:
        for p in plan.kernels:
            stats[(p.kernel.op_type, p.kernel.core)].append(p.kernel.dur)
    grand = sum(sum(v) for v in stats.values())
    with path.open("w", encoding="utf-8", newline="") as f:
        f.write(
            "Device_id,OP Type,Core Type,Count,Total Time(us),Min Time(us),Avg Time(us),Max Time(us),Ratio(%)\n"
        )
        for (op_type, core), durs in sorted(stats.items(), key=lambda kv: -sum(kv[1])):
            total = sum(durs)
            f.write(
                _csv_line(
                    [
                        "0",
                        op_type,
                        core,
                        str(len(durs)),
                        us(total),
                        us(min(durs)),
                        f"{total / len(durs) / NS:.3f}",
                        us(max(durs)),
                        f"{100 * total / grand:.2f}",
                    ]
                )
            )


def write_step_trace(path: Path, plans: list[StepPlan]) -> None:
    with path.open("w", encoding="utf-8", newline="") as f:
        f.write(
            "Device_id,Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble,"
            "Communication(Not Overlapped and Exclude Receive),Preparing\n"
        )
        for plan in plans:
            t = plan.truth
            f.write(
                _csv_line(
                    [
                        "0",
                        str(plan.number),
                        us(t.computing),
                        us(t.exposed),
                        us(t.communication - t.exposed),
                        us(t.communication),
                        us(t.free),
                        "0",
                        "0",
                        us(t.exposed),
                        us(t.preparing),
                    ]
                )
            )


def communication_json(s: Scenario, plans: list[StepPlan]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for plan in plans:
        ops: dict[str, Any] = {}
        for c in plan.comm:
            elapse = c.dur / NS / 1000.0
            wait = elapse * s.comm_wait_ratio
            transit = elapse - wait
            ops[f"{c.name}@{GROUP}"] = {
                "Communication Time Info": {
                    "Start Timestamp(us)": float(ts(c.start)),
                    "Elapse Time(ms)": elapse,
                    "Transit Time(ms)": transit,
                    "Wait Time(ms)": wait,
                    "Synchronization Time(ms)": wait / 2,
                    "Idle Time(ms)": 0.0,
                    "Wait Time Ratio": round(s.comm_wait_ratio, 4),
                    "Synchronization Time Ratio": round(s.comm_wait_ratio / 2, 4),
                },
                "Communication Bandwidth Info": {
                    "HCCS": _link(HCCS_GBPS * transit, transit),
                    "SDMA": _link(SDMA_GBPS * transit, transit),
                    "RDMA": _link(0.0, 0.0),
                    "PCIE": _link(0.0, 0.0),
                },
            }
        total_elapse = sum(c.dur for c in plan.comm) / NS / 1000.0
        ops["Total Op Info"] = {
            "Communication Time Info": {
                "Elapse Time(ms)": total_elapse,
                "Wait Time(ms)": total_elapse * s.comm_wait_ratio,
            },
            "Communication Bandwidth Info": {"HCCS": _link(HCCS_GBPS * total_elapse, total_elapse)},
        }
        out[f"step{plan.number}"] = {"collective": ops, "p2p": {}}
    return out


def _link(size_mb: float, time_ms: float) -> dict[str, Any]:
    bw = round(size_mb / time_ms, 4) if time_ms > 0 else 0
    return {
        "Transit Size(MB)": size_mb,
        "Transit Time(ms)": time_ms,
        "Bandwidth(GB/s)": bw,
        "Large Packet Ratio": 1.0 if size_mb else 0,
        "Size Distribution": {},
    }


def write_memory(path: Path, s: Scenario, plans: list[StepPlan]) -> None:
    with path.open("w", encoding="utf-8", newline="") as f:
        f.write(
            "Component,Timestamp(us),Total Allocated(MB),Total Reserved(MB),Total Active(MB),Stream Ptr,Device Type\n"
        )
        for i, plan in enumerate(plans):
            mid = (plan.start + plan.end) // 2
            reserved = s.reserved_peak_mb if i > 0 else s.reserved_peak_mb * 0.9
            for at, allocated in (
                (plan.start, s.allocated_peak_mb * 0.6),
                (mid, s.allocated_peak_mb),
                (plan.end, s.allocated_peak_mb * 0.6),
            ):
                f.write(
                    _csv_line(
                        [
                            "PTA",
                            ts(at),
                            f"{allocated:.3f}",
                            f"{reserved:.3f}",
                            f"{allocated:.3f}",
                            "187651014180864",
                            "NPU:0",
                        ]
                    )
                )
                f.write(
                    _csv_line(
                        [
                            "APP",
                            ts(at),
                            f"{reserved + 1200:.3f}",
                            f"{reserved + 1200:.3f}",
                            "0",
                            "",
                            "NPU:0",
                        ]
                    )
                )


def profiler_info(s: Scenario) -> dict[str, Any]:
    info: dict[str, Any] = {
        "config": {
            "common_config": {
                "activities": ["ProfilerActivity.CPU", "ProfilerActivity.NPU"],
                "schedule": {
                    "wait": 0,
                    "warmup": 0,
                    "active": s.steps,
                    "repeat": 1,
                    "skip_first": 5,
                },
                "record_shapes": False,
                "profile_memory": s.with_memory,
                "with_stack": False,
            },
            "experimental_config": {
                "_profiler_level": s.level,
                "_aic_metrics": "ACL_AICORE_PIPE_UTILIZATION"
                if s.level != "Level0"
                else "ACL_AICORE_NONE",
                "_export_type": ["text"],
            },
        },
        "cann_version": "8.2.RC1",
        "rank_id": s.rank,
    }
    if s.framework == "mindspore":
        info["ms_version"] = "2.6.0"
    else:
        info["torch_npu_version"] = "2.6.0.post1"
    return info


def write_profile(parent: Path, s: Scenario) -> Written:
    """Write one rank's profile directory under `parent` and return it with its ground truth."""
    suffix = "_ascend_ms" if s.framework == "mindspore" else "_ascend_pt"
    directory = parent / f"node0_{20000 + s.rank}_20260101093000000{suffix}"
    output = directory / "ASCEND_PROFILER_OUTPUT"
    output.mkdir(parents=True, exist_ok=True)
    plans = plan_steps(s)
    (directory / f"profiler_info_{s.rank}.json").write_text(json.dumps(profiler_info(s), indent=2))
    meta = {
        "ENV_VARIABLES": dict(s.env),
        "distributed_args": {
            "world_size": s.world_size,
            "rank": s.rank,
            "tensor_model_parallel_size": 1,
            "pipeline_model_parallel_size": 1,
            "data_parallel_size": s.world_size,
            "context_parallel_size": 1,
            "expert_model_parallel_size": 1,
        },
    }
    (directory / "profiler_metadata.json").write_text(json.dumps(meta, indent=2))
    write_trace(output / "trace_view.json", s, plans)
    write_kernels(output / "kernel_details.csv", s, plans)
    write_op_statistic(output / "op_statistic.csv", plans)
    write_step_trace(output / "step_trace_time.csv", plans)
    if s.level != "Level0":
        (output / "communication.json").write_text(
            json.dumps(communication_json(s, plans), indent=1)
        )
        (output / "communication_matrix.json").write_text(json.dumps(_matrix(plans), indent=1))
    if s.with_memory:
        write_memory(output / "memory_record.csv", s, plans)
    return Written(directory, plans)


def _matrix(plans: list[StepPlan]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for plan in plans:
        ops = {}
        for c in plan.comm:
            ms = c.dur / NS / 1000.0
            ops[f"{c.name.split('__')[0]}-top1@{GROUP}"] = {
                "0-1": {
                    "Transport Type": "HCCS",
                    "Transit Size(MB)": HCCS_GBPS * ms,
                    "Transit Time(ms)": ms,
                    "Bandwidth(GB/s)": HCCS_GBPS,
                    "Op Name": c.name,
                },
            }
        out[f"step{plan.number}"] = {"collective": ops, "p2p": {}}
    return out


def write_cluster(
    parent: Path, base: Scenario, ranks: int, slow_rank: int | None = None, slow_factor: float = 1.5
) -> list[Written]:
    """Several ranks of one job. A slow rank computes `slow_factor` times longer; the others wait
    for it in their final (exposed) communication, as synchronous collectives do."""
    written = []
    extra_us = 0.0
    if slow_rank is not None:
        one_step = plan_steps(base.with_(steps=1))[0]
        compute_us = sum(p.kernel.dur for p in one_step.kernels) / NS
        extra_us = compute_us * (slow_factor - 1.0)
    for rank in range(ranks):
        if rank == slow_rank:
            s = base.with_(rank=rank, world_size=ranks, compute_scale=slow_factor)
        else:
            s = base.with_(
                rank=rank, world_size=ranks, comm_exposed_us=base.comm_exposed_us + extra_us
            )
        written.append(write_profile(parent, s))
    return written
