"""Render a diagnosis as text or as the advisor/diagnosis@3 JSON contract (why the main
bottleneck leads is a code there; `message` is the sentence the text shows)."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable

from advisor.engine.diagnose import Diagnosis, Symptom
from advisor.facts.catalogue import spec_for
from advisor.facts.units import format_value
from advisor.model import Bottleneck
from advisor.render.markdown import diagnosis_markdown
from advisor.render.unknown_words import (
    CostingEvidence,
    could_lead,
    group_unknown,
    partly_measured,
    unknown_count,
)
from advisor.render.words import bottleneck_message, cost_share, how_to_collect, step_cost

DIAGNOSIS_SCHEMA = "advisor/diagnosis@3"


def diagnosis_json(diagnosis: Diagnosis) -> str:
    payload = {
        "schema": DIAGNOSIS_SCHEMA,
        "symptoms": [_symptom_json(s) for s in diagnosis.symptoms],
        "bottlenecks": [_bottleneck_json(b) for b in diagnosis.bottlenecks],
        **({"phases": diagnosis.phases} if diagnosis.phases else {}),
        "unknown": [
            {
                "rule": u.rule,
                "missing": u.missing,
                "collect": [
                    {"by": way.by.value, "name": way.name, "hint": way.hint or None}
                    for way in u.collect
                ],
                "how_to_collect": how_to_collect(u),
            }
            for u in diagnosis.unknown
        ],
    }
    return json.dumps(payload, indent=2, ensure_ascii=False)


def _symptom_json(s: Symptom) -> dict[str, object]:
    return {
        "id": s.id,
        "level": s.level,
        "fact": s.fact,
        "value": s.value,
        "threshold": s.threshold,
        "cost_ratio": s.cost_ratio,
        "message": s.message,
    }


def _bottleneck_json(b: Bottleneck) -> dict[str, object]:
    lead: dict[str, object] | None = None
    if b.lead is not None:
        runner_up = None
        if b.runner_up is not None:
            runner_up = {
                "id": b.runner_up[0],
                "cost_ratio": b.runner_up[1],
                "cost_is_lower_bound": b.runner_up_unmeasured,
            }
        lead = {"code": b.lead.value, "runner_up": runner_up}
    return {
        "id": b.id,
        "severity": b.severity,
        "evidence_level": b.evidence_level,
        "cost_ratio": b.cost_ratio,
        "evidence": b.evidence,
        "unmeasured_evidence": list(b.unmeasured),
        "lead": lead,
        "message": bottleneck_message(b),
    }


# phase fact -> its words, in the loop's order
PHASE_WORDS = (
    ("phase.forward_ratio", "forward"),
    ("phase.backward_ratio", "backward"),
    ("phase.optimizer_ratio", "optimizer"),
    ("phase.unplaced_ratio", "outside the annotated phases"),
    ("phase.comm_exposed_ratio", "exposed communication"),
    ("phase.data_wait_ratio", "waiting for data"),
)


def phases_line(phases: dict[str, float]) -> str:
    """The step's phases in words; the rest of the step is the device's other idle time."""
    parts = [f"{words} {phases[fact]:.1%}" for fact, words in PHASE_WORDS if fact in phases]
    rest = 1.0 - sum(phases.get(fact, 0.0) for fact, _ in PHASE_WORDS)
    return ", ".join(parts) + f", other idle {max(0.0, rest):.1%} (device time by phase)"


def no_bottleneck_line(diagnosis: Diagnosis) -> str:
    """No bottleneck: healthy only when no symptom above a note fired either (a warning that
    belongs to no bottleneck, a clock drop say, is still something to look at)."""
    flagged = [s for s in diagnosis.symptoms if s.level in ("warning", "error")]
    if not flagged:
        return "No bottleneck above its threshold: the profile looks healthy."
    return (
        f"No bottleneck above its threshold, but {len(flagged)} symptom(s) to look at: "
        + ", ".join(s.id for s in flagged)
        + "."
    )


def diagnosis_text(diagnosis: Diagnosis, costing: CostingEvidence | None = None) -> str:
    """The diagnosis as text (`costing`: which evidence can cost step time, from the rules;
    it narrows the bottlenecks listed as able to lead once measured)."""
    lines: list[str] = []
    main = diagnosis.main
    if main is None:
        lines.append(no_bottleneck_line(diagnosis))
    else:
        grade = (
            f"{main.severity}, {step_cost(main)}"
            if main.cost_ratio > 0
            else f"no measurable step time: evidence of a risk ({main.evidence_level} level), "
            "not of lost time"
        )
        lines.append(f"Main bottleneck: {main.id} ({grade})")
        lines.append(f"  {bottleneck_message(main)}")
    if diagnosis.phases:
        lines.append(f"Step phases: {phases_line(diagnosis.phases)}")
    if len(diagnosis.bottlenecks) > 1:
        lines.append("")
        lines.append("bottlenecks (the one worth most first)")
        width = max(6, *(len(cost_share(b)) for b in diagnosis.bottlenecks))
        for i, b in enumerate(diagnosis.bottlenecks, start=1):
            evidence = ", ".join(e.removeprefix("symptom.") for e in b.evidence)
            lines.append(
                f"  {i}. {b.id:<28} {b.severity:<8} {cost_share(b):>{width}}  evidence: {evidence}"
            )
    lines += _could_lead_lines(diagnosis, costing)
    if diagnosis.symptoms:
        lines.append("")
        lines.append("symptoms")
        for s in diagnosis.symptoms:
            unit = spec_for(s.fact).unit
            measured = f"{s.fact} = {format_value(s.value, unit, compact=True)} (threshold {format_value(s.threshold, unit, compact=True)})"
            lines.append(f"  {s.level:<8} {s.id:<36} {measured}")
            lines.append(f"           {s.message}")
    lines += _unknown_lines(diagnosis)
    return "\n".join(lines) + "\n"


def _could_lead_lines(diagnosis: Diagnosis, costing: CostingEvidence | None) -> list[str]:
    """The bottlenecks not measured (or measured in part) that could lead once measured."""
    open_ones = could_lead(diagnosis, costing)
    if not open_ones:
        return []
    lines = ["", "not measured, could lead once measured (how to collect it: unknown, below)"]
    for u in open_ones:
        part = " (listed above on the rest)" if partly_measured(diagnosis, u.rule) else ""
        lines.append(f"  {u.rule:<28} needs {', '.join(u.missing)}{part}")
    return lines


def _unknown_lines(diagnosis: Diagnosis) -> list[str]:
    """The unknown rules by the action that collects what they lack (the JSON lists each)."""
    if not diagnosis.unknown:
        return []
    lines = ["", f"unknown: {unknown_count(diagnosis)} (by how to collect it)"]
    for group in group_unknown(diagnosis.unknown):
        listed = f"{', '.join(group.rules)} ({', '.join(group.facts)})"
        one_line = f"  {group.action}: {listed}"
        if len(one_line) <= _WIDTH:
            lines.append(one_line)
            continue
        lines.append(f"  {group.action}:")
        lines += textwrap.wrap(
            listed, _WIDTH, initial_indent="    ", subsequent_indent="    ", break_on_hyphens=False
        )
    return lines


_WIDTH = 110


FORMATS: dict[str, Callable[[Diagnosis, CostingEvidence | None], str]] = {
    "text": diagnosis_text,
    "json": lambda d, _costing: diagnosis_json(d) + "\n",
    "markdown": diagnosis_markdown,
}
