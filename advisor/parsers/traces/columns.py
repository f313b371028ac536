"""Sorting columns of flat arrays without a Python object per row.

Profilers write events almost in time order (a few late ones per stream or thread). Sorting
a list of millions of row numbers costs ~36 bytes a row; here the rows already in order are
kept as they come, only the few out of place are sorted, and the two are merged into a row
order of 4 bytes a row. The rows between two descents are in order: they are found at C speed
and each run's late rows (those below every row before the run) by a binary search, so the
Python-level work grows with the descents and the late rows, not with the rows.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence
from itertools import accumulate, compress, islice, pairwise, repeat
from operator import eq, gt, le, ne, not_, sub
from typing import Any

# late rows are placed by binary search, and runs searched for them, while fewer than 1/16 of
# the rows; more are found and placed in one pass over the rows
_SEARCH_MAX_SHARE = 16
_LOWEST = float("-inf")


def nearly_sorted_order(
    first: Sequence[float] | Sequence[int], second: Sequence[float] | None = None
) -> array[int] | None:
    """The row order sorting by (first, second), stable (equal keys keep their order), or None
    when the rows are already in order. Rows with a NaN key (no decoder yields one) go last,
    in file order."""
    if in_order(first, second):
        return None
    if _has_nan(first) or (second is not None and _has_nan(second)):
        return _nan_last(first, second)
    key: Callable[[int], Any]
    keys: Callable[[], Iterator[Any]]
    if second is None:
        key = first.__getitem__

        def keys() -> Iterator[Any]:
            return iter(first)

    else:
        seconds = second

        def key(i: int) -> tuple[float, float]:
            return first[i], seconds[i]

        def keys() -> Iterator[Any]:
            return zip(first, seconds, strict=True)

    descents = list(compress(range(1, len(first)), map(gt, keys(), islice(keys(), 1, None))))
    if len(descents) * _SEARCH_MAX_SHARE < len(first):
        kept, late = _kept_and_late(len(first), descents, key)
    else:
        kept, late = _at_running_max(len(first), keys, second is not None)
    if second is not None:
        late.sort(key=second.__getitem__)
    late.sort(key=first.__getitem__)
    return _merged(kept, late, key)


def _merged(kept: array[int], late: list[int], key: Callable[[int], Any]) -> array[int]:
    """The kept rows with the late rows (sorted) merged in: a late row goes before the first
    kept row whose key is strictly higher (among equal keys every kept row came earlier in the
    file than any late one). A few late rows are placed by binary search; many, by one pass."""
    order: array[int] = array("i")
    at = 0
    if len(late) * _SEARCH_MAX_SHARE < len(kept):
        for row in late:
            place = bisect_right(kept, key(row), at, key=key)
            order.extend(kept[at:place])
            order.append(row)
            at = place
        order.extend(kept[at:])
        return order
    m = len(late)
    for i in kept:
        high = key(i)
        while at < m and key(late[at]) < high:
            order.append(late[at])
            at += 1
        order.append(i)
    order.extend(late[at:])
    return order


def _kept_and_late(
    n: int, descents: list[int], key: Callable[[int], Any]
) -> tuple[array[int], list[int]]:
    """The rows in order (each at least every row before it) and the late rows, from the rows
    where the key descends: the rows between two descents are a sorted run, whose late rows
    are its first ones, those below the highest key before the run."""
    rows = range(n)
    kept: array[int] = array("i", range(descents[0]))
    late: list[int] = []
    top = key(descents[0] - 1)
    for begin, end in zip(descents, [*descents[1:], n], strict=True):
        cut = bisect_left(rows, top, begin, end, key=key)
        late.extend(range(begin, cut))
        kept.extend(range(cut, end))
        if cut < end:
            top = key(end - 1)
    return kept, late


def _at_running_max(
    n: int, keys: Callable[[], Iterator[Any]], pairs: bool
) -> tuple[array[int], list[int]]:
    """The rows in order and the late rows when the key descends often: a row is in order
    when it equals the running maximum at its place (max keeps the first of equals, so a row
    below the maximum leaves it as it is), found at C speed through `accumulate`."""
    lowest = (_LOWEST, _LOWEST) if pairs else _LOWEST
    flags = bytes(map(eq, keys(), islice(accumulate(keys(), max, initial=lowest), 1, None)))
    rows = range(n)
    return array("i", compress(rows, flags)), list(compress(rows, map(not_, flags)))


def _has_nan(values: Sequence[float] | Sequence[int]) -> bool:
    return any(map(ne, values, values))


def _nan_last(first: Sequence[float] | Sequence[int], second: Sequence[float] | None) -> array[int]:
    """A stable sort of the rows whose keys are numbers, then the others in file order."""

    def key(i: int) -> tuple[bool, Any, Any]:
        a = first[i]
        b = second[i] if second is not None else 0.0
        nan = a != a or b != b
        return (nan, 0.0, 0.0) if nan else (nan, a, b)

    return array("i", sorted(range(len(first)), key=key))


def in_order(first: Sequence[float] | Sequence[int], second: Sequence[float] | None = None) -> bool:
    """Whether the rows are sorted by (first, second) already, checked at C speed (a pair of
    rows at a time through `map`): the common case of a profiler's nearly sorted columns costs
    a tenth of the row-by-row pass that finds the late rows."""
    if not all(map(le, first, islice(first, 1, None))):
        return False
    if second is None:
        return True
    # equal firsts: their seconds must not decrease
    ties = compress(range(1, len(first)), map(eq, first, islice(first, 1, None)))
    return all(second[i - 1] <= second[i] for i in ties)


def permuted(values: array[Any], order: array[int]) -> array[Any]:
    """A new array of the values in `order`."""
    return Permutation(order).apply(values)


class Permutation:
    """A row order applied to columns one at a time. A nearly sorted column's order is long
    runs of consecutive rows: each run is copied as one slice (the runs found once for all
    columns); an order of short runs is followed row by row."""

    def __init__(self, order: array[int]) -> None:
        self.order = order
        self.runs = _runs(order)

    def apply(self, column: array[Any]) -> array[Any]:
        """A new array of the column's values in the order."""
        if self.runs is None:
            return array(column.typecode, map(column.__getitem__, self.order))
        out: array[Any] = array(column.typecode)
        for first, count in self.runs:
            out.extend(column[first : first + count])
        return out


def _runs(order: array[int]) -> list[tuple[int, int]] | None:
    """The order as (first row, row count) runs of consecutive rows, or None when the runs
    are short (fewer than _SEARCH_MAX_SHARE rows each on average)."""
    n = len(order)
    steps = map(sub, islice(order, 1, None), order)
    breaks = [0, *compress(range(1, n), map(ne, steps, repeat(1))), n]
    if (len(breaks) - 1) * _SEARCH_MAX_SHARE > n:
        return None
    return [(order[a], b - a) for a, b in pairwise(breaks) if b > a]


def last_per_key(keys: array[Any], values: array[float]) -> tuple[array[Any], array[float]]:
    """The distinct keys in order, each with the value it was given last (as a dict would
    keep it); keys already in order and each once are returned as they are, not copied."""
    order = nearly_sorted_order(keys)
    if order is None and not any(map(eq, keys, islice(keys, 1, None))):
        return keys, values
    out_keys: array[Any] = array(keys.typecode)
    out_values: array[float] = array("d")
    for i in order if order is not None else range(len(keys)):
        key = keys[i]
        if out_keys and out_keys[-1] == key:
            out_values[-1] = values[i]
        else:
            out_keys.append(key)
            out_values.append(values[i])
    return out_keys, out_values
