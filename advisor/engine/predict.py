"""Every suggestion predicts its effect; every measurement calibrates the next prediction.

A change's predicted effect is a relative change of the time per unit of work: what it can
reach (its mechanism-bounded ceiling, else its bottleneck's attributed cost) times an efficacy
range (the feature's prior in rule data, rules/prediction.yaml's default, or the job's own
realised efficacy once its ledger holds measurements of the feature). `compare` turns the
verdict into a measurement of the same quantity; the measurements of the ledger give the
calibration (per feature and overall: mean error, share inside the predicted range).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from advisor.core.checked_data import load_valid
from advisor.core.resources import rules_dir
from advisor.core.values import as_number
from advisor.engine.compare_work import Unit
from advisor.engine.rule_model import FeatureRule
from advisor.model import Prediction, Reach, Recommendation

PREDICTION_FILE = "prediction.yaml"
# a measurement is recorded in the unit compare judged in: the metric it measures
METRIC_OF_UNIT = {
    Unit.step: "step_time",
    Unit.token: "time_per_token",
    Unit.sample: "time_per_sample",
}


@dataclass(frozen=True)
class Priors:
    default: tuple[float, float]
    unbounded: tuple[float, float]
    min_half_width: float


@cache
def priors() -> Priors:
    path = rules_dir() / PREDICTION_FILE
    data = load_valid(path, "prediction.schema.json")

    def pair(key: str) -> tuple[float, float]:
        return float(data[key]["low"]), float(data[key]["high"])

    return Priors(
        pair("default_efficacy"),
        pair("unbounded_efficacy"),
        float(data["calibration_min_half_width"]),
    )


def _rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def reach_json(reach: Reach) -> dict[str, object]:
    return {
        "ms": round(reach.ms, 3),
        "ratio": round(reach.ratio, 4),
        "target_ms": round(reach.target_ms, 3),
        "mechanism": reach.mechanism,
        "limit": reach.limit,
        "share": round(reach.ms / reach.target_ms, 4) if reach.limit == "share" else None,
        "hides_under": reach.hides_under[0] if reach.hides_under else None,
        "hides_under_ms": _rounded(reach.hides_under[1] if reach.hides_under else None, 3),
    }


def prediction_json(pred: Prediction) -> dict[str, object]:
    """The prediction as suggest's JSON and the ledger hold it (schemas: $defs/prediction)."""

    def scaled(factor: float, digits: int) -> dict[str, float]:
        values = {"expected": pred.expected, "low": pred.low, "high": pred.high}
        return {k: round(v * factor, digits) for k, v in values.items()}

    return {
        "metric": pred.metric,
        "changes_work": pred.changes_work,
        "step_ms": round(pred.step_ms, 3),
        "change": scaled(1.0, 4),
        "change_ms": scaled(pred.step_ms, 3),
        "derivation": {
            "addressed_ms": round(pred.addressed_ms, 3),
            "addressed_by": pred.addressed_by,
            "bound_ms": round(pred.bound_ms, 3),
            "efficacy": {
                "low": round(pred.efficacy_low, 4),
                "high": round(pred.efficacy_high, 4),
                "from": pred.efficacy_from,
                "measurements": pred.measurements,
            },
        },
    }


# --- calibration -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Measurement:
    """What compare measured of a predicted change, in the prediction's terms."""

    metric: str
    change: float  # the relative change of the judged metric (negative: faster)
    comparable: bool  # measured in the prediction's terms (a change of the work per step
    # judged on step time is not)
    error: float | None = None  # measured - expected
    in_range: bool | None = None
    efficacy: float | None = None  # the share of the bound the change realised

    def to_json(self) -> dict[str, object]:
        return {
            "metric": self.metric,
            "change": round(self.change, 4),
            "comparable": self.comparable,
            "error": None if self.error is None else round(self.error, 4),
            "in_range": self.in_range,
            "efficacy": None if self.efficacy is None else round(self.efficacy, 4),
        }


