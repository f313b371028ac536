"""Sorting columns of flat arrays without a Python object per row.

Profilers write events almost in time order (a few late ones per stream or thread). Sorting
a list of millions of row numbers costs ~36 bytes a row; here the rows already in order are
kept as they come, only the few out of place are sorted, and the two are merged into a row
order of 4 bytes a row.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from itertools import compress, islice
from operator import eq, le
from typing import Any

_NO_SECOND = array("d")


def nearly_sorted_order(
    first: Sequence[float] | Sequence[int], second: Sequence[float] | None = None
) -> array[int] | None:
    """The row order sorting by (first, second), stable (equal keys keep their order), or None
    when the rows are already in order."""
    if in_order(first, second):
        return None
    n = len(first)
    seconds = second if second is not None else _NO_SECOND
    has_second = second is not None
    kept: array[int] = array("i")
    late: list[int] = []  # rows whose key is below one before them
    top_a: float = float("-inf")
    top_b: float = float("-inf")
    for i in range(n):
        a = first[i]
        b = seconds[i] if has_second else 0.0
        if a > top_a or (a == top_a and b >= top_b):
            kept.append(i)
            top_a, top_b = a, b
        else:
            late.append(i)
    if not late:
        return None
    if has_second:
        late.sort(key=seconds.__getitem__)
    late.sort(key=first.__getitem__)
    order: array[int] = array("i")
    j = 0
    m = len(late)
    for i in kept:
        a = first[i]
        b = seconds[i] if has_second else 0.0
        # a late row goes first only when its key is strictly lower: among equal keys every
        # kept row came earlier in the file than any late one
        while j < m:
            r = late[j]
            ra = first[r]
            if ra < a or (ra == a and has_second and seconds[r] < b):
                order.append(r)
                j += 1
            else:
                break
        order.append(i)
    order.extend(late[j:])
    return order


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


def permuted(values: array[Any], order: Sequence[int]) -> array[Any]:
    """A new array of the values in `order`."""
    return array(values.typecode, map(values.__getitem__, order))


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
