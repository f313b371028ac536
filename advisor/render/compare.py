"""Render a comparison as a side-by-side table or the advisor/comparison@4 JSON (codes and
values, with the words the table shows as `message` fields). A share's change is shown in
percentage points, a time's or rate's in percent."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from advisor.engine.compare import Comparison
from advisor.engine.tuning import FAILED_RUN_SCHEMA, FailedRun
from advisor.render.compare_words import (
    collect_text,
    judged_text,
    metric_change,
    metric_value,
    note_text,
)
from advisor.render.effect_words import checked_text
from advisor.render.markdown import comparison_markdown

# @3: `judged_on` (the unit that decided), metrics' `delta_pp`, the baseline-differs code
# @4: `prediction`: the ledger's prediction of the change against its measurement
COMPARISON_SCHEMA = "advisor/comparison@4"


def comparison_json(result: Comparison, ledger_note: str | None) -> str:
    payload = {
        "schema": COMPARISON_SCHEMA,
        "verdict": result.verdict.value,
        "reason": {**result.reason.to_json(), "message": note_text(result.reason)},
        "judged_on": {**result.judged_on.to_json(), "message": judged_text(result.judged_on)},
        "metrics": [m.to_json() for m in result.metrics],
        "operators": result.operators,
        "warnings": [{**w.to_json(), "message": note_text(w)} for w in result.warnings],
        "collect": (
            None
            if result.collect is None
            else {"code": result.collect.value, "message": collect_text(result.collect)}
        ),
        "ledger": ledger_note,
        "prediction": (
            None
            if result.checked is None
            else {**result.checked.to_json(), "message": checked_text(result.checked)}
        ),
    }
    return json.dumps(payload, indent=2, ensure_ascii=False)


def comparison_text(result: Comparison, ledger_note: str | None) -> str:
    lines = [f"Verdict: {result.verdict.value.upper()} — {note_text(result.reason)}"]
    lines.append(f"Judged on: {judged_text(result.judged_on)}")
    if result.collect:
        lines.append(f"To decide: {collect_text(result.collect)}")
    lines += ["", f"  {'metric':<24} {'baseline':>14} {'candidate':>14} {'change':>9}  "]
    for m in result.metrics:
        if m.baseline is None and m.candidate is None:
            continue
        change = metric_change(m)
        mark = "" if not m.significant else ("  better" if m.better else "  worse")
        lines.append(
            f"  {m.label:<24} {metric_value(m, m.baseline):>14} {metric_value(m, m.candidate):>14} {change:>9}{mark}"
        )
    if result.operators:
        lines += ["", "operators that changed (ms per step)"]
        for op in result.operators:
            delta = f"{op['delta_ratio']:+.0%}" if op["delta_ratio"] is not None else "new"
            lines.append(
                f"  {op['type']:<28} {op['baseline_ms']:>9.3f} -> {op['candidate_ms']:>9.3f}  {delta}"
            )
    for warning in result.warnings:
        lines.append(f"warning: {note_text(warning)}")
    if result.checked is not None:
        lines.append(f"prediction: {checked_text(result.checked)}")
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
    "markdown": lambda r: comparison_markdown(r.comparison, r.ledger_note),
}


_CAUSES = {
    "out-of-memory": "the run ran out of device memory",
    "hccl-timeout": "a collective timed out (HCCL)",
    "nan": "the loss became NaN",
    "crashed": "the run failed",
}


def failed_report(run: FailedRun, output_format: str) -> str:
    """A run that crashed: the verdict is `failed`, in the format asked for."""
    reason = _CAUSES.get(run.cause, run.cause)
    if output_format == "json":
        payload = {
            "schema": FAILED_RUN_SCHEMA,
            "verdict": "failed",
            "reason": {
                "code": run.cause,
                "values": {"log": str(run.log) if run.log else None},
                "message": reason,
            },
            "failed_feature": run.feature,
            "ledger": run.ledger_note,
        }
        return json.dumps(payload, indent=2, ensure_ascii=False) + "\n"
    lines = [f"Verdict: FAILED — {reason}" + (f" ({run.log})" if run.log else "")]
    if output_format == "markdown":
        lines = [f"**Verdict: FAILED** — {reason}"]
    lines.append("revert the change before the next run")
    if run.ledger_note:
        lines.append(f"ledger: {run.ledger_note}")
    return "\n".join(lines) + "\n"
