"""The host calls that wait for the device, on PyTorch traces: which ones, how long, where."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.app.pipeline import profile_facts
from advisor.parsers.kineto.blocking import BlockingEvents, blocking_calls

KINETO = Path(__file__).resolve().parents[2] / "shared" / "real" / "kineto"


def test_a_wait_inside_another_counts_once_with_its_copy_kind():
    events = BlockingEvents(
        waits=[(10.0, 50.0, "aten::item"), (11.0, 49.0, "aten::_local_scalar_dense")],
        copies={7: (12.0, 48.0, "cudaMemcpyAsync"), 8: (60.0, 70.0, "cudaMemcpyAsync")},
        pageable={7: ("Memcpy DtoH (Device -> Pageable)", 8)},
        ranges=[(0.0, 100.0, "outer"), (5.0, 55.0, "## init ##")],
    )
    calls = blocking_calls(events)
    # copy 8 has no pageable device copy: asynchronous, not a wait
    assert [(c.call, c.memory, c.bytes, c.range) for c in calls] == [
        ("aten::item", "Memcpy DtoH (Device -> Pageable)", 8, "## init ##")
    ]


def test_a_call_outside_any_range_has_none():
    calls = blocking_calls(BlockingEvents(waits=[(1.0, 2.0, "cudaStreamSynchronize")]))
    assert [(c.call, c.memory, c.range) for c in calls] == [("cudaStreamSynchronize", "", "")]


@pytest.mark.skipif(not KINETO.is_dir(), reason="../shared/real is absent")
def test_the_torchrec_trace_blocks_in_item_reads_of_pageable_copies():
    facts = profile_facts(KINETO / "trace_diff__test__test.json.gz")
    # host waits are nearly half the step there, mostly .item() inside all2all_tw_data:init
    assert facts.value("host.blocking_ratio") == pytest.approx(0.4708, abs=1e-3)
    top = facts.value("host.blocking_calls")[0]
    assert top["call"] == "aten::item"
    assert top["memory"] == "Memcpy DtoH (Device -> Pageable)"
    assert top["range"] == "## all2all_tw_data:init ##"
    assert 0.0 < facts.value("host.blocking_idle_share") <= 1.0
    # but the device keeps working through most of those waits: they cost little step time,
    # and the symptom measured on that cost stays quiet
    assert facts.value("host.blocking_idle_ratio") < 0.05
