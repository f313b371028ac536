"""trace_view.json as torch_npu writes it: process lanes named by metadata events, timestamps
as strings of microseconds with three decimals, host-to-device flows, the HCCL lane and the
Overlap Analysis lanes with the merged intervals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any

from simjob.timeline import NS, StepPlan, merge, subtract

PID_PYTHON, PID_CANN, PID_DEVICE, PID_HCCL, PID_OVERLAP = (
    437675,
    43767502,
    800,
    43767503,
    4376751100,
)
STREAM_COMPUTE = 2
# an FSDP hook's range on the host around the all-gather it issues (the simulated host issues
# collectives without spending time; the ranges only say which hook issued each)
FSDP_HOOK_NS = 2 * NS
# FSDP2 gathers parameters and reduces gradients on separate streams, one group each
COMM_STREAMS = {"allgather": 8, "reducescatter": 9}
GROUPS = {
    "allgather": "10.0.0.1%enp_60000_0_1700000000000",
    "reducescatter": "10.0.0.1%enp_60001_0_1700000000001",
}


class Clock:
    """Absolute timestamps: the run's epoch plus nanoseconds of simulated time."""

    def __init__(self, epoch_us: int) -> None:
        self.epoch_us = epoch_us

    def ts(self, ns: int) -> str:
        return f"{self.epoch_us + ns // NS}.{ns % NS:03d}"


def us(ns: int) -> str:
    return f"{ns / NS:.3f}"


