"""Reduce the compact arrays read from a trace into per-step measures."""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

DEVICE_LANE = "Ascend Hardware"
# Flow categories linking a host launch to its device kernel, best first: HostToDevice starts at
# the runtime launch (closest to the device), async_npu at the Python operator.
FLOW_PREFERENCE = ("HostToDevice", "async_npu")


@dataclass
class StepWindow:
    number: int
    start: float
    end: float


@dataclass
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


@dataclass
class TraceData:
    path: Path
    events: int
    steps: list[TraceStep]
    overlap_lanes: list[str]
    flow_category: str | None
    has_device_lane: bool
    lanes: list[str]


class RawTrace(Protocol):
    events: int
    process_names: dict[int | str, str]
    steps: list[StepWindow]
    starts: dict[int | str, array[float]]
    ends: dict[int | str, array[float]]
    overlap: dict[str, list[array[float]]]
    sync: array[float]
    malloc: array[float]
    free: array[float]
    loader_start: array[float]
    loader_end: array[float]
    flow_start: dict[str, dict[int | str, str | float]]
    flow_finish: dict[str, dict[int | str, str | float]]

    @property
    def ts(self) -> Callable[[str | float], float]: ...


def sorted_intervals(starts: Sequence[float], ends: Sequence[float]) -> list[tuple[float, float]]:
    return sorted(zip(starts, ends, strict=True))


def merged_intervals(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Union of sorted intervals (nested host events would otherwise count twice)."""
    merged: list[tuple[float, float]] = []
    for a, b in intervals:
        if merged and a <= merged[-1][1]:
            if b > merged[-1][1]:
                merged[-1] = (merged[-1][0], b)
        else:
            merged.append((a, b))
    return merged


def clipped_sum(intervals: list[tuple[float, float]], lo: float, hi: float) -> float:
    """Total length of the (non-overlapping) intervals inside [lo, hi)."""
    total = 0.0
    i = max(0, bisect_left(intervals, (lo, lo)) - 1)
    while i < len(intervals) and intervals[i][0] < hi:
        a, b = intervals[i]
        if b > lo:
            total += min(b, hi) - max(a, lo)
        i += 1
    return total


def count_in(times: list[float], lo: float, hi: float) -> int:
    return bisect_left(times, hi) - bisect_left(times, lo)


def _launch_map(raw: RawTrace) -> tuple[str | None, dict[float, float]]:
    """Kernel start -> host launch time, from the best available flow category."""
    for cat in FLOW_PREFERENCE:
        starts = raw.flow_start.get(cat, {})
        finishes = raw.flow_finish.get(cat, {})
        parse = raw.ts
        pairs = {parse(finishes[k]): parse(v) for k, v in starts.items() if k in finishes}
        if pairs:
            return cat, pairs
    return None, {}


def launch_gap(
    kernels: list[tuple[float, float]], lo: float, hi: float, launches: dict[float, float]
) -> float:
    """Device idle time between kernels of [lo, hi) where the next kernel was launched late.

    A gap counts when the host launched the next kernel only after the device had run out of
    work: the device was waiting for the host. Gaps before the step's first kernel belong to
    the step's preparation (data loading), not to dispatch.
    """
    i = bisect_left(kernels, (lo, lo))
    busy_until: float | None = None
    gap_total = 0.0
    while i < len(kernels) and kernels[i][0] < hi:
        start, end = kernels[i]
        if busy_until is not None and start > busy_until:
            launch = launches.get(start)
            if launch is not None and launch >= busy_until:
                gap_total += start - busy_until
        busy_until = end if busy_until is None else max(busy_until, end)
        i += 1
    return gap_total


def reduce_steps(path: Path, raw: RawTrace) -> TraceData:
    device_pids = [pid for pid, name in raw.process_names.items() if name == DEVICE_LANE]
    starts: list[float] = []
    ends: list[float] = []
    for pid in device_pids:
        starts.extend(raw.starts.get(pid, ()))
        ends.extend(raw.ends.get(pid, ()))
    kernels = sorted_intervals(starts, ends)
    overlap = {name: sorted_intervals(a, b) for name, (a, b) in raw.overlap.items()}
    flow_category, launches = _launch_map(raw)
    sync = sorted(raw.sync)
    malloc = sorted(raw.malloc)
    free = sorted(raw.free)
    loader = merged_intervals(sorted_intervals(raw.loader_start, raw.loader_end))

    windows: dict[int, StepWindow] = {}
    for window in raw.steps:
        known = windows.get(window.number)
        # Nested or repeated ProfilerStep markers: keep the widest window.
        if known is None or window.end - window.start > known.end - known.start:
            windows[window.number] = window
    steps: list[TraceStep] = []
    for number in sorted(windows):
        w = windows[number]
        steps.append(
            TraceStep(
                number=number,
                duration_us=w.end - w.start,
                overlap_us={name: clipped_sum(iv, w.start, w.end) for name, iv in overlap.items()},
                kernel_count=bisect_left(kernels, (w.end, w.end))
                - bisect_left(kernels, (w.start, w.start)),
                launch_gap_us=launch_gap(kernels, w.start, w.end, launches)
                if flow_category and kernels
                else None,
                sync_calls=count_in(sync, w.start, w.end),
                malloc_calls=count_in(malloc, w.start, w.end),
                free_calls=count_in(free, w.start, w.end),
                dataloader_us=clipped_sum(loader, w.start, w.end),
            )
        )
    return TraceData(
        path=path,
        events=raw.events,
        steps=steps,
        overlap_lanes=sorted(overlap),
        flow_category=flow_category,
        has_device_lane=bool(kernels),
        lanes=sorted(set(raw.process_names.values())),
    )
