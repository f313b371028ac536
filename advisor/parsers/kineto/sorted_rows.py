"""Device operations in time order, written a sorted group at a time and read back once.

The start-time groups of the grouped reduction follow one another, each sorted, so the file
they are written to holds every operation in (start, end) order. The window groups then read it
front to back: each takes the operations starting before its end, and keeps for the groups
after it only those that reach into them — the operations a window measure looks at are never
read twice, and never sorted again.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.parsers.kineto.columns import DeviceOps, Signatures

COLUMNS = (("start", "d"), ("end", "d"), ("signature", "i"), ("launch_at", "d"))


@dataclass
class SortedRows:
    """Operation rows with their launch times."""

    start: array[float] = field(default_factory=lambda: array("d"))
    end: array[float] = field(default_factory=lambda: array("d"))
    signature: array[int] = field(default_factory=lambda: array("i"))
    launch_at: array[float] = field(default_factory=lambda: array("d"))

    def extend(self, other: SortedRows, begin: int, stop: int) -> None:
        for name, _ in COLUMNS:
            getattr(self, name).extend(getattr(other, name)[begin:stop])

    def keep(self, picked: list[int], begin: int, stop: int) -> SortedRows:
        """The rows `picked` (before `begin`), then the rows [begin, stop)."""
        out = SortedRows()
        for name, typecode in COLUMNS:
            column = getattr(self, name)
            kept = array(typecode, (column[i] for i in picked))
            kept.extend(column[begin:stop])
            setattr(out, name, kept)
        return out

    def from_time(self, t: float) -> SortedRows:
        """The rows a measure from `t` on may need: those starting at or after it, and those
        starting before it that end after it."""
        cut = bisect_left(self.start, t)
        if not cut:
            return self
        ends = self.end
        return self.keep([i for i in range(cut) if ends[i] > t], cut, len(self))

    def __len__(self) -> int:
        return len(self.start)


class SortedWriter:
    """Appends sorted groups; the groups must follow one another in time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.handle = path.open("wb")
        self.runs: list[int] = []

    def append(self, ops: DeviceOps, launch_at: array[float]) -> None:
        for column in (ops.start, ops.end, ops.signature, launch_at):
            column.tofile(self.handle)
        self.runs.append(len(ops))

    def close(self) -> None:
        self.handle.close()


class OverlapReader:
    """Reads the sorted file once, a window group at a time."""

    def __init__(self, writer: SortedWriter, signatures: Signatures) -> None:
        self.handle: Any = writer.path.open("rb")
        self.runs = list(reversed(writer.runs))
        self.signatures = signatures
        self.chunk = SortedRows()
        self.pos = 0
        self.held = SortedRows()  # taken from the file, kept for this or later groups

    def close(self) -> None:
        self.handle.close()

    def group(self, lo: float, hi: float, later: float) -> tuple[DeviceOps, array[float]]:
        """The operations that start in [lo, hi) or before lo and end after it, in order;
        what a later group starting at `later` or after may need is kept."""
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
        return self._ops(rows)

    def pieces(
        self, lo: float, hi: float, later: float, size: int
    ) -> Iterator[tuple[DeviceOps, array[float]]]:
        """What `group` returns, in pieces of about `size` rows, each cut where every row
        before it has ended before the next one starts: no union of any lane crosses a cut, so
        resumed sums (kineto_window.WindowSums) add the same terms as over the whole. Only
        where no later group starts before `hi` (`later` >= hi) and nothing held starts after
        it (`can_split`)."""
        self.held = self.held.from_time(lo)
        while self._take_some(hi, size):
            held = self.held
            cut = _last_gap(held.start, held.end)
            if cut:  # else one run of overlapping rows so far: take more
                self.held = held.keep([], cut, len(held))
                yield self._ops(held.keep([], 0, cut))
        held = self.held
        yield self._ops(held)
        self.held = held.from_time(later)

    def can_split(self, hi: float, later: float) -> bool:
        held = self.held.start
        return later >= hi and (not held or held[-1] < hi)

    def _ops(self, rows: SortedRows) -> tuple[DeviceOps, array[float]]:
        ops = DeviceOps()
        ops.signatures = self.signatures
        ops.start, ops.end, ops.signature = rows.start, rows.end, rows.signature
        return ops, rows.launch_at

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

    def _next_run(self, count: int) -> SortedRows:
        out = SortedRows()
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
