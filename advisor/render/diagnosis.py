"""Render a diagnosis as text or as the advisor/diagnosis@1 JSON contract."""

from __future__ import annotations

import json
from collections.abc import Callable

from advisor.engine.diagnose import Diagnosis
from advisor.facts.catalogue import spec_for
from advisor.facts.units import format_value

DIAGNOSIS_SCHEMA = "advisor/diagnosis@1"


def diagnosis_json(diagnosis: Diagnosis) -> str:
    payload = {
        "schema": DIAGNOSIS_SCHEMA,
        "symptoms": [s.to_json() for s in diagnosis.symptoms],
        "bottlenecks": [b.to_json() for b in diagnosis.bottlenecks],
        "unknown": [u.to_json() for u in diagnosis.unknown],
    }
    return json.dumps(payload, indent=2, ensure_ascii=False)


def diagnosis_text(diagnosis: Diagnosis) -> str:
    lines: list[str] = []
    main = diagnosis.main
    if main is None:
        lines.append("No bottleneck above its threshold: the profile looks healthy.")
    else:
        cost = (
            f"{main.cost_ratio:.1%} of the step"
            if main.cost_ratio > 0
            else "no measurable step time: evidence of a risk, not of lost time"
        )
        lines.append(f"Main bottleneck: {main.id} ({main.severity}, {cost})")
        lines.append(f"  {main.message}")
    if len(diagnosis.bottlenecks) > 1:
        lines.append("")
        lines.append("bottlenecks (the one worth most first)")
        for i, b in enumerate(diagnosis.bottlenecks, start=1):
            evidence = ", ".join(e.removeprefix("symptom.") for e in b.evidence)
            lines.append(
                f"  {i}. {b.id:<28} {b.severity:<8} {b.cost_ratio:>6.1%}  evidence: {evidence}"
            )
    if diagnosis.symptoms:
        lines.append("")
        lines.append("symptoms")
        for s in diagnosis.symptoms:
            unit = spec_for(s.fact).unit
            measured = f"{s.fact} = {format_value(s.value, unit, compact=True)} (threshold {format_value(s.threshold, unit, compact=True)})"
            lines.append(f"  {s.level:<8} {s.id:<36} {measured}")
            lines.append(f"           {s.message}")
    if diagnosis.unknown:
        lines.append("")
        lines.append("unknown (the profile lacks the facts; how to collect them)")
        for u in diagnosis.unknown:
            lines.append(f"  {u.rule:<36} needs {', '.join(u.missing)}: {u.how_to_collect}")
    return "\n".join(lines) + "\n"


FORMATS: dict[str, Callable[[Diagnosis], str]] = {
    "text": diagnosis_text,
    "json": lambda d: diagnosis_json(d) + "\n",
    "markdown": lambda d: _markdown_diagnosis(d),
}


def _markdown_diagnosis(diagnosis: Diagnosis) -> str:
    from advisor.render.markdown import diagnosis_markdown

    return diagnosis_markdown(diagnosis)
