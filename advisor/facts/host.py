"""Host-side facts from the trace: dispatch gaps, synchronisation, data loading, allocator calls."""

from __future__ import annotations

from statistics import median

from advisor.facts.base import Recorder, select_steady
from advisor.inputs.taxonomy import Taxonomy
from advisor.parsers.profile_data import RankProfile

TRACE = "trace_view.json"
TRACE_FACTS = (
    "host.launch_gap_ms_per_step",
    "host.dispatch_bound_ratio",
    "host.sync_calls_per_step",
    "data.loader_ms_per_step",
    "data.loader_ratio",
    "memory.malloc_calls_per_step",
    "memory.free_calls_per_step",
)


def derive(rank: RankProfile, taxonomy: Taxonomy, out: Recorder) -> None:
    trace = rank.trace
    if trace is None or not trace.steps:
        reason = rank.absent.get(TRACE, "no ProfilerStep#N events in trace_view.json")
        if trace is None:
            reason = f"trace_view.json {reason}"
        for fact_id in TRACE_FACTS:
            out.miss(fact_id, reason)
        return
    steady = select_steady(
        [s.number for s in trace.steps],
        [s.duration_us for s in trace.steps],
        taxonomy.partial_step_ratio,
    )
    steps = [trace.steps[i] for i in steady.kept]
    name = rank.origin or TRACE
    total = sum(s.duration_us for s in steps)
    note = f"ProfilerStep windows, {steady.note}"
    if trace.flow_category is None or not trace.has_device_lane:
        what = (
            "no Ascend Hardware lane"
            if not trace.has_device_lane
            else "no HostToDevice/async_npu flows"
        )
        for fact_id in ("host.launch_gap_ms_per_step", "host.dispatch_bound_ratio"):
            out.miss(fact_id, f"{TRACE} has {what} to link launches to kernels")
    else:
        gaps = [s.launch_gap_us or 0.0 for s in steps]
        lanes = "kernels" if rank.origin else "Ascend Hardware"
        source = f"{name}:{lanes}+{trace.flow_category} flows"
        out.add("host.launch_gap_ms_per_step", median(gaps) / 1000.0, source, "median over " + note)
        if total > 0:
            out.add(
                "host.dispatch_bound_ratio",
                sum(gaps) / total,
                source,
                "sum of gaps / sum of step time over " + note,
            )
    cann = f"{name}:runtime API" if rank.origin else f"{TRACE}:CANN"
    out.add(
        "host.sync_calls_per_step", median(s.sync_calls for s in steps), cann, "median over " + note
    )
    out.add(
        "memory.malloc_calls_per_step",
        median(s.malloc_calls for s in steps),
        cann,
        "median over " + note,
    )
    out.add(
        "memory.free_calls_per_step",
        median(s.free_calls for s in steps),
        cann,
        "median over " + note,
    )
    loader = [s.dataloader_us for s in steps]
    python = f"{name}:Python DataLoader __next__"
    out.add("data.loader_ms_per_step", median(loader) / 1000.0, python, "median over " + note)
    if total > 0:
        out.add(
            "data.loader_ratio",
            sum(loader) / total,
            python,
            "sum of loader time / sum of step time over " + note,
        )
