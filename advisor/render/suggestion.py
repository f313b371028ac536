"""Render a suggestion: text for people, the advisor/suggestion@1 JSON, or a git-apply diff."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from advisor.facts.units import format_value
from advisor.model import Direction, Patch, Recommendation, Suggestion, VerifyCheck

SUGGESTION_SCHEMA = "advisor/suggestion@1"


def change_line(rec: Recommendation) -> str:
    patch = rec.patch
    if patch is None:
        return f"{rec.title} (advice: no config key to change)"
    parts = []
    for op in patch.ops:
        before = "unset" if op.expect is None else str(op.expect)
        if patch.target == "env":
            parts.append(
                f"export {op.path}={op.value}"
                if op.op == "set"
                else f"remove {op.path} (was {before})"
            )
        elif patch.target == "cli":
            parts.append(f"--{op.path} {before} -> {op.value}")
        elif op.path.startswith("args."):  # a Megatron-backend flag
            flag = "--" + op.path[len("args.") :]
            if op.op == "remove" or op.value is False:
                parts.append(f"remove {flag}")
            elif op.value is True:
                parts.append(f"add {flag}")
            else:
                parts.append(f"{flag} {before} -> {op.value}")
        else:
            parts.append(
                f"{op.path}: {before} -> {op.value}" if op.op == "set" else f"remove {op.path}"
            )
    where = patch.file or "your launch environment"
    return f"{'; '.join(parts)}   [{patch.target} in {where}, {patch.applicability}]"


_VERBS = {
    Direction.decrease: "should decrease",
    Direction.increase: "should increase",
    Direction.unchanged: "should not change",
    Direction.watch: "watch it",
}


def verify_line(check: VerifyCheck) -> str:
    if check.direction is Direction.back_to_baseline:
        return "step time back to the baseline's"
    now = ""
    if check.current is not None and check.unit is not None:
        now = f" (now {format_value(check.current, check.unit, compact=True)})"
    return f"{check.fact} {_VERBS[check.direction]}{now}"


def suggestion_json(s: Suggestion, notes: list[str]) -> str:
    rec = s.recommendation
    body: dict[str, object] | None = None
    if rec is not None:
        patch: Patch | None = rec.patch
        body = {
            "feature": rec.feature,
            "bottleneck": rec.bottleneck,
            "title": rec.title,
            "why": rec.why,
            "evidence": [f.to_json() for f in rec.evidence],
            "patch": patch.to_json() if patch else None,
            "advice": rec.advice or None,
            "diff": rec.diff,
            "expected": rec.expected,
            "risk": rec.risk,
            "verify": [verify_line(v) for v in rec.verify],
            "ceiling_ms": None if rec.ceiling_ms is None else round(rec.ceiling_ms, 3),
            "ceiling_ratio": None if rec.ceiling_ratio is None else round(rec.ceiling_ratio, 4),
        }
    payload = {
        "schema": SUGGESTION_SCHEMA,
        "status": s.status,
        "summary": s.summary,
        "recommendation": body,
        "rejected": [r.to_json() for r in s.rejected],
        "notes": notes,
        "warnings": [{"id": w.id, "message": w.message} for w in s.warnings],
    }
    return json.dumps(payload, indent=2, ensure_ascii=False)


def suggestion_text(s: Suggestion, notes: list[str]) -> str:
    lines = [f"note: {n}" for n in notes]
    lines += [f"warning [{w.id}]: {w.message}" for w in s.warnings]
    rec = s.recommendation
    if rec is None:
        lines.append(s.summary if s.status == "healthy" else f"{s.status}: {s.summary}")
    else:
        head = "Collect data first" if s.status == "needs-data" else "Next change"
        lines.append(f"{head}: {change_line(rec)}")
        lines.append(f"  feature: {rec.feature} — {rec.title}")
        lines.append("")
        lines.append(f"Why: {rec.why}")
        if rec.evidence:
            shown = ", ".join(f"{f.id} = {format_value(f.value, f.unit)}" for f in rec.evidence)
            lines.append(f"Evidence: {shown}")
        if rec.advice:
            lines.append(f"Advice: {rec.advice}")
        if rec.ceiling_ms is not None and rec.ceiling_ratio is not None:
            lines.append(
                f"Ceiling: it can recover at most {rec.ceiling_ms:.2f} ms per step "
                f"({rec.ceiling_ratio:.1%} of the step)"
            )
        lines.append(f"Expected: {rec.expected}")
        lines.append(f"Risk: {rec.risk}")
        if rec.patch:
            lines.extend(f"Note: {note}" for note in rec.patch.notes)
        if rec.verify:
            lines.append("Verify with the next profile (same steps, same ranks):")
            lines.extend(f"  - {verify_line(v)}" for v in rec.verify)
        if rec.patch and rec.patch.lines_to_add:
            lines.append("Add to the launch environment:")
            lines.extend(f"  {line}" for line in rec.patch.lines_to_add)
        if rec.diff:
            lines.append("")
            lines.append(rec.diff.rstrip("\n"))
    if s.rejected:
        lines.append("")
        lines.append(
            "Other candidates and why they were not chosen:"
            if rec is not None
            else "Candidates and why none applies:"
        )
        lines.extend(f"  - {r.feature}: {r.reason}" for r in s.rejected)
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class SuggestionReport:
    suggestion: Suggestion
    notes: list[str]

    @property
    def diff(self) -> str:
        rec = self.suggestion.recommendation
        return rec.diff if rec else ""


FORMATS: dict[str, Callable[[SuggestionReport], str]] = {
    "text": lambda r: suggestion_text(r.suggestion, r.notes),
    "json": lambda r: suggestion_json(r.suggestion, r.notes) + "\n",
    "diff": lambda r: r.diff,
    "markdown": lambda r: _markdown(r),
}


def _markdown(report: SuggestionReport) -> str:
    from advisor.render.markdown import suggestion_markdown

    return suggestion_markdown(report.suggestion, report.notes)