def measure(predicted: Mapping[str, Any] | None, unit: Unit, change: float) -> Measurement:
    """The measurement of a recorded prediction (its JSON, as the ledger holds it)."""
    metric = METRIC_OF_UNIT[unit]
    expected = _path_number(predicted, "change", "expected")
    low = _path_number(predicted, "change", "low")
    high = _path_number(predicted, "change", "high")
    if predicted is None or expected is None or low is None or high is None:
        return Measurement(metric, change, comparable=False)
    # a change of the work per step (predicted per token or sample) measured on the step time
    # alone is the step growing with its work: not the predicted quantity
    comparable = not (unit is Unit.step and predicted.get("changes_work") is True)
    if not comparable:
        return Measurement(metric, change, comparable=False)
    step = _path_number(predicted, "step_ms")
    bound = _path_number(predicted, "derivation", "bound_ms")
    efficacy = -change * step / bound if step and bound else None
    return Measurement(metric, change, True, change - expected, low <= change <= high, efficacy)


@dataclass(frozen=True)
class Checked:
    """A recorded prediction set against what compare measured of it."""

    feature: str
    predicted: Mapping[str, Any]  # the proposal's prediction, as the ledger holds it
    measured: Measurement
    recorded: bool  # written with the verdict (an inconclusive one is not)

    def to_json(self) -> dict[str, object]:
        return {
            "feature": self.feature,
            "predicted": dict(self.predicted),
            "measured": self.measured.to_json(),
            "recorded": self.recorded,
        }


def _path_number(data: Mapping[str, Any] | None, *keys: str) -> float | None:
    node: object = data
    for key in keys:
        node = node.get(key) if isinstance(node, Mapping) else None
    return as_number(node)


@dataclass(frozen=True)
class Calibration:
    """The measurements of one feature (or all of them): how far the predictions were off."""

    measurements: int
    mean_error: float  # measured - expected, in relative change of the metric
    mean_abs_error: float
    in_range_share: float
    efficacies: tuple[float, ...]  # the realised efficacies, in ledger order

    def to_json(self) -> dict[str, object]:
        return {
            "measurements": self.measurements,
            "mean_error": round(self.mean_error, 4),
            "mean_abs_error": round(self.mean_abs_error, 4),
            "in_range_share": round(self.in_range_share, 4),
            "efficacy_mean": (
                round(sum(self.efficacies) / len(self.efficacies), 4) if self.efficacies else None
            ),
        }


def _summary(rows: list[Measurement]) -> Calibration:
    errors = [row.error for row in rows if row.error is not None]
    inside = [row for row in rows if row.in_range]
    efficacies = tuple(row.efficacy for row in rows if row.efficacy is not None)
    return Calibration(
        len(errors),
        sum(errors) / len(errors),
        sum(abs(e) for e in errors) / len(errors),
        len(inside) / len(errors),
        efficacies,
    )


def measured_of(entry: Mapping[str, Any]) -> Measurement | None:
    """A ledger entry's recorded measurement, when it has a comparable one."""
    raw = recorded_measurement(entry.get("measured"))
    if raw is None or raw.get("comparable") is not True:
        return None
    change, error = as_number(raw.get("change")), as_number(raw.get("error"))
    if change is None or error is None:
        return None
    in_range = raw.get("in_range") is True
    return Measurement(
        str(raw.get("metric")), change, True, error, in_range, as_number(raw.get("efficacy"))
    )


def calibrate(
    entries: Iterable[Mapping[str, Any]],
) -> tuple[dict[str, Calibration], Calibration | None]:
    """(per feature, overall) over the ledger's measured verdicts; overall None when none."""
    by_feature: dict[str, list[Measurement]] = {}
    for entry in entries:
        measured = measured_of(entry)
        if measured is not None:
            by_feature.setdefault(str(entry.get("feature")), []).append(measured)
    every = [row for rows in by_feature.values() for row in rows]
    per_feature = {feature: _summary(rows) for feature, rows in by_feature.items()}
    return per_feature, (_summary(every) if every else None)


# --- prediction --------------------------------------------------------------------------------


def _efficacy(
    rule: FeatureRule | None, bounded: bool, calibration: Calibration | None
) -> tuple[float, float, str, int]:
    """(low, high, where from, measurements): the job's realised efficacy when it has one."""
    prior = priors()
    if rule is not None and rule.ceiling is not None and rule.ceiling.efficacy is not None:
        low, high, source = rule.ceiling.efficacy.low, rule.ceiling.efficacy.high, "feature-prior"
    elif bounded:
        (low, high), source = prior.default, "default-prior"
    else:
        (low, high), source = prior.unbounded, "unbounded-prior"
    if calibration is None or not calibration.efficacies:
        return low, high, source, 0
    seen = calibration.efficacies
    centre = sum(seen) / len(seen)
    floor = max(prior.min_half_width, (high - low) / 2 / math.sqrt(1 + len(seen)))
    half = max((max(seen) - min(seen)) / 2, floor)
    return centre - half, centre + half, "job-calibration", len(seen)


