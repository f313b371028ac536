"""trace_view.json as torch_npu writes it: lanes, string timestamps, flows, Overlap Analysis."""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any

from tests.synth.layout import (
    GROUP,
    HOST_ARGS,
    PID_CANN,
    PID_DEVICE,
    PID_HCCL,
    PID_OVERLAP,
    PID_PYTHON,
    STREAM_COMM,
    STREAM_COMPUTE,
    merge_intervals,
    subtract_intervals,
    ts,
    us,
)
from tests.synth.scenario import Scenario
from tests.synth.timeline import NS, StepPlan, phase_ranges


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
            for name, lo, hi in phase_ranges(s, plan):
                w.x(name, PID_PYTHON, PID_PYTHON, lo, hi - lo, "cpu_op")
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
            for start, end in plan.blocking:
                # where in the code: a record_function range around the read (torch_npu files
                # it as cpu_op, like every host range)
                w.x(
                    "## log_loss ##",
                    PID_PYTHON,
                    PID_PYTHON,
                    start - 2000,
                    end - start + 4000,
                    "cpu_op",
                )
                w.x("aten::item", PID_PYTHON, PID_PYTHON, start, end - start, "cpu_op")
                w.x("AscendCL@aclrtMemcpy", PID_CANN, PID_PYTHON, start + 1000, end - start - 2000)
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
    compute = merge_intervals([(p.start, p.start + p.kernel.dur) for p in plan.kernels])
    comm = merge_intervals([(c.start, c.start + c.dur) for c in plan.comm])
    exposed = subtract_intervals(comm, compute)
    first = compute[0][0]
    free = subtract_intervals([(first, plan.end)], compute + comm)
    for tid, name, intervals in (
        (0, "Computing", compute),
        (1, "Communication", comm),
        (2, "Communication(Not Overlapped)", exposed),
        (3, "Free", free),
    ):
        for a, b in intervals:
            if b > a:
                w.x(name, PID_OVERLAP, tid, a, b - a)
