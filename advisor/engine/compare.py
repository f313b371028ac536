"""Compare a baseline and a candidate run (profiles and/or logs) and say keep, revert or
inconclusive — accounting for noise and guarding convergence. The verdict, its reason and the
warnings are codes with the values that decided; the renderers word them."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from advisor.engine.compare_loss import loss_guard

# the codes live beside the engine; importers of a comparison find them here too
from advisor.engine.compare_notes import Collect as Collect
from advisor.engine.compare_notes import CompareCode as CompareCode
from advisor.engine.compare_notes import CompareNote as CompareNote
from advisor.engine.compare_notes import Verdict as Verdict
from advisor.engine.compare_work import Unit, differing_conditions, judging_unit, side_shape
from advisor.engine.predict import Checked
from advisor.inputs.taxonomy import Taxonomy
from advisor.inputs.thresholds import CompareThresholds, compare_thresholds
from advisor.model import FactSet, Value

# The noise of a median: 1.2533 sigma / sqrt(n); sigma from the MAD of a normal distribution.
MEDIAN_SE = 1.2533 * 1.4826
IGNORED_KEYS = ("training.profile", "training.output_dir", "training.logging_steps")


@dataclass(frozen=True)
class MetricSpec:
    id: str
    facts: tuple[str, ...]  # first present wins: profile fact, then log fact
    lower_is_better: bool
    label: str
    # a share (0..1): its change is read in percentage points, a time or rate's in percent
    ratio: bool = False


METRICS = (
    MetricSpec("step_time_ms", ("log.step_time_ms", "step.time_ms"), True, "step time (ms)"),
    MetricSpec("tokens_per_s", ("log.tokens_per_s",), False, "tokens/s"),
    MetricSpec("mfu", ("log.mfu",), False, "MFU", ratio=True),
    MetricSpec(
        "memory_allocated_peak_bytes",
        ("memory.allocated_peak_bytes", "log.memory_allocated_peak_bytes"),
        True,
        "peak allocated",
    ),
    MetricSpec(
        "memory_reserved_peak_bytes",
        ("memory.reserved_peak_bytes", "log.memory_reserved_peak_bytes"),
        True,
        "peak reserved",
    ),
    MetricSpec("kernels_per_step", ("ops.kernels_per_step",), True, "kernels per step"),
    MetricSpec(
        "comm_exposed_ratio", ("step.comm_exposed_ratio",), True, "exposed communication", True
    ),
    MetricSpec("free_ratio", ("step.free_ratio",), True, "device free", ratio=True),
)


@dataclass(frozen=True)
class Metric:
    id: str
    label: str
    source: str
    baseline: float | None
    candidate: float | None
    delta_ratio: float | None
    significant: bool
    better: bool | None
    # for a share: candidate - baseline in percentage points (None for times and rates)
    delta_pp: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "source": self.source,
            "baseline": self.baseline,
            "candidate": self.candidate,
            "delta_ratio": self.delta_ratio,
            "delta_pp": self.delta_pp,
            "significant": self.significant,
            "better": self.better,
        }


@dataclass(frozen=True)
class JudgedOn:
    """The unit the verdict was judged in and each side's amount of it per step."""

    unit: Unit = Unit.step
    source: str = ""
    baseline_per_step: float = 1.0
    candidate_per_step: float = 1.0

    def to_json(self) -> dict[str, object]:
        return {
            "unit": self.unit.value,
            "source": self.source,
            "baseline_per_step": self.baseline_per_step,
            "candidate_per_step": self.candidate_per_step,
        }


@dataclass
class Comparison:
    verdict: Verdict
    reason: CompareNote
    metrics: list[Metric] = field(default_factory=list)
    operators: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[CompareNote] = field(default_factory=list)
    collect: Collect | None = None
    judged_on: JudgedOn = field(default_factory=JudgedOn)
    checked: Checked | None = None  # the ledger's prediction of the change, and the measurement

    def judged_change(self) -> float | None:
        """The relative change of the metric the verdict was judged on (negative: faster)."""
        wanted = _PER_UNIT[self.judged_on.unit][0] if self.judged_on.unit in _PER_UNIT else None
        metric = next((m for m in self.metrics if m.id == (wanted or "step_time_ms")), None)
        return None if metric is None else metric.delta_ratio


def read_warnings(warnings: list[str]) -> list[CompareNote]:
    """Warnings of the readers (the ledger's torn lines...), carried beside the coded ones."""
    return [CompareNote(CompareCode.read_warning, {"text": text}) for text in warnings]


