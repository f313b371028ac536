"""Measuring the device windows of a PyTorch trace: compute, exposed and overlapped
communication, memory operations, idle time by cause and the host preparation before the first
kernel, from the operations that overlap each window.

A window's sums are resumable (WindowSums): its operations may come in consecutive pieces cut
where no operation crosses, and the sums add the same terms in the same order as one pass — so a
window holding more operations than fit at once is measured a piece at a time, exactly.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import compress
from typing import Protocol

from advisor.parsers.kineto.columns import COMMUNICATION, COMPUTE, MEMORY, DeviceOps
from advisor.parsers.kineto.decoded import KinetoEvents
from advisor.parsers.kineto.device_steps import DeviceWindow
from advisor.parsers.profile_data import CommStep, StepRow
from advisor.parsers.traces.blocking import blocking_calls
from advisor.parsers.traces.host_calls import HostCalls
from advisor.parsers.traces.idle_gaps import IdleSweep
from advisor.parsers.traces.intervals import (
    Intervals,
    clipped_sum,
    merged_intervals,
    overlap_sum,
)
from advisor.parsers.traces.steps import TraceStep


class StepTotals(Protocol):
    """What the measures read of a step's kernel table (kernel_tables.StepOps)."""

    @property
    def count(self) -> int: ...

    comm: CommStep


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
    """The unions of compute, communication and memory operations, each in one pass over its
    operations (picked by kind at C speed, in start order); the union of every kernel and of
    every operation from those (mostly compute: the few others merged in, the compute runs
    between them copied whole); then one pass for the collectives."""
    kinds = ops.kinds()
    compute, comm, memory = Intervals(), Intervals(), Intervals()
    for lane, kind in ((compute, COMPUTE), (comm, COMMUNICATION), (memory, MEMORY)):
        picked = kinds.translate(_PICK[kind])
        _union_into(lane, compress(ops.start, picked), compress(ops.end, picked))
    kernels = merged_lanes(compute, comm)
    every = merged_lanes(kernels, memory)
    by_kind: dict[str, tuple[array[float], array[float]]] = {}
    sigs, signature = ops.signatures, ops.signature
    # the collectives alone visited (a few in a thousand operations), in start order
    for i in compress(range(len(kinds)), kinds.translate(_PICK[COMMUNICATION])):
        sig = signature[i]
        pair = by_kind.setdefault(kind_of[sigs.collective[sig]], (array("d"), array("d")))
        pair[0].append(ops.start[i])
        pair[1].append(ops.end[i])
    collectives = {kind: merged_intervals(a, b) for kind, (a, b) in by_kind.items()}
    return Lanes(compute, comm, kernels, every, collectives)


_KINDS = (COMPUTE, COMMUNICATION, MEMORY)
# byte translation tables: an operation's kind -> 1 where it is of that kind, else 0
_PICK = {wanted: bytes(1 if k == wanted else 0 for k in range(256)) for wanted in _KINDS}


def merged_lanes(lane: Intervals, few: Intervals) -> Intervals:
    """The union of two merged lanes (intervals in start order, each starting after the one
    before has ended), as one pass over both would merge them: the stretches of `lane` between
    the intervals of `few` are copied whole, so the cost follows `few`. Bounds are copied,
    never computed: the result is the one merged lane of the union."""
    if not few:
        return lane
    starts, ends = lane.starts, lane.ends
    out = Intervals(array("d"), array("d"))
    at = 0  # the first interval of `lane` not yet in `out`
    for start, end in zip(few.starts, few.ends, strict=True):
        at = _copy_before(out, starts, ends, at, bisect_left(starts, start, at))
        _add(out, start, end)
    _copy_before(out, starts, ends, at, len(starts))
    return out


def _copy_before(
    out: Intervals, starts: array[float], ends: array[float], at: int, stop: int
) -> int:
    """The intervals [at, stop) of a merged lane onto `out`: those starting within its last
    interval extend it, the rest are copied as they are; returns `stop`."""
    out_ends = out.ends
    if at < stop and out_ends:
        joined = bisect_right(starts, out_ends[-1], at, stop)
        if joined > at:
            if ends[joined - 1] > out_ends[-1]:
                out_ends[-1] = ends[joined - 1]
            at = joined
    out.starts.extend(starts[at:stop])
    out_ends.extend(ends[at:stop])
    return stop


def _add(out: Intervals, start: float, end: float) -> None:
    """One interval after every interval of `out` that starts before it."""
    if out.ends and start <= out.ends[-1]:
        if end > out.ends[-1]:
            out.ends[-1] = end
    else:
        out.starts.append(start)
        out.ends.append(end)


def _union_into(lane: Intervals, starts: Iterable[float], ends: Iterable[float]) -> None:
    """Intervals in start order merged onto the end of `lane`."""
    lane_starts, lane_ends = lane.starts, lane.ends
    for start, end in zip(starts, ends, strict=True):
        if lane_ends and start <= lane_ends[-1]:
            if end > lane_ends[-1]:
                lane_ends[-1] = end
        else:
            lane_starts.append(start)
            lane_ends.append(end)


