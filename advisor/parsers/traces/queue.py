"""How long each device operation waited between its host launch and its start on the device,
and what the device was running meanwhile: the operator's queue time, apart from its execution.

An operation's queue time is its device start minus its launch (the launch flow's host end;
the database's CANN_API call sharing the task's connection id). While it waited, the device ran
something: a collective (the union of that kind's tasks) or a kernel. What it waited behind is
the collective kind whose time covers the most of the wait when it covers more than all kernels
together (the device only communicated: the task waited behind the collective, on its own
stream or through a stream dependency), else the kernel covering the most (it waited behind
compute; the trace as read keeps no stream, so the kernel may run on another). This is a view of time the step model already counts (an operation queued
behind the all-reduce is the exposed communication, or the compute, the step already holds),
not a cost of its own.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from operator import sub

from advisor.parsers.traces.intervals import (
    Intervals,
    clipped_sum,
    merge_unsorted,
    merged_intervals,
    overlap_sum,
)
from advisor.parsers.traces.phases import subtract

NAN = float("nan")


@dataclass
class DeviceQueue:
    """The device operations sorted by start, their launch times (NaN: not linked), the
    collectives' merged time by kind and the step windows (number, start, end)."""

    starts: Sequence[float]
    ends: Sequence[float]
    launch_at: Sequence[float]
    collectives: dict[str, Intervals] = field(default_factory=dict)
    windows: list[tuple[int, float, float]] = field(default_factory=list)

    def __eq__(self, other: object) -> bool:
        # by value, NaN launch times (not linked) equal to each other: two readings of a trace
        if not isinstance(other, DeviceQueue):
            return NotImplemented
        return (
            _bits(self.starts) == _bits(other.starts)
            and _bits(self.ends) == _bits(other.ends)
            and _bits(self.launch_at) == _bits(other.launch_at)
            and self.collectives == other.collectives
            and [tuple(w) for w in self.windows] == [tuple(w) for w in other.windows]
        )

    __hash__ = None  # type: ignore[assignment]


def _bits(values: Sequence[float]) -> bytes:
    return array("d", values).tobytes()


@dataclass(frozen=True, slots=True)
class QueuedOp:
    """One linked device operation starting in a step window (times in us)."""

    step: int
    start: float
    queue_us: float
    exec_us: float
    # the collective kind the task is part of (no kernel row, and it starts inside that kind's
    # time); None: not
    kind: str | None
    # what covered most of the wait: a collective kind, or None with the start of the longest
    # kernel running during the wait (NaN: the device ran nothing while the operation waited)
    behind_kind: str | None
    behind_start: float

    @property
    def launch(self) -> float:
        return self.start - self.queue_us


def collective_at(collectives: dict[str, Intervals], at: float) -> str | None:
    """The collective kind running at `at` (None: none)."""
    for kind, merged in collectives.items():
        i = bisect_left(merged.ends, at)
        if i < len(merged) and merged.starts[i] <= at < merged.ends[i]:
            return kind
    return None


# whether the device task starting at a time is a kernel (the source has a kernel row for it):
# memory copies, event waits and a collective's own tasks are not what an operator waits behind
IsKernel = Callable[[float], bool]


class _Kernels:
    """The kernels (without `is_kernel`, the device operations that are not collectives'
    tasks) that run in [lo, hi): the candidates an operation waited behind, with the latest
    end so far of each (how far back a scan for one must look) and their durations."""

    def __init__(
        self, queue: DeviceQueue, is_kernel: IsKernel | None, lo: float, hi: float
    ) -> None:
        self.starts: list[float] = []
        self.ends: list[float] = []
        self.named = is_kernel
        starts, ends = queue.starts, queue.ends
        reach = max(map(sub, ends, starts), default=0.0)  # no operation starts earlier and runs on
        for j in range(bisect_left(starts, lo - reach), bisect_left(starts, hi)):
            a = starts[j]
            if is_kernel(a) if is_kernel is not None else not collective_at(queue.collectives, a):
                self.starts.append(a)
                self.ends.append(ends[j])
        # the latest end of any kernel so far: a kernel starting before a wait can cover part
        # of it only while this reaches past the wait's start (a walk back stops there)
        self.reach = list(accumulate(self.ends, max))
        self.durations = list(map(sub, self.ends, self.starts))
        # their union: the time the device computed (or copied)
        self.busy = merged_intervals(self.starts, self.ends)

    def is_kernel(self, at: float) -> bool:
        return self.named is not None and self.named(at)

    def longest_during(self, lo: float, hi: float) -> tuple[float, float]:
        """The kernel covering most of [lo, hi): (its start, the time it covers); NaN, 0 when
        none runs. The kernels wholly inside the wait cover their duration: the longest of
        them is found at C speed (a long wait holds thousands); those crossing either end are
        measured one by one. The earliest kernel wins a tie, as in launch order."""
        starts, ends, reach = self.starts, self.ends, self.reach
        inside = bisect_left(starts, lo)
        first = inside
        while first > 0 and reach[first - 1] > lo:
            first -= 1
        last = bisect_left(starts, hi)
        whole = last  # kernels in [inside, whole) all end by hi
        while whole > inside and reach[whole - 1] > hi:
            whole -= 1
        best, covered = float("nan"), 0.0
        for j in range(first, inside):
            part = _clipped(starts[j], ends[j], lo, hi)
            if part > covered:
                best, covered = starts[j], part
        if whole > inside:
            longest = max(self.durations[inside:whole])
            if longest > covered:
                j = self.durations.index(longest, inside, whole)
                best, covered = starts[j], longest
        for j in range(whole, last):
            part = _clipped(starts[j], ends[j], lo, hi)
            if part > covered:
                best, covered = starts[j], part
        return best, covered


