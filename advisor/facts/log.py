"""Facts from training logs: steady step time with its noise, throughput, memory, convergence."""

from __future__ import annotations

import itertools
import math
from statistics import median

from advisor.facts.base import Recorder
from advisor.facts.contract import Deriver, LogInputs, Scope
from advisor.facts.groups import recorded_layout
from advisor.inputs.thresholds import LogThresholds
from advisor.parsers.trainlog.log import GB, Iteration, TrainLog

MAD_SCALE = 1.4826  # MAD of a normal distribution -> its standard deviation


def steady_iterations(log: TrainLog, thresholds: LogThresholds) -> tuple[list[Iteration], str]:
    """Iterations with a step time, minus warm-up and outliers (checkpoint saves, hiccups)."""
    timed = [it for it in log.iterations if it.step_ms is not None and not math.isnan(it.step_ms)]
    warmup = (
        timed[: thresholds.warmup_iterations] if len(timed) > thresholds.warmup_iterations else []
    )
    rest = timed[len(warmup) :]
    if not rest:
        return [], "no timed iterations"
    center = median(it.step_ms or 0.0 for it in rest)
    mad = median(abs((it.step_ms or 0.0) - center) for it in rest)
    limit = thresholds.outlier_mads * MAD_SCALE * mad
    kept = [it for it in rest if mad == 0 or abs((it.step_ms or 0.0) - center) <= limit]
    outliers = [it.number for it in rest if it not in kept]
    parts = [f"iterations {kept[0].number}-{kept[-1].number} ({len(kept)} logged)"]
    if warmup:
        parts.append(f"warm-up {', '.join(str(it.number) for it in warmup)} dropped")
    if outliers:
        shown = ", ".join(map(str, outliers[:8])) + ("..." if len(outliers) > 8 else "")
        parts.append(f"outliers {shown} dropped (beyond {thresholds.outlier_mads:g} MADs)")
    return kept, "; ".join(parts)


def _step_time(steady: list[Iteration], note: str, source: str, out: Recorder) -> None:
    if not steady:
        out.miss("log.step_time_ms", "no iteration line with a step time")
        out.miss("log.step_time_mad_ms", "no iteration line with a step time")
        return
    times = [it.step_ms or 0.0 for it in steady]
    center = median(times)
    where = f"{source}:elapsed time per iteration (ms)"
    out.add("log.step_time_ms", center, where, "median of " + note)
    out.add("log.step_time_mad_ms", median(abs(t - center) for t in times), where, "MAD of " + note)


# fact, Iteration attribute, scale to the fact's unit, the log's segment
_THROUGHPUT = (
    ("log.tokens_per_s", "tokens_per_s", 1.0, "tokens/s"),
    ("log.mfu", "mfu", 0.01, "mfu"),
    ("log.tflops_per_device", "tflops_per_device", 1.0, "throughput per device"),
)


def _throughput(pool: list[Iteration], over: str, source: str, out: Recorder) -> None:
    for fact_id, attr, scale, segment in _THROUGHPUT:
        values = [getattr(it, attr) for it in pool if getattr(it, attr) is not None]
        if values and not (attr == "mfu" and max(values) <= 0):
            out.add(fact_id, median(values) * scale, f"{source}:{segment}", "median over " + over)
        elif attr == "mfu" and values:
            out.miss(
                fact_id, "the backend logs 0.00 (MFU is computed for qwen3/qwen3_moe on 910B only)"
            )
        else:
            out.miss(fact_id, "not in the log")


def _memory(log: TrainLog, source: str, out: Recorder) -> None:
    for fact_id, attr in (
        ("log.memory_allocated_peak_bytes", "allocated_gb"),
        ("log.memory_reserved_peak_bytes", "reserved_gb"),
    ):
        values = [getattr(it, attr) for it in log.iterations if getattr(it, attr) is not None]
        if values:
            out.add(
                fact_id,
                int(max(values) * GB),
                f"{source}:{attr.replace('_gb', '')}",
                "largest logged value (process-lifetime peak, max over ranks); GB read as GiB",
            )
        else:
            out.miss(fact_id, "not in the log")


def _loss(log: TrainLog, source: str, out: Recorder) -> None:
    losses = [[it.number, it.loss] for it in log.iterations if it.loss is not None]
    if not losses:
        out.miss("log.loss", "no loss in the log")
        return
    out.add(
        "log.loss",
        [[n, None if math.isnan(v) else v] for n, v in losses],
        f"{source}:lm loss",
        "every logged iteration (NaN as null)",
    )


def _grad_norm(log: TrainLog, factor: float, source: str, out: Recorder) -> None:
    norms = [
        it.grad_norm
        for it in log.iterations
        if it.grad_norm is not None and not math.isnan(it.grad_norm)
    ]
    if not norms:
        out.miss("log.grad_norm_spikes", "no grad norm in the log")
        return
    center = median(norms)
    spikes = sum(1 for n in norms if center > 0 and n > factor * center)
    out.add(
        "log.grad_norm_spikes",
        spikes,
        f"{source}:grad norm",
        f"grad norm above {factor:g} x the median ({center:.3g})",
    )


