"""Markdown for a pull-request comment: the suggestion, the diagnosis or the comparison, with the
diff in a fenced block and the long lists folded."""

from __future__ import annotations

from advisor.engine.compare import Comparison
from advisor.engine.diagnose import Diagnosis
from advisor.facts.units import format_value
from advisor.model import Suggestion
from advisor.render import effect_words, words
from advisor.render.compare_words import collect_text, metric_change, metric_value, note_text
from advisor.render.effect_words import measured_text, predicted_range
from advisor.render.unknown_words import (
    CostingEvidence,
    could_lead,
    group_unknown,
    partly_measured,
    unknown_count,
)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def suggestion_markdown(s: Suggestion, notes: list[str]) -> str:
    rec = s.recommendation
    lines = [f"> **note:** {n}" for n in notes]
    lines += [f"> **warning** `{w.id.value}`: {words.trust_message(w)}" for w in s.warnings]
    if rec is None:
        lines += [f"### advisor: {s.status.value}", "", words.summary(s)]
    # bold labels start lines of one paragraph: a trailing double space breaks the line
    else:
        lines += [
            f"### advisor — {words.head(s)}: {words.title(rec)}",
            "",
            f"`{rec.feature}` · "
            + (words.change_line(rec) if rec.patch else "advice: no config key to change"),
        ]
        lines += ["", f"**Why.** {words.why(s, rec)}"]
        if rec.evidence:
            shown = ", ".join(f"`{f.id}` = {format_value(f.value, f.unit)}" for f in rec.evidence)
            lines.append(f"**Evidence.** {shown}")
        if rec.advice:
            lines.append(f"**Advice.** {rec.advice}")
        ceiling = effect_words.ceiling_line(rec)
        if ceiling is not None:
            lines.append(f"**Ceiling.** {ceiling}")
        if rec.predicted is not None:
            lines.append(f"**Predicted.** {effect_words.prediction_line(rec.predicted)}")
        lines += [f"**Expected.** {words.expected(rec)}", f"**Risk.** {words.risk(rec)}"]
        if rec.patch:
            lines += [f"**Note.** {note}" for note in rec.patch.notes]
        lines = [f"{line}  " if line.startswith("**") else line for line in lines]
        if rec.verify:
            lines += ["", "Verify with the next profile:"]
            lines += [f"- {words.verify_line(v)}" for v in rec.verify]
        if rec.diff:
            lines += ["", "```diff", rec.diff.rstrip("\n"), "```"]
    if s.rejected:
        title = "Other candidates" if rec is not None else "Candidates and why none applies"
        lines += ["", f"<details><summary>{title} ({len(s.rejected)})</summary>", ""]
        lines += [f"- `{r.feature}`: {words.rejection(r)}" for r in s.rejected]
        lines += ["", "</details>"]
    return "\n".join(lines) + "\n"


def diagnosis_markdown(diagnosis: Diagnosis, costing: CostingEvidence | None = None) -> str:
    main = diagnosis.main
    if main is None:
        lines = ["### advisor: healthy", "", "No bottleneck above its threshold."]
        return "\n".join(lines + _unknown_markdown(diagnosis, costing)) + "\n"
    lines = [f"### advisor — main bottleneck: `{main.id}`", "", words.bottleneck_message(main), ""]
    lines += ["| # | bottleneck | severity | cost | evidence |", "|---|---|---|---|---|"]
    for i, b in enumerate(diagnosis.bottlenecks, start=1):
        evidence = ", ".join(e.removeprefix("symptom.") for e in b.evidence)
        lines.append(f"| {i} | `{b.id}` | {b.severity} | {words.cost_share(b)} | {evidence} |")
    if diagnosis.symptoms:
        lines += ["", "<details><summary>symptoms</summary>", ""]
        lines += [f"- **{s.level}** `{s.id}`: {_cell(s.message)}" for s in diagnosis.symptoms]
        lines += ["", "</details>"]
    return "\n".join(lines + _unknown_markdown(diagnosis, costing)) + "\n"


def _unknown_markdown(diagnosis: Diagnosis, costing: CostingEvidence | None) -> list[str]:
    """The bottlenecks that could lead once measured, in sight; the unknown checks folded, by
    the action that collects what they lack."""
    if not diagnosis.unknown:
        return []
    lines = []
    open_ones = could_lead(diagnosis, costing)
    if open_ones:
        lines += ["", "**Not measured, could lead once measured:**", ""]
        lines += [
            f"- `{u.rule}` needs {', '.join(f'`{m}`' for m in u.missing)}"
            + (" (listed above on the rest)" if partly_measured(diagnosis, u.rule) else "")
            for u in open_ones
        ]
    lines += ["", f"<details><summary>unknown: {unknown_count(diagnosis)}</summary>", ""]
    for group in group_unknown(diagnosis.unknown):
        rules = ", ".join(f"`{r}`" for r in group.rules)
        lines.append(f"- {_cell(group.action)}: {rules} ({', '.join(group.facts)})")
    return [*lines, "", "</details>"]


def comparison_markdown(result: Comparison, ledger_note: str | None) -> str:
    lines = [
        f"### advisor — verdict: **{result.verdict.value.upper()}**",
        "",
        note_text(result.reason),
        "",
    ]
    if result.collect:
        lines += [f"To decide: {collect_text(result.collect)}", ""]
    lines += ["| metric | baseline | candidate | change |", "|---|---:|---:|---:|"]
    for m in result.metrics:
        if m.baseline is None and m.candidate is None:
            continue
        change = metric_change(m)
        if m.significant:
            change += " (better)" if m.better else " (worse)"
        baseline, candidate = metric_value(m, m.baseline), metric_value(m, m.candidate)
        lines.append(f"| {m.label} | {baseline} | {candidate} | {change} |")
    lines += [f"> **warning:** {note_text(w)}" for w in result.warnings]
    if result.checked is not None:
        checked = result.checked
        lines += [
            "",
            f"**Predicted vs measured** (`{checked.feature}`)",
            "",
            "| predicted | measured |",
            "|---|---|",
            f"| {predicted_range(checked.predicted) or 'none recorded'} | "
            f"{measured_text(checked.measured.to_json())} |",
        ]
    if ledger_note:
        lines.append(f"\nledger: {ledger_note}")
    return "\n".join(lines) + "\n"
