"""Kineto device operations and launches kept as columns: lookups and order as a dict and a
sort of objects would give them."""

from __future__ import annotations

from array import array

import pytest

from advisor.parsers.kineto_columns import LaunchIndex


@pytest.mark.parametrize(
    "keys",
    [
        [1, 2, 3, 5, 4, 6, 2],  # consecutive ids, one launched twice: a direct table
        [10, 2_000_000, 7, 9_000_000_000, 2_000_000, 11],  # far apart: sorted arrays
    ],
)
def test_launch_lookup_matches_a_dict_keeping_the_last_launch(keys: list[int]) -> None:
    times = [float(100 + i) for i in range(len(keys))]
    expected = dict(zip(keys, times, strict=True))
    index = LaunchIndex(array("q", keys), array("d", times))
    for key in [*sorted(set(keys)), 0, 8, 12, 10**12]:
        assert index.get(key) == expected.get(key), key


def test_consecutive_ids_use_a_table_and_scattered_ones_do_not() -> None:
    dense = LaunchIndex(array("q", range(1000, 2000)), array("d", range(1000)))
    sparse = LaunchIndex(array("q", [1, 10**9]), array("d", [1.0, 2.0]))
    assert dense.table is not None and sparse.table is None


def test_no_launches() -> None:
    assert LaunchIndex(array("q"), array("d")).get(1) is None
