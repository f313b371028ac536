"""Per-operator queue time on Ascend: the launch-to-start wait of each linked device task, its
execution, and what the device ran meanwhile; on hand-made timelines, synthetic profiles in
both export formats and the real DDP job under ../shared/real."""

from __future__ import annotations

from array import array
from pathlib import Path
from typing import Any

import pytest

from advisor.app.pipeline import profile_facts
from advisor.parsers.traces.intervals import Intervals
from advisor.parsers.traces.queue import DeviceQueue, read_queue
from tests.conftest import REAL
from tests.synth import PRESETS, write_profile
from tests.synth.db_file import write_profile_db

NAN = float("nan")


def _iv(*pairs: tuple[float, float]) -> Intervals:
    return Intervals(array("d", [a for a, _ in pairs]), array("d", [b for _, b in pairs]))


def _queue() -> DeviceQueue:
    # a kernel 0-10; an all-reduce 10-50 (its own task on the device lane, launched at 9);
    # an optimizer kernel launched at 12 that starts when the all-reduce ends, at 50; a kernel
    # launched at 1 that waits behind the first kernel until 10 while the all-reduce has not
    # started; a task at 60 with no launch flow
    return DeviceQueue(
        starts=[0.0, 10.0, 10.0, 50.0, 60.0],
        ends=[10.0, 50.0, 12.0, 55.0, 61.0],
        launch_at=[0.0, 9.0, 1.0, 12.0, NAN],
        collectives={"allreduce": _iv((10.0, 50.0))},
        windows=[(1, 0.0, 100.0), (2, 100.0, 200.0)],
    )


def test_queue_time_and_what_the_task_waited_behind():
    found = read_queue(_queue(), {1}, lambda at: at in (0.0, 50.0)).ops
    # the unlinked task at 60 is left out
    assert [(op.start, op.queue_us) for op in found] == [(0, 0), (10, 1), (10, 9), (50, 38)]
    ops = {op.start: op for op in found}
    optimizer = ops[50.0]
    assert optimizer.queue_us == 38.0 and optimizer.exec_us == 5.0
    assert optimizer.behind_kind == "allreduce"  # the device only communicated 12-50
    assert ops[0.0].queue_us == 0.0 and ops[0.0].behind_start != ops[0.0].behind_start


def test_a_task_waiting_behind_compute_names_the_kernel():
    queue = DeviceQueue(
        starts=[0.0, 30.0],
        ends=[30.0, 31.0],
        launch_at=[0.0, 2.0],
        collectives={},
        windows=[(1, 0.0, 40.0)],
    )
    (_, second) = read_queue(queue, {1}).ops
    assert second.queue_us == 28.0
    assert second.behind_kind is None and second.behind_start == 0.0


def test_the_comm_share_counts_overlapping_waits_once_and_only_exposed_comm():
    reading = read_queue(_queue(), {1}, lambda at: at in (0.0, 50.0))
    waited, behind = reading.waited_us, reading.comm_only_us
    # the waits 1-10, 9-10 and 12-50 (the task at 0 waited none): 47 us once; the device only
    # communicated 10-50 (the kernel 0-10 ends as the all-reduce starts), 38 us of the waits
    assert waited == 47.0
    assert behind == 38.0


def test_steps_outside_the_steady_set_are_left_out():
    assert read_queue(_queue(), {2}).ops == []


def _table(path: Path) -> tuple[dict[str, dict[str, Any]], float]:
    facts = profile_facts(path)
    rows = facts.value("ops.queue_by_op")
    share = facts.value("ops.queue_wait_behind_comm_share")
    assert isinstance(rows, list) and isinstance(share, float)
    return {str(r["type"]): r for r in rows}, share


def test_synthetic_profile_both_exports_agree(tmp_path: Path):
    scenario = PRESETS["ddp-allreduce"]
    write_profile(tmp_path / "text", scenario)
    write_profile_db(tmp_path / "db", scenario)
    text, text_share = _table(tmp_path / "text")
    db, db_share = _table(tmp_path / "db")
    assert text == db and text_share == db_share
    # the synthetic host launches a step's kernels well ahead: they queue behind compute
    # (the longest kernel running), none behind the all-reduce that ends each step
    assert text["MatMulV2"]["queue_ms_per_step"] > 5.0
    assert text["MatMulV2"]["waited_behind"] == "FlashAttentionScoreGrad"
    assert text_share == 0.0


def test_a_gpu_trace_leaves_queue_time_unknown():
    trace = REAL / "kineto"
    if not (trace / "trace_diff__test__test.json.gz").is_file():
        pytest.skip("../shared/real not present")
    first = trace / "trace_diff__test__test.json.gz"
    facts = profile_facts(first)
    assert facts.value("ops.queue_by_op") is None
    reasons = [m.reason for m in facts.missing if m.id == "ops.queue_by_op"]
    assert reasons and all("Ascend" in r for r in reasons)


@pytest.fixture(scope="module")
def ddp() -> dict[str, tuple[dict[str, dict[str, Any]], float]]:
    found = {}
    for name in ("ascend-ddp-2rank-text", "ascend-ddp-2rank-db"):
        path = REAL / name
        if not path.is_dir():
            pytest.skip("../shared/real not present")
        found[name] = _table(path)
    return found


OPTIMIZER_OPS = ("ForeachAddList", "ForeachMulScalar", "TensorMove")


def test_real_ddp_optimizer_operators_wait_behind_the_all_reduce(ddp):
    rows, share = ddp["ascend-ddp-2rank-text"]
    for op in OPTIMIZER_OPS:
        assert rows[op]["waited_behind"] == "allreduce (collective)"
        assert rows[op]["queue_p90_ms"] > 80.0  # the ~80 ms all-reduce, not their own time
        assert rows[op]["exec_ms_per_step"] < 3.0
    # backward kernels wait a couple of ms each
    assert rows["TransData"]["queue_median_ms"] < 2.0
    assert 0.8 < share < 0.95


def test_real_ddp_text_and_database_exports_agree(ddp):
    text, text_share = ddp["ascend-ddp-2rank-text"]
    db, db_share = ddp["ascend-ddp-2rank-db"]
    for op in (*OPTIMIZER_OPS, "TransData", "Conv2DBackpropFilter"):
        a, b = text[op]["queue_ms_per_step"], db[op]["queue_ms_per_step"]
        assert abs(a - b) <= 0.1 * max(a, b), (op, a, b)
        assert text[op]["waited_behind"] == db[op]["waited_behind"]
    assert abs(text_share - db_share) < 0.05
    # the database names the tasks that are not kernels by their TASK.taskType; the text
    # export's kernel_details.csv lists kernels only
    assert db["MEMCPY_ASYNC task"]["waited_behind"] == "allreduce (collective)"
    assert "task without a kernel row" in text and "task without a kernel row" not in db