def _number(facts: FactSet, fact_id: str) -> float | None:
    value = facts.value(fact_id)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _noise(facts: FactSet, fact_id: str) -> tuple[float | None, int]:
    """(standard error of the median step time, samples) of one side."""
    if fact_id == "log.step_time_ms":
        mad, samples = _number(facts, "log.step_time_mad_ms"), facts.value("log.iterations")
    else:
        mad, samples = _number(facts, "step.time_mad_ms"), facts.value("step.steady_steps")
    # a job-level count is the median over ranks, so it may be a float (1.0, 2.5): round down
    n = int(samples) if isinstance(samples, int | float) and not isinstance(samples, bool) else 0
    if mad is None or n < 2:
        return None, n
    return MEDIAN_SE * mad / math.sqrt(n), n


def _metric(
    spec: MetricSpec, base: FactSet, cand: FactSet, limits: CompareThresholds
) -> tuple[Metric, CompareNote | None]:
    fact = next(
        (f for f in spec.facts if _number(base, f) is not None and _number(cand, f) is not None),
        None,
    )
    if fact is None:
        return Metric(
            spec.id,
            spec.label,
            "",
            _number(base, spec.facts[0]),
            _number(cand, spec.facts[0]),
            None,
            False,
            None,
        ), None
    b, c = _number(base, fact), _number(cand, fact)
    assert b is not None and c is not None
    delta = (c - b) / b if b else None
    points = (c - b) * 100 if spec.ratio else None
    # a share moves by points: 0.1% -> 0.2% is +100% relative but no effect worth a verdict
    if points is not None:
        big_enough = abs(points) > limits.min_effect * 100
        direction = points
    else:
        big_enough = delta is not None and abs(delta) > limits.min_effect
        direction = delta or 0.0
    note = None
    significant = big_enough
    if spec.id == "step_time_ms":
        significant, note = _beyond_noise(base, cand, fact, (b, c), (1.0, 1.0), big_enough, limits)
    better = None if not significant else (direction < 0) == spec.lower_is_better
    return Metric(spec.id, spec.label, fact, b, c, delta, significant, better, points), note


def _beyond_noise(
    base: FactSet,
    cand: FactSet,
    fact: str,
    values: tuple[float, float],
    per_step: tuple[float, float],
    big_enough: bool,
    limits: CompareThresholds,
    unit: Unit = Unit.step,
) -> tuple[bool, CompareNote | None]:
    """Whether a step time (divided by each side's work per step) moved beyond the noise.

    The work per step is taken as exact: the noise is the step time's, scaled by it."""
    se_b, n_b = _noise(base, fact)
    se_c, n_c = _noise(cand, fact)
    if se_b is None or se_c is None:
        few = "baseline" if se_b is None else "candidate"
        steps = n_b if se_b is None else n_c
        return False, CompareNote(CompareCode.no_noise_estimate, {"side": few, "steps": steps})
    combined = math.hypot(se_b / per_step[0], se_c / per_step[1])
    b, c = values
    significant = big_enough and abs(c - b) > limits.z * combined
    if big_enough and not significant:
        # milliseconds per unit of work (per step when judged on the step)
        noted: dict[str, Value] = {
            "delta_ms": c - b,
            "noise_ms": combined,
            "z": limits.z,
            "unit": unit.value,
        }
        return False, CompareNote(CompareCode.within_noise, noted)
    return significant, None


# the metric each unit of work is judged on: id, label, scale from ms to the unit shown
_PER_UNIT = {
    Unit.token: ("time_per_token_us", "time per token (µs)", 1000.0),
    Unit.sample: ("time_per_sample_ms", "time per sample (ms)", 1.0),
}


def _per_unit(
    step: Metric,
    base: FactSet,
    cand: FactSet,
    unit: Unit,
    work: tuple[float, float],
    limits: CompareThresholds,
) -> tuple[Metric, CompareNote | None]:
    """The step time divided by the work of each side's step, judged like the step time."""
    metric_id, label, scale = _PER_UNIT[unit]
    assert step.baseline is not None and step.candidate is not None
    b, c = step.baseline / work[0], step.candidate / work[1]
    delta = (c - b) / b if b else None
    big_enough = delta is not None and abs(delta) > limits.min_effect
    significant, note = _beyond_noise(
        base, cand, step.source, (b, c), work, big_enough, limits, unit
    )
    better = None if delta is None or not significant else delta < 0
    source = f"{step.source} / {unit.value}s per step"
    metric = Metric(metric_id, label, source, b * scale, c * scale, delta, significant, better)
    return metric, note


def _operators(base: FactSet, cand: FactSet, threshold: float) -> list[dict[str, Any]]:
    def table(facts: FactSet) -> dict[str, float]:
        rows = facts.value("ops.top")
        return {r["type"]: float(r["per_step_ms"]) for r in rows} if isinstance(rows, list) else {}

    b, c = table(base), table(cand)
    changes: list[dict[str, Any]] = []
    for op in sorted(set(b) | set(c)):
        before, after = b.get(op, 0.0), c.get(op, 0.0)
        if max(before, after) == 0:
            continue
        delta = (after - before) / before if before else None
        if delta is None or abs(delta) > threshold:
            changes.append(
                {"type": op, "baseline_ms": before, "candidate_ms": after, "delta_ratio": delta}
            )
    return sorted(changes, key=lambda r: -abs(float(r["candidate_ms"]) - float(r["baseline_ms"])))[
        :10
    ]


