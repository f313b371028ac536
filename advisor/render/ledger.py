"""Render the experiment ledger: its events as a table, each change's predicted against measured
effect, and the calibration of the predictions (text, or the advisor/ledger-history@1 JSON)."""

from __future__ import annotations

import json

from advisor.engine.predict import Calibration, calibrate, change_records
from advisor.engine.retry import RETRY_GROUNDS
from advisor.inputs.ledger import Ledger
from advisor.model import Grounds, Reason
from advisor.render.compare_words import recorded_reason
from advisor.render.effect_words import measured_text, predicted_range
from advisor.render.retry_words import masked_words, retry_reason

LEDGER_HISTORY_SCHEMA = "advisor/ledger-history@1"


def _events(ledger: Ledger) -> list[str]:
    lines = [f"  {'time':<26} {'event':<9} {'feature':<36} details"]
    for e in ledger.entries:
        details = []
        patch = e.get("patch")
        if isinstance(patch, dict):
            ops = ", ".join(f"{op.get('path')}={op.get('value')}" for op in patch.get("ops", []))
            details.append(f"{patch.get('target')}: {ops}")
        if e.get("bottleneck"):
            details.append(str(e["bottleneck"]))
        if e.get("failure"):
            details.append(f"run failed: {e['failure']}")
        if e.get("note"):
            details.append(recorded_reason(str(e["note"])))
        masked = masked_words(e.get("masked_by"))
        if masked is not None:
            details.append(masked)
        again = _retry_of(e.get("retry"))
        if again is not None:
            details.append(retry_reason(again))
        lines.append(
            f"  {e.get('time', ''):<26} {e['event']:<9} {e['feature']:<36} {'; '.join(details)}"
        )
    return lines


def _retry_of(raw: object) -> Reason | None:
    if not isinstance(raw, dict) or raw.get("code") not in {g.value for g in RETRY_GROUNDS}:
        return None
    values = raw.get("values")
    plain = {k: tuple(v) if isinstance(v, list) else v for k, v in (values or {}).items()}
    return Reason(Grounds(raw["code"]), plain)


def _calibration_line(name: str, calibration: Calibration) -> str:
    return (
        f"  {name:<36} {calibration.measurements} measured, mean error "
        f"{calibration.mean_error * 100:+.1f} pp (|error| {calibration.mean_abs_error * 100:.1f} "
        f"pp), {calibration.in_range_share:.0%} inside the predicted range"
    )


def _predictions(ledger: Ledger) -> list[str]:
    records = [r for r in change_records(ledger.entries) if r.predicted is not None]
    if not records:
        return []
    lines = ["", "Predicted vs measured:"]
    for record in records:
        predicted = predicted_range(record.predicted or {}) or "none"
        measured = (
            measured_text(record.measured)
            if record.measured is not None
            else f"not measured yet ({record.verdict or 'proposed'})"
        )
        lines.append(f"  {record.feature:<36} predicted {predicted}; measured {measured}")
    per_feature, overall = calibrate(ledger.entries)
    if overall is not None:
        lines += ["", "Calibration (measured - expected change, in points of the metric):"]
        lines += [_calibration_line(f, c) for f, c in sorted(per_feature.items())]
        lines.append(_calibration_line("overall", overall))
    return lines


def ledger_text(ledger: Ledger) -> str:
    if not ledger.entries:
        return f"{ledger.path}: no suggestions recorded yet\n"
    lines = [f"{ledger.path}", *_events(ledger), *_predictions(ledger)]
    return "\n".join(lines) + "\n"


def ledger_json(ledger: Ledger) -> str:
    per_feature, overall = calibrate(ledger.entries)
    payload = {
        "schema": LEDGER_HISTORY_SCHEMA,
        "ledger": str(ledger.path),
        "entries": ledger.entries,
        "changes": [r.to_json() for r in change_records(ledger.entries)],
        "calibration": {
            "features": {f: c.to_json() for f, c in sorted(per_feature.items())},
            "overall": None if overall is None else overall.to_json(),
        },
        "warnings": list(ledger.warnings),
    }
    return json.dumps(payload, indent=2, ensure_ascii=False) + "\n"
