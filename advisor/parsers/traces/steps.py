"""Reduce the compact arrays read from a trace into per-step measures."""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from statistics import median
from typing import Protocol

from advisor.parsers.traces.blocking import BlockingEvents, blocking_calls
from advisor.parsers.traces.columns import Permutation, nearly_sorted_order
from advisor.parsers.traces.flows import FlowTable
from advisor.parsers.traces.fsdp_passes import AllGatherPasses
from advisor.parsers.traces.host_calls import BlockingCall, HostCallColumns, HostCalls
from advisor.parsers.traces.idle_gaps import Gaps, idle_gaps
from advisor.parsers.traces.intervals import (
    Intervals,
    clipped_sum,
    exposed_by_kind,
    merge_unsorted,
    merged_intervals,
    overlap_sum,
    sorted_intervals,
)
from advisor.parsers.traces.phases import (
    HostRanges,
    PhaseTable,
)
from advisor.parsers.traces.queue import DeviceQueue


@dataclass(frozen=True)
class LaneNames:
    """What a format calls the parts of its timeline the step model reads (its schema's
    meaning: the engine compares names, it knows none)."""

    device: str  # the process whose rows are the device's kernels
    flows: tuple[str, ...]  # flow categories linking a host launch to its kernel, best first
    # the flow category linking the framework operator that enqueued a task to the task (its
    # start is the operator's), when the format has one: it places the task in a step phase
    operator_flow: str | None = None


@dataclass
class StepWindow:
    number: int
    start: float
    end: float


@dataclass(slots=True)
class TraceStep:
    """Per-step measures reduced from the trace (times in microseconds)."""

    number: int
    duration_us: float
    overlap_us: dict[str, float]
    kernel_count: int
    launch_gap_us: float | None
    sync_calls: int
    malloc_calls: int
    free_calls: int
    dataloader_us: float
    # attribution of the step's idle and preparation time (None: the trace cannot tell)
    idle_dependency_us: float | None = None  # the next kernel was launched, the device waited
    idle_unlinked_us: float | None = None  # gaps before kernels without a launch flow
    first_task_us: float | None = None  # step start -> the first device task
    preparing_loader_us: float = 0.0  # data loading before the first device task
    preparing_allocator_us: float = 0.0  # device memory allocation calls, outside data loading
    preparing_sync_us: float = 0.0  # synchronisation calls, outside both
    comm_exposed_by_kind_us: dict[str, float] | None = None  # collectives outside Computing
    # host time inside calls that wait for the device, and those calls (None: not read)
    blocking_us: float | None = None
    blocking_calls: tuple[BlockingCall, ...] = ()
    # the device idle while the host was blocked: with launches linked, the part of late
    # launches' gaps spent inside blocking calls (left out of launch_gap_us); else the blocked
    # time the device had nothing running
    blocking_idle_us: float | None = None
    device_idle_us: float | None = None  # the window's time without any device operation
    # the median time between the host's consecutive kernel launches in the window: what one
    # launch costs the host while it dispatches (None: the trace links no launches)
    launch_interval_us: float | None = None


