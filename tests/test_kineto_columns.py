"""Kineto device operations and launches kept as columns: lookups and order as a dict and a
sort of objects would give them."""

from __future__ import annotations

from array import array

import pytest

from advisor.parsers.kineto.columns import DeviceOps, LaunchIndex


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


def test_steps_that_launched_nothing_are_left_out_and_the_others_keep_their_numbers(
    tmp_path,  # type: ignore[no-untyped-def]
) -> None:
    import json

    from advisor.inputs.taxonomy import default_taxonomy
    from advisor.parsers.kineto.reader import read_kineto
    from tests.synth.kineto_file import kineto_trace

    data = kineto_trace(steps=5, kernels_per_step=10)
    events = data["traceEvents"]
    # step 2 loses its launches (a runtime thread the profiler missed): its kernels follow
    # the stream into step 1; a sixth step opens after the last kernel (the profiler stopped)
    windows = {e["name"]: e for e in events if e["name"].startswith("ProfilerStep#")}
    second = windows["ProfilerStep#2"]
    events[:] = [
        e
        for e in events
        if not (
            e["cat"] == "cuda_runtime" and second["ts"] <= e["ts"] < second["ts"] + second["dur"]
        )
    ]
    last = windows["ProfilerStep#5"]
    events.append(dict(last, name="ProfilerStep#6", ts=last["ts"] + last["dur"] + 10.0))
    path = tmp_path / "rank0.pt.trace.json"
    path.write_text(json.dumps(data))
    rank = read_kineto(path, default_taxonomy(), split=False)
    assert [row.step for row in rank.step_rows or []] == [1, 3, 4, 5]
    assert any("step(s) 2, 6 launched no device work" in w for w in rank.warnings)
    assert rank.kernels is not None
    assert {g.step for g in rank.kernels.groups} == {1, 3, 4, 5}


@pytest.mark.parametrize("signatures", [1, 3, 256, 257, 1000])
def test_kinds_are_each_rows_signature_kind(signatures: int) -> None:
    """Each row's kind, looked up at C speed while the ids fit a byte, one by one beyond."""
    ops = DeviceOps()
    for s in range(signatures):
        ops.signatures.id(s, (s * 7) % 3, 0, -1, 0)
    rows = [(r * 31) % signatures for r in range(5000)] + [signatures - 1, 0]
    ops.signature = array("i", rows)
    assert ops.kinds() == bytearray(ops.signatures.kind[s] for s in rows)
