"""trace_view.json's kernels and flow ends are turned into numbers a batch at a time
(parsers/trace_view/deferred.py): the result must be the event-at-a-time reading's, bad values
included."""

from __future__ import annotations

import math
from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.inputs.taxonomy import default_taxonomy
from advisor.parsers.trace_view.accumulator import Accumulator, BadEvent
from advisor.parsers.trace_view.deferred import duration, durations, extend, flow_keys
from advisor.parsers.trace_view.events import ARRAY_DECODER
from advisor.parsers.trace_view.timestamps import TimestampParser
from advisor.parsers.traces.flows import flow_key

SAMPLE = "1700000000000200.001"


def _one_by_one(parse: TimestampParser, values: list[str | float]) -> list[float] | str:
    try:
        return [parse(v) for v in values]
    except ValueError as exc:
        return str(exc)


def _many(parse: TimestampParser, values: list[str | float]) -> list[float] | str:
    try:
        return parse.many(values)
    except ValueError as exc:
        return str(exc)


def _seeded() -> TimestampParser:
    parse = TimestampParser()
    parse.seed(SAMPLE)
    return parse


@pytest.mark.parametrize(
    "values",
    [
        ["1700000000000200.001", "1700000000000300.500", "1700000000999999.999"],
        ["1700000000000200.001", "170000000000200.001"],  # a shorter one
        ["1700000000000200.001", "1800000000000200.001"],  # another prefix
        ["1700000000000200.001", 5.5],  # a number among them
        ["1700000000000200.001", "17000000000.0200.01"],  # two points
        ["1700000000000200.001", "1700000000000nan.00"],  # letters
        ["1700000000000200.001", "-700000000000200.001"],  # a sign
        ["17000000000002000011"],  # no point, the sample's length
        [],
    ],
)
def test_many_times_are_each_time_as_read_alone(values: list[str | float]):
    assert _many(_seeded(), values) == _one_by_one(_seeded(), values)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.from_regex(r"1700000[0-9]{9}\.[0-9]{3}", fullmatch=True),
            st.from_regex(r"-?[0-9.]{1,21}", fullmatch=True),
            st.floats(allow_nan=True, allow_infinity=True),
        ),
        max_size=12,
    )
)
def test_many_times_agree_with_one_at_a_time_on_any_values(values: list[str | float]):
    found, expected = _many(_seeded(), values), _one_by_one(_seeded(), values)
    if isinstance(expected, list) and isinstance(found, list):
        assert [math.isnan(v) for v in found] == [math.isnan(v) for v in expected]
        assert [v for v in found if not math.isnan(v)] == [v for v in expected if not math.isnan(v)]
    else:
        assert found == expected


def test_an_unseeded_parser_reads_many_times_one_at_a_time():
    assert TimestampParser().many([SAMPLE]) == _one_by_one(TimestampParser(), [SAMPLE])


@pytest.mark.parametrize(
    "values",
    [
        [1.0, 0.0, 2.5],
        [1.0, "2.5"],
        [1.0, -1.0],
        [1.0, float("nan")],
        [1.0, float("inf")],
        [1.0, 1e30],
        ["x"],
        [],
    ],
)
def test_durations_are_each_duration(values: list[float | str]):
    try:
        expected: list[float] | str = [duration(v) for v in values]
    except ValueError as exc:
        expected = str(exc)
    try:
        found: list[float] | str = durations(values)
    except ValueError as exc:
        found = str(exc)
    assert found == expected


@pytest.mark.parametrize(
    "values",
    [
        ["1", "22", "333"],
        ["1234567890123456789"],  # 19 digits: hashed
        ["a1", "1"],
        [1, 2, -3],
        [1 << 63, 1],
        [True, 2],
        ["1", 2],
        [2, "1"],
    ],
)
def test_flow_keys_are_each_flow_key(values: list[int | str]):
    assert flow_keys(values) == [flow_key(v) for v in values]


