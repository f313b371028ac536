"""The words of a comparison: the engine returns a verdict, a coded reason, coded warnings and
what would let it decide, each with the values that decided; every renderer words them here."""

from __future__ import annotations

from collections.abc import Callable

from advisor.engine.compare import Collect, CompareCode, CompareNote, Metric
from advisor.model import Value, Values


def _number(value: Value) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


_NOTES: dict[CompareCode, Callable[[Values], str]] = {
    CompareCode.no_step_time: lambda v: (
        "no step time on both sides (give two profiles or two training logs)"
    ),
    CompareCode.loss_regression: lambda v: (
        f"loss at matched iterations {v['first']}-{v['last']} is {_number(v['candidate']):.4g} "
        f"vs {_number(v['baseline']):.4g} ({_number(v['ratio']):+.1%}): a speed-up that hurts "
        "convergence is not a gain"
    ),
    CompareCode.nan_iterations: lambda v: f"{v['count']} NaN iteration(s) in the candidate",
    CompareCode.no_noise_estimate: lambda v: (
        f"the {v['side']} has {v['steps']} steady step(s): no noise estimate"
    ),
    CompareCode.within_noise: lambda v: (
        f"the difference ({_number(v['delta_ms']):+.1f} ms) is within the noise "
        f"({_number(v['z']):g} x {_number(v['noise_ms']):.1f} ms)"
    ),
    CompareCode.below_min_effect: lambda v: (
        f"step time changed by {_number(v['delta_ratio']):+.1%}: below the "
        f"{_number(v['min_effect']):.0%} minimum effect"
    ),
    CompareCode.beyond_noise: lambda v: (
        f"step time {_number(v['baseline_ms']):.1f} -> {_number(v['candidate_ms']):.1f} ms "
        f"({_number(v['delta_ratio']):+.1%}), beyond the noise"
    ),
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
    CompareCode.beyond_noise: "the step time changed beyond the noise",
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
