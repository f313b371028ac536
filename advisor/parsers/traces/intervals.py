"""Time intervals as flat arrays: unions, clipped lengths and overlaps within a window.

A trace holds millions of kernels; a list of (start, end) tuples costs about seven times the
memory of two arrays of floats.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterable, Sequence


class Intervals:
    """Intervals sorted by start as two flat arrays (a list of (start, end) tuples costs about
    seven times the memory; a trace holds millions)."""

    __slots__ = ("ends", "starts")

    def __init__(self, starts: array[float] | None = None, ends: array[float] | None = None):
        self.starts: array[float] = starts if starts is not None else array("d")
        self.ends: array[float] = ends if ends is not None else array("d")

    def __len__(self) -> int:
        return len(self.starts)

    def __eq__(self, other: object) -> bool:
        # by value: two readings of one trace hold equal intervals in distinct arrays
        if not isinstance(other, Intervals):
            return NotImplemented
        return self.starts == other.starts and self.ends == other.ends

    __hash__ = None  # type: ignore[assignment]  # mutable: equal by value, not hashable

    def pairs(self) -> list[tuple[float, float]]:
        return list(zip(self.starts, self.ends, strict=True))


def pair_order(starts: Sequence[float], ends: Sequence[float]) -> list[int]:
    """Indices ordering the intervals by (start, end): two stable sorts, no tuple per item."""
    order = sorted(range(len(starts)), key=ends.__getitem__)
    order.sort(key=starts.__getitem__)
    return order


def sorted_intervals(starts: Sequence[float], ends: Sequence[float]) -> Intervals:
    """The intervals in (start, end) order, not merged."""
    order = pair_order(starts, ends)
    return Intervals(array("d", (starts[i] for i in order)), array("d", (ends[i] for i in order)))


def merged_intervals(starts: Iterable[float], ends: Iterable[float]) -> Intervals:
    """Union of intervals given in start order (nested events would otherwise count twice)."""
    out_starts: array[float] = array("d")
    out_ends: array[float] = array("d")
    last = -1
    for a, b in zip(starts, ends, strict=True):
        if last >= 0 and a <= out_ends[last]:
            if b > out_ends[last]:
                out_ends[last] = b
        else:
            out_starts.append(a)
            out_ends.append(b)
            last += 1
    return Intervals(out_starts, out_ends)


def merge_unsorted(starts: Sequence[float], ends: Sequence[float]) -> Intervals:
    return merged_intervals(*_in_order(starts, ends))


def _in_order(starts: Sequence[float], ends: Sequence[float]) -> tuple[array[float], array[float]]:
    iv = sorted_intervals(starts, ends)
    return iv.starts, iv.ends


def union(a: Intervals, b: Intervals) -> Intervals:
    """The merged union of two interval lists."""
    return merge_unsorted(a.starts + b.starts, a.ends + b.ends)


def clipped_sum(intervals: Intervals, lo: float, hi: float, total: float = 0.0) -> float:
    """Total length of the (non-overlapping) intervals inside [lo, hi), added to `total` (a
    sum resumed over the next intervals adds the same terms in the same order)."""
    starts, ends = intervals.starts, intervals.ends
    i = max(0, bisect_left(starts, lo) - 1)
    n = len(starts)
    while i < n and starts[i] < hi:
        b = ends[i]
        if b > lo:
            total += min(b, hi) - max(starts[i], lo)
        i += 1
    return total


def overlap_sum(a: Intervals, b: Intervals, lo: float, hi: float, total: float = 0.0) -> float:
    """Length of the intersection of two merged interval lists inside [lo, hi), added to
    `total`."""
    a_starts, a_ends, b_starts, b_ends = a.starts, a.ends, b.starts, b.ends
    i = max(0, bisect_left(a_starts, lo) - 1)
    j = max(0, bisect_left(b_starts, lo) - 1)
    n, m = len(a_starts), len(b_starts)
    while i < n and j < m and a_starts[i] < hi and b_starts[j] < hi:
        start = max(a_starts[i], b_starts[j], lo)
        end = min(a_ends[i], b_ends[j], hi)
        if end > start:
            total += end - start
        if a_ends[i] < b_ends[j]:
            i += 1
        else:
            j += 1
    return total


def exposed_by_kind(
    collectives: dict[str, Intervals], computing: Intervals, lo: float, hi: float
) -> dict[str, float]:
    """Per collective kind, its time in [lo, hi) that no compute overlaps."""
    out = {}
    for kind, intervals in sorted(collectives.items()):
        total = clipped_sum(intervals, lo, hi)
        if total > 0:
            out[kind] = total - overlap_sum(intervals, computing, lo, hi)
    return out
