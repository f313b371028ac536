"""A batch's kernels and launch flows, turned into numbers together at the end of the batch.

They are ~40% of a trace's events and each needs a time parsed (and a duration checked, or an
id read): one at a time that is most of the reader's Python work. The accumulator's loop only
leaves their raw values in lists, in order; here each list is sliced, parsed and checked by C
loops (map, join, struct), and a list that does not fit the common shape is read value by
value, which names the first bad value as the loop would.
"""

from __future__ import annotations

import math
import struct
from array import array
from collections.abc import Sequence
from itertools import compress, repeat
from operator import add, eq
from typing import Any

from advisor.parsers.bounds import MAX_DURATION_US
from advisor.parsers.trace_view.timestamps import TimestampParser
from advisor.parsers.traces.flows import ID_DIGITS_MAX, INT64, FlowTable, flow_key

FlowLists = tuple[list[Any], list[Any], list[Any], list[Any]]


class PendingRows:
    """The raw values of a batch's kernels and of its flow ends of the kept categories."""

    def __init__(self, kept: Sequence[str]) -> None:
        self.kernel_ts: list[str | float] = []
        self.kernel_dur: list[float | str] = []
        self.pid: list[int | str] = []
        # per kept category: the start ends' ids and times, the finish ends' ids and times
        self.flows: dict[str, FlowLists] = {cat: ([], [], [], []) for cat in kept}

    def kernel(self, at: str | float, dur: float | str, pid: int | str) -> None:
        self.kernel_ts.append(at)
        self.kernel_dur.append(dur)
        self.pid.append(pid)

    def settle(
        self,
        ts: TimestampParser,
        starts: dict[int | str, array[float]],
        ends: dict[int | str, array[float]],
        dropped: array[float],
        tables: dict[str, FlowTable],
    ) -> None:
        """Everything pending into its arrays; the lists are emptied."""
        if self.pid:
            self._settle_kernels(ts, starts, ends, dropped)
        for cat, lists in self.flows.items():
            if lists[0] or lists[2]:
                table = tables.get(cat)
                if table is None:
                    table = tables[cat] = FlowTable()
                _settle_flows(lists, ts, table)

    def _settle_kernels(
        self,
        ts: TimestampParser,
        starts: dict[int | str, array[float]],
        ends: dict[int | str, array[float]],
        dropped: array[float],
    ) -> None:
        """Each kernel's start and end in its process's arrays (a process found not to be the
        device lane holds `dropped`: its kernels are not read)."""
        pids = self.pid
        distinct = dict.fromkeys(pids)
        for pid in distinct:
            into = starts[pid]
            if into is dropped:
                continue
            if len(distinct) == 1:
                times, durs = self.kernel_ts, self.kernel_dur
            else:
                mine = list(map(eq, pids, repeat(pid)))
                times = list(compress(self.kernel_ts, mine))
                durs = list(compress(self.kernel_dur, mine))
            at = ts.many(times)
            extend(into, at)
            extend(ends[pid], list(map(add, at, durations(durs))))
        self.kernel_ts.clear()
        self.kernel_dur.clear()
        pids.clear()


def _settle_flows(lists: FlowLists, ts: TimestampParser, table: FlowTable) -> None:
    start_ids, start_ts, finish_ids, finish_ts = lists
    if start_ids:
        extend(table.start_ids, flow_keys(start_ids))
        extend(table.start_ts, ts.many(start_ts))
    if finish_ids:
        extend(table.finish_ids, flow_keys(finish_ids))
        extend(table.finish_ts, ts.many(finish_ts))
    for values in lists:
        values.clear()


def extend(into: array[Any], values: list[Any]) -> None:
    """Append many numbers to an array at once (packed in C: array.extend converts each
    item through the argument parser, ~5x the work)."""
    into.frombytes(struct.pack(f"{len(values)}{into.typecode}", *values))


def durations(values: list[float | str]) -> list[float]:
    """Durations in [0, MAX_DURATION_US] us; a string is read as a number, anything else
    raises the ValueError that names it."""
    if (
        values
        and all(map(float.__instancecheck__, values))
        and (
            # the sum is finite only without NaN and infinities
            math.isfinite(sum(values))  # type: ignore[arg-type]
            and min(values) >= 0.0  # type: ignore[operator]
            and max(values) <= MAX_DURATION_US  # type: ignore[operator]
        )
    ):
        return values  # type: ignore[return-value]
    return list(map(duration, values))


def duration(value: float | str) -> float:
    number = value if value.__class__ is float else float(value)
    # one chained comparison: also false for NaN
    if not 0.0 <= number <= MAX_DURATION_US:
        raise ValueError(f"dur {value!r} is not a duration in [0, {MAX_DURATION_US:g}] us")
    return number


def flow_keys(values: list[int | str]) -> list[int]:
    """flow_key of each id: digit strings and 64-bit integers by C loops, others one by one."""
    try:
        digits = all(map(str.isdigit, values))  # type: ignore[arg-type]
        if digits and max(map(len, values)) <= ID_DIGITS_MAX:  # type: ignore[arg-type]
            return list(map(int, values))
    except TypeError:  # not all strings
        if (
            all(map(int.__instancecheck__, values))
            and min(values) >= -INT64  # type: ignore[operator]
            and max(values) < INT64  # type: ignore[operator]
        ):
            return values  # type: ignore[return-value]
    return list(map(flow_key, values))