def _bad_iterations(log: TrainLog, source: str, out: Recorder) -> None:
    """NaN losses and skipped iterations (an overflowing loss scale skips the update)."""
    reported = [it.nan for it in log.iterations if it.nan is not None]
    nan_losses = sum(1 for it in log.iterations if it.loss is not None and math.isnan(it.loss))
    nan_count = max(nan_losses, sum(reported)) if reported else nan_losses
    out.add(
        "log.nan_iterations",
        nan_count,
        f"{source}:lm loss",
        "NaN losses, or the backend's reported NaN iterations",
    )
    skipped = _skipped(log)
    if skipped is not None:
        count, _, segment, note = skipped
        out.add("log.skipped_iterations", count, f"{source}:{segment}", note)
    else:
        out.miss("log.skipped_iterations", "not reported by this backend's log")


def _skipped(log: TrainLog) -> tuple[int, int, str, str] | None:
    """Skipped updates as the log states them, and of how many iterations: Megatron's counter
    per logged interval (over the iterations the lines cover), or MindFormers' `overflow cond`
    of each logged step (the update is skipped on overflow; over the logged steps)."""
    counted = [it.skipped for it in log.iterations if it.skipped is not None]
    if counted:
        return (
            sum(counted),
            _covered(log),
            "number of skipped iterations",
            "sum over logged intervals",
        )
    flags = [it.overflow for it in log.iterations if it.overflow is not None]
    if flags:
        note = f"logged steps with overflow cond True (of {len(flags)} logged)"
        return sum(flags), len(flags), "overflow cond", note
    return None


def _covered(log: TrainLog) -> int:
    """Iterations the logged lines cover: from the first logged interval to the last line (a
    counter logged every N iterations covers the N before each line)."""
    numbers = [it.number for it in log.iterations]
    gaps = [b - a for a, b in itertools.pairwise(numbers) if b > a]
    interval = int(median(gaps)) if gaps else 1
    return max(1, numbers[-1] - numbers[0] + interval)


def _halvings(log: TrainLog) -> tuple[int, list[float]]:
    """How many times the logged loss scale was halved (a fall by 4x counts twice), and the
    logged scales in order."""
    scales = [
        it.loss_scale
        for it in log.iterations
        if it.loss_scale is not None and math.isfinite(it.loss_scale) and it.loss_scale > 0
    ]
    halvings = sum(
        max(1, round(math.log2(before / after)))
        for before, after in itertools.pairwise(scales)
        if after < before
    )
    return halvings, scales


def _loss_scale(log: TrainLog, source: str, out: Recorder) -> None:
    """fp16 trouble: the dynamic loss scale halves on every overflow (or every few, with
    hysteresis) and the overflowing step's update is skipped."""
    halvings, scales = _halvings(log)
    if scales:
        note = f"logged scale {scales[0]:g} -> lowest {min(scales):g} -> last {scales[-1]:g}"
        out.add("log.loss_scale_drops", halvings, f"{source}:loss scale", note)
    else:
        out.miss("log.loss_scale_drops", "no loss scale in the log (bf16 or fp32 runs have none)")
    skipped = _skipped(log)
    if skipped is not None:
        count, of, segment, note = skipped
        ratio_note = f"{count} skipped of {of} iterations ({note})"
        out.add("log.overflow_ratio", count / of, f"{source}:{segment}", ratio_note)
    elif scales:
        # every halving follows at least one overflowed, skipped step: a lower bound
        covered = _covered(log)
        note = f"at least {halvings} overflowed of {covered} iterations (one per halving)"
        out.add("log.overflow_ratio", halvings / covered, f"{source}:loss scale", note)
    else:
        out.miss("log.overflow_ratio", "the log states neither skipped iterations nor a loss scale")


def _out_of_memory(log: TrainLog, source: str, out: Recorder) -> None:
    """Out-of-memory errors the log printed: a log read in full without one says 0."""
    where = log.out_of_memory
    note = f"first at {where[0]}" if where else "no out-of-memory error in the log"
    out.add("log.out_of_memory_errors", len(where), source, note)


def derive(given: LogInputs, out: Recorder) -> None:
    log, taxonomy = given.log, given.taxonomy
    source = ",".join(p.name for p in log.paths)
    first, last = log.iterations[0], log.iterations[-1]
    out.add(
        "log.iterations",
        len(log.iterations),
        source,
        f"iterations {first.number}-{last.number} of {last.total}",
    )
    sizes = recorded_layout(log.arguments, taxonomy.recorded_layout)
    if sizes:
        out.add("log.parallel_sizes", sizes, f"{source}:arguments", "Megatron argument dump")
    else:
        out.miss("log.parallel_sizes", f"{source} has no argument dump with parallel sizes")
    steady, note = steady_iterations(log, given.thresholds)
    _step_time(steady, note, source, out)
    _throughput(steady or log.iterations, note if steady else "all iterations", source, out)
    _memory(log, source, out)
    _out_of_memory(log, source, out)
    _loss(log, source, out)
    _grad_norm(log, given.thresholds.grad_norm_spike_factor, source, out)
    _bad_iterations(log, source, out)
    _loss_scale(log, source, out)


DERIVER = Deriver[LogInputs](
    name="log",
    scope=Scope.LOG,
    inputs=frozenset({"log", "taxonomy", "thresholds"}),
    reads=frozenset(),
    writes=frozenset(
        {
            "log.iterations",
            "log.parallel_sizes",
            "log.step_time_ms",
            "log.step_time_mad_ms",
            *(fact_id for fact_id, *_ in _THROUGHPUT),
            "log.memory_allocated_peak_bytes",
            "log.memory_reserved_peak_bytes",
            "log.out_of_memory_errors",
            "log.loss",
            "log.grad_norm_spikes",
            "log.nan_iterations",
            "log.skipped_iterations",
            "log.loss_scale_drops",
            "log.overflow_ratio",
        }
    ),
    derive=derive,
)
