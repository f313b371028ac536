"""Render a comparison as a side-by-side table or the advisor/comparison@1 JSON."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from advisor.engine.compare import Comparison, Metric

COMPARISON_SCHEMA = "advisor/comparison@1"


def _fmt(metric: Metric, value: float | None) -> str:
    if value is None:
        return "-"
    if "ratio" in metric.id or metric.id == "mfu":
        return f"{value:.1%}"
    if "bytes" in metric.id:
        return f"{value / 1024**3:.2f} GiB"
    return f"{value:,.1f}"


def comparison_json(result: Comparison, ledger_note: str | None) -> str:
    payload = {
        "schema": COMPARISON_SCHEMA,
        "verdict": result.verdict,
        "reason": result.reason,
        "metrics": [m.to_json() for m in result.metrics],
        "operators": result.operators,
        "warnings": result.warnings,
        "collect": result.collect or None,
        "ledger": ledger_note,
    }
    return json.dumps(payload, indent=2, ensure_ascii=False)


def comparison_text(result: Comparison, ledger_note: str | None) -> str:
    lines = [f"Verdict: {result.verdict.upper()} — {result.reason}"]
    if result.collect:
        lines.append(f"To decide: {result.collect}")
    lines += ["", f"  {'metric':<24} {'baseline':>14} {'candidate':>14} {'change':>9}  "]
    for m in result.metrics:
        if m.baseline is None and m.candidate is None:
            continue
        change = f"{m.delta_ratio:+.1%}" if m.delta_ratio is not None else "-"
        mark = "" if not m.significant else ("  better" if m.better else "  worse")
        lines.append(
            f"  {m.label:<24} {_fmt(m, m.baseline):>14} {_fmt(m, m.candidate):>14} {change:>9}{mark}"
        )
    if result.operators:
        lines += ["", "operators that changed (ms per step)"]
        for op in result.operators:
            delta = f"{op['delta_ratio']:+.0%}" if op["delta_ratio"] is not None else "new"
            lines.append(
                f"  {op['type']:<28} {op['baseline_ms']:>9.3f} -> {op['candidate_ms']:>9.3f}  {delta}"
            )
    for warning in result.warnings:
        lines.append(f"warning: {warning}")
    if ledger_note:
        lines.append(f"ledger: {ledger_note}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class CompareReport:
    comparison: Comparison
    ledger_note: str | None


FORMATS: dict[str, Callable[[CompareReport], str]] = {
    "text": lambda r: comparison_text(r.comparison, r.ledger_note),
    "json": lambda r: comparison_json(r.comparison, r.ledger_note) + "\n",
    "markdown": lambda r: _markdown_comparison(r),
}


def _markdown_comparison(report: CompareReport) -> str:
    from advisor.render.markdown import comparison_markdown

    return comparison_markdown(report.comparison, report.ledger_note)
