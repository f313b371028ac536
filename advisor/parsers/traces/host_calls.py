"""The host calls a step window counts and measures, whatever the format: synchronisations,
device memory allocations and frees, data loading, the calls the host blocked in, and the host time before the window's first
device task split between them."""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field, fields

from advisor.parsers.traces.intervals import (
    Intervals,
    clipped_sum,
    merge_unsorted,
    overlap_sum,
    union,
)


@dataclass(frozen=True)
class HostMeasures:
    """One window's host calls (times in microseconds)."""

    sync_calls: int
    malloc_calls: int
    free_calls: int
    dataloader_us: float
    # host time before the first device task, in disjoint parts
    preparing_loader_us: float
    preparing_allocator_us: float
    preparing_sync_us: float
    # host time inside blocking calls (merged), and the calls starting in the window
    blocking_us: float = 0.0
    blocking_calls: tuple[BlockingCall, ...] = ()


@dataclass(frozen=True)
class BlockingCall:
    """A host call during which the host waited for the device (times in microseconds)."""

    start: float
    end: float
    call: str
    memory: str  # the device copy's kind ("" for a synchronisation or a value read)
    bytes: int | None  # the copy's size when the trace records it
    range: str  # the innermost user annotation range around it ("" when none)


def _times() -> array[float]:
    return array("d")


@dataclass
class HostCallColumns:
    """The host calls a trace reader fills, whatever the format (times in microseconds, in the
    order the trace gives them): synchronisations, device memory allocations (start and end),
    frees (start), data loading (start and end)."""

    sync_start: array[float] = field(default_factory=_times)
    sync_end: array[float] = field(default_factory=_times)
    malloc_start: array[float] = field(default_factory=_times)
    malloc_end: array[float] = field(default_factory=_times)
    free: array[float] = field(default_factory=_times)
    loader_start: array[float] = field(default_factory=_times)
    loader_end: array[float] = field(default_factory=_times)

    def columns(self) -> dict[str, array[float]]:
        """Each column by its name (a key that survives pickling, for spill files)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def extend(self, other: HostCallColumns) -> None:
        """Append another part's calls (a later byte range of the same trace)."""
        for name, column in other.columns().items():
            getattr(self, name).extend(column)

    def measured(self, blocking: Sequence[BlockingCall] = ()) -> HostCalls:
        """The calls as the windows measure them."""
        return HostCalls.of(
            (self.sync_start, self.sync_end),
            (self.malloc_start, self.malloc_end),
            self.free,
            (self.loader_start, self.loader_end),
            blocking,
        )


@dataclass
class HostCalls:
    """The trace's host calls: their intervals merged, their starts sorted."""

    sync: Intervals
    malloc: Intervals
    loader: Intervals
    sync_starts: list[float]
    malloc_starts: list[float]
    free_starts: list[float]
    # the calls the host blocked in, in start order, and their merged intervals
    blocking: list[BlockingCall] = field(default_factory=list)
    blocking_time: Intervals = field(default_factory=Intervals)
    # data loading or allocator calls, merged once (every window's preparation reads them)
    loader_or_malloc: Intervals = field(init=False)

    def __post_init__(self) -> None:
        self.loader_or_malloc = union(self.loader, self.malloc)

    @classmethod
    def of(
        cls,
        sync: tuple[Sequence[float], Sequence[float]],
        malloc: tuple[Sequence[float], Sequence[float]],
        free: Sequence[float],
        loader: tuple[Sequence[float], Sequence[float]],
        blocking: Sequence[BlockingCall] = (),
    ) -> HostCalls:
        """From the calls' (starts, ends) and the frees' starts, in any order."""
        ordered = sorted(blocking, key=lambda c: c.start)
        return cls(
            merge_unsorted(*sync),
            merge_unsorted(*malloc),
            merge_unsorted(*loader),
            sorted(sync[0]),
            sorted(malloc[0]),
            sorted(free),
            ordered,
            merge_unsorted([c.start for c in ordered], [c.end for c in ordered]),
        )

    def measures(self, lo: float, hi: float, first: float) -> HostMeasures:
        """The calls of the window [lo, hi) whose first device task starts at `first`."""
        load, alloc, wait = preparation(
            lo, first, self.loader, self.malloc, self.sync, self.loader_or_malloc
        )
        return HostMeasures(
            sync_calls=_count(self.sync_starts, lo, hi),
            malloc_calls=_count(self.malloc_starts, lo, hi),
            free_calls=_count(self.free_starts, lo, hi),
            dataloader_us=clipped_sum(self.loader, lo, hi),
            preparing_loader_us=load,
            preparing_allocator_us=alloc,
            preparing_sync_us=wait,
            blocking_us=clipped_sum(self.blocking_time, lo, hi),
            blocking_calls=tuple(self._blocking_in(lo, hi)),
        )

    def _blocking_in(self, lo: float, hi: float) -> list[BlockingCall]:
        calls = self.blocking
        i = bisect_left(calls, lo, key=lambda c: c.start)
        j = bisect_left(calls, hi, key=lambda c: c.start)
        return calls[i:j]


def preparation(
    lo: float,
    first: float,
    loader: Intervals,
    allocator: Intervals,
    sync: Intervals,
    both: Intervals,
) -> tuple[float, float, float]:
    """Host time before the first device task in disjoint parts: data loading, then allocator
    calls outside it, then synchronisation outside both (`both`: their union)."""
    load = clipped_sum(loader, lo, first)
    alloc = clipped_sum(allocator, lo, first) - overlap_sum(allocator, loader, lo, first)
    wait = clipped_sum(sync, lo, first) - overlap_sum(sync, both, lo, first)
    return load, max(0.0, alloc), max(0.0, wait)


def _count(times: list[float], lo: float, hi: float) -> int:
    return bisect_left(times, hi) - bisect_left(times, lo)
