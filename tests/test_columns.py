"""The row order of nearly sorted columns equals a stable sort's, with or without a tie key."""

from __future__ import annotations

import random
from array import array

from advisor.parsers.traces.columns import in_order, nearly_sorted_order, permuted


def _stable(first: list[float], second: list[float] | None) -> list[int]:
    key = (lambda i: (first[i], second[i])) if second is not None else first.__getitem__
    return sorted(range(len(first)), key=key)


def test_rows_in_order_need_no_order() -> None:
    assert nearly_sorted_order(array("d", [1.0, 2.0, 2.0, 3.0]), array("d", [5, 1, 1, 0])) is None


def test_a_few_late_rows_are_merged_back_where_a_stable_sort_puts_them() -> None:
    rng = random.Random(7)
    for trial in range(300):
        n = rng.randint(1, 60)
        first = sorted(float(rng.randint(0, 20)) for _ in range(n))
        for _ in range(rng.randint(0, 5)):  # a few rows out of place, as profilers write them
            i = rng.randrange(n)
            first[i] = float(rng.randint(0, 20))
        second = [float(rng.randint(0, 3)) for _ in range(n)]
        for tie in (second, None):
            order = nearly_sorted_order(array("d", first), array("d", tie) if tie else None)
            expected = _stable(first, tie)
            got = list(order) if order is not None else list(range(n))
            assert got == expected, (trial, first, tie)


def test_runs_of_every_shape_sort_like_a_stable_sort() -> None:
    """A few rows out of place in many (found run by run, placed by binary search), lanes
    written one after the other and rows in no order (found and placed in one pass)."""
    rng = random.Random(13)

    def few_late(n: int) -> list[float]:
        rows = [float(i // 3) for i in range(n)]
        for _ in range(rng.randint(1, 8)):
            rows[rng.randrange(n)] -= rng.randint(1, 40)
        return rows

    def lanes(n: int) -> list[float]:
        half = n // 2
        return sorted(float(rng.randint(0, 50)) for _ in range(half)) + sorted(
            float(rng.randint(0, 50)) for _ in range(n - half)
        )

    def shuffled(n: int) -> list[float]:
        return [float(rng.randint(0, 30)) for _ in range(n)]

    for shape in (few_late, lanes, shuffled):
        for _ in range(40):
            n = rng.randint(2, 900)
            first = shape(n)
            second = [float(rng.randint(0, 3)) for _ in range(n)]
            for tie in (second, None):
                order = nearly_sorted_order(array("d", first), array("d", tie) if tie else None)
                got = list(order) if order is not None else list(range(n))
                assert got == _stable(first, tie), (shape.__name__, first, tie)


def test_rows_with_a_nan_key_go_last_in_file_order() -> None:
    nan = float("nan")
    order = nearly_sorted_order(array("d", [3.0, nan, 1.0, 2.0, nan]))
    assert order is not None and list(order) == [2, 3, 0, 1, 4]
    order = nearly_sorted_order(array("d", [3.0, 1.0, 1.0]), array("d", [0.0, nan, 0.0]))
    assert order is not None and list(order) == [2, 0, 1]


def test_in_order_agrees_with_a_stable_sort_on_ties_and_single_rows() -> None:
    rng = random.Random(11)
    for _ in range(300):
        n = rng.randint(0, 12)
        first = [float(rng.randint(0, 3)) for _ in range(n)]
        second = [float(rng.randint(0, 3)) for _ in range(n)]
        pairs = list(zip(first, second, strict=True))
        assert in_order(array("d", first), array("d", second)) == (pairs == sorted(pairs))
        assert in_order(array("d", first)) == (first == sorted(first))
    assert not in_order(array("d", [1.0, 1.0]), array("d", [2.0, 1.0]))


def test_an_early_outlier_still_sorts_everything() -> None:
    first = array("d", [100.0, 1.0, 2.0, 3.0, 0.5])
    order = nearly_sorted_order(first)
    assert order is not None
    assert list(permuted(first, order)) == [0.5, 1.0, 2.0, 3.0, 100.0]


def test_integer_keys_sort_like_floats() -> None:
    keys = array("q", [5, 6, 7, 3, 8, 8, 2])
    order = nearly_sorted_order(keys)
    assert order is not None
    assert list(permuted(keys, order)) == sorted(keys)


def test_flow_launch_times_pair_as_dictionaries_would() -> None:
    from advisor.parsers.traces.flows import FlowTable

    rng = random.Random(3)
    for _ in range(200):
        table = FlowTable()
        for _ in range(rng.randint(0, 30)):
            table.add(rng.random() < 0.5, rng.randint(0, 8), float(rng.randint(0, 15)))
        launched = dict(zip(table.start_ids, table.start_ts, strict=True))
        pairs = {
            at: launched[key]
            for key, at in zip(table.finish_ids, table.finish_ts, strict=True)
            if key in launched
        }
        kernels = sorted(float(rng.randint(0, 15)) for _ in range(10))
        got, paired = table.launch_times(kernels)
        assert paired == bool(pairs)
        expected = [pairs.get(s) for s in kernels]
        assert [None if t != t else t for t in got] == expected


def test_flows_started_and_ended_once_in_one_order_pair_as_dictionaries_would() -> None:
    """The common case taken without a lookup per flow: each id starts once and ends once, in
    the same (sorted) order; its finishes at any times, some equal."""
    from advisor.parsers.traces.flows import FlowTable

    rng = random.Random(5)
    for _ in range(200):
        table = FlowTable()
        ids = sorted(rng.sample(range(100), rng.randint(1, 20)))
        for key in ids:
            table.add(True, key, float(rng.randint(0, 15)))
        for key in ids:
            table.add(False, key, float(rng.randint(0, 15)))
        assert table.start_ids == table.finish_ids
        launched = dict(zip(table.start_ids, table.start_ts, strict=True))
        pairs = {at: launched[key] for key, at in zip(ids, table.finish_ts, strict=True)}
        kernels = sorted(float(rng.randint(0, 15)) for _ in range(10))
        got, paired = table.launch_times(kernels)
        assert paired
        assert [None if t != t else t for t in got] == [pairs.get(s) for s in kernels]


def test_last_per_key_keeps_the_last_value_and_reuses_ordered_columns() -> None:
    from advisor.parsers.traces.columns import last_per_key

    keys, values = array("q", [3, 1, 3, 2]), array("d", [1.0, 2.0, 3.0, 4.0])
    got_keys, got_values = last_per_key(keys, values)
    assert list(got_keys) == [1, 2, 3] and list(got_values) == [2.0, 4.0, 3.0]
    ordered, times = array("q", [1, 5, 9]), array("d", [0.5, 0.6, 0.7])
    same_keys, same_times = last_per_key(ordered, times)
    assert same_keys is ordered and same_times is times


def test_a_permutation_copies_runs_or_rows_as_the_row_by_row_order_would() -> None:
    """Long runs of consecutive rows are copied as slices, short ones row by row: the same
    values either way, in every column's type."""
    from advisor.parsers.traces.columns import Permutation

    rng = random.Random(17)
    for n, late, in_runs in ((2000, 5, True), (2000, 1500, False), (1, 0, False)):
        first = [float(i) for i in range(n)]
        for _ in range(late):
            first[rng.randrange(n)] -= rng.randint(1, 500)
        order = nearly_sorted_order(array("d", first)) or array("i", range(n))
        by_rows = Permutation(order)
        assert (by_rows.runs is not None) == in_runs
        for column in (
            array("d", first),
            array("q", range(n)),
            array("B", (i % 7 for i in range(n))),
        ):
            assert list(by_rows.apply(column)) == [column[i] for i in order]
