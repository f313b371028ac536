"""Device rows in time order, out of core: the grouped reduction both trace formats share.

A trace too large to hold its device rows at once is reduced in two passes over groups of about
GROUP_ROWS rows, whatever the format:

1. start-time groups: the trace's rows are cut by start time (`start_cuts`, from a sample of
   the starts in which each value stands for SAMPLE_EVERY rows); the format reads one group's
   rows with their launch times (`Rows`), sorts them and appends them to an `OrderedWriter`.
   The groups follow one another, so the file holds every row in start order;
2. window groups: the step windows, in start order, are cut where a window starts past the next
   cut (`window_groups`) and measured a group at a time from the rows the `OverlapReader` hands
   out: those that start in the group's time range, and the earlier ones still running. Rows a
   later group may need are kept; none is read twice, none sorted again. A large file's window
   groups are measured by worker processes, a run of consecutive groups each.

Exact as the whole-trace reduction when the format sorts each group as it sorts the whole
trace (stably: rows of equal keys keep their file order) and every measure of a window looks
only at rows that overlap it. A window holding more rows than a group (a long step, a trace
without steps) can be measured a piece at a time (`OverlapReader.pieces`), cut where no row
crosses, by measures whose sums resume from piece to piece.

A row is a start, an end, a tag (what the row is, in the format's own numbering: a Kineto
signature, a lane) and the host time that launched it (NaN: none linked).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from advisor.parsers.traces import budget, workers

COLUMNS = (("start", "d"), ("end", "d"), ("tag", "i"), ("launch_at", "d"))
INF = float("inf")


@dataclass
class Rows:
    """Device rows with their launch times, as four flat arrays."""

    start: array[float] = field(default_factory=lambda: array("d"))
    end: array[float] = field(default_factory=lambda: array("d"))
    tag: array[int] = field(default_factory=lambda: array("i"))
    launch_at: array[float] = field(default_factory=lambda: array("d"))

    def extend(self, other: Rows, begin: int, stop: int) -> None:
        for name, _ in COLUMNS:
            getattr(self, name).extend(getattr(other, name)[begin:stop])

    def keep(self, picked: list[int], begin: int, stop: int) -> Rows:
        """The rows `picked` (before `begin`), then the rows [begin, stop)."""
        out = Rows()
        for name, typecode in COLUMNS:
            column = getattr(self, name)
            kept = array(typecode, (column[i] for i in picked))
            kept.extend(column[begin:stop])
            setattr(out, name, kept)
        return out

    def from_time(self, t: float) -> Rows:
        """The rows a measure from `t` on may need: those starting at or after it, and those
        starting before it that end after it."""
        cut = bisect_left(self.start, t)
        if not cut:
            return self
        ends = self.end
        return self.keep([i for i in range(cut) if ends[i] > t], cut, len(self))

    def __len__(self) -> int:
        return len(self.start)


class OrderedWriter:
    """Appends sorted groups of rows to a file; the groups must follow one another in time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.handle = path.open("wb")
        self.runs: list[int] = []

    def append(self, rows: Rows) -> None:
        for name, _ in COLUMNS:
            getattr(rows, name).tofile(self.handle)
        self.runs.append(len(rows))

    def close(self) -> None:
        self.handle.close()


class OverlapReader:
    """Reads the ordered file once, a window group at a time."""

    def __init__(self, writer: OrderedWriter) -> None:
        self.handle: Any = writer.path.open("rb")
        self.runs = list(reversed(writer.runs))
        self.chunk = Rows()
        self.pos = 0
        self.held = Rows()  # taken from the file, kept for this or later groups

    def close(self) -> None:
        self.handle.close()

    def group(self, lo: float, hi: float, later: float) -> Rows:
        """The rows that start in [lo, hi) or before lo and end after it, in order; what a
        later group starting at `later` or after may need is kept."""
        self._take_until(hi)
        held = self.held
        begin = bisect_left(held.start, lo)
        stop = bisect_left(held.start, hi)
        ends = held.end
        reaching = [i for i in range(begin) if ends[i] > lo]
        if len(reaching) == begin and stop == len(held):
            rows = held
        else:
            rows = held.keep(reaching, begin, stop)
        self.held = held.from_time(later)
        return rows

    def pieces(self, lo: float, hi: float, later: float, size: int) -> Iterator[Rows]:
        """What `group` returns, in pieces of about `size` rows, each cut where every row
        before it has ended before the next one starts: no union of rows crosses a cut, so
        resumed sums add the same terms as over the whole. Only where no later group starts
        before `hi` (`later` >= hi) and nothing held starts after it (`can_split`)."""
        self.held = self.held.from_time(lo)
        while self._take_some(hi, size):
            held = self.held
            cut = _last_gap(held.start, held.end)
            if cut:  # else one run of overlapping rows so far: take more
                self.held = held.keep([], cut, len(held))
                yield held.keep([], 0, cut)
        held = self.held
        yield held
        self.held = held.from_time(later)

    def skip_to(self, t: float) -> None:
        """Read the file up to `t`, keeping only the rows a measure from `t` on may need (a
        reader starting in the middle of the file: as if the groups before had been read)."""
        while self._take_some(t, budget.GROUP_ROWS):
            self.held = self.held.from_time(t)
        self.held = self.held.from_time(t)

    def can_split(self, hi: float, later: float) -> bool:
        held = self.held.start
        return later >= hi and (not held or held[-1] < hi)

    def _take_some(self, hi: float, count: int) -> bool:
        """Move up to `count` rows starting before `hi` from the file into `held`; whether
        any such row was moved."""
        taken = 0
        while taken < count:
            chunk = self.chunk
            stop = min(bisect_left(chunk.start, hi, self.pos), self.pos + count - taken)
            self.held.extend(chunk, self.pos, stop)
            taken += stop - self.pos
            self.pos = stop
            if stop < len(chunk):
                if chunk.start[stop] >= hi:
                    break
                continue
            if not self.runs:
                break
            self.chunk, self.pos = self._next_run(self.runs.pop()), 0
        return taken > 0

    def _take_until(self, hi: float) -> None:
        """Move the rows starting before `hi` from the file into `held`."""
        while True:
            chunk = self.chunk
            cut = bisect_left(chunk.start, hi, self.pos)
            self.held.extend(chunk, self.pos, cut)
            self.pos = cut
            if cut < len(chunk) or not self.runs:
                return
            self.chunk, self.pos = self._next_run(self.runs.pop()), 0

    def _next_run(self, count: int) -> Rows:
        out = Rows()
        for name, _ in COLUMNS:
            getattr(out, name).fromfile(self.handle, count)
        return out


