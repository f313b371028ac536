"""The step reduction of a trace whose kernels are held whole: the kernels sorted and linked
to their launches, each window measured, the phases of the windows."""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from pathlib import Path

from advisor.parsers.traces import workers
from advisor.parsers.traces.flows import NAN, operator_times
from advisor.parsers.traces.fsdp_passes import allgather_passes
from advisor.parsers.traces.intervals import Intervals, merged_intervals
from advisor.parsers.traces.phases import NO_PHASE_RANGES, DeviceOps, PhaseTable, phase_table
from advisor.parsers.traces.queue import DeviceQueue
from advisor.parsers.traces.steps import (
    LaneNames,
    RawTrace,
    StepContext,
    TraceData,
    device_pids,
    sorted_by_start,
    step_context,
    trace_data,
    window_step,
)

# the kernels from which measuring the phases in a process of their own saves time (the fork
# and the table sent back cost ~10 ms; the phases ~1 us a kernel)
ASIDE_MIN_KERNELS = 100_000


def reduce_steps(
    path: Path,
    raw: RawTrace,
    lanes: LaneNames,
    no_phases: str = NO_PHASE_RANGES,
    aside: bool = False,
) -> TraceData:
    """The step measures of a trace whose kernels are held whole; `no_phases`: why the steps
    have no phases when the trace holds no phase range; `aside`: the phases of many kernels
    may be measured in a forked process while this one measures the windows (a large trace
    read alone, with the machine's cores to itself)."""
    starts: array[float] = array("d")
    ends: array[float] = array("d")
    for pid in device_pids(raw, lanes.device):
        starts.extend(raw.starts.get(pid, array("d")))
        ends.extend(raw.ends.get(pid, array("d")))
    kernel_starts, kernel_ends = sorted_by_start(starts, ends)
    del starts, ends
    flow_category, launch_at = _launch_times(raw, kernel_starts, lanes.flows)
    ctx = step_context(raw)
    linked = launch_at if flow_category and kernel_starts else None
    windows = [(n, w.start, w.end) for n, w in sorted(ctx.windows.items())]
    kernels = (kernel_starts, kernel_ends, linked)
    forked = aside and len(kernel_starts) >= ASIDE_MIN_KERNELS
    phases = workers.aside(
        "measuring phases", lambda: _phases(raw, lanes, ctx, windows, kernels, no_phases), forked
    )
    steps = [
        window_step(ctx, number, kernel_starts, kernel_ends, linked)
        for number in sorted(ctx.windows)
    ]
    data = trace_data(path, raw, ctx, steps, flow_category, bool(kernel_starts))
    if linked is not None:
        data.queue = DeviceQueue(kernel_starts, kernel_ends, linked, ctx.collectives, windows)
    gathers = raw.collectives.get("allgather")
    data.allgather_passes = allgather_passes(
        windows,
        raw.host_ranges,
        (gathers[0], gathers[1]) if gathers else None,
        ctx.computing if len(ctx.computing) else None,
        (kernel_starts, kernel_ends, linked) if linked is not None else None,
    )
    # waited for when first read: facts derived meanwhile run beside the phases' process
    data.phases = phases if forked else phases()
    return data


def _phases(
    raw: RawTrace,
    lanes: LaneNames,
    ctx: StepContext,
    windows: list[tuple[int, float, float]],
    kernels: tuple[array[float], array[float], array[float] | None],
    no_phases: str,
) -> PhaseTable:
    """The windows' phases. The trace's own lanes say which device time computes and which
    communication no compute hides (communication tasks run on the device lane under their
    own names)."""
    kernel_starts, kernel_ends, linked = kernels
    computing = ctx.overlap.get("Computing")
    exposed = ctx.overlap.get("Communication(Not Overlapped)")
    # the operator links only place kernels in phases: not paired when no range names one
    enqueued = (
        operator_times(raw.operator_pairs, raw.flows.get(lanes.operator_flow or ""), kernel_starts)
        if len(raw.host_ranges.starts)
        else None
    )
    return phase_table(
        windows,
        DeviceOps(
            kernel_starts,
            kernel_ends,
            linked,
            [False] * len(kernel_starts),
            merged_intervals(computing.starts, computing.ends) if computing else None,
            merged_intervals(exposed.starts, exposed.ends) if exposed else Intervals(),
            enqueued,
        ),
        raw.host_ranges,
        (raw.host.loader_start, raw.host.loader_end),
        no_phases,
    )


def _launch_times(
    raw: RawTrace, kernel_starts: Sequence[float], flows: tuple[str, ...]
) -> tuple[str | None, array[float] | None]:
    """Each kernel's host launch time (NaN: none), from the best available flow category."""
    if raw.launch_pairs:
        pairs = raw.launch_pairs
        return flows[0], array("d", (pairs.get(s, NAN) for s in kernel_starts))
    for cat in flows:
        table = raw.flows.get(cat)
        if table is None:
            continue
        launch_at, paired = table.launch_times(kernel_starts)
        if paired:
            return cat, launch_at
    return None, None
