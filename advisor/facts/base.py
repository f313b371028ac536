"""Shared helpers for fact derivation: the recorder and steady-step selection."""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import median
from typing import Any

from advisor.facts.catalogue import spec_for
from advisor.model import Fact, MissingFact


@dataclass
class Recorder:
    """Collects the facts of one scope; units come from the catalogue, never from callers."""

    scope: str
    facts: dict[str, Fact] = field(default_factory=dict)
    missing: dict[str, MissingFact] = field(default_factory=dict)

    def add(self, fact_id: str, value: Any, source: str, note: str = "") -> None:
        spec = spec_for(fact_id)
        self.facts[fact_id] = Fact(fact_id, value, spec.unit, self.scope, source, note)
        self.missing.pop(fact_id, None)

    def miss(self, fact_id: str, reason: str) -> None:
        spec_for(fact_id)  # unknown ids are programming errors
        if fact_id not in self.facts:
            self.missing[fact_id] = MissingFact(fact_id, self.scope, reason)


@dataclass(frozen=True)
class SteadySteps:
    """Which profiled steps count as steady, and a sentence saying why."""

    kept: list[int]  # indexes into the original sequence
    labels: list[str]  # step labels of the kept steps
    note: str


def _label(numbers: list[int | None], i: int) -> str:
    n = numbers[i]
    return str(n) if n is not None else f"#{i + 1}"


def _span(labels: list[str]) -> str:
    if len(labels) <= 1:
        return labels[0] if labels else "none"
    if all(label.isdigit() for label in labels):
        values = [int(label) for label in labels]
        if values == list(range(values[0], values[-1] + 1)):
            return f"{values[0]}-{values[-1]}"
    return ", ".join(labels)


def select_steady(
    numbers: list[int | None],
    durations: list[float],
    partial_ratio: float,
    open_last_ratio: float | None = None,
) -> SteadySteps:
    """Drop the first step (warm-up) and a last step cut short by the profiler stop; with
    `open_last_ratio` (a trace whose last window runs to its last operation), also a last step
    that many times longer than the median of the others: its window holds the next step's
    work, so it is not one step."""
    count = len(durations)
    if count == 0:
        return SteadySteps([], [], "no steps")
    if count == 1:
        label = _label(numbers, 0)
        return SteadySteps(
            [0], [label], f"step {label} only: a single step is not a steady-state measurement"
        )
    kept = list(range(1, count))
    dropped = [f"first step {_label(numbers, 0)} dropped (warm-up)"]
    if len(kept) >= 2:
        last = kept[-1]
        others = median(durations[i] for i in kept[:-1])
        share = durations[last] / others if others > 0 else 1.0
        if share < partial_ratio:
            kept.pop()
            dropped.append(
                f"last step {_label(numbers, last)} dropped (partial: {share:.0%} of the median)"
            )
        elif open_last_ratio is not None and share > open_last_ratio:
            kept.pop()
            dropped.append(
                f"last step {_label(numbers, last)} dropped ({share:.0%} of the median: its "
                "window runs to the trace's last operation, the next step's work included)"
            )
    labels = [_label(numbers, i) for i in kept]
    word = "step" if len(labels) == 1 else "steps"
    return SteadySteps(
        kept, labels, f"{word} {_span(labels)} ({len(labels)}); " + "; ".join(dropped)
    )


def ratio(part: float, whole: float) -> float | None:
    return part / whole if whole > 0 else None
