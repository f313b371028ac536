"""The host calls that wait for the device, on PyTorch traces and torch_npu exports: which ones,
how long, where, and the idle time they cost counted once."""

from __future__ import annotations

from array import array
from pathlib import Path

import pytest

from advisor.app.pipeline import profile_facts
from advisor.parsers.traces.blocking import BlockingEvents, blocking_calls
from advisor.parsers.traces.idle_gaps import idle_gaps
from advisor.parsers.traces.intervals import Intervals

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


def test_a_late_launch_gap_spent_blocked_is_the_waits_not_dispatchs():
    # kernels 0-10, 30-40 (launched at 25: late), 60-70 (launched at 45: late); the host
    # waited in a blocking call 12-28, inside the first gap
    starts, ends = [0.0, 30.0, 60.0], [10.0, 40.0, 70.0]
    launches = [float("nan"), 25.0, 45.0]
    blocking = Intervals(array("d", [12.0]), array("d", [28.0]))
    gaps = idle_gaps(starts, ends, 0.0, 100.0, launches, blocking)
    assert gaps.blocked == pytest.approx(16.0)  # 12-28 inside the gap 10-30
    assert gaps.host == pytest.approx(4.0 + 20.0)  # 10-12, 28-30 and the whole gap 40-60
    # every microsecond of the late launches' gaps once: dispatch + blocked
    unblocked = idle_gaps(starts, ends, 0.0, 100.0, launches)
    assert gaps.host + gaps.blocked == pytest.approx(unblocked.host)
    assert unblocked.blocked == 0.0


EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "profiles"


@pytest.mark.parametrize("example", ["blocking-copy", "ascend-blocking-sync"])
def test_blocked_idle_leaves_the_launch_gap_and_the_idle_parts_add_up(example: str):
    facts = profile_facts(EXAMPLES / example)
    step = facts.value("attrib.step_ms")
    blocked = facts.value("attrib.idle_blocked_ms")
    # the blocked idle is host.blocking_idle_ratio's time, and not the launch gap's too
    assert blocked == pytest.approx(facts.value("host.blocking_idle_ratio") * step, rel=1e-6)
    assert blocked > 0.2 * step
    assert facts.value("attrib.idle_host_ms") < 0.05 * step
    assert facts.value("host.launch_gap_ms_per_step") < 0.05 * step
    parts = [
        facts.value(f"attrib.{p}_ms")
        for p in ("idle_host", "idle_blocked", "idle_dependency", "idle_unattributed")
    ]
    assert sum(parts) == pytest.approx(facts.value("step.free_ratio") * step, rel=1e-6)


ASCEND = Path(__file__).resolve().parents[2] / "shared" / "real"


@pytest.mark.skipif(not ASCEND.is_dir(), reason="../shared/real is absent")
@pytest.mark.parametrize("export", ["ascend-ddp-2rank-text", "ascend-ddp-2rank-db"])
def test_torch_npu_exports_name_the_hosts_waits(export: str):
    facts = profile_facts(ASCEND / export)
    calls = facts.value("host.blocking_calls", "rank:0")
    # the DDP script reads 27 values a step (aten::item), and synchronises the stream twice
    assert (calls[0]["call"], calls[0]["calls_per_step"]) == ("aten::item", 27.0)
    assert {c["call"] for c in calls} == {
        "aten::item",
        "AscendCL@aclrtSynchronizeStreamWithTimeout",
    }
    # the host waits for most of the step, but the NPU keeps working meanwhile: little cost,
    # and the symptom measured on that cost stays quiet
    assert facts.value("host.blocking_ratio", "rank:0") > 0.5
    assert facts.value("host.blocking_idle_ratio", "rank:0") < 0.01
    assert facts.value("host.blocking_idle_ratio") < 0.05  # the job's, below the symptom's fine


@pytest.mark.parametrize(
    ("name", "is_range"),
    [
        ("## log_loss ##", True),
        ("DistributedDataParallel.forward", True),
        ("Optimizer.step#Adam.step", True),
        ("aclnnInplaceCopy", False),
        ("ReluBackward0", False),
        ("empty_tensor", False),
        ("aten::item", False),
    ],
)
def test_torch_npu_host_ranges_are_told_from_operators(name: str, is_range: bool):
    # torch_npu files record_function labels and operators alike as cpu_op
    from advisor.inputs.taxonomy import default_taxonomy

    assert bool(default_taxonomy().user_ranges.fullmatch(name)) is is_range
