"""Flow events pairing a host launch with the device task it started: the ids and times of
each category's two ends, paired only when a reduction asks."""

from __future__ import annotations

import hashlib
from array import array
from bisect import bisect_left
from collections.abc import Sequence

from advisor.parsers.traces.columns import last_per_key

NAN = float("nan")

INT64 = 1 << 63  # a flow id that is a signed 64-bit integer is its own key
ID_DIGITS_MAX = 18  # and so is a string of this many digits or fewer


def flow_key(value: int | str) -> int:
    """A flow id as a signed 64-bit integer: numbers as they are, other ids by a stable hash
    (the same in every worker process, unlike str hashes)."""
    if isinstance(value, int) and -INT64 <= value < INT64:
        return value
    text = str(value)
    if text.isdigit() and len(text) <= ID_DIGITS_MAX:
        return int(text)
    digest = hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


class FlowTable:
    """One flow category's ends: the start (host launch) and finish (device task) of each
    flow as id and time arrays; paired only when the reduction asks."""

    __slots__ = ("finish_ids", "finish_ts", "start_ids", "start_ts")

    def __init__(self) -> None:
        self.start_ids: array[int] = array("q")
        self.start_ts: array[float] = array("d")
        self.finish_ids: array[int] = array("q")
        self.finish_ts: array[float] = array("d")

    def add(self, start: bool, key: int, at: float) -> None:
        if start:
            self.start_ids.append(key)
            self.start_ts.append(at)
        else:
            self.finish_ids.append(key)
            self.finish_ts.append(at)

    def extend(self, other: FlowTable) -> None:
        self.start_ids.extend(other.start_ids)
        self.start_ts.extend(other.start_ts)
        self.finish_ids.extend(other.finish_ids)
        self.finish_ts.extend(other.finish_ts)

    def launch_times(self, kernel_starts: Sequence[float]) -> tuple[array[float], bool]:
        """Each kernel's host launch time, aligned with `kernel_starts` (sorted; NaN: no flow
        ends at it), and whether any flow has both ends. As dictionaries would pair them (an
        id started twice keeps its last start; of two flows ending at one time, the last),
        with sorted arrays: dictionaries of millions of flows cost ~10x the memory."""
        ids, starts = last_per_key(self.start_ids, self.start_ts)
        if ids == self.finish_ids:
            # each flow started once and ended once, in one order (a profiler's common case):
            # the pairs are the rows as they are (compared at C speed, not looked up)
            ends, launches = self.finish_ts, starts
        else:
            ends, launches = _paired(ids, starts, self.finish_ids, self.finish_ts)
        ends, launches = last_per_key(ends, launches)
        out: array[float] = array("d")
        j, n = 0, len(ends)
        for start in kernel_starts:
            while j < n and ends[j] < start:
                j += 1
            out.append(launches[j] if j < n and ends[j] == start else NAN)
        return out, bool(n)

    def __getstate__(self) -> tuple[array[int], array[float], array[int], array[float]]:
        return (self.start_ids, self.start_ts, self.finish_ids, self.finish_ts)

    def __setstate__(
        self, state: tuple[array[int], array[float], array[int], array[float]]
    ) -> None:
        self.start_ids, self.start_ts, self.finish_ids, self.finish_ts = state


def _paired(
    ids: array[int], starts: array[float], finish_ids: array[int], finish_ts: array[float]
) -> tuple[array[float], array[float]]:
    """Each finish with a start (`ids`: distinct, sorted, each with its start): the finish
    times and their flows' start times, in finish order."""
    cursor = -1
    ends: array[float] = array("d")
    launches: array[float] = array("d")
    for key, at in zip(finish_ids, finish_ts, strict=True):
        i = cursor + 1  # flows mostly end in the order they started
        if not (i < len(ids) and ids[i] == key):
            i = bisect_left(ids, key)
            if i >= len(ids) or ids[i] != key:
                continue
        cursor = i
        ends.append(at)
        launches.append(starts[i])
    return ends, launches


def operator_times(
    pairs: dict[float, float], table: FlowTable | None, kernel_starts: Sequence[float]
) -> array[float] | None:
    """Each kernel's enqueueing operator's start, aligned with `kernel_starts` (NaN: not
    linked), from the pairs a source joined itself (device start -> operator start) or else
    the operator flows' table; None when no kernel is linked to its operator."""
    if pairs:
        return array("d", (pairs.get(s, NAN) for s in kernel_starts))
    if table is None:
        return None
    enqueued, paired = table.launch_times(kernel_starts)
    return enqueued if paired else None
