"""The words of a change's effect: its ceiling and what bounded it, its predicted effect and
how it was derived, and a prediction set against its measurement (suggest, compare, ledger)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.core.values import as_number
from advisor.engine.predict import Checked
from advisor.model import Prediction, Recommendation

_METRICS = {
    "step_time": "step time",
    "time_per_token": "time per token",
    "time_per_sample": "time per sample",
}


_MECHANISMS = {
    "removes": "the change removes at most the time it targets",
    "overlap": "an overlap hides at most under the compute",
    "fewer-reductions": "fewer reductions save at most {share:.0%} of the reduction time",
    "fewer-collectives": "skipping collectives saves at most {share:.0%} of their time",
    "fewer-bytes": "fewer bytes save at most about {share:.0%} of the transfer time",
    "rebalance": "balancing removes at most the slowest stage's excess",
}


def ceiling_line(rec: Recommendation) -> str | None:
    """The ceiling and what bounded it: the targeted time, or the mechanism's share of it, or
    the compute an overlap hides under."""
    reach = rec.reach
    if rec.ceiling_ms is None or rec.ceiling_ratio is None:
        return None
    work = rec.predicted is not None and rec.predicted.changes_work
    per_step = "for the work of today's step" if work else "per step"
    said = (
        f"it can recover at most {rec.ceiling_ms:.2f} ms {per_step} "
        f"({rec.ceiling_ratio:.1%} of the step)"
    )
    if reach is None:
        return said
    share = reach.ms / reach.target_ms if reach.limit == "share" and reach.target_ms else 1.0
    how = _MECHANISMS.get(reach.mechanism, reach.mechanism).format(share=share)
    if reach.limit == "hides-under" and reach.hides_under is not None:
        return (
            f"{said}: {how} ({reach.hides_under[0]} {reach.ms:.2f} ms), less than the "
            f"{reach.target_ms:.2f} ms it targets"
        )
    if reach.limit == "share":
        return f"{said}: {how} ({reach.target_ms:.2f} ms targeted)"
    return said  # the time it targets, whole


_EFFICACY_FROM = {
    "feature-prior": "the feature's prior",
    "default-prior": "the default prior",
    "unbounded-prior": "the prior for a change without a mechanism bound",
    "job-calibration": "this job's own measurements",
}


def metric_name(metric: object) -> str:
    return _METRICS.get(str(metric), str(metric))


def prediction_line(pred: Prediction) -> str:
    """The predicted change and how it was derived, in one line."""
    ms = pred.expected * pred.step_ms
    source = _EFFICACY_FROM.get(pred.efficacy_from, pred.efficacy_from)
    if pred.efficacy_from == "job-calibration":
        source += f" ({pred.measurements})"
    if pred.addressed_by != "ceiling":
        addressed = f"the bottleneck's {pred.addressed_ms:.2f} ms (no mechanism bound)"
    elif round(pred.bound_ms, 2) < round(pred.addressed_ms, 2):
        addressed = (
            f"{pred.bound_ms:.2f} ms reachable of the {pred.addressed_ms:.2f} ms it addresses"
        )
    else:
        addressed = f"the {pred.addressed_ms:.2f} ms it addresses"
    per_step = "for the work of today's step" if pred.changes_work else "per step"
    return (
        f"{metric_name(pred.metric)} {pred.expected:+.1%} (range {pred.low:+.1%} to "
        f"{pred.high:+.1%}), about {ms:+.2f} ms {per_step}: {addressed}, realised "
        f"{pred.efficacy_low:.0%}-{pred.efficacy_high:.0%} ({source})"
    )


# --- predicted against measured ----------------------------------------------------------------


def predicted_range(predicted: Mapping[str, Any]) -> str:
    """A recorded prediction as '<metric> -15.8% (-23.7% to -7.9%)'; '' when it has none."""
    change = predicted.get("change")
    if not isinstance(change, Mapping):
        return ""
    numbers = [as_number(change.get(k)) for k in ("expected", "low", "high")]
    if any(n is None for n in numbers):
        return ""
    expected, low, high = (float(n) for n in numbers if n is not None)
    metric = _METRICS.get(str(predicted.get("metric")), str(predicted.get("metric")))
    return f"{metric} {expected:+.1%} ({low:+.1%} to {high:+.1%})"


def measured_text(measured: Mapping[str, Any]) -> str:
    """A recorded measurement and how far its prediction was off."""
    metric = _METRICS.get(str(measured.get("metric")), str(measured.get("metric")))
    change = as_number(measured.get("change"))
    said = f"{metric} {change:+.1%}" if change is not None else f"{metric} unknown"
    if measured.get("comparable") is not True:
        return (
            f"{said}: not comparable with the prediction (the change alters the work per step "
            "and the comparison could only judge the step time)"
        )
    error = as_number(measured.get("error"))
    inside = "inside" if measured.get("in_range") is True else "outside"
    off = f", off by {error * 100:+.1f} pp" if error is not None else ""
    return f"{said}: {inside} the predicted range{off}"


def checked_text(checked: Checked) -> str:
    predicted = predicted_range(checked.predicted) or "no prediction recorded"
    recorded = "" if checked.recorded else " (not recorded: the verdict is inconclusive)"
    return (
        f"{checked.feature}: predicted {predicted}; measured "
        f"{measured_text(checked.measured.to_json())}{recorded}"
    )