def _flatten(config: Mapping[str, Any]) -> dict[str, Any]:
    out = {}
    for section, body in config.items():
        if isinstance(body, Mapping):
            for key, value in body.items():
                out[f"{section}.{key}"] = value
        else:
            out[str(section)] = body
    return out


def config_changes(base: Mapping[str, Any] | None, cand: Mapping[str, Any] | None) -> list[str]:
    if base is None or cand is None:
        return []
    fb, fc = _flatten(base), _flatten(cand)
    return sorted(
        k for k in set(fb) | set(fc) if fb.get(k) != fc.get(k) and not k.startswith(IGNORED_KEYS)
    )


def compare(
    base: FactSet,
    cand: FactSet,
    taxonomy: Taxonomy,
    base_config: Mapping[str, Any] | None = None,
    cand_config: Mapping[str, Any] | None = None,
    limits: CompareThresholds | None = None,
) -> Comparison:
    """The candidate against the baseline: the taxonomy names the layout the configs state,
    the limits say what difference counts (compare's thresholds unless given)."""
    limits = limits or compare_thresholds()
    metrics = []
    primary_note: CompareNote | None = None
    for spec in METRICS:
        metric, note = _metric(spec, base, cand, limits)
        metrics.append(metric)
        if spec.id == "step_time_ms":
            primary_note = note
    step = metrics[0]
    shape_b = side_shape(base, base_config, taxonomy.config_layout)
    shape_c = side_shape(cand, cand_config, taxonomy.config_layout)
    unit, work_b, work_c, source = judging_unit(shape_b.work, shape_c.work)
    judged = step
    if unit is not Unit.step and step.baseline is not None and step.candidate is not None:
        # a change of the work per step: the step time is no longer the cost of the same work
        judged, primary_note = _per_unit(step, base, cand, unit, (work_b, work_c), limits)
        metrics.insert(1, judged)
    elif unit is not Unit.step:
        unit, work_b, work_c, source = Unit.step, 1.0, 1.0, ""
    result = Comparison(
        Verdict.inconclusive,
        CompareNote(CompareCode.no_step_time),
        metrics,
        _operators(base, cand, 0.05),
        judged_on=JudgedOn(unit, source, work_b, work_c),
    )
    for condition, b, c in differing_conditions(shape_b, shape_c):
        values: dict[str, Value] = {"condition": condition, "baseline": b, "candidate": c}
        result.warnings.append(CompareNote(CompareCode.baseline_differs, values))
    changed = config_changes(base_config, cand_config)
    if len(changed) > 1:
        values = {"count": len(changed), "keys": tuple(changed[:6])}
        result.warnings.append(CompareNote(CompareCode.settings_differ, values))
    regression, warnings = loss_guard(base, cand, limits.loss_tolerance, unit, (work_b, work_c))
    result.warnings.extend(warnings)
    result.verdict, result.reason, result.collect = _verdict(
        step, judged, unit, primary_note, regression, limits
    )
    return result


def _verdict(
    step: Metric,
    judged: Metric,
    unit: Unit,
    note: CompareNote | None,
    regression: CompareNote | None,
    limits: CompareThresholds,
) -> tuple[Verdict, CompareNote, Collect | None]:
    """The verdict on the time per unit of work, guarded by convergence, and what would let it
    decide."""
    if step.baseline is None or step.candidate is None:
        return (
            Verdict.inconclusive,
            CompareNote(CompareCode.no_step_time),
            Collect.step_time_both_sides,
        )
    if regression:
        return Verdict.revert, regression, None
    if note and not judged.significant:
        collect = Collect.more_steady_steps if note.code is CompareCode.no_noise_estimate else None
        return Verdict.inconclusive, note, collect
    delta = judged.delta_ratio or 0.0
    if not judged.significant:
        values: dict[str, Value] = {
            "delta_ratio": delta,
            "min_effect": limits.min_effect,
            "unit": unit.value,
        }
        return Verdict.inconclusive, CompareNote(CompareCode.below_min_effect, values), None
    values = {
        "baseline_ms": step.baseline,
        "candidate_ms": step.candidate,
        "delta_ratio": delta,
        "unit": unit.value,
    }
    if judged is not step:
        assert judged.baseline is not None and judged.candidate is not None
        scale = _PER_UNIT[unit][2]
        values["baseline_unit_ms"] = judged.baseline / scale
        values["candidate_unit_ms"] = judged.candidate / scale
        values["step_delta_ratio"] = step.delta_ratio
    verdict = Verdict.keep if judged.better else Verdict.revert
    return verdict, CompareNote(CompareCode.beyond_noise, values), None
