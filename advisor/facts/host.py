"""Host-side facts from the trace: dispatch gaps, synchronisation, blocking calls, data loading,
allocator calls."""

from __future__ import annotations

from statistics import median

from advisor.facts.base import Recorder, select_steady
from advisor.facts.contract import Deriver, RankInputs, Scope
from advisor.facts.steady import PerStep, open_last_ratio
from advisor.facts.wording import step_windows
from advisor.parsers.profile_data import RankProfile
from advisor.parsers.traces.steps import TraceData, TraceStep

TRACE = "trace_view.json"
TRACE_FACTS = (
    "host.launch_gap_ms_per_step",
    "host.dispatch_bound_ratio",
    "host.launch_interval_ms",
    "host.sync_calls_per_step",
    "data.loader_ms_per_step",
    "data.loader_ratio",
    "memory.malloc_calls_per_step",
    "memory.free_calls_per_step",
)
BLOCKING_FACTS = (
    "host.blocking_ms_per_step",
    "host.blocking_ratio",
    "host.blocking_idle_share",
    "host.blocking_idle_ratio",
    "host.blocking_calls",
    "host.blocking_top",
)


def _missing_reason(rank: RankProfile) -> str:
    reason = rank.absent.get(TRACE, "no ProfilerStep#N events in trace_view.json")
    return f"trace_view.json {reason}" if rank.trace is None else reason


def _launch_gaps(
    rank: RankProfile, trace: TraceData, steps: list[TraceStep], per: PerStep, out: Recorder
) -> None:
    """How long the device waited for the host to launch its next kernel."""
    if trace.flow_category is None or not trace.has_device_lane:
        what = (
            "no Ascend Hardware lane"
            if not trace.has_device_lane
            else "no HostToDevice/async_npu flows"
        )
        for fact_id in (
            "host.launch_gap_ms_per_step",
            "host.dispatch_bound_ratio",
            "host.launch_interval_ms",
        ):
            out.miss(fact_id, f"{TRACE} has {what} to link launches to kernels")
        return
    gaps = sum(s.launch_gap_us or 0.0 for s in steps)
    lanes = "kernels" if rank.origin else "Ascend Hardware"
    source = f"{rank.origin or TRACE}:{lanes}+{trace.flow_category} flows"
    out.add("host.launch_gap_ms_per_step", per.ms(gaps), source, per.note)
    if per.total_us > 0:
        out.add(
            "host.dispatch_bound_ratio",
            gaps / per.total_us,
            source,
            f"sum of gaps / sum of step time over the {per.steps} steady step(s)",
        )
    intervals = [s.launch_interval_us for s in steps if s.launch_interval_us is not None]
    if intervals:
        out.add(
            "host.launch_interval_ms",
            median(intervals) / 1000.0,
            source,
            f"median over {len(intervals)} steady step(s) of each step's median gap between "
            "consecutive launches",
        )
    else:
        out.miss(
            "host.launch_interval_ms",
            "the time between launches is measured on torch_npu traces, not yet on PyTorch traces",
        )


def _runtime_calls(rank: RankProfile, steps: list[TraceStep], note: str, out: Recorder) -> None:
    """Synchronisation and allocator calls per step, from the runtime API lane."""
    cann = f"{rank.origin}:runtime API" if rank.origin else f"{TRACE}:CANN"
    for fact_id, calls in (
        ("host.sync_calls_per_step", [s.sync_calls for s in steps]),
        ("memory.malloc_calls_per_step", [s.malloc_calls for s in steps]),
        ("memory.free_calls_per_step", [s.free_calls for s in steps]),
    ):
        out.add(fact_id, median(calls), cann, "median over " + note)


def _loader(rank: RankProfile, steps: list[TraceStep], per: PerStep, out: Recorder) -> None:
    loader = sum(s.dataloader_us for s in steps)
    python = f"{rank.origin or TRACE}:Python DataLoader __next__"
    out.add("data.loader_ms_per_step", per.ms(loader), python, per.note)
    if per.total_us > 0:
        out.add(
            "data.loader_ratio",
            loader / per.total_us,
            python,
            f"sum of loader time / sum of step time over the {per.steps} steady step(s)",
        )