class _TraceWriter:
    def __init__(self, handle: IO[str], clock: Clock) -> None:
        self.handle = handle
        self.clock = clock
        self.first = True
        handle.write("[")

    def raw(self, text: str) -> None:
        self.handle.write(text if self.first else ",\n" + text)
        self.first = False

    def event(self, event: dict[str, Any]) -> None:
        self.raw(json.dumps(event))

    def x(self, name: str, pid: int, tid: int, start: int, dur: int, **extra: Any) -> None:
        event: dict[str, Any] = {"ph": "X", "name": name, "pid": pid, "tid": tid}
        event["ts"] = self.clock.ts(start)
        event["dur"] = float(us(dur))
        event.update(extra)
        event.setdefault("args", {})
        self.event(event)

    def flow(self, ph: str, name: str, cat: str, flow_id: str, pid: int, tid: int, at: int) -> None:
        event: dict[str, Any] = {"ph": ph, "name": name, "cat": cat, "id": flow_id}
        event.update({"pid": pid, "tid": tid, "ts": self.clock.ts(at)})
        if ph == "f":
            event["bp"] = "e"
        self.event(event)

    def meta(self, pid: int, name: str, threads: dict[int, str]) -> None:
        self.event(
            {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}}
        )
        for tid, thread in threads.items():
            self.event(
                {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": thread}}
            )

    def close(self) -> None:
        self.handle.write("]\n")


def _host_step(w: _TraceWriter, plan: StepPlan, launch_ns: int) -> None:
    w.x(
        f"ProfilerStep#{plan.number}",
        PID_PYTHON,
        PID_PYTHON,
        plan.start,
        plan.end - plan.start,
        cat="cpu_op",
    )
    lo, hi = plan.loader
    w.x(
        "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__",
        PID_PYTHON,
        PID_PYTHON,
        lo,
        hi - lo,
        cat="cpu_op",
    )
    for p in plan.kernels:
        op_start = p.launch - launch_ns
        w.x(
            f"aten::{p.kernel.op_type.lower()}",
            PID_PYTHON,
            PID_PYTHON,
            op_start,
            max(1, launch_ns // 2),
            cat="cpu_op",
        )
        w.flow("s", "torch_to_npu", "async_npu", str(p.flow_id), PID_PYTHON, PID_PYTHON, op_start)
        w.x(
            f"AscendCL@aclnn{p.kernel.op_type}",
            PID_CANN,
            PID_PYTHON,
            p.launch - launch_ns // 2,
            launch_ns // 2,
        )
        h2d = f"HostToDevice{p.flow_id}"
        w.flow("s", h2d, "HostToDevice", str(p.flow_id), PID_CANN, PID_PYTHON, p.launch)
        args = {
            "Model Id": 4294967295,
            "Task Type": p.kernel.core,
            "Stream Id": STREAM_COMPUTE,
            "Task Id": p.flow_id,
            "Batch Id": 0,
            "Subtask Id": 4294967295,
            "connection_id": p.flow_id,
        }
        w.x(kernel_name(p.kernel.op_type), PID_DEVICE, STREAM_COMPUTE, p.start, p.dur, args=args)
        w.flow("f", h2d, "HostToDevice", str(p.flow_id), PID_DEVICE, STREAM_COMPUTE, p.start)
        w.flow(
            "f", "torch_to_npu", "async_npu", str(p.flow_id), PID_DEVICE, STREAM_COMPUTE, p.start
        )
    for at in plan.sync:
        w.x("AscendCL@aclrtSynchronizeStream", PID_CANN, PID_PYTHON, at, NS)
    for at, dur in plan.malloc:
        w.x("AscendCL@aclMallocMemInner", PID_CANN, PID_PYTHON, at, dur)


def _fsdp_ranges(w: _TraceWriter, plan: StepPlan) -> None:
    """FSDP2's record_function ranges around each all-gather it issues: the hook that asked
    for it (the layer's own pre-forward / pre-backward unshard, or a prefetch from an earlier
    layer's hook), with "FSDP::all_gather (<fqn>)" inside."""
    for c in plan.comm:
        if c.hook is None:
            continue
        pass_, layer, prefetch = c.hook
        fqn = f"model.layers.{layer}"
        hook = f"FSDP::{pass_}_prefetch for {fqn}" if prefetch else f"FSDP::pre_{pass_} ({fqn})"
        w.x(hook, PID_PYTHON, PID_PYTHON, c.issued, FSDP_HOOK_NS, cat="cpu_op")
        w.x(
            f"FSDP::all_gather ({fqn})",
            PID_PYTHON,
            PID_PYTHON,
            c.issued + FSDP_HOOK_NS // 4,
            FSDP_HOOK_NS // 2,
            cat="cpu_op",
        )


def kernel_name(op_type: str) -> str:
    return f"aclnn{op_type}_{op_type}AiCore_{op_type}"


def _comm_step(w: _TraceWriter, plan: StepPlan) -> None:
    for c in plan.comm:
        stream = COMM_STREAMS[c.kind]
        w.x(c.name, PID_DEVICE, stream, c.start, c.dur, args={"Task Type": "COMMUNICATION"})
        w.x(c.name, PID_HCCL, stream, c.start, c.dur)


def _overlap_lanes(w: _TraceWriter, plan: StepPlan) -> None:
    compute = merge([(p.start, p.start + p.dur) for p in plan.kernels])
    comm = merge([(c.start, c.start + c.dur) for c in plan.comm])
    exposed = subtract(comm, compute)
    first = min(compute[0][0], comm[0][0]) if comm else compute[0][0]
    free = subtract([(first, plan.end)], compute + comm)
    for tid, name, intervals in (
        (0, "Computing", compute),
        (1, "Communication", comm),
        (2, "Communication(Not Overlapped)", exposed),
        (3, "Free", free),
    ):
        for a, b in intervals:
            if b > a:
                w.x(name, PID_OVERLAP, tid, a, b - a)


def write_trace(
    path: Path, plans: list[StepPlan], launch_ns: int, clock: Clock, fsdp_ranges: bool = True
) -> None:
    with path.open("w", encoding="utf-8") as handle:
        w = _TraceWriter(handle, clock)
        w.meta(PID_PYTHON, "Python", {PID_PYTHON: f"Thread {PID_PYTHON}"})
        for plan in plans:
            _host_step(w, plan, launch_ns)
            if fsdp_ranges:
                _fsdp_ranges(w, plan)
            _comm_step(w, plan)
            _overlap_lanes(w, plan)
        w.meta(PID_CANN, "CANN", {PID_PYTHON: f"Thread {PID_PYTHON}"})
        streams = {STREAM_COMPUTE: f"Stream {STREAM_COMPUTE}"}
        streams.update({s: f"Stream {s}" for s in COMM_STREAMS.values()})
        w.meta(PID_DEVICE, "Ascend Hardware", streams)
        w.meta(
            PID_HCCL,
            "HCCL",
            {COMM_STREAMS[kind]: f"Group {group} Communication" for kind, group in GROUPS.items()},
        )
        w.meta(
            PID_OVERLAP,
            "Overlap Analysis",
            {0: "Computing", 1: "Communication", 2: "Communication(Not Overlapped)", 3: "Free"},
        )
        w.close()
