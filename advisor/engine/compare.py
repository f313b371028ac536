"""Compare a baseline and a candidate run (profiles and/or logs) and say keep, revert or
inconclusive — accounting for noise and guarding convergence."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from advisor.inputs.taxonomy import Taxonomy
from advisor.model import FactSet

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


@dataclass
class Comparison:
    verdict: str  # keep | revert | inconclusive
    reason: str
    metrics: list[Metric] = field(default_factory=list)
    operators: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    collect: str = ""


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
) -> tuple[Metric, str | None]:
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
            note = f"the {few} has {n_b if se_b is None else n_c} steady step(s): no noise estimate"
        else:
            combined = math.hypot(se_b, se_c)
            significant = big_enough and abs(c - b) > taxonomy.compare_z * combined
            if big_enough and not significant:
                note = (
                    f"the difference ({c - b:+.1f} ms) is within the noise (3 x {combined:.1f} ms)"
                )
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


def _loss_guard(base: FactSet, cand: FactSet, tolerance: float) -> tuple[str | None, list[str]]:
    warnings: list[str] = []
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
                regression = (
                    f"loss at matched iterations {matched[0]}-{matched[-1]} is {mc:.4g} vs {mb:.4g} "
                    f"({(mc - mb) / mb:+.1%}): a speed-up that hurts convergence is not a gain"
                )
        else:
            warnings.append("the logs share no iteration numbers: loss not compared")
    nan_b, nan_c = base.value("log.nan_iterations"), cand.value("log.nan_iterations")
    if isinstance(nan_c, int) and nan_c > (nan_b if isinstance(nan_b, int) else 0):
        regression = regression or f"{nan_c} NaN iteration(s) in the candidate"
    spikes_b, spikes_c = base.value("log.grad_norm_spikes"), cand.value("log.grad_norm_spikes")
    if isinstance(spikes_c, int) and spikes_c > (spikes_b if isinstance(spikes_b, int) else 0):
        warnings.append(
            f"grad-norm spikes rose from {spikes_b or 0} to {spikes_c}: watch the loss scale"
        )
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
    primary_note = None
    for spec in METRICS:
        metric, note = _metric(spec, base, cand, taxonomy)
        metrics.append(metric)
        if spec.id == "step_time_ms":
            primary_note = note
    result = Comparison("inconclusive", "", metrics, _operators(base, cand, 0.05))
    changed = config_changes(base_config, cand_config)
    if len(changed) > 1:
        result.warnings.append(
            f"{len(changed)} settings differ ({', '.join(changed[:6])}): the effect cannot be attributed to one change"
        )
    regression, warnings = _loss_guard(base, cand, taxonomy.compare_loss_tolerance)
    result.warnings.extend(warnings)
    step = metrics[0]
    if step.baseline is None or step.candidate is None:
        result.reason = "no step time on both sides (give two profiles or two training logs)"
        result.collect = (
            "profile the same steps on both runs, or pass --baseline-log/--candidate-log"
        )
        return result
    if regression:
        result.verdict, result.reason = "revert", regression
        return result
    if primary_note and not step.significant:
        result.reason = primary_note
        if "no noise estimate" in primary_note:
            result.collect = (
                "profile at least 3 steady steps on both runs (e.g. profile_step_start 5, profile_step_end 9) "
                "or compare the training logs (--baseline-log/--candidate-log)"
            )
        return result
    if not step.significant:
        result.reason = f"step time changed by {step.delta_ratio or 0:+.1%}: below the {taxonomy.compare_min_effect:.0%} minimum effect"
        return result
    faster = bool(step.better)
    result.verdict = "keep" if faster else "revert"
    result.reason = f"step time {step.baseline:.1f} -> {step.candidate:.1f} ms ({step.delta_ratio or 0:+.1%}), beyond the noise"
    return result
