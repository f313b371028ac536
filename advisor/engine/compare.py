"""Compare a baseline and a candidate run (profiles and/or logs) and say keep, revert or
inconclusive — accounting for noise and guarding convergence. The verdict, its reason and the
warnings are codes with the values that decided; the renderers word them."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from advisor.inputs.taxonomy import Taxonomy
from advisor.model import FactSet, Value, Values

# The noise of a median: 1.2533 sigma / sqrt(n); sigma from the MAD of a normal distribution.
MEDIAN_SE = 1.2533 * 1.4826
IGNORED_KEYS = ("training.profile", "training.output_dir", "training.logging_steps")


@dataclass(frozen=True)
class MetricSpec:
    id: str
    facts: tuple[str, ...]  # first present wins: profile fact, then log fact
    lower_is_better: bool
    label: str


METRICS = (
    MetricSpec("step_time_ms", ("log.step_time_ms", "step.time_ms"), True, "step time (ms)"),
    MetricSpec("tokens_per_s", ("log.tokens_per_s",), False, "tokens/s"),
    MetricSpec("mfu", ("log.mfu",), False, "MFU"),
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
    MetricSpec("comm_exposed_ratio", ("step.comm_exposed_ratio",), True, "exposed communication"),
    MetricSpec("free_ratio", ("step.free_ratio",), True, "device free"),
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

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "source": self.source,
            "baseline": self.baseline,
            "candidate": self.candidate,
            "delta_ratio": self.delta_ratio,
            "significant": self.significant,
            "better": self.better,
        }


class Verdict(Enum):
    keep = "keep"
    revert = "revert"
    inconclusive = "inconclusive"


class CompareCode(Enum):
    """Why the verdict is what it is, or what else the comparison noticed."""

    no_step_time = "no-step-time"
    loss_regression = "loss-regression"  # first, last, candidate, baseline, ratio
    nan_iterations = "nan-iterations"  # count
    no_noise_estimate = "no-noise-estimate"  # side, steps
    within_noise = "within-noise"  # delta_ms, noise_ms, z
    below_min_effect = "below-min-effect"  # delta_ratio, min_effect
    beyond_noise = "beyond-noise"  # baseline_ms, candidate_ms, delta_ratio
    settings_differ = "settings-differ"  # count, keys
    no_shared_iterations = "no-shared-iterations"
    grad_norm_spikes = "grad-norm-spikes"  # baseline, candidate
    read_warning = "read-warning"  # text: what reading an input warned, worded by its reader


class Collect(Enum):
    """What would let an inconclusive comparison decide."""

    step_time_both_sides = "step-time-both-sides"
    more_steady_steps = "more-steady-steps"


@dataclass(frozen=True)
class CompareNote:
    code: CompareCode
    values: Values = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {"code": self.code.value, "values": dict(self.values)}


@dataclass
class Comparison:
    verdict: Verdict
    reason: CompareNote
    metrics: list[Metric] = field(default_factory=list)
    operators: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[CompareNote] = field(default_factory=list)
    collect: Collect | None = None


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
    n = int(samples) if isinstance(samples, int) else 0
    if mad is None or n < 2:
        return None, n
    return MEDIAN_SE * mad / math.sqrt(n), n


def _metric(
    spec: MetricSpec, base: FactSet, cand: FactSet, taxonomy: Taxonomy
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
    big_enough = delta is not None and abs(delta) > taxonomy.compare_min_effect
    note = None
    significant = big_enough
    if spec.id == "step_time_ms":
        se_b, n_b = _noise(base, fact)
        se_c, n_c = _noise(cand, fact)
        if se_b is None or se_c is None:
            significant = False
            few = "baseline" if se_b is None else "candidate"
            steps = n_b if se_b is None else n_c
            note = CompareNote(CompareCode.no_noise_estimate, {"side": few, "steps": steps})
        else:
            combined = math.hypot(se_b, se_c)
            significant = big_enough and abs(c - b) > taxonomy.compare_z * combined
            if big_enough and not significant:
                values = {"delta_ms": c - b, "noise_ms": combined, "z": taxonomy.compare_z}
                note = CompareNote(CompareCode.within_noise, values)
    better = None if delta is None or not significant else (delta < 0) == spec.lower_is_better
    return Metric(spec.id, spec.label, fact, b, c, delta, significant, better), note


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


def _loss_guard(
    base: FactSet, cand: FactSet, tolerance: float
) -> tuple[CompareNote | None, list[CompareNote]]:
    warnings: list[CompareNote] = []
    curve_b, curve_c = base.value("log.loss"), cand.value("log.loss")
    regression = None
    if isinstance(curve_b, list) and isinstance(curve_c, list):
        lb = {int(n): v for n, v in curve_b if v is not None}
        lc = {int(n): v for n, v in curve_c if v is not None}
        matched = sorted(set(lb) & set(lc))[-50:]
        if matched:
            mb = sum(lb[i] for i in matched) / len(matched)
            mc = sum(lc[i] for i in matched) / len(matched)
            if mb > 0 and (mc - mb) / mb > tolerance:
                values = {
                    "first": matched[0],
                    "last": matched[-1],
                    "candidate": mc,
                    "baseline": mb,
                    "ratio": (mc - mb) / mb,
                }
                regression = CompareNote(CompareCode.loss_regression, values)
        else:
            warnings.append(CompareNote(CompareCode.no_shared_iterations))
    nan_b, nan_c = base.value("log.nan_iterations"), cand.value("log.nan_iterations")
    if isinstance(nan_c, int) and nan_c > (nan_b if isinstance(nan_b, int) else 0):
        regression = regression or CompareNote(CompareCode.nan_iterations, {"count": nan_c})
    spikes_b, spikes_c = base.value("log.grad_norm_spikes"), cand.value("log.grad_norm_spikes")
    if isinstance(spikes_c, int) and spikes_c > (spikes_b if isinstance(spikes_b, int) else 0):
        values = {"baseline": spikes_b or 0, "candidate": spikes_c}
        warnings.append(CompareNote(CompareCode.grad_norm_spikes, values))
    return regression, warnings


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
) -> Comparison:
    metrics = []
    primary_note: CompareNote | None = None
    for spec in METRICS:
        metric, note = _metric(spec, base, cand, taxonomy)
        metrics.append(metric)
        if spec.id == "step_time_ms":
            primary_note = note
    step = metrics[0]
    result = Comparison(
        Verdict.inconclusive,
        CompareNote(CompareCode.no_step_time),
        metrics,
        _operators(base, cand, 0.05),
    )
    changed = config_changes(base_config, cand_config)
    if len(changed) > 1:
        values: dict[str, Value] = {"count": len(changed), "keys": tuple(changed[:6])}
        result.warnings.append(CompareNote(CompareCode.settings_differ, values))
    regression, warnings = _loss_guard(base, cand, taxonomy.compare_loss_tolerance)
    result.warnings.extend(warnings)
    result.verdict, result.reason, result.collect = _verdict(
        step, primary_note, regression, taxonomy
    )
    return result


def _verdict(
    step: Metric, note: CompareNote | None, regression: CompareNote | None, taxonomy: Taxonomy
) -> tuple[Verdict, CompareNote, Collect | None]:
    """The verdict on the step time, guarded by convergence, and what would let it decide."""
    if step.baseline is None or step.candidate is None:
        return (
            Verdict.inconclusive,
            CompareNote(CompareCode.no_step_time),
            Collect.step_time_both_sides,
        )
    if regression:
        return Verdict.revert, regression, None
    if note and not step.significant:
        collect = Collect.more_steady_steps if note.code is CompareCode.no_noise_estimate else None
        return Verdict.inconclusive, note, collect
    delta = step.delta_ratio or 0.0
    if not step.significant:
        values: dict[str, Value] = {"delta_ratio": delta, "min_effect": taxonomy.compare_min_effect}
        return Verdict.inconclusive, CompareNote(CompareCode.below_min_effect, values), None
    values = {"baseline_ms": step.baseline, "candidate_ms": step.candidate, "delta_ratio": delta}
    verdict = Verdict.keep if step.better else Verdict.revert
    return verdict, CompareNote(CompareCode.beyond_noise, values), None