def predict(
    rec: Recommendation,
    rule: FeatureRule | None,
    step_ms: float | None,
    tokens_known: bool,
    calibration: Calibration | None = None,
) -> Prediction | None:
    """The change's predicted effect; None when the step or what it addresses is unknown."""
    if rec.undo or not step_ms:
        return None
    if rec.reach is not None:
        addressed, bound, by = rec.reach.target_ms, rec.reach.ms, "ceiling"
    elif rec.cause is not None and rec.cause.cost_ratio > 0:
        addressed = bound = rec.cause.cost_ratio * step_ms
        by = "bottleneck-cost"
    else:
        return None
    low, high, source, seen = _efficacy(rule, rec.reach is not None, calibration)
    changes_work = rule is not None and rule.effect.changes_work
    metric = (
        "time_per_token" if tokens_known else "time_per_sample" if changes_work else "step_time"
    )
    gain = bound / step_ms  # the most of the step it can remove
    return Prediction(
        metric=metric,
        step_ms=step_ms,
        # + 0.0: a zero gain is 0.0, never -0.0
        expected=-gain * (low + high) / 2 + 0.0,
        low=-gain * high + 0.0,
        high=-gain * low + 0.0,
        addressed_ms=addressed,
        addressed_by=by,
        bound_ms=bound,
        efficacy_low=low,
        efficacy_high=high,
        efficacy_from=source,
        measurements=seen,
        changes_work=changes_work,
    )


# --- the ledger's history of predictions -------------------------------------------------------


@dataclass(frozen=True)
class ChangeRecord:
    """One proposed change of the ledger: what was predicted, and the verdict that measured it."""

    feature: str
    proposed: str  # the proposal's time
    predicted: Mapping[str, Any] | None
    verdict: str | None = None  # the latest event after the proposal (applied, kept, ...)
    measured: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "feature": self.feature,
            "proposed": self.proposed,
            "predicted": None if self.predicted is None else dict(self.predicted),
            "verdict": self.verdict,
            "measured": None if self.measured is None else dict(self.measured),
        }


def _numbers(node: object, keys: tuple[str, ...]) -> bool:
    return isinstance(node, Mapping) and all(
        isinstance(node.get(k), int | float) and not isinstance(node.get(k), bool) for k in keys
    )


def recorded_prediction(raw: object) -> Mapping[str, Any] | None:
    """A ledger's prediction when it has this version's shape (a hand-edited or torn one is
    shown as none, never guessed)."""
    if not isinstance(raw, Mapping) or raw.get("metric") not in METRIC_OF_UNIT.values():
        return None
    shaped = (
        _numbers(raw.get("change"), ("expected", "low", "high"))
        and _numbers(raw.get("change_ms"), ("expected", "low", "high"))
        and _numbers(raw, ("step_ms",))
        and _numbers(raw.get("derivation"), ("addressed_ms", "bound_ms"))
        and isinstance(raw.get("changes_work"), bool)
    )
    return raw if shaped else None


def recorded_measurement(raw: object) -> Mapping[str, Any] | None:
    """A ledger's measurement when it has this version's shape."""
    if not isinstance(raw, Mapping) or raw.get("metric") not in METRIC_OF_UNIT.values():
        return None
    if not _numbers(raw, ("change",)) or not isinstance(raw.get("comparable"), bool):
        return None
    return raw


def change_records(entries: Iterable[Mapping[str, Any]]) -> list[ChangeRecord]:
    """Each proposal with the events that followed it for the same feature, in order."""
    records: list[ChangeRecord] = []
    open_by_feature: dict[str, int] = {}
    for entry in entries:
        feature, event = str(entry.get("feature")), str(entry.get("event"))
        if event == "proposed":
            predicted = recorded_prediction(entry.get("predicted"))
            record = ChangeRecord(feature, str(entry.get("time", "")), predicted)
            open_by_feature[feature] = len(records)
            records.append(record)
            continue
        index = open_by_feature.get(feature)
        if index is None:
            continue  # a mark without a proposal (advisor ledger --mark)
        measured = recorded_measurement(entry.get("measured")) or records[index].measured
        previous = records[index]
        records[index] = ChangeRecord(
            feature, previous.proposed, previous.predicted, event, measured
        )
    return records
