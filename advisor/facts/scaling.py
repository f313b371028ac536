"""Scaling efficiency across world sizes (seed 003): the same job at different device counts,
throughput per device against the smallest run's.

Throughput per device comes from what the log measured: TFLOP/s per device (Megatron's
`throughput per GPU`, MindFormers' `train_throughput_per_npu`) as logged, else the global
tokens/s divided by the world size. Runs compared must share the measure: one run with only
TFLOP/s and another with only tokens/s are not comparable.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.model import FactSet, InputError

# per-device measures, best first: (fact, unit per device, divide by the world size)
MEASURES = (
    ("log.tflops_per_device", "TFLOP/s", False),
    ("log.tokens_per_s", "tokens/s", True),
)


@dataclass(frozen=True)
class ScalingRun:
    label: str
    world: int
    per_device: float
    unit: str
    step_ms: float | None
    efficiency: float  # per-device throughput / the smallest run's (1.0 for itself)


def _per_device(label: str, facts: FactSet, world: int, fact_id: str, divide: bool) -> float:
    value = facts.value(fact_id)
    if not isinstance(value, int | float) or value <= 0:
        raise InputError(label, f"no {fact_id} in the log: the runs cannot be compared on it")
    return float(value) / world if divide else float(value)


def scaling(runs: list[tuple[str, int, FactSet]]) -> list[ScalingRun]:
    """Each run's throughput per device and its efficiency against the run on fewest devices."""
    if len(runs) < 2:
        raise InputError("scaling", "give at least two runs at different world sizes")
    measure = next(
        (m for m in MEASURES if all(isinstance(f.value(m[0]), int | float) for *_, f in runs)),
        None,
    )
    if measure is None:
        raise InputError(
            "scaling",
            "the logs share no throughput measure (TFLOP/s per device or tokens/s in every log)",
        )
    fact_id, unit, divide = measure
    measured = [
        (label, world, _per_device(label, facts, world, fact_id, divide), facts)
        for label, world, facts in runs
    ]
    base = min(measured, key=lambda r: r[1])[2]
    out = []
    for label, world, per_device, facts in sorted(measured, key=lambda r: r[1]):
        step = facts.value("log.step_time_ms")
        out.append(
            ScalingRun(
                label,
                world,
                per_device,
                unit,
                float(step) if isinstance(step, int | float) else None,
                per_device / base,
            )
        )
    return out
