"""What a diagnosis could not evaluate, grouped by the action that collects it: shorter, and
nothing lost (every unknown rule and every missing fact still named in text, markdown and HTML),
while the JSON keeps one entry per rule."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from advisor.engine.diagnose import CollectBy, Collection, Diagnosis, Unknown
from advisor.model import Bottleneck
from advisor.render.diagnosis import diagnosis_json, diagnosis_text
from advisor.render.html_bottlenecks import could_lead_list, symptom_table
from advisor.render.markdown import diagnosis_markdown
from advisor.render.unknown_words import (
    costing_evidence,
    could_lead,
    group_unknown,
    unknown_count,
)

TRACE = "keep trace_view.json (profile_export_type: text) and profile with CPU activity"
LOG = "a Megatron-style or MindFormers log (number of skipped iterations, overflow cond)"
DEVICE = "--device, with a memory profile or --log"


def _way(fact: str, hint: str) -> Collection:
    return Collection(CollectBy.profile, fact, hint)


UNKNOWN = [
    Unknown("symptom.dataloader-slow", ["data.loader_ratio"], (_way("data.loader_ratio", TRACE),)),
    Unknown(
        "symptom.host-dispatch-gaps",
        ["host.dispatch_bound_ratio"],
        (_way("host.dispatch_bound_ratio", TRACE),),
    ),
    Unknown("symptom.fp16-overflows", ["log.overflow_ratio"], (_way("log.overflow_ratio", LOG),)),
    Unknown(
        "symptom.memory-pressure",
        ["memory.pressure_ratio"],
        (_way("memory.pressure_ratio", DEVICE),),
    ),
    Unknown(
        "bottleneck.memory",
        ["memory.malloc_calls_per_step", "memory.pressure_ratio"],
        (_way("memory.malloc_calls_per_step", TRACE), _way("memory.pressure_ratio", DEVICE)),
    ),
    Unknown("bottleneck.numerics", ["log.overflow_ratio"], (_way("log.overflow_ratio", LOG),)),
    Unknown(
        "bottleneck.pipeline",
        ["parallel.pipeline_size"],
        (Collection(CollectBy.config, "parallel.pipeline_size"),),
    ),
]
PIPELINE = Bottleneck("bottleneck.pipeline", "error", 0.19, ["symptom.pipeline-p2p-wait"], "m")


def test_rules_are_grouped_by_the_exact_collection_text_most_rules_first():
    groups = group_unknown(UNKNOWN)
    assert [g.action for g in groups] == [
        TRACE,
        LOG,
        DEVICE,
        "pass --config with parallel.pipeline_size set",
    ]
    trace = groups[0]
    assert trace.rules == (
        "symptom.dataloader-slow",
        "symptom.host-dispatch-gaps",
        "bottleneck.memory",
    )
    # a rule lacking facts collected two ways sits under each, with the facts that way collects
    assert trace.facts == (
        "data.loader_ratio",
        "host.dispatch_bound_ratio",
        "memory.malloc_calls_per_step",
    )
    assert groups[2].rules == ("symptom.memory-pressure", "bottleneck.memory")
    assert groups[2].facts == ("memory.pressure_ratio",)


def test_a_rule_whose_values_name_no_way_is_still_listed():
    groups = group_unknown([Unknown("symptom.x", ["a.b"], ())])
    assert [(g.rules, g.facts) for g in groups] == [(("symptom.x",), ("a.b",))]


def test_the_bottlenecks_that_could_lead_are_all_but_the_main_one():
    diagnosis = Diagnosis(bottlenecks=[PIPELINE], unknown=UNKNOWN)
    assert [u.rule for u in could_lead(diagnosis)] == ["bottleneck.memory", "bottleneck.numerics"]
    healthy = Diagnosis(unknown=UNKNOWN)
    assert "bottleneck.pipeline" in [u.rule for u in could_lead(healthy)]
    assert unknown_count(diagnosis) == "7 checks need data this profile lacks"
    assert unknown_count(Diagnosis(unknown=UNKNOWN[:1])) == "1 check needs data this profile lacks"


# memory's evidence here is risk only (no step time); numerics' overflows cost skipped steps
COSTING = {
    "bottleneck.memory": frozenset(),
    "bottleneck.numerics": frozenset({"symptom.fp16-overflows"}),
    "bottleneck.pipeline": frozenset({"symptom.pipeline-p2p-wait"}),
}


def test_only_unknown_evidence_that_can_cost_time_could_overtake_a_costing_main():
    diagnosis = Diagnosis(bottlenecks=[PIPELINE], unknown=UNKNOWN)
    assert [u.rule for u in could_lead(diagnosis, COSTING)] == ["bottleneck.numerics"]
    # a main bottleneck that costs no step time leads on severity: any other could overtake it
    riskonly = Bottleneck("bottleneck.pipeline", "note", 0.0, ["symptom.x"], "m")
    lead = could_lead(Diagnosis(bottlenecks=[riskonly], unknown=UNKNOWN), COSTING)
    assert [u.rule for u in lead] == ["bottleneck.memory", "bottleneck.numerics"]
    text = diagnosis_text(diagnosis, COSTING).split("\nunknown: ")[0]
    assert "bottleneck.numerics" in text and "bottleneck.memory" not in text


def test_costing_evidence_leaves_out_the_rules_risk_only_symptoms():
    from advisor.app.rulesets import load_graph

    costing = costing_evidence(load_graph())
    assert "symptom.memory-pressure" not in costing["bottleneck.memory"]  # cost: none
    assert "symptom.dataloader-slow" in costing["bottleneck.data-pipeline"]


def _section(text: str) -> str:
    return text.split("\nunknown: ", 1)[1]


@pytest.mark.parametrize("healthy", [False, True])
def test_every_unknown_rule_and_fact_is_named_in_text_markdown_and_html(healthy: bool):
    diagnosis = Diagnosis(bottlenecks=[] if healthy else [PIPELINE], unknown=UNKNOWN)
    text = diagnosis_text(diagnosis)
    markdown = diagnosis_markdown(diagnosis)
    html = symptom_table(diagnosis)
    for u in UNKNOWN:
        for shown in (_section(text), markdown, html):
            assert u.rule in shown
            assert all(fact in shown for fact in u.missing)
    # each action said once, not once per rule
    assert _section(text).count(TRACE) == 1
    assert markdown.count(TRACE) == 1
    assert "7 checks need data this profile lacks" in text


def test_a_bottleneck_that_could_lead_has_its_own_line_the_main_ones_gap_does_not():
    diagnosis = Diagnosis(bottlenecks=[PIPELINE], unknown=UNKNOWN)
    text = diagnosis_text(diagnosis)
    ahead = text.split("\nunknown: ")[0]
    assert re.search(r"^  bottleneck\.memory +needs memory\.malloc_calls_per_step", ahead, re.M)
    assert re.search(r"^  bottleneck\.numerics +needs log\.overflow_ratio$", ahead, re.M)
    assert not re.search(r"^  bottleneck\.pipeline +needs", ahead, re.M)
    assert "`bottleneck.memory` needs" in diagnosis_markdown(diagnosis)
    assert "<code>numerics</code> needs log.overflow_ratio" in could_lead_list(diagnosis)
    assert could_lead_list(Diagnosis(bottlenecks=[PIPELINE])) == ""


def test_the_json_contract_keeps_one_entry_per_rule():
    diagnosis = Diagnosis(bottlenecks=[PIPELINE], unknown=UNKNOWN)
    entries = json.loads(diagnosis_json(diagnosis))["unknown"]
    assert [e["rule"] for e in entries] == [u.rule for u in UNKNOWN]
    assert entries[4]["how_to_collect"] == f"{TRACE}; {DEVICE}"


def test_the_real_pipeline_job_says_each_hint_once():
    real = Path(__file__).resolve().parents[1] / ".." / "shared" / "real"
    profile = real / "ascend-qwen3-pp2-4rank"
    if not profile.exists():
        pytest.skip("the real profiles are not beside the repository")
    from typer.testing import CliRunner

    from advisor.cli import app

    text = CliRunner().invoke(app, ["diagnose", str(profile)]).output
    assert _section(text).count(TRACE) == 1
    assert (
        "symptom.pipeline-schedule-bubble, bottleneck.pipeline (pipeline.bubble_expected_ratio)"
        in text
    )
    # a bf16 job has no loss scaler: fp16 overflows are ruled out, not waiting for a log
    assert "symptom.fp16-overflows" not in text
    lines = text.split("\nunknown: ")[1].splitlines()
    assert len(lines) < 20  # was one line per rule (21)
