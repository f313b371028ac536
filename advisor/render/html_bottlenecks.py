"""The report's bottleneck section: the ranked bottlenecks with their grade, cost and ceiling,
then the symptoms with their measures in their units and what the profile did not measure."""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape

from advisor.engine.diagnose import Diagnosis, Symptom
from advisor.facts.catalogue import is_known, spec_for
from advisor.facts.units import format_value
from advisor.render import words
from advisor.render.unknown_words import (
    CostingEvidence,
    could_lead,
    group_unknown,
    partly_measured,
    unknown_count,
)


def first_sentence(text: str) -> str:
    """The lead sentence of a rule's message (the table keeps the whole text as a tooltip)."""
    match = re.search(r"(?<=[a-z0-9%)\]])\. (?=[A-Z])", text)
    return text[: match.start() + 1] if match else text


def bottleneck_table(diagnosis: Diagnosis, step: float | None) -> str:
    if not diagnosis.bottlenecks:
        return '<p class="ok">No bottleneck above its threshold.</p>'
    symptoms = {s.id: s for s in diagnosis.symptoms}
    rows = []
    for i, b in enumerate(diagnosis.bottlenecks, start=1):
        ceiling = _ceiling(b.evidence, symptoms, step)
        evidence = ", ".join(e.removeprefix("symptom.") for e in b.evidence)
        width = max(0.0, min(b.cost_ratio, 1.0)) * 100
        message = words.bottleneck_message(b)
        rows.append(
            f"<tr><td>{i}</td><td><code>{escape(b.id.removeprefix('bottleneck.'))}</code></td>"
            f'<td><span class="pill {escape(b.severity)}">{escape(b.severity)}</span></td>'
            f'<td class="num" data-v="{b.cost_ratio}"><span class="meter">'
            f'<i style="width:{width:.1f}%"></i></span>{escape(words.cost_share(b))}</td>'
            f'<td class="num">{ceiling}</td><td>{escape(evidence)}</td>'
            f'<td title="{escape(message)}">{escape(first_sentence(message))}</td></tr>'
        )
    head = (
        "<tr><th>#</th><th>bottleneck</th><th>severity</th><th>cost</th>"
        "<th>ceiling</th><th>evidence</th><th>why</th></tr>"
    )
    return f'<table class="sortable"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'


def _ceiling(evidence: Sequence[str], symptoms: dict[str, Symptom], step: float | None) -> str:
    """The step time the costliest evidence claims (a share of the step, less what another
    bottleneck explains): the most removing the bottleneck entirely could recover."""
    fired = [symptoms[e] for e in evidence if e in symptoms and symptoms[e].cost_ratio > 0]
    if not fired or not step:
        return "-"
    worst = max(fired, key=lambda s: s.cost_ratio)
    if spec_for(worst.fact).unit != "ratio" if is_known(worst.fact) else True:
        return "-"
    # the time the symptom claims after the parts other bottlenecks explain, so no millisecond
    # is a ceiling twice (the pipeline's receive wait is not also communication's)
    share = worst.claimed_ratio if worst.claimed_ratio is not None else worst.value
    return f"at most {share * step:.2f} ms ({share:.1%})"


def _measure(fact: str, value: float) -> str:
    """A symptom's measure in its fact's unit, as the text output shows it (62.3%, not 0.623)."""
    return (
        format_value(value, spec_for(fact).unit, compact=True) if is_known(fact) else f"{value:.4g}"
    )


def symptom_table(diagnosis: Diagnosis) -> str:
    if not diagnosis.symptoms and not diagnosis.unknown:
        return ""
    rows = [
        f'<tr><td><span class="pill {escape(s.level)}">{escape(s.level)}</span></td>'
        f"<td><code>{escape(s.id.removeprefix('symptom.'))}</code></td>"
        f'<td class="num" data-v="{s.value}">{escape(_measure(s.fact, s.value))}</td>'
        f'<td class="num" data-v="{s.threshold}">{escape(_measure(s.fact, s.threshold))}</td>'
        f"<td>{escape(s.message)}</td></tr>"
        for s in diagnosis.symptoms
    ]
    table = (
        "<table><thead><tr><th>level</th><th>symptom</th><th>measured</th><th>threshold</th>"
        f"<th>what it means</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        if rows
        else ""
    )
    unknown = "".join(
        f"<li>{escape(group.action)}: "
        + ", ".join(f"<code>{escape(rule)}</code>" for rule in group.rules)
        + f" ({escape(', '.join(group.facts))})</li>"
        for group in group_unknown(diagnosis.unknown)
    )
    if unknown:
        table += (
            f"<details><summary>Not measured: {escape(unknown_count(diagnosis))}, by how to "
            f"collect it</summary><ul>{unknown}</ul></details>"
        )
    return table


def could_lead_list(diagnosis: Diagnosis, costing: CostingEvidence | None = None) -> str:
    """The bottlenecks not measured (or in part) that could lead once measured, in sight."""
    items = "".join(
        f"<li><code>{escape(u.rule.removeprefix('bottleneck.'))}</code> needs "
        f"{escape(', '.join(u.missing))}"
        + (" (listed above on the rest)" if partly_measured(diagnosis, u.rule) else "")
        + "</li>"
        for u in could_lead(diagnosis, costing)
    )
    if not items:
        return ""
    return (
        f"<p>Not measured, could lead once measured (how to collect it: below):</p><ul>{items}</ul>"
    )
