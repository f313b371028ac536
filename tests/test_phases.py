"""Step phases from the framework's annotations, and the garbage collections inside the steps:
the interval arithmetic, the example, and the real traces under ../shared/real."""

from __future__ import annotations

import json
import shutil
from array import array
from pathlib import Path

import pytest

from advisor.app.pipeline import profile_facts
from advisor.parsers.traces.intervals import Intervals
from advisor.parsers.traces.phases import (
    DeviceOps,
    HostRanges,
    Placement,
    outermost_segments,
    phase_table,
    step_phases,
    subtract,
)
from tests.cli_run import run_cli
from tests.conftest import REAL
from tests.synth import PRESETS, write_profile
from tests.synth.db_file import write_profile_db
from tests.synth.timeline import PHASE_RANGES, plan_steps

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "profiles" / "step-phases"
RATIOS = (
    "phase.forward_ratio",
    "phase.backward_ratio",
    "phase.optimizer_ratio",
    "phase.unplaced_ratio",
    "phase.comm_exposed_ratio",
)
FORWARD, BACKWARD, OPTIMIZER = 0, 1, 2


def _iv(*pairs: tuple[float, float]) -> Intervals:
    return Intervals(array("d", [a for a, _ in pairs]), array("d", [b for _, b in pairs]))


def test_subtract_leaves_what_the_second_list_does_not_cover():
    a = _iv((0, 10), (20, 30))
    b = _iv((2, 4), (8, 22), (25, 26))
    assert subtract(a, b).pairs() == [(0, 2), (4, 8), (22, 25), (26, 30)]
    assert subtract(a, Intervals()).pairs() == a.pairs()
    assert subtract(a, _iv((-5, 40))).pairs() == []


def test_a_range_inside_another_is_the_outer_ones():
    ranges = HostRanges()
    ranges.add_phase(BACKWARD, 0, 100)  # an autograd node
    ranges.add_phase(FORWARD, 10, 20)  # a module recomputed inside it
    ranges.add_phase(OPTIMIZER, 90, 150)  # on another thread, past the node's end
    starts, ends, phases = outermost_segments(ranges)
    assert list(zip(starts, ends, phases, strict=True)) == [
        (0, 100, BACKWARD),
        (100, 150, OPTIMIZER),
    ]


def _ranges() -> HostRanges:
    ranges = HostRanges()
    ranges.add_phase(FORWARD, 0, 10)
    ranges.add_phase(BACKWARD, 10, 20)
    ranges.add_phase(OPTIMIZER, 20, 30)
    ranges.add_gc(30, 34)
    return ranges


def test_every_microsecond_counts_once():
    # forward kernel 0-40 overlaps the backward kernel 30-60 and the optimizer's 55-70; a
    # collective 65-90 runs past the compute; the host loads data 85-100 while nothing runs
    ops = DeviceOps(
        starts=[0, 30, 55, 65, 120],
        ends=[40, 60, 70, 90, 130],
        launch_at=[5, 15, 25, 26, float("nan")],
        is_comm=[False, False, False, True, False],
    )
    (step,) = step_phases([(1, 0, 140)], ops, _ranges(), ([85], [100]))
    assert step.phase_us == {
        "optimizer": 15.0,  # 55-70
        "backward": 25.0,  # 30-55
        "forward": 30.0,  # 0-30
        "other": 10.0,  # 120-130: its launch is not linked
        "comm_exposed": 20.0,  # 70-90
    }
    assert step.busy_us == 100.0 == sum(step.phase_us.values())
    assert step.data_wait_us == 10.0  # 90-100: the device was busy until 90
    assert (step.gc_us, step.gc_max_us) == (4.0, 4.0)


def test_a_trace_with_its_own_compute_lanes_counts_compute_only_there():
    # torch_npu: a wait task on the device lane (0-50) is not compute; the lanes say what is
    ops = DeviceOps(
        starts=[0, 10],
        ends=[50, 20],
        launch_at=[5, 15],
        is_comm=[False, False],
        computing=_iv((10, 20)),
        exposed=_iv((20, 45)),
    )
    (step,) = step_phases([(1, 0, 60)], ops, _ranges(), ([], []))
    assert step.phase_us["backward"] == 10.0
    assert step.phase_us["forward"] == 0.0
    assert step.phase_us["comm_exposed"] == 25.0
    assert step.busy_us == 35.0