def _clipped(start: float, end: float, lo: float, hi: float) -> float:
    """The part of [start, end) inside [lo, hi), as min(end, hi) - max(start, lo) (the
    builtins cost more than the comparisons for two numbers)."""
    return (hi if hi < end else end) - (lo if lo > start else start)


@dataclass
class QueueReading:
    """The linked operations of the steps read, the time some of them waited to start
    (overlapping waits once) and the part of it the device only communicated (a collective
    ran, no kernel did: the exposed communication the step model counts)."""

    ops: list[QueuedOp]
    waited_us: float = 0.0
    comm_only_us: float = 0.0


def read_queue(
    queue: DeviceQueue, steps: Collection[int], is_kernel: IsKernel | None = None
) -> QueueReading:
    """The linked operations starting in the given steps' windows, with their queue time and
    what they waited behind."""
    linked: list[tuple[int, int, float]] = []
    for number, lo, hi in queue.windows:
        if number not in steps:
            continue
        for i in range(bisect_left(queue.starts, lo), bisect_left(queue.starts, hi)):
            launch = queue.launch_at[i]
            if launch == launch and launch <= queue.starts[i]:  # linked, clocks agreeing
                linked.append((number, i, launch))
    if not linked:
        return QueueReading([])
    lo = min(launch for _, _, launch in linked)
    hi = max(queue.starts[i] for _, i, _ in linked)
    kernels = _Kernels(queue, is_kernel, lo, hi)
    ops = [_queued(queue, kernels, number, i, launch) for number, i, launch in linked]
    return QueueReading(ops, *_waits_behind_comm(queue, ops, kernels))


def _queued(queue: DeviceQueue, kernels: _Kernels, number: int, i: int, launch: float) -> QueuedOp:
    start = queue.starts[i]
    by_kind = {
        kind: clipped_sum(merged, launch, start) for kind, merged in queue.collectives.items()
    }
    kind, comm = max(by_kind.items(), key=lambda kv: kv[1], default=(None, 0.0))
    kernel, _ = kernels.longest_during(launch, start) if start > launch else (NAN, 0.0)
    busy = clipped_sum(kernels.busy, launch, start)
    behind_kind = kind if comm > 0.0 and comm > busy else None
    return QueuedOp(
        step=number,
        start=start,
        queue_us=start - launch,
        exec_us=queue.ends[i] - start,
        kind=None if kernels.is_kernel(start) else collective_at(queue.collectives, start),
        behind_kind=behind_kind,
        behind_start=NAN if behind_kind is not None else kernel,
    )


def _waits_behind_comm(
    queue: DeviceQueue, ops: list[QueuedOp], kernels: _Kernels
) -> tuple[float, float]:
    waits = merge_unsorted([op.launch for op in ops], [op.start for op in ops])
    total = sum(b - a for a, b in zip(waits.starts, waits.ends, strict=True))
    kinds = list(queue.collectives.values())
    if not len(waits) or not kinds:
        return total, 0.0
    comm = merge_unsorted(
        [a for iv in kinds for a in iv.starts], [b for iv in kinds for b in iv.ends]
    )
    exposed = subtract(comm, kernels.busy)
    return total, overlap_sum(waits, exposed, waits.starts[0], waits.ends[-1])