class _Awaited:
    """A field holding a phase table, or the collector of one another process is measuring:
    reading it waits for the table (once) and keeps it."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = f"_{name}"

    def __get__(self, trace: object, owner: type | None = None) -> PhaseTable | None:
        if trace is None:
            return None  # the field's default
        found = trace.__dict__.get(self.slot)
        if callable(found):
            found = trace.__dict__[self.slot] = found()
        return found

    def __set__(self, trace: object, value: PhaseTable | Callable[[], PhaseTable] | None) -> None:
        trace.__dict__[self.slot] = value


@dataclass
class TraceData:
    path: Path
    events: int
    steps: list[TraceStep]
    overlap_lanes: list[str]
    flow_category: str | None
    has_device_lane: bool
    lanes: list[str]
    # each collective's (name, element count, data type) where the trace's events carry them
    # (trace_view.json's hcom tasks); empty: not recorded
    collective_sizes: list[tuple[str, int, str]] = field(default_factory=list)
    # each step's exposed FSDP all-gather time by the pass that issued it (None: not measured
    # on this reading path: PyTorch traces, traces read in groups)
    allgather_passes: AllGatherPasses | None = None
    # the device operations with their launch times, for each operator's queue time (None:
    # the trace links no launches, or it was read in groups)
    queue: DeviceQueue | None = None
    # each step's phases (forward, backward, optimizer...), or why the trace cannot give them
    # (None: not read); while another process measures them, its collector, waited for on read
    phases: _Awaited = _Awaited()

    def __getstate__(self) -> dict[str, object]:
        self.phases  # noqa: B018 -- sent to another process: the phases are waited for first
        return self.__dict__


class RawTrace(Protocol):
    events: int
    process_names: dict[int | str, str]
    steps: list[StepWindow]
    starts: dict[int | str, array[float]]
    ends: dict[int | str, array[float]]
    overlap: dict[str, list[array[float]]]
    host: HostCallColumns
    flows: dict[str, FlowTable]
    collectives: dict[str, list[array[float]]]
    # device task start -> host launch time, when the source pairs them itself (a database
    # export joins them by connection id); empty: pair the flow events
    launch_pairs: dict[float, float]
    # device task start -> start of the framework operator that enqueued it, when the source
    # pairs them itself (a database export, by connection id); empty: pair the flow events
    operator_pairs: dict[float, float]
    # the host ranges naming a phase of the step, and the garbage collections
    host_ranges: HostRanges

    @property
    def ts(self) -> Callable[[str | float], float]: ...

    @property
    def blocking(self) -> BlockingEvents | None:
        """The calls the host waited in for the device (None: the source records none)."""
        ...


def first_start(starts: Sequence[float], lo: float, hi: float) -> float | None:
    i = bisect_left(starts, lo)
    return starts[i] if i < len(starts) and starts[i] < hi else None


def sorted_by_start(starts: array[float], ends: array[float]) -> tuple[array[float], array[float]]:
    """The two arrays sorted by start, ties in file order; returned as they are when already in
    order (the device lane of a real trace is). Sorting row numbers with a key would hold two
    Python objects a row (~70 bytes) at once; the row order here is 4 bytes a row."""
    order = nearly_sorted_order(starts)
    if order is None:
        return starts, ends
    rows = Permutation(order)
    return rows.apply(starts), rows.apply(ends)


def device_pids(raw: RawTrace, device: str) -> list[int | str]:
    return [pid for pid, name in raw.process_names.items() if name == device]


@dataclass
class StepContext:
    """What every window's measures need besides the kernels: the step windows (the widest
    of repeated markers) and the host and overlap-lane intervals, all small."""

    windows: dict[int, StepWindow]
    overlap: dict[str, Intervals]
    host: HostCalls
    collectives: dict[str, Intervals]
    computing: Intervals
    # collectives and a Computing lane both present in the trace: exposure is measured
    exposure: bool
    # the format records the calls the host waits in (their absence is then a zero)
    reads_blocking: bool = False


def step_context(raw: RawTrace) -> StepContext:
    windows: dict[int, StepWindow] = {}
    for window in raw.steps:
        known = windows.get(window.number)
        # Nested or repeated ProfilerStep markers: keep the widest window.
        if known is None or window.end - window.start > known.end - known.start:
            windows[window.number] = window
    overlap = {name: sorted_intervals(a, b) for name, (a, b) in raw.overlap.items()}
    lane = overlap.get("Computing")
    collectives = {kind: merge_unsorted(a, b) for kind, (a, b) in raw.collectives.items()}
    computing = merged_intervals(lane.starts, lane.ends) if lane else Intervals()
    return StepContext(
        windows=windows,
        overlap=overlap,
        host=raw.host.measured(blocking_calls(raw.blocking) if raw.blocking is not None else ()),
        collectives=collectives,
        computing=computing,
        exposure=bool(collectives and computing),
        reads_blocking=raw.blocking is not None,
    )


def window_step(
    ctx: StepContext,
    number: int,
    kernel_starts: Sequence[float],
    kernel_ends: Sequence[float],
    launch_at: Sequence[float] | None,
) -> TraceStep:
    """One window's measures from the kernels (sorted by start; at least those starting in
    the window) and their launch times (None: the trace links no launches)."""
    w = ctx.windows[number]
    blocking = ctx.host.blocking_time
    gaps = (
        idle_gaps(kernel_starts, kernel_ends, w.start, w.end, launch_at, blocking)
        if launch_at is not None
        else None
    )
    first = first_start(kernel_starts, w.start, w.end)
    host = ctx.host.measures(w.start, w.end, first or w.end)
    idle = _blocked_idle(ctx, kernel_starts, kernel_ends, w, gaps, host.blocking_us)
    return TraceStep(
        number=number,
        duration_us=w.end - w.start,
        overlap_us={name: clipped_sum(iv, w.start, w.end) for name, iv in ctx.overlap.items()},
        kernel_count=bisect_left(kernel_starts, w.end) - bisect_left(kernel_starts, w.start),
        launch_gap_us=gaps.host if gaps else None,
        sync_calls=host.sync_calls,
        malloc_calls=host.malloc_calls,
        free_calls=host.free_calls,
        dataloader_us=host.dataloader_us,
        idle_dependency_us=gaps.dependency if gaps else None,
        idle_unlinked_us=gaps.unlinked if gaps else None,
        first_task_us=None if first is None else first - w.start,
        preparing_loader_us=host.preparing_loader_us,
        preparing_allocator_us=host.preparing_allocator_us,
        preparing_sync_us=host.preparing_sync_us,
        comm_exposed_by_kind_us=exposed_by_kind(ctx.collectives, ctx.computing, w.start, w.end)
        if ctx.exposure
        else None,
        blocking_us=host.blocking_us if ctx.reads_blocking else None,
        blocking_calls=host.blocking_calls,
        blocking_idle_us=idle[0] if idle else None,
        device_idle_us=idle[1] if idle else None,
        launch_interval_us=_launch_interval(kernel_starts, launch_at, w)
        if launch_at is not None
        else None,
    )


def _launch_interval(
    starts: Sequence[float], launch_at: Sequence[float], w: StepWindow
) -> float | None:
    """The median gap between consecutive host launches of the kernels starting in the window
    (None: fewer than two linked launches). One launch may start several device tasks: each
    launch time counts once."""
    lo, hi = bisect_left(starts, w.start), bisect_left(starts, w.end)
    launches = sorted({at for at in launch_at[lo:hi] if at == at})
    if len(launches) < 2:
        return None
    return median(b - a for a, b in pairwise(launches))


def _blocked_idle(
    ctx: StepContext,
    starts: Sequence[float],
    ends: Sequence[float],
    w: StepWindow,
    gaps: Gaps | None,
    blocking_us: float,
) -> tuple[float, float] | None:
    """The device's idle time while the host was blocked, and its idle time in the window
    (None: the format records no blocking calls). With launches linked, the blocked part of
    late launches' gaps; without, no gap is the host's: the blocked time the device idled."""
    if not ctx.reads_blocking:
        return None
    busy = _busy(starts, ends, w)
    idle = (w.end - w.start) - clipped_sum(busy, w.start, w.end)
    if gaps is not None:
        return gaps.blocked, idle
    held = blocking_us - overlap_sum(ctx.host.blocking_time, busy, w.start, w.end)
    return max(0.0, held), idle


def _busy(starts: Sequence[float], ends: Sequence[float], w: StepWindow) -> Intervals:
    """The device's busy time around the window: its kernels merged (sorted by start)."""
    i = max(0, bisect_left(starts, w.start) - 1)
    # a kernel started before the window may run into it: step back over those
    while i > 0 and ends[i - 1] > w.start:
        i -= 1
    j = bisect_left(starts, w.end)
    return merged_intervals(starts[i:j], ends[i:j])


def trace_data(
    path: Path,
    raw: RawTrace,
    ctx: StepContext,
    steps: list[TraceStep],
    flow_category: str | None,
    has_device_lane: bool,
) -> TraceData:
    return TraceData(
        path=path,
        events=raw.events,
        steps=steps,
        overlap_lanes=sorted(ctx.overlap),
        flow_category=flow_category,
        has_device_lane=has_device_lane,
        lanes=sorted(set(raw.process_names.values())),
    )