def test_a_task_launched_after_its_range_closed_is_placed_by_its_operator():
    """With torch_npu's task queue on, the runtime launch runs on a thread of its own after
    the operator returned: here after the forward range closed (10, in the backward range),
    after the backward's (in the optimizer's) and after the optimizer's (30). The operator
    that enqueued each places it; a task no operator is linked to falls back to its runtime
    launch."""
    nan = float("nan")
    ops = DeviceOps(
        starts=[40, 50, 60, 70],
        ends=[50, 60, 70, 80],
        launch_at=[12, 32, 35, 25],
        is_comm=[False] * 4,
        enqueued_at=[9, 19, 29, nan],
    )
    table = phase_table([(1, 0, 100)], ops, _ranges(), ([], []), "no ranges")
    (step,) = table.steps
    assert step.phase_us == {
        "optimizer": 20.0,  # 60-70 by its operator (launched at 35, outside), 70-80 by launch
        "backward": 10.0,  # 50-60: enqueued at 19, launched at 32 (in the optimizer range)
        "forward": 10.0,  # 40-50: enqueued at 9, launched at 12 (in the backward range)
        "other": 0.0,
        "comm_exposed": 0.0,
    }
    assert table.placement == Placement(by_operator=3, by_launch=1)
    # placed by the runtime launch alone, one task moves to the next phase, two out of all
    ops.enqueued_at = None
    (by_launch,) = step_phases([(1, 0, 100)], ops, _ranges(), ([], []))
    assert by_launch.phase_us["forward"] == 0.0
    assert by_launch.phase_us["other"] == 20.0


@pytest.mark.parametrize("writer", [write_profile, write_profile_db], ids=["text", "db"])
def test_both_exports_place_tasks_by_their_enqueueing_operator(tmp_path: Path, writer):
    """The synthetic job's ranges close when their last operator returns, before its runtime
    launch: each phase's time is still exactly its kernels' (the first third forward, then
    backward to five sixths, the rest the optimizer's), nothing outside."""
    scenario = PRESETS["healthy"].with_(phase_ranges=True)
    writer(tmp_path, scenario)
    facts = profile_facts(tmp_path)
    plan = plan_steps(scenario)[0]
    n, lo = len(plan.kernels), 0
    for (_, upto), phase in zip(PHASE_RANGES, ("forward", "backward", "optimizer"), strict=True):
        hi = round(n * upto)
        truth_ms = sum(p.kernel.dur for p in plan.kernels[lo:hi]) / 1e6
        ratio = facts.value(f"phase.{phase}_ratio")
        assert ratio * (plan.end - plan.start) / 1e6 == pytest.approx(truth_ms, abs=1e-6)
        lo = hi
    assert facts.value("phase.unplaced_ratio") == 0.0
    note = next(f.note for f in facts.facts if f.id == "phase.optimizer_ratio")
    assert "placed by the framework operator that enqueued them (" in note
    assert "runtime launch" not in note


def test_the_example_names_its_phases():
    facts = profile_facts(EXAMPLE)
    assert facts.value("phase.optimizer_ratio") == pytest.approx(0.21, abs=0.01)
    assert facts.value("phase.data_wait_ratio") == pytest.approx(0.105, abs=0.005)
    assert facts.value("phase.backward_ratio") == pytest.approx(
        2 * facts.value("phase.forward_ratio")
    )
    assert facts.value("phase.unplaced_ratio") == 0.0
    assert facts.value("host.gc_max_ms") == 2.0
    total = sum(facts.value(f) for f in RATIOS) + facts.value("phase.data_wait_ratio")
    assert total <= 1.0


def test_the_report_shows_the_phases(tmp_path: Path):
    out = tmp_path / "report.html"
    assert run_cli("report", str(EXAMPLE), "-o", str(out)).exit_code == 0
    html = out.read_text()
    assert "<h3>Step phases</h3>" in html
    assert "Python garbage collection: 2.00 ms per step" in html


def _why(facts: object, fact_id: str) -> str:
    return next(m.reason for m in facts.missing if m.id == fact_id)  # type: ignore[attr-defined]


def _phase_sum(facts: object) -> float:
    return sum(facts.value(f) for f in RATIOS) + facts.value("phase.data_wait_ratio")  # type: ignore[attr-defined]


@pytest.mark.skipif(not REAL.is_dir(), reason="../shared/real is not beside the checkout")
def test_torch_npu_ddp_phases_agree_with_the_step_model():
    facts = profile_facts(REAL / "ascend-ddp-2rank-text")
    assert facts.value("phase.optimizer_ratio") > 0.01
    # placed by their enqueueing operators, the backward's kernels are backward time (by their
    # runtime launch, most fell in the optimizer range or outside all: forward led)
    assert facts.value("phase.backward_ratio") > facts.value("phase.forward_ratio") > 0
    # exposed communication is torch_npu's Communication(Not Overlapped) lane, as in the step
    # model (the step model's step time is step_trace_time.csv's, a few percent apart)
    assert facts.value("phase.comm_exposed_ratio") == pytest.approx(
        facts.value("step.comm_exposed_ratio"), abs=0.03
    )
    assert _phase_sum(facts) <= 1.0
    assert "gc_detect_threshold null" in _why(facts, "host.gc_ratio")


@pytest.mark.skipif(not REAL.is_dir(), reason="../shared/real is not beside the checkout")
def test_kineto_ddp_phases_place_every_kernel():
    facts = profile_facts(REAL / "kineto" / "nccl_parser_config__nccl_data.json.gz")
    assert facts.value("phase.unplaced_ratio") == 0.0
    assert facts.value("phase.backward_ratio") > facts.value("phase.forward_ratio") > 0
    assert facts.value("phase.optimizer_ratio") > 0
    assert _phase_sum(facts) <= 1.0
    assert "record_python_gc_info" in _why(facts, "host.gc_ratio")


