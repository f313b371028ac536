"""What kernel_details.csv's start column gives: each kernel's type by its start (as
trace_view.json's reader parses the same time) and each step's first start and last end.

The row loop only keeps a row's start cell, type, step and duration; a chunk of rows at a time
is parsed by C loops (map, zip, dict.update, min, max). A chunk whose cells do not share one
shape, or hold a start that is not a number, is read row by row exactly as before.
"""

from __future__ import annotations

from itertools import groupby, repeat
from operator import add, itemgetter

from advisor.parsers.profile_data import KERNEL_TYPES_MAX
from advisor.parsers.trace_view.timestamps import KEPT_INTEGER_DIGITS

# rows kept before they are parsed together
CHUNK_ROWS = 1 << 15


class KernelStarts:
    """The start column's readings: `types_at` (None: no start column, or more kernels than
    KERNEL_TYPES_MAX) and `spans` (None: not asked for) by the raw Step Id cell."""

    def __init__(self, has_start: bool, spans: bool) -> None:
        self.types_at: dict[float, str] | None = {} if has_start else None
        self.spans: dict[str, list[float]] | None = {} if spans else None
        self.cells: list[str] = []
        self.types: list[str] = []
        self.steps: list[str] = []
        self.durations: list[float] = []

    def add(self, cell: str, op_type: str, step: str, duration: float) -> None:
        self.cells.append(cell)
        self.types.append(op_type)
        self.steps.append(step)
        self.durations.append(duration)
        if len(self.cells) >= CHUNK_ROWS:
            self.flush()

    def flush(self) -> None:
        """Parse the rows kept so far."""
        if self.types_at is not None:
            self._types()
        if self.spans is not None:
            self._spans(self.spans)
        for kept in (self.cells, self.types, self.steps, self.durations):
            kept.clear()

    def _types(self) -> None:
        types_at = self.types_at
        assert types_at is not None
        times = (
            _kept_times(self.cells) if len(types_at) + len(self.cells) <= KERNEL_TYPES_MAX else None
        )
        if times is not None:
            types_at.update(zip(times, self.types, strict=True))
            return
        for cell, op_type in zip(self.cells, self.types, strict=True):
            self.types_at = add_type(self.types_at, cell, op_type)

    def _spans(self, spans: dict[str, list[float]]) -> None:
        try:
            starts = list(map(float, self.cells))
        except ValueError:  # a start that is not a time: row by row, that row left out
            for cell, step, duration in zip(self.cells, self.steps, self.durations, strict=True):
                add_span(spans, cell, step, duration)
            return
        ends = list(map(add, starts, self.durations))
        at = 0
        for step, rows in groupby(self.steps):
            count = sum(1 for _ in rows)
            first, last = starts[at : at + count], ends[at : at + count]
            at += count
            span = spans.get(step)
            if span is None:
                span = spans[step] = [first[0], last[0]]
            # min and max compare as the row loop did: a NaN start widens nothing
            span[0] = min([span[0], *first])
            span[1] = max([span[1], *last])


def _kept_times(cells: list[str]) -> list[float] | None:
    """Each cell's time as add_type reads it, where every cell has its point at one place
    (None otherwise, or where a cell is not a number)."""
    dots = set(map(str.find, cells, repeat(".")))
    if len(dots) != 1:
        return None
    dot = dots.pop()
    if dot < 0:
        return None
    try:
        return list(
            map(float, map(itemgetter(slice(max(0, dot - KEPT_INTEGER_DIGITS), None)), cells))
        )
    except ValueError:
        return None


def add_type(types_at: dict[float, str] | None, cell: str, op_type: str) -> dict[float, str] | None:
    """Keep the kernel's type by its start as trace_view.json's reader parses the same time
    (the shared epoch prefix cut off); None once more kernels than KERNEL_TYPES_MAX (or no
    start column)."""
    if types_at is None or len(types_at) >= KERNEL_TYPES_MAX:
        return None
    # the last KEPT_INTEGER_DIGITS digits before the point and the rest, cut from the cell as
    # it is (float() ignores the blanks around it: torch_npu writes a TAB after each start)
    dot = cell.find(".")
    kept = (
        cell[max(0, dot - KEPT_INTEGER_DIGITS) :]
        if dot >= 0
        else cell.strip()[-KEPT_INTEGER_DIGITS:]
    )
    try:
        at = float(kept)
    except ValueError:
        return types_at  # an unreadable start: that kernel goes unnamed
    types_at[at] = op_type
    return types_at


def add_span(spans: dict[str, list[float]], cell: str, step: str, duration: float) -> None:
    """Widen the step's [first start, last end] by the row (a start that is not a time is
    left out: the kernel still counts in its group). The comparisons are min's and max's (a
    NaN start widens nothing)."""
    try:
        start = float(cell)
    except ValueError:
        return
    span = spans.get(step)
    if span is None:
        spans[step] = [start, start + duration]
        return
    if start < span[0]:
        span[0] = start
    end = start + duration
    if end > span[1]:
        span[1] = end