def host_calls(events: KinetoEvents) -> HostCalls:
    """The trace's host calls the steps count and the preparation measures."""
    return events.host.measured(blocking_calls(events.blocking))


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


@dataclass
class WindowSums:
    """One window's sums over its operations, added a piece at a time (in start order)."""

    window: DeviceWindow
    blocking: Intervals = field(default_factory=Intervals)  # the host's blocking calls
    busy: float = 0.0
    blocked_busy: float = 0.0  # the part of them the device spent busy
    computing: float = 0.0
    communication: float = 0.0
    kernels: float = 0.0
    first: float | None = None
    idle: IdleSweep = field(default_factory=IdleSweep)
    # collective kind -> [its time in the window, the part of it compute overlaps]
    by_kind: dict[str, list[float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # a late launch's gap spent in a blocking call is the wait's, not dispatch's
        self.idle.blocking = self.blocking

    def add(self, ops: DeviceOps, launch_at: Sequence[float], lanes: Lanes, whole: Whole) -> None:
        lo, hi = self.window.start, self.window.end
        self.busy = clipped_sum(lanes.every, lo, hi, self.busy)
        self.blocked_busy = overlap_sum(self.blocking, lanes.every, lo, hi, self.blocked_busy)
        self.computing = clipped_sum(lanes.compute, lo, hi, self.computing)
        self.communication = clipped_sum(lanes.comm, lo, hi, self.communication)
        self.kernels = clipped_sum(lanes.kernels, lo, hi, self.kernels)
        starts, ends = lanes.every.starts, lanes.every.ends
        if self.first is None and len(starts):
            i = bisect_left(starts, lo)
            if i > 0 and ends[i - 1] > lo:
                i -= 1
            if i < len(starts) and starts[i] < hi:
                self.first = max(lo, starts[i])
        if whole.linked:
            self.idle.add(ops.start, ops.end, lo, hi, launch_at)
        if whole.has_collectives:
            for kind, intervals in lanes.collectives.items():
                sums = self.by_kind.setdefault(kind, [0.0, 0.0])
                sums[0] = clipped_sum(intervals, lo, hi, sums[0])
                sums[1] = overlap_sum(intervals, lanes.compute, lo, hi, sums[1])

    def finish(
        self,
        host: HostCalls,
        per_step: Mapping[int, StepTotals],
        whole: Whole,
        out: Measured,
    ) -> None:
        """The window's step row, trace step and collectives."""
        w = self.window
        lo, hi = w.start, w.end
        first = hi if self.first is None else self.first
        busy, computing, compute_or_comm = self.busy, self.computing, self.kernels
        exposed = compute_or_comm - computing
        out.rows.append(
            StepRow(
                w.number,
                computing,
                exposed,
                self.communication - exposed,
                self.communication,
                max(0.0, (hi - first) - busy),
                first - lo,
                None,
                memory=busy - compute_or_comm,
            )
        )
        gaps = self.idle.gaps() if whole.linked else None
        calls = host.measures(lo, hi, first)
        step_ops = per_step.get(w.number)
        by_kind = None
        if whole.has_collectives:
            # as intervals.exposed_by_kind: kinds in order, those with time in the window
            by_kind = {k: s[0] - s[1] for k, s in sorted(self.by_kind.items()) if s[0] > 0}
        out.steps.append(
            TraceStep(
                number=w.number,
                duration_us=hi - lo,
                overlap_us={},
                kernel_count=step_ops.count if step_ops else 0,
                launch_gap_us=gaps.host if gaps else None,
                sync_calls=calls.sync_calls,
                malloc_calls=calls.malloc_calls,
                free_calls=calls.free_calls,
                dataloader_us=calls.dataloader_us,
                idle_dependency_us=gaps.dependency if gaps else None,
                idle_unlinked_us=gaps.unlinked if gaps else None,
                first_task_us=first - lo,
                preparing_loader_us=calls.preparing_loader_us,
                preparing_allocator_us=calls.preparing_allocator_us,
                preparing_sync_us=calls.preparing_sync_us,
                comm_exposed_by_kind_us=by_kind,
                blocking_us=calls.blocking_us,
                blocking_idle_us=gaps.blocked
                if gaps
                else max(0.0, calls.blocking_us - self.blocked_busy),
                device_idle_us=max(0.0, (hi - lo) - busy),
                blocking_calls=calls.blocking_calls,
            )
        )
        out.comm.append(step_ops.comm if step_ops else CommStep(step=w.number, has_wait=False))


def measure_windows(
    windows: list[DeviceWindow],
    ops: DeviceOps,
    launch_at: Sequence[float],
    lanes: Lanes,
    host: HostCalls,
    per_step: Mapping[int, StepTotals],
    whole: Whole,
    out: Measured,
) -> None:
    """Each window's step row, trace step and collectives, from the operations that overlap
    it (and any others: only what lies in the window counts)."""
    for w in windows:
        sums = WindowSums(w, host.blocking_time)
        sums.add(ops, launch_at, lanes, whole)
        sums.finish(host, per_step, whole, out)