@pytest.mark.skipif(not REAL.is_dir(), reason="../shared/real is not beside the checkout")
def test_a_single_process_loader_is_the_devices_wait():
    facts = profile_facts(REAL / "kineto-legacy" / "resnet50_num_workers_0")
    wait = facts.value("phase.data_wait_ratio")
    assert 0.2 < wait <= facts.value("data.loader_ratio")


@pytest.mark.skipif(not REAL.is_dir(), reason="../shared/real is not beside the checkout")
def test_a_profile_without_trace_or_database_says_where_the_phases_are_read():
    # Qwen3 PP2 keeps kernel_details.csv and analysis.db, neither trace_view.json nor the
    # framework's database
    facts = profile_facts(REAL / "ascend-qwen3-pp2-4rank")
    assert "no trace_view.json or database export" in _why(facts, "phase.optimizer_ratio")


@pytest.mark.skipif(not REAL.is_dir(), reason="../shared/real is not beside the checkout")
def test_a_database_export_s_phases_come_from_its_framework_ranges():
    """PYTORCH_API holds the same ranges trace_view.json does (DistributedDataParallel.forward,
    autograd::engine::evaluate_function, Optimizer.step#SGD.step): rank 0's phases agree with
    the text export of the same job (another run) and with the step model; rank 1's export has
    no OVERLAP_ANALYSIS, so its phases are withheld rather than counting the all-reduce for the
    phase that launched it."""
    db = profile_facts(REAL / "ascend-ddp-2rank-db")
    text = profile_facts(REAL / "ascend-ddp-2rank-text")
    assert db.value("phase.forward_ratio") == pytest.approx(
        text.value("phase.forward_ratio"), abs=0.005
    )
    assert 0 < db.value("phase.optimizer_ratio") < 0.05
    assert db.value("phase.comm_exposed_ratio") == pytest.approx(
        db.value("step.comm_exposed_ratio"), abs=0.03
    )
    assert _phase_sum(db) <= 1.0
    # placed by their enqueueing operators, both exports give the optimizer the same share
    # (by the runtime launch, which runs after the operator returned: 2.9% against 0.8%)
    assert db.value("phase.optimizer_ratio") == pytest.approx(
        text.value("phase.optimizer_ratio"), abs=0.002
    )
    assert db.value("phase.unplaced_ratio") < 0.005 and text.value("phase.unplaced_ratio") < 0.005
    for facts in (db, text):
        note = next(f.note for f in facts.facts if f.id == "phase.optimizer_ratio")
        assert "by the framework operator that enqueued them" in note
    scopes = {f.scope for f in db.facts if f.id == "phase.table"}
    assert "rank:0" in scopes and "rank:1" not in scopes
    from advisor.inputs.taxonomy import default_taxonomy
    from advisor.parsers.ascend.rank import read_rank

    rank1 = read_rank(
        REAL / "ascend-ddp-2rank-db" / "rank1_ascend_pt", default_taxonomy(), False, []
    )
    assert rank1.trace is not None and rank1.trace.phases is not None
    assert "no OVERLAP_ANALYSIS" in str(rank1.trace.phases.absent)


@pytest.mark.skipif(not REAL.is_dir(), reason="../shared/real is not beside the checkout")
def test_torch_npu_gc_ranges_are_read(tmp_path: Path):
    """A rank whose profiler_info turned GC detection on, with a "GC" range in the Python GC
    lane as torch_npu writes it (msprof-analyze's test inputs show the event's shape)."""
    rank = tmp_path / "rank0_ascend_pt"
    shutil.copytree(REAL / "ascend-ddp-2rank-text" / "rank0_ascend_pt", rank)
    info_path = rank / "profiler_info_0.json"
    info = json.loads(info_path.read_text())
    info["config"]["experimental_config"]["_gc_detect_threshold"] = 1
    info_path.write_text(json.dumps(info))
    trace_path = rank / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    trace = json.loads(trace_path.read_text())
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    step = next(e for e in events if str(e.get("name", "")).startswith("ProfilerStep#"))
    start = float(step["ts"]) + 1000.0
    events.append(
        {"ph": "M", "name": "process_name", "pid": 9, "tid": 0, "args": {"name": "Python GC"}}
    )
    events.append(
        {
            "ph": "X",
            "name": "GC",
            "cat": "GC",
            "pid": 9,
            "tid": 3,
            "ts": f"{start:.3f}",
            "dur": 7800.0,
            "args": {},
        }
    )
    trace_path.write_text(json.dumps(trace))
    facts = profile_facts(tmp_path)
    assert facts.value("host.gc_max_ms") == pytest.approx(7.8)
    assert facts.value("host.gc_ratio") == pytest.approx(7.8 / 156.0, abs=0.002)
