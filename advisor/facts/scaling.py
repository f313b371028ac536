"""Scaling efficiency across world sizes (seed 003): the same job at different device counts,
throughput per device against the smallest run's.

Throughput per device comes from what the run measured: TFLOP/s per device (Megatron's
`throughput per GPU`, MindFormers' `train_throughput_per_npu`) as logged, else the global
tokens/s divided by the world size. Runs compared must share the measure: one run with only
TFLOP/s and another with only tokens/s are not comparable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from advisor.model import InputError

# per-device measures, best first: (fact, unit per device, divide by the world size)
MEASURES = (
    ("log.tflops_per_device", "TFLOP/s", False),
    ("log.tokens_per_s", "tokens/s", True),
)
# what a run brings: the measures and its step time
MEASURED = (*(m[0] for m in MEASURES), "log.step_time_ms")


@dataclass(frozen=True)
class ScalingRun:
    label: str
    world: int
    per_device: float
    unit: str
    step_ms: float | None
    efficiency: float  # per-device throughput / the smallest run's (1.0 for itself)


def _per_device(
    label: str, measures: Mapping[str, float], world: int, fact_id: str, divide: bool
) -> float:
    value = measures.get(fact_id)
    if value is None or value <= 0:
        raise InputError(label, f"no {fact_id} in the run: the runs cannot be compared on it")
    return value / world if divide else value


def scaling(runs: list[tuple[str, int, Mapping[str, float]]]) -> list[ScalingRun]:
    """Each run's throughput per device and its efficiency against the run on fewest devices;
    a run is (label, devices, {fact id: value} of MEASURED)."""
    if len(runs) < 2:
        raise InputError("scaling", "give at least two runs at different world sizes")
    measure = next((m for m in MEASURES if all(m[0] in r[2] for r in runs)), None)
    if measure is None:
        raise InputError(
            "scaling",
            "the runs share no throughput measure (TFLOP/s per device or tokens/s in every run)",
        )
    fact_id, unit, divide = measure
    measured = [
        (label, world, _per_device(label, values, world, fact_id, divide), values)
        for label, world, values in runs
    ]
    base = min(measured, key=lambda r: r[1])[2]
    return [
        ScalingRun(
            label, world, per_device, unit, values.get("log.step_time_ms"), per_device / base
        )
        for label, world, per_device, values in sorted(measured, key=lambda r: r[1])
    ]
