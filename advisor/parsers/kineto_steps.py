"""The step model of a PyTorch profiler trace from its device-operation columns: per device
window, compute, exposed and overlapped communication, memory operations, idle time by cause,
the host preparation before the first kernel, and the kernels and collectives of each step.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from advisor.inputs.taxonomy import Taxonomy
from advisor.parsers.intervals import (
    Intervals,
    clipped_sum,
    exposed_by_kind,
    merge_unsorted,
    merged_intervals,
)
from advisor.parsers.kineto_columns import (
    COMMUNICATION,
    COMPUTE,
    MEMORY,
    NO_GROUP,
    DeviceOps,
    Signatures,
)
from advisor.parsers.kineto_events import KinetoEvents
from advisor.parsers.profile_data import CommStep, KernelGroup, KernelTable, RankProfile, StepRow
from advisor.parsers.trace_steps import TraceData, TraceStep, idle_gaps, preparation

NO_STEP = -1  # a device operation no profiled step launched (else its window's index)


@dataclass(frozen=True)
class DeviceWindow:
    number: int
    start: float
    end: float


@dataclass
class Lanes:
    """The merged intervals of compute, communication, both, every operation, and each
    collective kind, of some operations (in start order)."""

    compute: Intervals
    comm: Intervals
    kernels: Intervals
    every: Intervals
    collectives: dict[str, Intervals]


def lanes_of(ops: DeviceOps, kind_of: dict[int, str]) -> Lanes:
    """One pass over the operations (in start order) for the four unions, one for the
    collectives."""
    compute, comm, kernels, every = Intervals(), Intervals(), Intervals(), Intervals()
    for start, end, kind in zip(ops.start, ops.end, ops.kinds(), strict=True):
        targets = (
            (compute, kernels, every)
            if kind == COMPUTE
            else (comm, kernels, every)
            if kind == COMMUNICATION
            else (every,)
        )
        for lane in targets:
            ends = lane.ends
            if ends and start <= ends[-1]:
                if end > ends[-1]:
                    ends[-1] = end
            else:
                lane.starts.append(start)
                ends.append(end)
    kinds: dict[str, tuple[array[float], array[float]]] = {}
    sigs = ops.signatures
    for i, sig in enumerate(ops.signature):
        if sigs.kind[sig] == COMMUNICATION:
            pair = kinds.setdefault(kind_of[sigs.collective[sig]], (array("d"), array("d")))
            pair[0].append(ops.start[i])
            pair[1].append(ops.end[i])
    collectives = {kind: merged_intervals(a, b) for kind, (a, b) in kinds.items()}
    return Lanes(compute, comm, kernels, every, collectives)


@dataclass
class HostCalls:
    """The host-side calls the steps count and the preparation measures."""

    sync: Intervals
    malloc: Intervals
    loader: Intervals
    sync_starts: list[float]
    malloc_starts: list[float]
    free_starts: list[float]

    @classmethod
    def of(cls, events: KinetoEvents) -> HostCalls:
        return cls(
            merge_unsorted(events.sync_start, events.sync_end),
            merge_unsorted(events.malloc_start, events.malloc_end),
            merge_unsorted(events.loader_start, events.loader_end),
            sorted(events.sync_start),
            sorted(events.malloc_start),
            sorted(events.free),
        )


@dataclass
class Measured:
    """What the windows measured, in window order."""

    rows: list[StepRow]
    steps: list[TraceStep]
    comm: list[CommStep]


@dataclass(frozen=True)
class Whole:
    """What holds for the whole trace, not one group of its operations."""

    linked: bool  # some operation has its launch in the trace
    has_collectives: bool


def measure_windows(
    windows: list[DeviceWindow],
    ops: DeviceOps,
    launch_at: Sequence[float],
    lanes: Lanes,
    host: HostCalls,
    per_step: dict[int, StepOps],
    whole: Whole,
    out: Measured,
) -> None:
    """Each window's step row, trace step and collectives, from the operations that overlap
    it (and any others: only what lies in the window counts)."""
    all_starts, all_ends = lanes.every.starts, lanes.every.ends
    for w in windows:
        lo, hi = w.start, w.end
        busy = clipped_sum(lanes.every, lo, hi)
        computing = clipped_sum(lanes.compute, lo, hi)
        communication = clipped_sum(lanes.comm, lo, hi)
        compute_or_comm = clipped_sum(lanes.kernels, lo, hi)
        i = bisect_left(all_starts, lo)
        if i > 0 and all_ends[i - 1] > lo:
            i -= 1
        first = max(lo, all_starts[i]) if i < len(all_starts) and all_starts[i] < hi else hi
        exposed = compute_or_comm - computing
        out.rows.append(
            StepRow(
                w.number,
                computing,
                exposed,
                communication - exposed,
                communication,
                max(0.0, (hi - first) - busy),
                first - lo,
                None,
                memory=busy - compute_or_comm,
            )
        )
        gaps = idle_gaps(ops.start, ops.end, lo, hi, launch_at) if whole.linked else None
        prep = preparation(lo, first, host.loader, host.malloc, host.sync)
        step_ops = per_step.get(w.number)
        out.steps.append(
            TraceStep(
                number=w.number,
                duration_us=hi - lo,
                overlap_us={},
                kernel_count=step_ops.count if step_ops else 0,
                launch_gap_us=gaps.host if gaps else None,
                sync_calls=_count(host.sync_starts, lo, hi),
                malloc_calls=_count(host.malloc_starts, lo, hi),
                free_calls=_count(host.free_starts, lo, hi),
                dataloader_us=clipped_sum(host.loader, lo, hi),
                idle_dependency_us=gaps.dependency if gaps else None,
                idle_unlinked_us=gaps.unlinked if gaps else None,
                first_task_us=first - lo,
                preparing_loader_us=prep[0],
                preparing_allocator_us=prep[1],
                preparing_sync_us=prep[2],
                comm_exposed_by_kind_us=exposed_by_kind(lanes.collectives, lanes.compute, lo, hi)
                if whole.has_collectives
                else None,
            )
        )
        out.comm.append(step_ops.comm if step_ops else CommStep(step=w.number, has_wait=False))


def fill_rank(
    rank: RankProfile,
    path: Path,
    events: KinetoEvents,
    windows: list[DeviceWindow],
    steps_of: array[int],
    numbers: list[int],
    launch_at: Sequence[float],
    taxonomy: Taxonomy,
) -> None:
    """The rank's steps from all its operations at once (`numbers`: the step number of each
    index `steps_of` holds)."""
    ops = events.ops
    kind_of = collective_kinds(ops.signatures, events.strings.values, taxonomy)
    lanes = lanes_of(ops, kind_of)
    whole = Whole(any(t == t for t in launch_at), bool(lanes.collectives))
    per_step: dict[int, StepOps] = {}
    add_step_ops(per_step, ops, events.strings.values, steps_of, numbers, kind_of, taxonomy)
    measured = Measured([], [], [])
    measure_windows(windows, ops, launch_at, lanes, HostCalls.of(events), per_step, whole, measured)
    kinds = ops.kinds()
    kernel_rows = len(kinds) - kinds.count(MEMORY)
    finish_rank(
        rank, path, events.events, measured, per_step, kernel_rows, len(lanes.comm) > 0, whole
    )


def finish_rank(
    rank: RankProfile,
    path: Path,
    event_count: int,
    measured: Measured,
    per_step: dict[int, StepOps],
    kernel_rows: int,
    has_comm: bool,
    whole: Whole,
) -> None:
    rank.step_rows = measured.rows
    groups = [g for s in per_step.values() for g in s.groups.values()]
    rank.kernels = KernelTable(groups, has_pmu=False, has_step_ids=True, rows=kernel_rows)
    rank.comm = measured.comm if has_comm else None
    rank.trace = TraceData(
        path,
        event_count,
        measured.steps,
        [],
        "correlation" if whole.linked else None,
        True,
        ["GPU"],
    )


def collective_kinds(sigs: Signatures, strings: list[str], taxonomy: Taxonomy) -> dict[int, str]:
    """The collective kind of each collective name the signatures use."""
    return {
        c: taxonomy.comm_kind(strings[c])
        for c in {sigs.collective[s] for s in range(len(sigs)) if sigs.kind[s] == COMMUNICATION}
    }


def _count(times: list[float], lo: float, hi: float) -> int:
    return bisect_left(times, hi) - bisect_left(times, lo)


@dataclass
class StepOps:
    comm: CommStep
    groups: dict[tuple[str, str], KernelGroup]
    count: int = 0


def add_step_ops(
    out: dict[int, StepOps],
    ops: DeviceOps,
    strings: list[str],
    steps_of: Sequence[int],
    numbers: list[int],
    kind_of: dict[int, str],
    taxonomy: Taxonomy,
) -> None:
    """Add the kernels and collectives of each step, by the step that launched them (memory
    operations are not kernels: they are the step model's memory part), in operation order."""
    small = taxonomy.small_op_max_us
    sigs = ops.signatures
    op_sigs = ops.signature
    for i, window in enumerate(steps_of):
        sig = op_sigs[i]
        kind = sigs.kind[sig]
        if window == NO_STEP or kind == MEMORY:
            continue
        step = numbers[window]
        mine = out.get(step)
        if mine is None:
            mine = out[step] = StepOps(CommStep(step=step, has_wait=False), {})
        mine.count += 1
        name = strings[sigs.name[sig]]
        core = "NCCL" if kind == COMMUNICATION else "GPU"
        group = mine.groups.get((name, core))
        if group is None:
            group = mine.groups[(name, core)] = KernelGroup(step, name, core, name)
        duration = ops.end[i] - ops.start[i]
        group.count += 1
        group.total_us += duration
        if duration < small:
            group.small_count += 1
            group.small_us += duration
        if kind == COMMUNICATION:
            pg = sigs.group[sig]
            mine.comm.add(
                kind_of[sigs.collective[sig]],
                duration / 1000.0,
                None if pg == NO_GROUP else strings[pg],
            )
