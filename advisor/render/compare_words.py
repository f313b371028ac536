"""The words of a comparison: the engine returns a verdict, a coded reason, coded warnings and
what would let it decide, each with the values that decided; every renderer words them here."""

from __future__ import annotations

from collections.abc import Callable

from advisor.engine.compare import Collect, CompareCode, CompareNote, JudgedOn, Metric
from advisor.engine.compare_work import Unit
from advisor.model import Value, Values


def _number(value: Value) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


# how a time per unit of work is read: the metric's name, the shown unit, its scale from ms
_UNIT_WORDS = {
    "step": ("step time", "ms", 1.0),
    "token": ("time per token", "µs", 1000.0),
    "sample": ("time per sample", "ms", 1.0),
}


def _unit(values: Values) -> tuple[str, str, float]:
    return _UNIT_WORDS.get(str(values.get("unit", "step")), _UNIT_WORDS["step"])


def _within_noise(v: Values) -> str:
    name, shown, scale = _unit(v)
    where = "" if name == "step time" else f" in {name}"
    return (
        f"the difference{where} ({_number(v['delta_ms']) * scale:+.{_digits(v)}f} {shown}) is "
        f"within the noise ({_number(v['z']):g} x {_number(v['noise_ms']) * scale:.{_digits(v)}f}"
        f" {shown})"
    )


def _digits(v: Values) -> int:
    # a microsecond per token is read to two decimals, a millisecond step to one
    return 2 if v.get("unit") == "token" else 1


def _beyond_noise(v: Values) -> str:
    name, shown, scale = _unit(v)
    step = f"step time {_number(v['baseline_ms']):.1f} -> {_number(v['candidate_ms']):.1f} ms"
    if name == "step time":
        return f"{step} ({_number(v['delta_ratio']):+.1%}), beyond the noise"
    digits = _digits(v)
    return (
        f"{name} {_number(v['baseline_unit_ms']) * scale:.{digits}f} -> "
        f"{_number(v['candidate_unit_ms']) * scale:.{digits}f} {shown} "
        f"({_number(v['delta_ratio']):+.1%}), beyond the noise; the work per step differs, so "
        f"the {step} ({_number(v['step_delta_ratio']):+.1%}) did not decide"
    )


def _loss_regression(v: Values) -> str:
    matched_on = str(v.get("matched_on", "iteration"))
    if matched_on == "iteration":
        where = f"matched iterations {v['first']}-{v['last']}"
    else:
        where = (
            f"matched consumed {matched_on}s {_number(v['first']):,.0f}-{_number(v['last']):,.0f}"
        )
    return (
        f"loss at {where} is {_number(v['candidate']):.4g} vs {_number(v['baseline']):.4g} "
        f"({_number(v['ratio']):+.1%}): a speed-up that hurts convergence is not a gain"
    )


_CONDITIONS = {
    "global_batch": "global batch",
    "world_size": "world size",
    "seq_length": "sequence length",
    "precision": "precision",
    "dataset": "dataset",
    "seed": "seed",
    "parallel_layout": "parallel layout",
}


def _baseline_differs(v: Values) -> str:
    condition = str(v["condition"])
    name = _CONDITIONS.get(condition, condition)
    why = {
        "global_batch": "judged per unit of work, not per step",
        "seed": "the loss curves differ by chance as well",
        "dataset": "the loss curves are not comparable",
    }.get(condition, "the runs do not share the baseline's conditions")
    return f"{name} differs: {v['baseline']} -> {v['candidate']} ({why})"


_NOTES: dict[CompareCode, Callable[[Values], str]] = {
    CompareCode.no_step_time: lambda v: (
        "no step time on both sides (give two profiles or two training logs)"
    ),
    CompareCode.loss_regression: _loss_regression,
    CompareCode.nan_iterations: lambda v: f"{v['count']} NaN iteration(s) in the candidate",
    CompareCode.no_noise_estimate: lambda v: (
        f"the {v['side']} has {v['steps']} steady step(s): no noise estimate"
    ),
    CompareCode.within_noise: _within_noise,
    CompareCode.below_min_effect: lambda v: (
        f"{_unit(v)[0]} changed by {_number(v['delta_ratio']):+.1%}: below the "
        f"{_number(v['min_effect']):.0%} minimum effect"
    ),
    CompareCode.beyond_noise: _beyond_noise,
    CompareCode.settings_differ: lambda v: (
        f"{v['count']} settings differ ("
        + ", ".join(str(k) for k in (v["keys"] if isinstance(v["keys"], tuple) else ()))
        + "): the effect cannot be attributed to one change"
    ),
    CompareCode.no_shared_iterations: lambda v: (
        "the logs share no iteration numbers: loss not compared"
    ),
    CompareCode.grad_norm_spikes: lambda v: (
        f"grad-norm spikes rose from {v['baseline']} to {v['candidate']}: watch the loss scale"
    ),
    CompareCode.read_warning: lambda v: str(v["text"]),
    CompareCode.baseline_differs: _baseline_differs,
}


def note_text(note: CompareNote) -> str:
    return _NOTES[note.code](note.values)


_COLLECT = {
    Collect.step_time_both_sides: (
        "profile the same steps on both runs, or pass --baseline-log/--candidate-log"
    ),
    Collect.more_steady_steps: (
        "profile at least 3 steady steps on both runs (e.g. profile_step_start 5, "
        "profile_step_end 9) or compare the training logs (--baseline-log/--candidate-log)"
    ),
}


def collect_text(collect: Collect | None) -> str:
    return _COLLECT[collect] if collect is not None else ""


# what `advisor compare` records in the ledger: its reason's code (the values stay in the run)
_RECORDED = {
    CompareCode.loss_regression: "the loss rose at matched iterations (a speed-up that hurts "
    "convergence is not a gain)",
    CompareCode.nan_iterations: "the candidate has new NaN iterations",
    CompareCode.beyond_noise: "the step time (per token or sample when the work per step "
    "differed) changed beyond the noise",
}


def recorded_reason(note: str) -> str:
    """A ledger note worded: a comparison's reason code, or (older ledgers) the sentence."""
    worded = {code.value: words for code, words in _RECORDED.items()}
    return worded.get(note, note)


def metric_value(metric: Metric, value: float | None) -> str:
    if value is None:
        return "-"
    if "ratio" in metric.id or metric.id == "mfu":
        return f"{value:.1%}"
    if "bytes" in metric.id:
        return f"{value / 1024**3:.2f} GiB"
    return f"{value:,.1f}"


def metric_change(metric: Metric) -> str:
    """A share's change in percentage points; a time's, rate's or size's in percent."""
    if metric.delta_pp is not None:
        return f"{metric.delta_pp:+.1f} pp"
    return f"{metric.delta_ratio:+.1%}" if metric.delta_ratio is not None else "-"


def judged_text(judged: JudgedOn) -> str:
    """Which unit decided, and why it is not the step when it is not."""
    if judged.unit is Unit.step:
        return "step time (the work per step is the same or not known)"
    name = _UNIT_WORDS[judged.unit.value][0]
    return (
        f"{name}: the work per step differs ({judged.baseline_per_step:,.0f} -> "
        f"{judged.candidate_per_step:,.0f} {judged.unit.value}s, from {judged.source})"
    )
