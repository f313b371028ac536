"""Each operator's queue time on the device over the steady steps: how long its device tasks
waited between their host launch and their start, how long they ran, and what the device was
running while they waited (parsers/traces/queue.py).

A view of time the step model already attributes, not a cost: a task queued behind the
all-reduce waits through the exposed communication (or the compute) the step already counts,
so no queue time is added to a step part, costed, or treated as a bottleneck of its own."""

from __future__ import annotations

from collections import defaultdict
from statistics import median, quantiles
from typing import Any

from advisor.facts.base import Recorder
from advisor.facts.contract import Deriver, RankInputs, Scope
from advisor.inputs.taxonomy import Taxonomy
from advisor.parsers.profile_data import RankProfile
from advisor.parsers.traces.intervals import Intervals, merge_unsorted
from advisor.parsers.traces.queue import QueuedOp, read_queue

QUEUE_FACTS = ("ops.queue_by_op", "ops.queue_wait_behind_comm_share")
# what a device task is called when no kernel row starts with it and the source names no task
# kind (trace_view.json's memory copies, event records and waits; a collective's own tasks are
# named by the collective, the database's other tasks by their TASK.taskType)
UNNAMED = "task without a kernel row"
# what a task waited behind when the device ran nothing during its wait
NOTHING = "nothing (device idle)"

NO_TRACE = (
    "no trace_view.json or database export: the launches and device tasks are read from "
    "either (profile_export_type text keeps trace_view.json)"
)
GROUPED = (
    "the trace was read in groups (more than 1,000,000 device operations): queue times are "
    "measured only on smaller traces; profile fewer steps"
)
NO_LINKS = (
    "the trace links no launch to its device task (trace_view.json HostToDevice flows; the "
    "database's CANN_API and TASK connection ids): profile with torch_npu's default "
    "ProfilerActivity.CPU and NPU"
)


class _Types:
    """The kernels' types by start (kernel_details.csv, COMPUTE_TASK_INFO); a type the
    taxonomy classes as communication (hcom_allReduce_) is its collective's kind."""

    def __init__(self, rank: RankProfile, taxonomy: Taxonomy) -> None:
        self.types = (rank.kernels.types_at if rank.kernels is not None else None) or {}
        self.tasks = (rank.kernels.task_kinds_at if rank.kernels is not None else None) or {}
        self.taxonomy = taxonomy
        self.comm: dict[str, str | None] = {}

    def collective(self, op_type: str) -> str | None:
        if op_type not in self.comm:
            tax = self.taxonomy
            comm = "communication" in tax.op_class(op_type, op_type)
            self.comm[op_type] = tax.comm_kind(op_type) if comm else None
        return self.comm[op_type]

    def is_kernel(self, at: float) -> bool:
        op_type = self.types.get(at)
        return op_type is not None and self.collective(op_type) is None

    def name(self, at: float, kind: str | None) -> str:
        """The operator of the task starting at `at` (`kind`: the collective it is part of)."""
        op_type = self.types.get(at)
        if op_type is not None:
            kind = self.collective(op_type) or kind
            return f"{kind} (collective)" if self.collective(op_type) else op_type
        if kind is not None:
            return f"{kind} (collective)"
        task = self.tasks.get(at)
        return f"{task} task" if task is not None else UNNAMED

    def behind(self, op: QueuedOp) -> str:
        if op.behind_kind is not None:
            return f"{op.behind_kind} (collective)"
        if op.behind_start != op.behind_start:
            return NOTHING
        return self.name(op.behind_start, None)


def _p90(values: list[float]) -> float:
    return quantiles(values, n=10, method="inclusive")[-1] if len(values) > 1 else values[0]


def _waits(ops: list[QueuedOp]) -> Intervals:
    return merge_unsorted([op.launch for op in ops], [op.start for op in ops])


def _runs(ops: list[QueuedOp]) -> Intervals:
    return merge_unsorted([op.start for op in ops], [op.start + op.exec_us for op in ops])


