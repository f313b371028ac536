"""The self-contained HTML report: one file, inline CSS and SVG, no network.

A pure function of ReportData; the sections follow a performance engineer's reading order:
the verdict, where the step goes, the ranked bottlenecks, the ranks, the operators, the next
change, then the comparison and the history.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Protocol

from advisor import __version__
from advisor.engine.compare import Comparison
from advisor.engine.compare_notes import Verdict
from advisor.engine.diagnose import Diagnosis
from advisor.engine.graph import RuleGraph
from advisor.engine.predict import change_records
from advisor.facts.units import format_value
from advisor.inputs.ledger import Ledger
from advisor.model import FactSet, Suggestion
from advisor.render import effect_words, words
from advisor.render.compare_words import metric_change, metric_value, note_text
from advisor.render.diagnosis import no_bottleneck_line
from advisor.render.html_analyzers import analyzer_section
from advisor.render.html_bottlenecks import (
    bottleneck_table,
    could_lead_list,
    first_sentence,
    symptom_table,
)
from advisor.render.html_charts import Bar, hbars, stacked_bars
from advisor.render.html_ranks import number, rank_section
from advisor.render.html_style import SCRIPT, STYLE
from advisor.render.unknown_words import costing_evidence


class ReportView(Protocol):
    """What the page shows (app.report.ReportData has these)."""

    title: str
    facts: FactSet
    diagnosis: Diagnosis
    suggestion: Suggestion | None
    notes: list[str]
    comparison: Comparison | None
    baseline: str | None
    graph: RuleGraph | None  # the rules the run used (which evidence can cost step time)
    ledger: Ledger | None


def _section(title: str, body: str, anchor: str, intro: str = "") -> str:
    lead = f'<p class="intro">{escape(intro)}</p>' if intro else ""
    return f'<section id="{anchor}"><h2>{escape(title)}</h2>{lead}{body}</section>'


def _tiles(facts: FactSet) -> str:
    shown = (
        ("step.time_ms", "step time"),
        ("log.tokens_per_s", "tokens/s"),
        ("log.mfu", "MFU"),
        ("mfu.estimated", "MFU (estimated)"),
        ("step.compute_ratio", "device compute"),
        ("step.comm_exposed_ratio", "exposed communication"),
        ("step.free_ratio", "device idle"),
        ("memory.reserved_peak_bytes", "peak reserved memory"),
        ("profile.ranks", "ranks"),
        ("step.steady_steps", "steady steps"),
    )
    tiles = []
    for fact_id, label in shown:
        fact = facts.get(fact_id)
        if fact is None:
            continue
        tiles.append(
            f'<div class="tile" title="{escape(fact.source)}"><b>'
            f"{escape(format_value(fact.value, fact.unit))}</b><span>{escape(label)}</span></div>"
        )
    return f'<div class="tiles">{"".join(tiles)}</div>'


def _verdict_line(comparison: Comparison) -> str:
    verdict = escape(comparison.verdict.value)
    return (
        f'<p class="headline {verdict}">Against the baseline: {verdict.upper()} — '
        f"{escape(note_text(comparison.reason))}</p>"
    )


def _headline(
    diagnosis: Diagnosis, suggestion: Suggestion | None, comparison: Comparison | None = None
) -> str:
    """What the page says first. With a baseline, compare's verdict leads: a run compare judged
    worse is never greeted as healthy, and the next change waits for the revert."""
    revert = comparison is not None and comparison.verdict is Verdict.revert
    lines = [_verdict_line(comparison)] if comparison is not None else []
    main = diagnosis.main
    if main is None:
        text = "No bottleneck above its threshold." if revert else no_bottleneck_line(diagnosis)
        flagged = any(s.level in ("warning", "error") for s in diagnosis.symptoms)
        cls = "note" if revert or flagged else "ok"
    else:
        cost = words.step_cost(main) if main.cost_ratio > 0 else "a risk"
        text = (
            f"Main bottleneck: {main.id.removeprefix('bottleneck.')} ({cost}). "
            f"{first_sentence(words.bottleneck_message(main))}"
        )
        cls = main.severity
    lines.append(f'<p class="headline {escape(cls)}">{escape(text)}</p>')
    rec = suggestion.recommendation if suggestion else None
    if revert and not (rec is not None and rec.undo):
        lines.append(
            '<p class="next">Next: revert the change this run tried (compare judged it worse '
            'than the baseline), then profile again; the <a href="#change">change below</a> '
            "was read from this run, not from the reverted config.</p>"
        )
    elif rec is not None:
        lines.append(
            f'<p class="next">Next change: <a href="#change">{escape(words.title(rec))}</a> '
            f"<code>{escape(rec.feature)}</code></p>"
        )
    elif suggestion is not None:
        lines.append(f'<p class="next">{escape(words.summary(suggestion))}</p>')
    return "".join(lines)


def _step_bars(facts: FactSet) -> str:
    steps = facts.value("attrib.by_step_ms")
    if not isinstance(steps, list) or not steps:
        missing = next((m for m in facts.missing if m.id == "attrib.by_step_ms"), None)
        why = missing.reason if missing else "the profile has no steady steps with a step model"
        return f'<p class="missing">Not available: {escape(why)}.</p>'
    bars = [
        Bar(f"step {row['step']}", list(row["parts"].items()), " ms")
        for row in steps
        if isinstance(row, dict) and isinstance(row.get("parts"), dict)
    ]
    names = {name for bar in bars for name, _ in bar.segments}
    mean = Bar(
        "mean",
        [(name, sum(dict(b.segments).get(name, 0.0) for b in bars) / len(bars)) for name in names],
        " ms",
    )
    order = [name for bar in bars for name, _ in bar.segments]
    mean = Bar(mean.label, sorted(mean.segments, key=lambda s: order.index(s[0])), mean.note)
    fact = facts.get("attrib.by_step_ms")
    source = f'<p class="source">{escape(fact.source)}; {escape(fact.note)}</p>' if fact else ""
    return stacked_bars([*bars, mean], "ms") + source


def _step_ms(facts: FactSet) -> float | None:
    return number(facts.value("step.time_ms")) or number(facts.value("attrib.step_ms"))


def _operators(facts: FactSet) -> str:
    top = facts.value("ops.top")
    if not isinstance(top, list) or not top:
        return '<p class="missing">No operator table in the profile (kernel_details.csv or the database export).</p>'
    rows: list[tuple[str, float, str]] = []
    for row in top:
        if not isinstance(row, dict):
            continue
        share = number(row.get("share")) or 0.0
        per_step = number(row.get("per_step_ms")) or 0.0
        # an op's bound is known only where the profile has PMU pipe ratios
        bound = str(row.get("bound") or "")
        bound = "" if bound == "unknown" else bound
        count = row.get("count", "?")
        calls = "call" if count == 1 else "calls"
        text = f"{share:.1%} · {per_step:.3f} ms/step · {count} {calls}"
        rows.append((str(row.get("type", "?")) + (f" [{bound}]" if bound else ""), share, text))
    return hbars(rows)


def _change(suggestion: Suggestion | None, notes: Sequence[str]) -> str:
    if suggestion is None:
        return '<p class="missing">Give the training config to see the one next change.</p>'
    parts = [f'<p class="note">{escape(n)}</p>' for n in notes]
    parts += [f'<p class="warn">{escape(words.trust_message(w))}</p>' for w in suggestion.warnings]
    rec = suggestion.recommendation
    if rec is None:
        parts.append(f"<p>{escape(words.summary(suggestion))}</p>")
    else:
        parts.append(f"<h3>{words.head(suggestion)}: {escape(words.title(rec))}</h3>")
        change = words.change_line(rec) if rec.patch else "advice: no config key to change"
        parts.append(f"<p><code>{escape(rec.feature)}</code> · {escape(change)}</p>")
        dl = [("Why", words.why(suggestion, rec)), ("Advice", rec.advice)]
        if rec.evidence:
            dl.append(
                (
                    "Evidence",
                    "; ".join(f"{f.id} = {format_value(f.value, f.unit)}" for f in rec.evidence),
                )
            )
        ceiling = effect_words.ceiling_line(rec)
        if ceiling is not None:
            dl.append(("Ceiling", ceiling))
        if rec.predicted is not None:
            dl.append(("Predicted", effect_words.prediction_line(rec.predicted)))
        dl += [("Expected", words.expected(rec)), ("Risk", words.risk(rec))]
        if rec.verify:
            dl.append(("Verify", "; ".join(words.verify_line(v) for v in rec.verify)))
        parts.append(
            "<dl>" + "".join(f"<dt>{k}</dt><dd>{escape(v)}</dd>" for k, v in dl if v) + "</dl>"
        )
        if rec.diff:
            parts.append(_diff(rec.diff))
    if suggestion.rejected:
        title = "Other candidates" if rec is not None else "Candidates and why none applies"
        items = "".join(
            f"<li><code>{escape(r.feature)}</code>: {escape(words.rejection(r))}</li>"
            for r in suggestion.rejected
        )
        parts.append(
            f"<details><summary>{title} ({len(suggestion.rejected)})</summary><ul>{items}</ul></details>"
        )
    return "".join(parts)


def _diff(diff: str) -> str:
    lines = []
    for line in diff.rstrip("\n").split("\n"):
        cls = (
            "hunk"
            if line.startswith("@@")
            else "file"
            if line.startswith(("+++", "---"))
            else "add"
            if line.startswith("+")
            else "del"
            if line.startswith("-")
            else ""
        )
        # every line a block of its own: no newlines between them, an empty line keeps height
        lines.append(f'<span class="{cls or "ctx"}">{escape(line) or " "}</span>')
    return '<pre class="diff">' + "".join(lines) + "</pre>"


def _comparison(data: ReportView) -> str:
    result = data.comparison
    if result is None:
        return ""
    rows = []
    for m in result.metrics:
        if m.baseline is None and m.candidate is None:
            continue
        change = escape(metric_change(m))
        cls = "" if not m.significant else ' class="better"' if m.better else ' class="worse"'
        rows.append(
            f'<tr><td>{escape(m.label)}</td><td class="num">{escape(metric_value(m, m.baseline))}</td>'
            f'<td class="num">{escape(metric_value(m, m.candidate))}</td>'
            f'<td class="num"{cls}>{change}</td></tr>'
        )
    verdict = escape(result.verdict.value)
    body = (
        f'<p class="headline {verdict}">Verdict: {verdict.upper()} — {escape(note_text(result.reason))}</p>'
        f"<p>Baseline: <code>{escape(data.baseline or '')}</code></p>"
        "<table><thead><tr><th>metric</th><th>baseline</th><th>this run</th><th>change</th>"
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
    body += "".join(f'<p class="warn">{escape(note_text(w))}</p>' for w in result.warnings)
    return _section("Against the baseline", body, "compare")


def _ledger(data: ReportView) -> str:
    ledger = data.ledger
    if ledger is None or not ledger.entries:
        return ""
    rows = []
    for e in ledger.entries:
        patch = e.get("patch")
        ops = ""
        if isinstance(patch, dict):
            ops = ", ".join(f"{op.get('path')}={op.get('value')}" for op in patch.get("ops", []))
        rows.append(
            f"<tr><td>{escape(str(e.get('time', '')))}</td>"
            f'<td><span class="pill {escape(str(e.get("event")))}">{escape(str(e.get("event")))}'
            f"</span></td><td><code>{escape(str(e.get('feature')))}</code></td>"
            f"<td>{escape(ops)}</td><td>{escape(str(e.get('note') or ''))}</td></tr>"
        )
    body = (
        f"<p><code>{escape(str(ledger.path))}</code></p><table><thead><tr><th>time</th>"
        "<th>event</th><th>feature</th><th>change</th><th>note</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
    checked = [
        f"<tr><td><code>{escape(r.feature)}</code></td>"
        f"<td>{escape(effect_words.predicted_range(r.predicted or {}))}</td>"
        f"<td>{escape(effect_words.measured_text(r.measured) if r.measured else '')}</td></tr>"
        for r in change_records(ledger.entries)
        if r.predicted is not None
    ]
    if checked:
        body += (
            "<table><thead><tr><th>change</th><th>predicted</th><th>measured</th></tr></thead>"
            f"<tbody>{''.join(checked)}</tbody></table>"
        )
    return _section("What was tried", body, "ledger")


def report_html(data: ReportView) -> str:
    """The page for a ReportData (app.report): every section whose data the run has."""
    facts: FactSet = data.facts
    platform = facts.value("profile.platform") or "?"
    framework = facts.value("profile.framework") or "?"
    subtitle = f"{framework} on {platform}"
    warnings = "".join(f'<p class="warn">{escape(w)}</p>' for w in facts.warnings)
    sections = [
        _section(
            "Where the step goes",
            _step_bars(facts),
            "steps",
            "Each steady step split into its parts; the last bar is their mean. Hover a part "
            "for its time and share.",
        ),
        _section(
            "Bottlenecks, the one worth most first",
            bottleneck_table(data.diagnosis, _step_ms(facts))
            + could_lead_list(data.diagnosis, costing_evidence(data.graph) if data.graph else None)
            + symptom_table(data.diagnosis),
            "bottlenecks",
            "Cost: the share of the step the bottleneck's symptoms cost beyond their fine "
            "threshold; ceiling: the step time its costliest symptom claims once the time "
            "another bottleneck explains is left out, the most that removing it entirely could "
            "recover.",
        ),
    ]
    ranks = rank_section(facts, any(s.id == "symptom.slow-rank" for s in data.diagnosis.symptoms))
    if ranks:
        sections.append(
            _section(
                "Ranks",
                ranks,
                "ranks",
                "Cells shade towards the worst value of their column; click a header to sort.",
            )
        )
    sections.append(_section("Top operators (device time per step)", _operators(facts), "ops"))
    analyzers = analyzer_section(facts)
    if analyzers:
        sections.append(_section("Operators and links in detail", analyzers, "analyzers"))
    sections.append(_section("The one next change", _change(data.suggestion, data.notes), "change"))
    sections.append(_comparison(data))
    sections.append(_ledger(data))
    inputs = ", ".join(facts.inputs[:6]) + (
        f" and {len(facts.inputs) - 6} more" if len(facts.inputs) > 6 else ""
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>advisor report — {escape(data.title)}</title><style>{STYLE}</style></head>"
        f'<body><header><h1>advisor report</h1><p class="sub">{escape(data.title)} · '
        f"{escape(str(subtitle))}</p>{_headline(data.diagnosis, data.suggestion, data.comparison)}"
        f"{_tiles(facts)}{warnings}</header><main>{''.join(s for s in sections if s)}</main>"
        f"<footer>advisor {escape(__version__)} · inputs: {escape(inputs)}</footer>"
        f"<script>{SCRIPT}</script></body></html>\n"
    )
