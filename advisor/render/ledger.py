"""Render the experiment ledger as a table."""

from __future__ import annotations

from advisor.inputs.ledger import Ledger
from advisor.render.compare_words import recorded_reason


def ledger_text(ledger: Ledger) -> str:
    if not ledger.entries:
        return f"{ledger.path}: no suggestions recorded yet\n"
    lines = [f"{ledger.path}", f"  {'time':<26} {'event':<9} {'feature':<36} details"]
    for e in ledger.entries:
        details = []
        patch = e.get("patch")
        if isinstance(patch, dict):
            ops = ", ".join(f"{op.get('path')}={op.get('value')}" for op in patch.get("ops", []))
            details.append(f"{patch.get('target')}: {ops}")
        if e.get("bottleneck"):
            details.append(str(e["bottleneck"]))
        if e.get("note"):
            details.append(recorded_reason(str(e["note"])))
        lines.append(
            f"  {e.get('time', ''):<26} {e['event']:<9} {e['feature']:<36} {'; '.join(details)}"
        )
    return "\n".join(lines) + "\n"
