"""The lanes of a PyTorch trace's operations (window.lanes_of): the union of every kernel and of
every operation is built from the compute, communication and memory unions, and must be the
lane one pass over those operations in start order gives, bound for bound."""

from __future__ import annotations

import random
from array import array
from itertools import compress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.parsers.kineto.columns import COMMUNICATION, COMPUTE, MEMORY, DeviceOps
from advisor.parsers.kineto.window import lanes_of, merged_lanes
from advisor.parsers.traces.intervals import Intervals
from tests.conftest import fuzz_settings


def _one_pass(starts: list[float], ends: list[float]) -> Intervals:
    """The merged lane of intervals in start order, merged as they come (the definition)."""
    out = Intervals()
    for start, end in zip(starts, ends, strict=True):
        if out.ends and start <= out.ends[-1]:
            out.ends[-1] = max(out.ends[-1], end)
        else:
            out.starts.append(start)
            out.ends.append(end)
    return out


def _ops(rows: list[tuple[float, float, int]]) -> DeviceOps:
    ops = DeviceOps()
    sigs = ops.signatures
    by_kind = {kind: sigs.id(kind, kind, 0, -1, 0) for kind in (COMPUTE, COMMUNICATION, MEMORY)}
    for start, end, kind in sorted(rows, key=lambda r: (r[0], r[1])):
        ops.start.append(start)
        ops.end.append(end)
        ops.signature.append(by_kind[kind])
        ops.correlation.append(-1)
    return ops


# small integer times: touching, nested, equal and zero-length intervals are common
_ROWS = st.lists(
    st.tuples(
        st.integers(0, 60),
        st.integers(0, 12),
        st.sampled_from([COMPUTE, COMPUTE, COMPUTE, COMMUNICATION, MEMORY]),
    ).map(lambda r: (float(r[0]), float(r[0] + r[1]), r[2])),
    max_size=60,
)


@given(_ROWS)
@fuzz_settings(ci_examples=300)
def test_lanes_are_the_one_pass_unions(rows: list[tuple[float, float, int]]) -> None:
    ops = _ops(rows)
    kinds = ops.kinds()
    lanes = lanes_of(ops, {0: "allreduce"})

    def union(wanted: tuple[int, ...]) -> Intervals:
        picked = [k in wanted for k in kinds]
        return _one_pass(list(compress(ops.start, picked)), list(compress(ops.end, picked)))

    for lane, wanted in (
        (lanes.compute, (COMPUTE,)),
        (lanes.comm, (COMMUNICATION,)),
        (lanes.kernels, (COMPUTE, COMMUNICATION)),
        (lanes.every, (COMPUTE, COMMUNICATION, MEMORY)),
    ):
        expected = union(wanted)
        assert (lane.starts, lane.ends) == (expected.starts, expected.ends), wanted


@pytest.mark.parametrize("seed", range(5))
def test_few_intervals_merged_into_a_long_lane(seed: int) -> None:
    """A long lane (back-to-back kernels with gaps) and a few long intervals over it."""
    rng = random.Random(seed)
    t, starts, ends = 0.0, [], []
    for _ in range(5000):
        t += rng.choice([0.0, 1.5, 4.0, 40.0])
        starts.append(t)
        t += rng.choice([0.5, 3.0, 20.0])
        ends.append(t)
    lane = _one_pass(starts, ends)
    few_starts = sorted(rng.uniform(0, t) for _ in range(40))
    few = _one_pass(few_starts, [s + rng.choice([0.0, 2.0, 300.0]) for s in few_starts])
    merged = merged_lanes(lane, few)
    both = sorted(
        zip([*lane.starts, *few.starts], [*lane.ends, *few.ends], strict=True),
    )
    expected = _one_pass([s for s, _ in both], [e for _, e in both])
    assert merged.starts == expected.starts
    assert merged.ends == expected.ends
    assert len(merged) < len(lane)  # the few did join some of the lane's intervals
    assert merged_lanes(lane, Intervals()) is lane
    assert isinstance(merged.starts, array)