def _blocking(rank: RankProfile, steps: list[TraceStep], per: PerStep, out: Recorder) -> None:
    """Host time inside calls that wait for the device, and which calls they are."""
    if any(s.blocking_us is None for s in steps):
        for fact_id in BLOCKING_FACTS:
            out.miss(
                fact_id,
                "the profile records no runtime API calls (database export without CANN_API)",
            )
        return
    source = f"{rank.origin or TRACE}:runtime sync/copy calls+aten::item, copy kinds"
    blocked = sum(s.blocking_us or 0.0 for s in steps)
    over = f"the {per.steps} steady step(s)"
    out.add("host.blocking_ms_per_step", per.ms(blocked), source, per.note)
    total = per.total_us
    if total > 0:
        out.add(
            "host.blocking_ratio",
            blocked / total,
            source,
            f"sum of blocked host time (calls merged) / sum of step time over {over}",
        )
    blocked_idle = sum(s.blocking_idle_us or 0.0 for s in steps)
    if total > 0:
        out.add(
            "host.blocking_idle_ratio",
            blocked_idle / total,
            f"{source}+device operations",
            f"device idle time while the host was blocked / step time over {over}",
        )
    idle = sum(s.device_idle_us or 0.0 for s in steps)
    if idle > 0:
        out.add(
            "host.blocking_idle_share",
            blocked_idle / idle,
            f"{source}+device operations",
            f"device idle time while the host was blocked / device idle time over {over}",
        )
    table = blocking_table(steps, per)
    out.add("host.blocking_calls", table, source, f"by total time; {per.note}")
    out.add("host.blocking_top", _top_call(table), source, "the longest of host.blocking_calls")


def _top_call(table: list[dict[str, object]]) -> str:
    """The longest blocking call in words: what, which memory, where, how long."""
    if not table:
        return "none"
    top = table[0]
    what = str(top["call"])
    if top["memory"]:
        size = f", {top['bytes']} bytes" if top["bytes"] is not None else ""
        what += f" ({top['memory']}{size})"
    where = f" in {top['range']}" if top["range"] else ""
    return f"{what}{where}, {top['ms_per_step']} ms per step"


def blocking_table(steps: list[TraceStep], per: PerStep) -> list[dict[str, object]]:
    """The blocking calls by (call, memory kind, range), the longest first, per step."""
    totals: dict[tuple[str, str, str], list[float]] = {}
    sizes: dict[tuple[str, str, str], int] = {}
    for step in steps:
        for call in step.blocking_calls:
            key = (call.call, call.memory, call.range)
            entry = totals.setdefault(key, [0.0, 0.0])
            entry[0] += call.end - call.start
            entry[1] += 1
            if call.bytes is not None:
                sizes[key] = max(sizes.get(key, 0), call.bytes)
    n = len(steps)
    rows = sorted(totals.items(), key=lambda kv: (-kv[1][0], kv[0]))
    return [
        {
            "call": call,
            "memory": memory or None,
            "bytes": sizes.get((call, memory, where)),
            "range": where or None,
            "ms_per_step": round(per.ms(total), 3),
            "calls_per_step": round(count / n, 2),
        }
        for (call, memory, where), (total, count) in rows
    ]


def derive(given: RankInputs, out: Recorder) -> None:
    rank = given.profile
    trace = rank.trace
    if trace is None or not trace.steps:
        for fact_id in (*TRACE_FACTS, *BLOCKING_FACTS):
            out.miss(fact_id, _missing_reason(rank))
        return
    steps, per, note = _steady_steps(given, trace)
    _launch_gaps(rank, trace, steps, per, out)
    _runtime_calls(rank, steps, note, out)
    _loader(rank, steps, per, out)
    _blocking(rank, steps, per, out)


def _steady_steps(given: RankInputs, trace: TraceData) -> tuple[list[TraceStep], PerStep, str]:
    """The trace's steps the step model keeps as steady, with the step model's times (one
    window and one statistic for every per-step fact); the trace's own steady steps when the
    step model's numbers are not the trace's."""
    rank = given.profile
    rows, steady, _ = given.steady
    by_number = {s.number: s for s in trace.steps}
    if rows and all(r.step in by_number for r in rows):
        steps = [by_number[r.step] for r in rows if r.step is not None]
        return steps, PerStep.of([r.total for r in rows]), f"{step_windows(rank)}, {steady.note}"
    own = select_steady(
        [s.number for s in trace.steps],
        [s.duration_us for s in trace.steps],
        given.thresholds.partial_step_ratio,
        open_last_ratio(rank, given.thresholds),
    )
    steps = [trace.steps[i] for i in own.kept]
    per = PerStep.of([s.duration_us for s in steps])
    return steps, per, f"{step_windows(rank)}, {own.note} (the trace's own step windows)"


DERIVER = Deriver[RankInputs](
    name="host",
    scope=Scope.RANK,
    inputs=frozenset({"profile", "thresholds", "steady"}),
    reads=frozenset(),
    writes=frozenset((*TRACE_FACTS, *BLOCKING_FACTS)),
    derive=derive,
)
