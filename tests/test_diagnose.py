"""Symptoms, bottleneck ranking and unknowns on generated profiles and at threshold edges."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.app.diagnose import run_diagnose
from advisor.app.job import JobOptions
from advisor.app.rulesets import load_graph
from advisor.cli import app
from advisor.core.validation import schema_errors
from advisor.core.yamlio import load_data
from advisor.engine.conditions import Context
from advisor.engine.diagnose import (
    CollectBy,
    Diagnosis,
    Symptom,
    Unknown,
    diagnose,
    evaluate_symptom,
)
from advisor.engine.diagnose import _collections as collections
from advisor.engine.rule_model import SymptomRule
from advisor.model import Lead
from advisor.render.diagnosis import diagnosis_text

CASES = Path(__file__).parent / "cases"
EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "profiles"
EDGES = load_data(CASES / "symptom_edges.yaml")
EXPECTED = load_data(CASES / "diagnose_expected.yaml")
GRAPH = load_graph()
runner = CliRunner()


def test_every_symptom_has_edge_cases():
    assert set(EDGES) == {r.id for r in GRAPH.ruleset.of_kind("symptom")}


@pytest.mark.parametrize(
    ("rule_id", "value", "expected"),
    [(rule_id, value, level) for rule_id, cases in EDGES.items() for value, level in cases],
)
def test_symptom_threshold_edges(rule_id: str, value: float, expected: str):
    rule = GRAPH.ruleset[rule_id]
    assert isinstance(rule, SymptomRule)
    facts = {
        "step.compute_ratio": 0.8,
        "ranks.count": 4,
        "job.pipeline_parallel": True,
        "pipeline.stages": 2,
        "attrib.preparing_not_loading_ratio": 0.0,
        "comm.links_compared": 12,
        "comm.slowest_link": {"link": "3-11", "transport": "RDMA"},
        "host.dispatch_bound_ratio": 0.2,
        "step.comm_exposed_ratio": 0.3,
        "data.loader_ratio": 0.2,
        "ops.matmul_share": 0.5,
        "profile.framework": "torch_npu",
        rule.measure: value,
    }
    outcome = evaluate_symptom(rule, Context(facts=facts))
    if expected == "none":
        assert outcome is None
    else:
        assert isinstance(outcome, Symptom)
        assert outcome.level == expected
        assert outcome.value == value


def test_a_recorded_variable_is_read_as_text_and_unrecorded_is_unknown():
    """torch_npu records its variables as text, "" when unset: "1" is the value 1, "" is the
    default (no finding); a profiler that records no environment says nothing, not unknown."""
    rule = GRAPH.ruleset["symptom.recorded-launch-blocking"]
    assert isinstance(rule, SymptomRule)
    recorded = {"profile.framework": "torch_npu", "env.ASCEND_LAUNCH_BLOCKING": "1"}
    fired = evaluate_symptom(rule, Context(facts=recorded))
    assert isinstance(fired, Symptom) and fired.level == "error"
    unset = {"profile.framework": "torch_npu", "env.ASCEND_LAUNCH_BLOCKING": ""}
    assert evaluate_symptom(rule, Context(facts=unset)) is None
    unrecorded = evaluate_symptom(rule, Context(facts={"profile.framework": "torch_npu"}))
    assert isinstance(unrecorded, Unknown)
    assert evaluate_symptom(rule, Context(facts={"profile.framework": "mindspore"})) is None


def test_missing_measure_is_unknown_with_how_to_collect():
    rule = GRAPH.ruleset["symptom.comm-wait-high"]
    outcome = evaluate_symptom(rule, Context(facts={}))
    assert isinstance(outcome, Unknown)
    assert outcome.missing == ["comm.wait_ratio"]
    [way] = outcome.collect
    assert (way.by, way.name) == (CollectBy.profile, "comm.wait_ratio")
    assert "level1" in way.hint


def test_cost_is_the_share_beyond_fine_and_scaled_to_the_step():
    exposed = evaluate_symptom(
        GRAPH.ruleset["symptom.exposed-communication-high"],
        Context(facts={"step.comm_exposed_ratio": 0.25}),
    )
    assert isinstance(exposed, Symptom)
    assert exposed.cost_ratio == pytest.approx(0.15)  # 25% exposed, fine <= 10%
    unfused = evaluate_symptom(
        GRAPH.ruleset["symptom.unfused-attention"],
        Context(facts={"ops.unfused_attention_share": 0.45, "step.compute_ratio": 0.8}),
    )
    assert isinstance(unfused, Symptom)
    assert unfused.cost_ratio == pytest.approx((0.45 - 0.05) * 0.8)


def test_ranking_by_cost_and_the_lead_sentence():
    facts = {
        "step.comm_exposed_ratio": 0.25,  # costs 15% of the step
        "host.dispatch_bound_ratio": 0.10,  # costs 7%
        "step.free_ratio": 0.10,  # evidence only: idle time is not the host's unless launches were late
        "step.compute_ratio": 0.6,
    }
    result = diagnose(GRAPH, Context(facts=facts))
    assert [b.id for b in result.bottlenecks] == [
        "bottleneck.communication",
        "bottleneck.host-dispatch",
    ]
    assert result.bottlenecks[0].cost_ratio == pytest.approx(0.15)
    lead = result.bottlenecks[0]
    assert lead.lead is Lead.costs_more
    assert lead.runner_up == ("bottleneck.host-dispatch", pytest.approx(0.07))
    assert result.bottlenecks[1].lead is None
    facts["host.dispatch_bound_ratio"] = 0.30  # now host dispatch costs 27%
    result = diagnose(GRAPH, Context(facts=facts))
    assert result.main is not None and result.main.id == "bottleneck.host-dispatch"


def test_idle_time_the_host_does_not_explain_costs_the_host_nothing():
    facts = {"step.free_ratio": 0.40, "host.dispatch_bound_ratio": 0.01, "step.compute_ratio": 0.5}
    result = diagnose(GRAPH, Context(facts=facts))
    host = next(b for b in result.bottlenecks if b.id == "bottleneck.host-dispatch")
    assert host.cost_ratio == 0.0


def test_send_recv_time_is_the_pipelines_not_the_collectives():
    facts = {
        "step.comm_exposed_ratio": 0.43,
        "comm.p2p_ratio": 0.24,
        "step.pipeline_wait_ratio": 0.24,  # the same send/recv, inside the exposed part
        "step.compute_ratio": 0.4,
        "job.pipeline_parallel": True,
    }
    result = diagnose(GRAPH, Context(facts=facts))
    costs = {b.id: b.cost_ratio for b in result.bottlenecks}
    assert costs["bottleneck.communication"] == pytest.approx(0.43 - 0.10 - 0.24)
    assert costs["bottleneck.pipeline"] == pytest.approx(0.24 - 0.03)
    assert result.main is not None and result.main.id == "bottleneck.pipeline"


def test_a_bottleneck_is_graded_on_the_time_it_costs():
    # idle 40% is an error-level measure, but the host explains none of it: the bottleneck
    # costs no step time and is not graded an error beside "no step time"
    facts = {"step.free_ratio": 0.40, "host.dispatch_bound_ratio": 0.01, "step.compute_ratio": 0.5}
    host = next(
        b
        for b in diagnose(GRAPH, Context(facts=facts)).bottlenecks
        if b.id == "bottleneck.host-dispatch"
    )
    assert (host.severity, host.evidence_level) == ("note", "error")
    assert "  note " in diagnosis_text(Diagnosis(bottlenecks=[host, host]))
    assert "no step time" in diagnosis_text(Diagnosis(bottlenecks=[host, host]))
    # exposed 25% is an error-level measure (>= 20%); 12% of it is send/recv the pipeline
    # explains: the 13% communication costs grades a warning
    facts = {
        "step.comm_exposed_ratio": 0.25,
        "comm.p2p_ratio": 0.12,
        "step.pipeline_wait_ratio": 0.12,  # that send/recv, inside the exposed part
        "step.compute_ratio": 0.5,
        "job.pipeline_parallel": True,
    }
    comm = next(
        b
        for b in diagnose(GRAPH, Context(facts=facts)).bottlenecks
        if b.id == "bottleneck.communication"
    )
    assert comm.cost_ratio == pytest.approx(0.25 - 0.12 - 0.10)
    assert (comm.severity, comm.evidence_level) == ("warning", "error")
    # small kernels are 65% of device compute (an error-level measure), but the device computes
    # 1% of the step: they cost 0.6% of it, graded a warning beside that number
    facts = {"ops.small_vector_ops_share": 0.65, "step.compute_ratio": 0.01}
    compute = next(
        b for b in diagnose(GRAPH, Context(facts=facts)).bottlenecks if b.id == "bottleneck.compute"
    )
    assert compute.cost_ratio == pytest.approx((0.65 - 0.05) * 0.01)
    assert (compute.severity, compute.evidence_level) == ("warning", "error")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_generated_profiles(name: str):
    expected = EXPECTED[name]
    run = run_diagnose(JobOptions(profile=EXAMPLES / name))
    d = run.diagnosis
    fired = {s.id for s in d.symptoms} | {b.id for b in d.bottlenecks}
    assert (d.main.id if d.main else None) == expected["main"]
    for rule_id in expected.get("must_fire", []):
        assert rule_id in fired, f"{rule_id} did not fire on {name}"
    must_not = expected.get("must_not_fire", [])
    if must_not == ["all"]:
        assert fired == set()
    for rule_id in must_not:
        assert rule_id not in fired or must_not == ["all"], f"{rule_id} fired on {name}"
    unknown = {u.rule for u in d.unknown}
    for rule_id in expected.get("unknown", []):
        assert rule_id in unknown, f"{rule_id} is not reported unknown on {name}"


def test_level0_says_how_to_collect_communication():
    run = run_diagnose(JobOptions(profile=EXAMPLES / "level0"))
    comm = next(u for u in run.diagnosis.unknown if u.rule == "bottleneck.communication")
    assert "comm.wait_ratio" in comm.missing
    assert any(way.by is CollectBy.profile and "level1" in way.hint for way in comm.collect)


def test_single_rank_does_not_report_slow_rank_as_unknown():
    run = run_diagnose(JobOptions(profile=EXAMPLES / "healthy"))
    assert all("slow-rank" not in u.rule for u in run.diagnosis.unknown)


def test_diagnose_json_contract():
    result = runner.invoke(app, ["diagnose", str(EXAMPLES / "level0"), "--format", "json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert schema_errors(payload, "diagnosis.schema.json") == []
    assert payload["bottlenecks"][0]["id"] == "bottleneck.communication"
    assert payload["symptoms"][0]["threshold"] in (0.1, 0.2)
    assert payload["bottlenecks"][0]["lead"]["code"] in ("only", "costs-more", "more-severe")
    assert all(b["lead"] is None for b in payload["bottlenecks"][1:])


def test_diagnose_text_names_the_main_bottleneck():
    result = runner.invoke(app, ["diagnose", str(EXAMPLES / "slow-dataloader")])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("Main bottleneck: bottleneck.data-pipeline")
    healthy = runner.invoke(app, ["diagnose", str(EXAMPLES / "healthy")])
    assert "looks healthy" in healthy.output


def test_a_needs_data_hint_names_what_is_missing_not_a_level_the_profile_has():
    # a Level1 profile whose communication.json names no groups: the names are missing
    reason = "communication.json does not name its communication groups (all ranks)"
    [way] = collections(["fact:comm.tp_share"], "ascend", why={"comm.tp_share": reason})
    assert "profiler_metadata.json" in way.hint and "level1" not in way.hint
    # without a reason the general hint still says both what and how
    [general] = collections(["fact:comm.tp_share"], "ascend")
    assert "parallel_group_info" in general.hint
    assert Context().missing == {}


def test_suggest_needs_data_hint_follows_why_the_fact_is_missing():
    # the planner's needs-data answer uses the same reason-aware hint as diagnose
    from advisor.engine.graph import build_graph
    from advisor.engine.loop import History
    from advisor.engine.planner import _collect_first
    from advisor.engine.rules import load_rules

    graph = build_graph(load_rules())
    reason = "communication.json does not name its communication groups (all ranks)"
    facts = {"profile.platform": "ascend"}
    why = Context(facts=facts, missing={"comm.tp_share": reason})
    told = _collect_first(
        graph, "bottleneck.communication", {"fact:comm.tp_share"}, why, History(), []
    )
    bare = Context(facts=facts)
    plain = _collect_first(
        graph, "bottleneck.communication", {"fact:comm.tp_share"}, bare, History(), []
    )
    hints = told.reason.values["hints"]
    assert isinstance(hints, tuple) and len(hints) == 1
    assert "profiler_metadata.json" in hints[0] and "level1" not in hints[0]
    assert plain.reason.values["hints"] != hints


def test_a_cost_with_evidence_not_measured_is_a_lower_bound():
    # a bottleneck costs the largest of its evidence's costs: evidence that could claim step
    # time but was not measured makes its cost "at least"; risk-only evidence does not
    from advisor.engine.rule_model import BottleneckRule
    from advisor.render.words import cost_share, lead_sentence, step_cost

    facts = {"step.comm_exposed_ratio": 0.25, "host.dispatch_bound_ratio": 0.10}
    result = diagnose(GRAPH, Context(facts=facts))
    timeless = {r.id for r in GRAPH.ruleset.of_type(SymptomRule) if r.cost.none}
    unknown = {u.rule for u in result.unknown}
    for found in result.bottlenecks:
        rule = GRAPH.ruleset[found.id]
        assert isinstance(rule, BottleneckRule)
        expected = tuple(s for s in rule.evidence.ids if s in unknown and s not in timeless)
        assert found.unmeasured == expected
        assert ("at least" in found.message) == bool(expected) == ("at least" in step_cost(found))
        assert cost_share(found).startswith(">=") == bool(expected)
    main, second = result.bottlenecks[0], result.bottlenecks[1]
    assert main.unmeasured == () and second.unmeasured  # both cases are exercised
    assert main.runner_up_unmeasured
    sentence = lead_sentence(main)
    assert "costs 15.0% of the step" in sentence
    assert "(at least 7.0%: evidence of it is not measured, so it may cost more)" in sentence
    # every costing piece of evidence measured: the cost is what it is
    more = facts | {f: 0.0 for f in _costing_facts(second.id) if f not in facts}
    measured = diagnose(GRAPH, Context(facts=more))
    host = next(b for b in measured.bottlenecks if b.id == second.id)
    assert host.unmeasured == () and "at least" not in host.message


def _costing_facts(bottleneck: str) -> set[str]:
    """The measures of a bottleneck's evidence that can cost step time."""
    from advisor.engine.rule_model import BottleneckRule

    rule = GRAPH.ruleset[bottleneck]
    assert isinstance(rule, BottleneckRule)
    found = set()
    for sid in rule.evidence.ids:
        symptom = GRAPH.ruleset[sid]
        assert isinstance(symptom, SymptomRule)
        if not symptom.cost.none:
            found.add(symptom.measure)
    return found
