"""Each millisecond of the step lands in one cause: a pipeline's receive wait, which the step
model counts inside the exposed communication, is the pipeline's time and is not counted again
for the collectives; the ranks a job fact was measured on are the ranks its note names."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.app.diagnose import run_diagnose
from advisor.app.job import JobOptions
from advisor.app.pipeline import profile_facts
from advisor.model import FactSet
from tests.conftest import REAL
from tests.synth import PRESETS, write_profile
from tests.synth.cluster_file import StageSpec, write_cluster_analysis

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "profiles" / "pipeline-bubble"
QWEN3_PP2 = REAL / "ascend-qwen3-pp2-4rank"
# the step model's disjoint shares of the step (exposed communication split in two)
PARTS = (
    "step.compute_ratio",
    "step.comm_exposed_collective_ratio",
    "step.pipeline_wait_ratio",
    "step.free_ratio",
    "step.preparing_ratio",
)


def _ranks(facts: FactSet) -> list[str]:
    return sorted({f.scope for f in facts.facts if f.scope.startswith("rank:")})


def _assert_parts_add_up(facts: FactSet, scope: str) -> None:
    parts = [facts.value(p, scope) for p in PARTS]
    assert all(p is not None for p in parts), (scope, parts)
    assert sum(parts) == pytest.approx(1.0, abs=1e-6), (scope, parts)
    exposed = facts.value("step.comm_exposed_ratio", scope)
    split = facts.value("step.pipeline_wait_ratio", scope) + facts.value(
        "step.comm_exposed_collective_ratio", scope
    )
    assert split == pytest.approx(exposed, abs=1e-9)


def test_every_rank_of_the_bubble_example_splits_its_step_into_disjoint_parts():
    facts = profile_facts(EXAMPLE)
    ranks = _ranks(facts)
    assert len(ranks) == 8
    for scope in ranks:
        _assert_parts_add_up(facts, scope)
        # the receive wait is the Bubble column, almost all of the exposed communication
        assert facts.value("step.pipeline_wait_ratio", scope) == pytest.approx(
            facts.value("step.bubble_ratio", scope)
        )
        assert "Bubble" in facts.get("step.pipeline_wait_ratio", scope).source


def test_the_bubble_leads_and_no_second_bottleneck_recounts_it():
    run = run_diagnose(JobOptions(profile=EXAMPLE))
    costs = {b.id: b.cost_ratio for b in run.diagnosis.bottlenecks}
    facts = run.facts
    assert run.diagnosis.main is not None and run.diagnosis.main.id == "bottleneck.pipeline"
    # before: communication was charged 40.9% of the step for the same receive wait
    collective = facts.value("step.comm_exposed_collective_ratio")
    assert costs["bottleneck.communication"] <= max(0.0, collective - 0.10) + 1e-9
    # the costs of all bottlenecks fit in the step's non-compute time, measured once each
    assert sum(costs.values()) <= 1.0 - facts.value("step.compute_ratio") + 1e-9


def test_job_facts_of_one_stage_name_the_ranks_they_come_from(tmp_path: Path):
    # a 16-rank job: the cluster file gives every rank's step model, and only two ranks of
    # the faster stage were kept with their communication files
    base = PRESETS["healthy"].with_(steps=3, layers=2)
    write_cluster_analysis(
        tmp_path,
        [
            StageSpec(list(range(8)), base.with_(world_size=16, compute_scale=1.4), 300.0),
            StageSpec(list(range(8, 16)), base.with_(world_size=16), bubble_us=6000.0),
        ],
    )
    for rank in (8, 9):
        scenario = base.with_(
            rank=rank,
            world_size=16,
            pipeline_stages=2,
            exposed_comm="batchsendrecv",
            comm_exposed_us=6200.0,
        )
        write_profile(tmp_path, scenario)
    facts = profile_facts(tmp_path)
    assert facts.value("pipeline.stage_ranks")[0] == list(range(8))  # the slowest, by compute
    for fact_id in ("comm.wait_ratio", "comm.p2p_ratio"):
        note = facts.get(fact_id).note
        assert "2 ranks (8, 9)" in note, note
        assert "none of them in the slowest pipeline stage" in note, note
    # the step model's facts do come from the slowest stage, and say so
    assert "ranks (0, 1, 2, 3, 4, 5, 6, 7) of the slowest" in facts.get("step.free_ratio").note


def test_real_pipeline_job_charges_send_recv_to_the_pipeline_once():
    if not QWEN3_PP2.exists():
        pytest.skip(f"real data not available ({QWEN3_PP2} is absent)")
    run = run_diagnose(JobOptions(profile=QWEN3_PP2))
    facts = run.facts
    for scope in _ranks(facts):
        _assert_parts_add_up(facts, scope)
    # torch_npu writes Bubble 0 for batched send/recv: the wait is communication.json's send/recv
    assert facts.value("step.bubble_ratio") == 0.0
    assert facts.value("step.pipeline_wait_ratio") == pytest.approx(facts.value("comm.p2p_ratio"))
    costs = {b.id: b.cost_ratio for b in run.diagnosis.bottlenecks}
    exposed = facts.value("step.comm_exposed_ratio")
    wait = facts.value("step.pipeline_wait_ratio")
    # and the stage peers' wait for the stage's slowest rank is the slow rank's
    slowest = facts.value("ranks.wait_for_slowest_ratio")
    assert costs["bottleneck.communication"] == pytest.approx(exposed - 0.10 - wait - slowest)
    assert run.diagnosis.main is not None and run.diagnosis.main.id == "bottleneck.pipeline"


def test_a_slow_rank_is_charged_its_peers_wait_once():
    run = run_diagnose(JobOptions(profile=EXAMPLE.parent / "slow-rank"))
    facts, costs = run.facts, {b.id: b.cost_ratio for b in run.diagnosis.bottlenecks}
    wait = facts.value("ranks.wait_for_slowest_ratio")
    # the slow rank's cost is a share of the step: at most what its peers wait for it
    assert 0 < costs["bottleneck.slow-rank"] <= wait
    # that wait sits in the peers' exposed communication: not charged to communication again
    exposed = facts.value("step.comm_exposed_ratio")
    assert costs["bottleneck.communication"] == pytest.approx(max(0.0, exposed - 0.10 - wait))
    assert sum(costs.values()) <= 1.0 - facts.value("step.compute_ratio") + 1e-9


def test_a_last_step_holding_the_next_steps_work_is_not_a_step(tmp_path: Path):
    import json

    from tests.synth.kineto_file import kineto_trace

    data = kineto_trace(steps=5)
    events = data["traceEvents"]
    last = max(
        (e for e in events if str(e.get("name", "")).startswith("ProfilerStep#")),
        key=lambda e: e["ts"],
    )
    # the last step launches the next batch's all-to-all, which waits for a slow peer: the
    # device runs it long after the step's own work
    at = last["ts"] + last["dur"] - 30.0
    events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100,
                   "tid": 100, "ts": at, "dur": 5.0, "args": {"correlation": 99_999}})  # fmt: skip
    events.append({"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32",
                   "pid": 0, "tid": "stream 20", "ts": at + 2_000.0, "dur": 6_000.0,
                   "args": {"correlation": 99_999, "device": 0, "stream": 20}})  # fmt: skip
    path = tmp_path / "rank0.pt.trace.json"
    path.write_text(json.dumps(data))
    facts = profile_facts(path)
    assert "last step 5 dropped" in facts.get("step.steady_steps").note
    # one window per step: the attribution's step is the step time
    assert facts.value("attrib.step_ms") == pytest.approx(facts.value("step.time_ms"), rel=1e-3)
