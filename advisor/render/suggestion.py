"""Render a suggestion: text for people, the advisor/suggestion@4 JSON, or a git-apply diff.

The JSON carries the engine's codes and values; its `summary` and `message` fields are the
same words the text shows (render/words.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from advisor.engine.predict import prediction_json, reach_json
from advisor.facts.units import format_value
from advisor.model import Patch, Recommendation, Status, Suggestion, VerifyCheck
from advisor.render import effect_words, words
from advisor.render.markdown import suggestion_markdown
from advisor.render.retry_words import retry_reason

# @3: the recommendation's `predicted` (its expected effect) and `reach` (what bounded the
# ceiling); the reject code numerics-last
SUGGESTION_SCHEMA = "advisor/suggestion@4"


def suggestion_json(s: Suggestion, notes: list[str]) -> str:
    rec = s.recommendation
    body: dict[str, object] | None = None
    if rec is not None:
        patch: Patch | None = rec.patch
        body = {
            "feature": rec.feature,
            "bottleneck": rec.bottleneck,
            "title": words.title(rec),
            "undo": rec.undo,
            "why": words.why(s, rec),
            "evidence": [f.to_json() for f in rec.evidence],
            "patch": patch.to_json() if patch else None,
            "advice": rec.advice or None,
            "diff": rec.diff,
            "expected": words.expected(rec),
            "risk": words.risk(rec),
            "verify": [_verify_json(v) for v in rec.verify],
            "ceiling": _ceiling_json(rec),
            "reach": reach_json(rec.reach) if rec.reach else None,
            "predicted": _predicted_json(rec),
        }
        if rec.retry is not None:  # only on a change proposed again
            body["retry"] = {**rec.retry.to_json(), "message": retry_reason(rec.retry)}
    payload = {
        "schema": SUGGESTION_SCHEMA,
        "status": s.status.value,
        "reason": s.reason.to_json(),
        "summary": words.summary(s),
        "recommendation": body,
        "rejected": [
            {
                "feature": r.feature,
                "code": r.code.value,
                "values": dict(r.values),
                "message": words.rejection(r),
            }
            for r in s.rejected
        ],
        "notes": notes,
        "warnings": [
            {"id": w.id.value, "values": dict(w.values), "message": words.trust_message(w)}
            for w in s.warnings
        ],
    }
    return json.dumps(payload, indent=2, ensure_ascii=False)


def _ceiling_json(rec: Recommendation) -> dict[str, object] | None:
    """The most step time the change can recover: an upper bound (what its mechanism can remove
    of the time it targets), never an expected gain; `predicted` is the estimate."""
    if rec.ceiling_ms is None or rec.ceiling_ratio is None:
        return None
    return {
        "bound": "at-most",
        "ms": round(rec.ceiling_ms, 3),
        "ratio": round(rec.ceiling_ratio, 4),
    }


def _predicted_json(rec: Recommendation) -> dict[str, object] | None:
    if rec.predicted is None:
        return None
    return {
        **prediction_json(rec.predicted),
        "message": effect_words.prediction_line(rec.predicted),
    }


def _verify_json(check: VerifyCheck) -> dict[str, object]:
    return {
        "fact": check.fact,
        "direction": check.direction.value,
        "current": check.current,
        "unit": check.unit,
        "message": words.verify_line(check),
    }


def _recommendation_text(s: Suggestion, rec: Recommendation) -> list[str]:
    # advice (no patch) is named by its title in the first line already
    named = f" — {words.title(rec)}" if rec.patch is not None else ""
    lines = [
        f"{words.head(s)}: {words.change_line(rec)}",
        f"  feature: {rec.feature}{named}",
        "",
        f"Why: {words.why(s, rec)}",
    ]
    if rec.evidence:
        shown = ", ".join(f"{f.id} = {format_value(f.value, f.unit)}" for f in rec.evidence)
        lines.append(f"Evidence: {shown}")
    if rec.advice:
        lines.append(f"Advice: {rec.advice}")
    ceiling = effect_words.ceiling_line(rec)
    if ceiling is not None:
        lines.append(f"Ceiling: {ceiling}")
    if rec.predicted is not None:
        lines.append(f"Predicted: {effect_words.prediction_line(rec.predicted)}")
    lines.append(f"Expected: {words.expected(rec)}")
    lines.append(f"Risk: {words.risk(rec)}")
    lines.extend(f"Note: {note}" for note in (rec.patch.notes if rec.patch else ()))
    if rec.verify:
        lines.append("Verify with the next profile (same steps, same ranks):")
        lines.extend(f"  - {words.verify_line(v)}" for v in rec.verify)
    if rec.patch and rec.patch.lines_to_add:
        lines.append("Add to the launch environment:")
        lines.extend(f"  {line}" for line in rec.patch.lines_to_add)
    if rec.diff:
        lines += ["", rec.diff.rstrip("\n")]
    return lines


def suggestion_text(s: Suggestion, notes: list[str]) -> str:
    lines = [f"note: {n}" for n in notes]
    lines += [f"warning [{w.id.value}]: {words.trust_message(w)}" for w in s.warnings]
    rec = s.recommendation
    if rec is None:
        said = words.summary(s)
        lines.append(said if s.status is Status.healthy else f"{s.status.value}: {said}")
    else:
        lines += _recommendation_text(s, rec)
    if s.rejected:
        lines.append("")
        lines.append(
            "Other candidates and why they were not chosen:"
            if rec is not None
            else "Candidates and why none applies:"
        )
        lines.extend(f"  - {r.feature}: {words.rejection(r)}" for r in s.rejected)
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
    "markdown": lambda r: suggestion_markdown(r.suggestion, r.notes),
}
