"""The columns a PyTorch trace spills while it is decoded, and what is known of each segment.

Each decoding process writes its operation and launch columns to a spill file of the trace
engine (parsers/traces/spill.py) whenever they pass FLUSH_BYTES. What the reduction needs to
skip a segment without reading it (row counts, the time span of its operations, the range of
its correlation ids, a sample of its start times) is kept in memory beside the segment's
layout.

The rows are read back in file order — parts in order, segments in order — the order the
sequential reader would have appended them, so a stable sort afterwards gives the same order.
"""

from __future__ import annotations

import contextlib
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.parsers.kineto.columns import NO_CORRELATION, DeviceOps
from advisor.parsers.traces import budget
from advisor.parsers.traces.ordered import sample_of
from advisor.parsers.traces.spill import Layout
from advisor.parsers.traces.spill import SpillWriter as SpillFile

OP_COLUMNS = (("start", "d"), ("end", "d"), ("signature", "i"), ("correlation", "q"))
# a launch's correlation id, time and thread (Strings id of "pid:tid")
LAUNCH_KEY, LAUNCH_AT, LAUNCH_THREAD = "launch_key", "launch_at", "launch_thread"
_OP_ROW_BYTES = 28
_LAUNCH_ROW_BYTES = 20
EMPTY_RANGE = (float("inf"), float("-inf"))


@dataclass(frozen=True)
class Segment:
    """Where one segment sits in its spill file and what it holds."""

    layout: Layout
    ops: int
    launches: int
    first_start: float  # the earliest operation start (inf: none)
    last_start: float
    last_end: float  # the latest operation end (-inf: none)
    low_key: int  # the smallest correlation key of operations or launches (-1: none)
    high_key: int
    # the start of every SAMPLE_EVERY-th operation, sorted (traces.ordered.sample_of): each
    # stands for SAMPLE_EVERY rows when the reduction cuts the trace into groups
    sample: list[float]


@dataclass
class SpilledRows:
    """One decoding process's spill file: its segments, and how its signature ids and string
    ids map to the merged tables (filled when the parts are merged; identity for the one
    process)."""

    path: Path
    segments: list[Segment] = field(default_factory=list)
    signature_ids: array[int] | None = None
    string_ids: array[int] | None = None

    @property
    def identity(self) -> bool:
        """Whether the signature ids are the merged ones already (the first part's are)."""
        ids = self.signature_ids
        return ids is None or all(i == s for i, s in enumerate(ids))

    @property
    def ops(self) -> int:
        return sum(s.ops for s in self.segments)


class SpillWriter:
    """Writes an extractor's operation and launch columns to `rows.path` when they pass
    FLUSH_BYTES (and at `flush`), emptying them."""

    def __init__(
        self,
        ops: DeviceOps,
        launches: tuple[array[int], array[float], array[int]],
        rows: SpilledRows,
    ):
        self.ops, self.rows = ops, rows
        self.keys, self.times, self.threads = launches
        self.file = SpillFile(rows.path)

    def close(self) -> None:
        self.file.close()

    def flush_if_large(self) -> None:
        held = len(self.ops) * _OP_ROW_BYTES + len(self.keys) * _LAUNCH_ROW_BYTES
        if held >= budget.FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        ops, keys = self.ops, self.keys
        if not len(ops) and not keys:
            return
        # keys are non-negative: NO_CORRELATION (-1) is below every one
        high = max(max(ops.correlation, default=NO_CORRELATION), max(keys, default=NO_CORRELATION))
        # the lowest key at C speed; looked for among the others when an operation has none
        lowest = min(ops.correlation, default=high)
        if lowest == NO_CORRELATION:
            lowest = min((k for k in ops.correlation if k != NO_CORRELATION), default=high)
        low = min(lowest, min(keys, default=high))
        first, last = (min(ops.start), max(ops.end)) if len(ops) else EMPTY_RANGE
        latest = max(ops.start) if len(ops) else first
        sample = sorted(sample_of(ops.start))
        ops_count, launches = len(ops), len(keys)
        columns = [(name, getattr(ops, name)) for name, _ in OP_COLUMNS]
        layout = self.file.write(
            [
                *columns,
                (LAUNCH_KEY, keys),
                (LAUNCH_AT, self.times),
                (LAUNCH_THREAD, self.threads),
            ]
        )
        self.rows.segments.append(
            Segment(layout, ops_count, launches, first, latest, last, low, high, sample)
        )


def read_ops(rows: SpilledRows, segment: Segment, handle: Any) -> DeviceOps:
    """One segment's operation columns, signatures in the merged numbering (their table is
    the merged one, not attached here)."""
    out = DeviceOps()
    for name, _ in OP_COLUMNS:
        setattr(out, name, segment.layout.read(handle, name))
    ids = rows.signature_ids
    if ids is not None and not rows.identity:
        out.signature = array("i", (ids[s] for s in out.signature))
    return out


def read_correlation(segment: Segment, handle: Any) -> array[int]:
    """One segment's operations' correlation keys alone."""
    return segment.layout.read(handle, "correlation")


def read_launches(segment: Segment, handle: Any) -> tuple[array[int], array[float]]:
    return segment.layout.read(handle, LAUNCH_KEY), segment.layout.read(handle, LAUNCH_AT)


def read_launch_threads(
    segment: Segment, handle: Any
) -> tuple[array[int], array[float], array[int]]:
    """A segment's launches with the thread of each (the segment's own string ids)."""
    layout = segment.layout
    return (
        layout.read(handle, LAUNCH_KEY),
        layout.read(handle, LAUNCH_AT),
        layout.read(handle, LAUNCH_THREAD),
    )


def segments(parts: list[SpilledRows]) -> Iterator[tuple[SpilledRows, Segment, Any]]:
    """Every segment in file order with an open handle on its file."""
    for rows in parts:
        with rows.path.open("rb") as handle:
            for segment in rows.segments:
                yield rows, segment, handle


def remove(parts: list[SpilledRows]) -> None:
    for rows in parts:
        rows.path.unlink(missing_ok=True)


@contextlib.contextmanager
def spilling(
    ops: DeviceOps,
    launches: tuple[array[int], array[float], array[int]],
    spilled: list[SpilledRows],
    spill: Path | None,
    always: bool = False,
) -> Iterator[SpillWriter | None]:
    """A spill writer on a decoder's operation and launch rows; at the end the rest is written
    too if any was (or `always`), so the rows are either all in memory or all in the file."""
    if spill is None:
        yield None
        return
    rows = SpilledRows(spill)
    writer = SpillWriter(ops, launches, rows)
    try:
        yield writer
        if rows.segments or always:
            writer.flush()
            spilled.append(rows)
    finally:
        writer.close()
        if not spilled:
            spill.unlink(missing_ok=True)
