"""Scaling efficiency as a text table or JSON."""

from __future__ import annotations

import json

from advisor.facts.scaling import ScalingRun


def scaling_text(runs: list[ScalingRun]) -> str:
    unit = runs[0].unit
    lines = [
        f"{'devices':>8}  {f'{unit} per device':>22}  {'efficiency':>10}  {'step ms':>9}  run",
    ]
    for run in runs:
        step = f"{run.step_ms:.1f}" if run.step_ms is not None else "-"
        lines.append(
            f"{run.world:>8}  {run.per_device:>22,.2f}  {run.efficiency:>10.1%}  {step:>9}  {run.label}"
        )
    base = runs[0]
    lines.append(
        f"efficiency = throughput per device / the {base.world}-device run's (100%: linear scaling)"
    )
    return "\n".join(lines) + "\n"


def scaling_json(runs: list[ScalingRun]) -> str:
    rows = [
        {
            "run": r.label,
            "world": r.world,
            "per_device": r.per_device,
            "unit": f"{r.unit} per device",
            "efficiency": r.efficiency,
            "step_ms": r.step_ms,
        }
        for r in runs
    ]
    return json.dumps({"schema": "advisor/scaling@1", "runs": rows}, indent=2) + "\n"
