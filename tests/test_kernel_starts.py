"""kernel_details.csv's start column is read a chunk of rows at a time
(parsers/ascend/kernel_starts.py): the types by start and the step spans must be the row-by-row
reading's, whatever the cells hold."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.parsers.ascend import kernel_starts
from advisor.parsers.ascend.kernel_starts import KernelStarts, add_span, add_type

CELLS = st.one_of(
    st.from_regex(r"17000000000[0-9]{5}\.[0-9]{3}\t", fullmatch=True),
    st.sampled_from(["N/A", "", "nan", "1700000000000205", "12.5", "inf"]),
)
ROWS = st.lists(
    st.tuples(
        CELLS,
        st.sampled_from(["MatMul", "Add"]),
        st.sampled_from(["1", "2", "3"]),
        st.sampled_from([0.0, 1.5, 20.0]),
    ),
    max_size=40,
)


def _same(a: object, b: object) -> bool:
    """Equal, NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return _same(list(a.items()), list(b.items()))  # NaN keys are each their own
    return a == b


@settings(max_examples=300, deadline=None)
@given(ROWS, st.sampled_from([1, 3, 1 << 15]))
def test_chunks_read_as_the_rows_one_by_one(rows, chunk):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kernel_starts, "CHUNK_ROWS", chunk)
        starts = KernelStarts(True, True)
        for row in rows:
            starts.add(*row)
        starts.flush()
    types: dict[float, str] | None = {}
    spans: dict[str, list[float]] = {}
    for cell, op_type, step, duration in rows:
        types = add_type(types, cell, op_type)
        add_span(spans, cell, step, duration)
    assert _same(starts.types_at, types)
    assert _same(starts.spans, spans)


def test_past_the_most_kernels_kept_no_type_is_kept(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(kernel_starts, "KERNEL_TYPES_MAX", 3)
    monkeypatch.setattr(kernel_starts, "CHUNK_ROWS", 2)
    starts = KernelStarts(True, False)
    for i in range(5):
        starts.add(f"1700000000000{i}00.000", "Add", "1", 1.0)
    starts.flush()
    assert starts.types_at is None and starts.spans is None