def test_many_numbers_are_packed_into_an_array():
    floats, ints = array("d", [1.0]), array("q")
    extend(floats, [2.5, 3])
    extend(ints, [1, -(1 << 63)])
    assert list(floats) == [1.0, 2.5, 3.0] and list(ints) == [1, -(1 << 63)]


def _events(*events: str) -> list:
    return ARRAY_DECODER.decode(("[" + ", ".join(events) + "]").encode())


def _x(pid: int, name: str, ts: str, dur: str = "2.0") -> str:
    return f'{{"ph": "X", "name": "{name}", "pid": {pid}, "tid": 1, "ts": "{ts}", "dur": {dur}}}'


def _flow(ph: str, cat: str, key: str, ts: str) -> str:
    return f'{{"ph": "{ph}", "name": "f", "cat": "{cat}", "id": {key}, "pid": 1, "ts": "{ts}"}}'


def _named(pid: int, name: str) -> str:
    return f'{{"ph": "M", "name": "process_name", "pid": {pid}, "args": {{"name": "{name}"}}}}'


TRACE = [
    _named(2, "Ascend Hardware"),
    _flow("s", "HostToDevice", '"1"', "1700000000000001.000"),
    _flow("f", "HostToDevice", '"1"', "1700000000000010.000"),
    _x(2, "MatMul", "1700000000000010.000"),
    _x(2, "MatMul", "1700000000000020.000", '"3.5"'),  # a duration written as a string
    _x(3, "Notify_Wait", "1700000000000021.000"),
    _flow("s", "async_npu", "7", "1700000000000022.000"),
    _flow("s", "fwdbwd", "8", "1700000000000022.000"),  # a category not read
    _x(2, "hcom_allReduce__1", "1700000000000030.000"),
    _x(3, "Notify_Wait", "1700000000000031.000"),
    _named(3, "HCCL"),  # named after its rows: they are dropped
    _flow("f", "async_npu", "7", "1700000000000040.000"),
    _x(2, "MatMul", "1700000000000040.000"),
    _x(4, "Memcpy", "170000000000050.000"),  # a time of another length
    _flow("s", "HostToDevice", '"12345678901234567890"', "1700000000000041.000"),
    _flow("f", "HostToDevice", '"12345678901234567890"', "1700000000000050.000"),
    _x(2, "MatMul", "1700000000000050.000"),
]


def _rows(acc: Accumulator) -> dict[tuple[object, ...], list[object]]:
    return {key: list(column) for key, column in acc.columns().items()}


def test_a_batch_is_read_as_its_events_one_batch_each():
    whole = Accumulator(default_taxonomy())
    whole.ts.seed(SAMPLE)
    whole.add(_events(*TRACE))
    alone = Accumulator(default_taxonomy())
    alone.ts.seed(SAMPLE)
    for event in TRACE:
        alone.add(_events(event))
    assert _rows(whole) == _rows(alone)
    assert list(whole.starts[2]) == [10.0, 20.0, 30.0, 40.0, 50.0]
    assert list(whole.ends[2]) == [12.0, 23.5, 32.0, 42.0, 52.0]
    assert len(whole.starts[3]) == 0
    assert list(whole.flows["HostToDevice"].start_ts) == [1.0, 41.0]
    assert list(whole.flows["async_npu"].finish_ts) == [40.0]
    assert "fwdbwd" not in whole.flows


@pytest.mark.parametrize(
    ("event", "named"),
    [
        (_x(2, "MatMul", "1700000000000060.000", "-1.0"), "dur -1.0"),
        (_x(2, "MatMul", "1700000000000060.000", '"soon"'), "could not convert"),
        (_x(2, "MatMul", "1700000000000x60.000"), "x60.000"),
        (_flow("f", "HostToDevice", '"9"', "1e999"), "1e999"),
    ],
)
def test_a_bad_time_in_a_batch_is_named(event: str, named: str):
    acc = Accumulator(default_taxonomy())
    acc.ts.seed(SAMPLE)
    acc.add(_events(*TRACE))
    with pytest.raises(BadEvent, match=named):
        acc.add(_events(_x(2, "MatMul", "1700000000000055.000"), event))