def _length(intervals: Intervals) -> float:
    return sum(b - a for a, b in zip(intervals.starts, intervals.ends, strict=True))


def _row(name: str, ops: list[QueuedOp], behind: dict[str, float], steps: int) -> dict[str, Any]:
    queue = [op.queue_us for op in ops]
    total = sum(queue)
    waits = _waits(ops)
    label, waited = max(behind.items(), key=lambda kv: kv[1], default=(NOTHING, 0.0))
    return {
        "type": name,
        "per_step_count": round(len(ops) / steps, 2),
        "queue_median_ms": round(median(queue) / 1000.0, 3),
        "queue_p90_ms": round(_p90(queue) / 1000.0, 3),
        # overlapping waits of the type's tasks once: the step time one of them was queued
        "queue_ms_per_step": round(_length(waits) / 1000.0 / steps, 3),
        # the type's device time, its tasks running together once
        "exec_ms_per_step": round(_length(_runs(ops)) / 1000.0 / steps, 3),
        "waited_behind": label if waited > 0.0 else NOTHING,
        "waited_behind_share": round(waited / total, 3) if total > 0 else 0.0,
    }


def _rows(types: _Types, ops: list[QueuedOp], steps: int) -> list[dict[str, Any]]:
    by_type: dict[str, list[QueuedOp]] = defaultdict(list)
    behind: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for op in ops:
        name = types.name(op.start, op.kind)
        by_type[name].append(op)
        behind[name][types.behind(op)] += op.queue_us
    rows = [_row(name, group, behind[name], steps) for name, group in by_type.items()]
    rows.sort(key=lambda r: (-float(r["queue_ms_per_step"]), str(r["type"])))
    return rows


def derive(given: RankInputs, out: Recorder) -> None:
    rank = given.profile
    queue = rank.trace.queue if rank.trace is not None else None
    if rank.platform != "ascend":
        for fact_id in QUEUE_FACTS:
            out.miss(fact_id, "measured on Ascend profiles (torch_npu trace or database export)")
        return
    if queue is None:
        why = NO_TRACE if rank.trace is None else GROUPED if rank.trace.flow_category else NO_LINKS
        for fact_id in QUEUE_FACTS:
            out.miss(fact_id, why)
        return
    steady = [row.step for row in given.steady.rows if row.step is not None]
    kept = set(steady[: given.thresholds.queue_max_steps])
    types = _Types(rank, given.taxonomy)
    is_kernel = types.is_kernel if types.types else None
    reading = read_queue(queue, kept or {n for n, _, _ in queue.windows}, is_kernel)
    ops = reading.ops
    steps = len({op.step for op in ops})
    if not ops:
        for fact_id in QUEUE_FACTS:
            out.miss(fact_id, "no linked device task starts in a steady step window")
        return
    assert rank.trace is not None
    source = f"{rank.trace.path.name}:launch -> device start"
    note = (
        f"{len(ops)} linked device tasks over {steps} steady step(s)"
        + (f" (the first {steps} of {len(steady)})" if len(steady) > len(kept) else "")
        + "; a view of time the step model already counts, not a cost"
    )
    out.add("ops.queue_by_op", _rows(types, ops, steps), source, note)
    waited, behind = reading.waited_us, reading.comm_only_us
    out.add(
        "ops.queue_wait_behind_comm_share",
        behind / waited if waited > 0 else 0.0,
        source,
        f"{behind / 1000.0 / steps:.2f} of the {waited / 1000.0 / steps:.2f} ms per step some "
        "task waited to start, the device only communicated",
    )


DERIVER = Deriver[RankInputs](
    name="queue",
    scope=Scope.RANK,
    inputs=frozenset({"profile", "taxonomy", "steady", "thresholds"}),
    reads=frozenset(),
    writes=frozenset(QUEUE_FACTS),
    derive=derive,
)
