"""Launch times written over a segment's correlation ids in place are the ones the key-by-key
lookup gives, whatever the ids: once each and in order, with holes, launched twice, outside
the table's range, NO_CORRELATION."""

from __future__ import annotations

import random
from array import array

from advisor.parsers.kineto.columns import LaunchIndex
from advisor.parsers.kineto.device_steps import launch_times_in_place

NO_CORRELATION = -1


def _by_key(index: LaunchIndex, keys: array[int]) -> list[float | None]:
    return [index.get(k) for k in keys]


def _found(times: memoryview) -> list[float | None]:  # type: ignore[type-arg]
    return [None if t != t else t for t in times]


def test_lookups_agree_with_get_on_every_kind_of_key() -> None:
    rng = random.Random(5)
    for _ in range(300):
        n = rng.randint(1, 50)
        first = rng.randint(0, 1000)
        keys = array("q", range(first, first + n))
        if rng.random() < 0.3:
            keys = array("q", rng.sample(range(first, first + 2 * n), n))  # holes, any order
        if rng.random() < 0.2:
            keys.append(keys[0])  # launched twice: the last launch kept
        times = array("d", (rng.uniform(0, 1e6) for _ in keys))
        index = LaunchIndex(keys, times)
        assert index.table is not None
        wanted = array("q", (rng.randint(first - 3, first + 2 * n + 3) for _ in range(30)))
        if rng.random() < 0.5:  # all in the table's range
            wanted = array("q", (rng.choice(keys) for _ in range(30)))
        if rng.random() < 0.2:
            wanted.append(NO_CORRELATION)
        expected = _by_key(index, wanted)
        assert _found(launch_times_in_place(array("q", wanted), index)) == expected


def test_keys_once_in_order_make_the_table_their_times() -> None:
    index = LaunchIndex(array("q", [7, 8, 9]), array("d", [1.0, 2.0, 3.0]))
    assert index.base == 7
    assert index.table == array("d", [1.0, 2.0, 3.0])
    assert [index.get(k) for k in (6, 7, 9, 10)] == [None, 1.0, 3.0, None]


def test_a_run_of_consecutive_ids_is_copied_from_the_table_as_looked_up() -> None:
    rng = random.Random(11)
    keys = array("q", rng.sample(range(100, 300), 150))  # holes: NaN in the table
    index = LaunchIndex(keys, array("d", (rng.uniform(0, 1e6) for _ in keys)))
    assert index.table is not None
    for first, n in ((100, 200), (150, 20), (90, 20), (290, 20), (40, 5), (299, 1), (100, 1)):
        wanted = array("q", range(first, first + n))
        expected = _by_key(index, wanted)
        assert _found(launch_times_in_place(array("q", wanted), index)) == expected
    consecutive_keys = LaunchIndex(array("q", range(5, 9)), array("d", [4.0, 3.0, 2.0, 1.0]))
    assert consecutive_keys.base == 5
    found = launch_times_in_place(array("q", [6, 7]), consecutive_keys)
    assert _found(found) == [3.0, 2.0]


def test_long_runs_of_consecutive_ids_in_tables_and_sorted_keys() -> None:
    """Runs longer than launch_times_in_place's RUN, broken at random places, over a dense
    table and over sorted keys (ids a billion apart between runs, as one process's ranges)."""
    rng = random.Random(3)
    for sparse in (False, True):
        for _ in range(20):
            keys: array[int] = array("q")
            for run in range(rng.randint(2 if sparse else 1, 4)):
                first = run * (10**9 if sparse else 300) + rng.randint(0, 50)
                keys.extend(range(first, first + rng.randint(1, 1200)))
            if rng.random() < 0.3:
                keys.pop(rng.randrange(len(keys)))  # a hole: one id never launched
            times = array("d", (rng.uniform(0, 1e6) for _ in keys))
            index = LaunchIndex(keys, times)
            assert (index.table is None) == sparse
            wanted = array("q", keys)
            cut = rng.randrange(len(wanted))
            wanted = wanted[cut:] + wanted[:cut]  # the order broken once
            if rng.random() < 0.5:
                wanted.insert(rng.randrange(len(wanted)), NO_CORRELATION)
            if rng.random() < 0.5:
                wanted.extend(range(wanted[-1] + 1, wanted[-1] + 300))  # past the last launch
            expected = _by_key(index, wanted)
            assert _found(launch_times_in_place(array("q", wanted), index)) == expected