def _last_gap(starts: array[float], ends: array[float]) -> int:
    """The last row that starts after every row before it has ended (0: none)."""
    last, top = 0, float("-inf")
    for i, (start, end) in enumerate(zip(starts, ends, strict=True)):
        if i and start > top:
            last = i
        if end > top:
            top = end
    return last


def sample_of(starts: Sequence[float]) -> list[float]:
    """Every SAMPLE_EVERY-th of some rows' starts (each stands for SAMPLE_EVERY rows)."""
    every = budget.SAMPLE_EVERY
    return list(starts[every // 2 :: every])


def start_cuts(sample: Iterable[float]) -> list[float]:
    """Start times cutting the rows into groups of about GROUP_ROWS (`sample`: the starts of
    every SAMPLE_EVERY-th row, in any order)."""
    ordered = sorted(sample)
    every = max(1, budget.GROUP_ROWS // budget.SAMPLE_EVERY)
    cuts: list[float] = []
    for t in ordered[every::every]:
        if not cuts or t > cuts[-1]:
            cuts.append(t)
    return cuts


def time_ranges(cuts: list[float]) -> Iterator[tuple[float, float]]:
    """The start-time groups [lo, hi) the cuts make, from -inf to inf."""
    yield from pairwise([-INF, *cuts, INF])


class Window(Protocol):
    @property
    def start(self) -> float: ...

    @property
    def end(self) -> float: ...


W = TypeVar("W", bound=Window)


def window_groups(windows: Sequence[W], cuts: list[float]) -> list[list[W]]:
    """Consecutive windows (in start order), a new group where a window starts past the next
    cut (a start-time group holds about GROUP_ROWS rows)."""
    groups: list[list[W]] = []
    current = -1
    for w in windows:
        at = bisect_left(cuts, w.start)
        if not groups or at != current:
            groups.append([])
            current = at
        groups[-1].append(w)
    return groups


R = TypeVar("R")


def measure_in_groups(
    groups: list[list[W]],
    writer: OrderedWriter,
    measure: Callable[[list[W], Rows], R],
    resumable: Callable[[W], Callable[[Iterable[Rows]], R]] | None = None,
) -> list[R]:
    """Each window group measured from the rows of the ordered file that overlap it
    (`measure(group, rows)`), the results in group order. With `resumable`, a group of one
    window is measured a piece at a time where the file allows it (`resumable(window)(pieces)`).

    A large file's groups are measured by worker processes, each a run of consecutive groups
    from its own reader of the file (forked: they inherit the format's state); each group is
    handed the same rows as in one pass, so the results are the same."""
    later = INF
    starting = []
    for group in reversed(groups):
        later = min(later, *(w.start for w in group))
        starting.append(later)
    starting.reverse()
    task = _Task(groups, starting, writer, measure, resumable)
    runs = _runs(len(groups), writer.path)
    parts = None
    if len(runs) > 1:
        try:
            parts = workers.in_forked_workers("measuring windows", task.run, runs)
        except (OSError, BrokenProcessPool):
            parts = None
    if parts is None:
        return task.run((0, len(groups)))
    return [result for part in parts for result in part]


def _runs(count: int, path: Path) -> list[tuple[int, int]]:
    """Consecutive runs of the groups, one per worker process ([one run]: measured here)."""
    try:
        size = path.stat().st_size
    except OSError:
        size = 0
    parts = min(count, workers.worker_count(size))
    bounds = [count * k // parts for k in range(parts + 1)] if parts > 1 else [0, count]
    return list(pairwise(bounds))


@dataclass
class _Task(Generic[W, R]):
    """The work of measure_in_groups, a run of groups at a time."""

    groups: list[list[W]]
    starting: list[float]  # the earliest window start of each group and the groups after it
    writer: OrderedWriter
    measure: Callable[[list[W], Rows], R]
    resumable: Callable[[W], Callable[[Iterable[Rows]], R]] | None

    def run(self, run: tuple[int, int]) -> list[R]:
        """The groups [first, stop), from a reader of their own."""
        return _measure_run(self, run)


def _measure_run(task: _Task[W, R], run: tuple[int, int]) -> list[R]:
    groups, starting = task.groups, task.starting
    first, stop = run
    reader = OverlapReader(task.writer)
    try:
        if first:
            reader.skip_to(starting[first])
        out: list[R] = []
        for k in range(first, stop):
            group = groups[k]
            after = starting[k + 1] if k + 1 < len(groups) else INF
            hi = max(w.end for w in group)
            if task.resumable is not None and len(group) == 1 and reader.can_split(hi, after):
                # one window (a long step, or a trace without steps): a piece at a time
                pieces = reader.pieces(starting[k], hi, after, budget.GROUP_ROWS)
                out.append(task.resumable(group[0])(pieces))
                continue
            out.append(task.measure(group, reader.group(starting[k], hi, after)))
        return out
    finally:
        reader.close()
