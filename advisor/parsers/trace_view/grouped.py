"""The step reduction of a trace_view.json too large to hold its kernels at once, in groups.

The worker processes leave each byte range's rows in a spill file (trace_view/parallel.py).
When the device kernels number more than GROUP_ROWS, the parent does not read them all back:
it keeps the small data (steps, process names) and reduces through the trace engine's grouped
reduction (parsers/traces/ordered.py):

1. the engine's start-time groups, cut from a sample of the kernels' starts: for each, the
   device lanes' kernels starting in it (lane after lane, each in file order, then sorted by
   start stably, as the whole trace is), the best flow category's finishes at those times and
   the starts of those flows give each kernel's launch time; the group goes to the ordered
   file;
2. the engine's window groups over the ProfilerStep windows: each group's host calls, overlap
   lanes and collectives read from the spill files for its time range, and its windows measured
   with the same function as the whole-trace reduction, from the kernels that overlap them.

Exact as the whole-trace reduction: a flow's launch is the last start of its id in file order
and, of flows ending at one time, the last one counts — both rules only look at the flows that
end at the group's kernels' starts. Used only when the best flow category is known to pair (the
trace's first HostToDevice pair was seen), so the category every window uses is that one.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from advisor.parsers.trace_view.accumulator import HOST
from advisor.parsers.trace_view.schema import DEVICE_LANE, FLOW_PREFERENCE
from advisor.parsers.traces import budget, spill
from advisor.parsers.traces.flows import FlowTable
from advisor.parsers.traces.fsdp_passes import grouped_passes
from advisor.parsers.traces.intervals import Intervals
from advisor.parsers.traces.ordered import (
    OrderedWriter,
    Rows,
    measure_in_groups,
    sample_of,
    start_cuts,
    time_ranges,
    window_groups,
)
from advisor.parsers.traces.phases import grouped_table
from advisor.parsers.traces.plain import PlainTrace
from advisor.parsers.traces.queue import DeviceQueue
from advisor.parsers.traces.steps import (
    RawTrace,
    StepContext,
    StepWindow,
    TraceData,
    TraceStep,
    device_pids,
    sorted_by_start,
    step_context,
    trace_data,
    window_step,
)

BEST = FLOW_PREFERENCE[0]
Key = tuple[object, ...]


# columns that grow with the trace besides the kernels: read per group, by time
TIMED = ("overlap", "collective", HOST)


def big_columns(devices: set[object]) -> Callable[[Key], bool]:
    """The columns left in the spill files: the device lane's kernel rows, the flows (the
    best category's ends are read per group; the operator flows only place tasks in step
    phases, which a trace read in groups does not measure), and the host calls, overlap lanes
    and collectives."""

    def big(key: Key) -> bool:
        if key[0] in ("starts", "ends"):
            return key[1] in devices
        if key[0] == "flows":
            return True
        return key[0] in TIMED

    return big


def segments(spills: list[Path], wanted: Callable[[Key], bool]) -> Iterator[dict[Key, Any]]:
    """Each spill segment's wanted columns, in file order (parts in order)."""
    for path in spills:
        yield from spill.segments(path, wanted)


def count_rows(spills: list[Path], devices: set[object]) -> tuple[int, set[Key]]:
    """The device lane's kernel rows in the spill files, and the keys of the columns with
    rows (headers only)."""
    total = 0
    keys: set[Key] = set()
    for path in spills:
        for layout in spill.layouts(path):
            for key, _, size in layout.columns:
                assert isinstance(key, tuple)
                if key[0] == "starts" and key[1] in devices:
                    total += size
                keys.add(key)
    return total, keys


def reduce_in_groups(
    path: Path, raw: RawTrace, spills: list[Path], rows: int, keys: set[Key]
) -> TraceData:
    """`raw`: the trace's small data (steps, process names), its other columns left in
    `spills`; `keys`: the columns the spill files hold rows of."""
    lanes = sorted({str(k[1]) for k in keys if k[0] == "overlap"})
    kinds = sorted({str(k[1]) for k in keys if k[0] == "collective"})
    exposure = bool(kinds) and ("overlap", "Computing", 0) in keys
    ctx = step_context(raw)
    devices = device_pids(raw, DEVICE_LANE)
    cuts = start_cuts(_sample(spills, set(devices))) if rows > budget.GROUP_ROWS else []
    ordered = OrderedWriter(spills[0].with_name("ordered"))
    try:
        for lo, hi in time_ranges(cuts):
            ordered.append(_kernels(spills, devices, lo, hi))
        ordered.close()

        queues: list[DeviceQueue] = []

        def measure(group: list[StepWindow], kernels: Rows) -> dict[int, TraceStep]:
            local = _context(ctx, group, spills, lanes, kinds, exposure)
            linked = kernels.launch_at if rows > 0 else None  # as the whole trace's
            if not cuts and linked is not None and len(kernels.start):
                # one group holds every kernel: the queue times are read as on a whole trace
                queues.append(
                    DeviceQueue(kernels.start, kernels.end, linked, local.collectives, [])
                )
            return {
                w.number: window_step(local, w.number, kernels.start, kernels.end, linked)
                for w in group
            }

        windows = sorted(ctx.windows.values(), key=lambda w: (w.start, w.number))
        steps: dict[int, TraceStep] = {}
        for part in measure_in_groups(window_groups(windows, cuts), ordered, measure):
            steps.update(part)
    finally:
        ordered.close()
        ordered.path.unlink(missing_ok=True)
    ordered_steps = [steps[number] for number in sorted(steps)]
    ctx.overlap = {lane: ctx.overlap.get(lane, Intervals()) for lane in lanes}
    data = trace_data(path, raw, ctx, ordered_steps, BEST, rows > 0)
    data.phases = grouped_table(raw.host_ranges)
    data.allgather_passes = grouped_passes(raw.host_ranges)
    if len(queues) == 1:
        data.queue = queues[0]
        data.queue.windows = [(n, w.start, w.end) for n, w in sorted(ctx.windows.items())]
    return data


def _sample(spills: list[Path], devices: set[object]) -> Iterator[float]:
    """Every SAMPLE_EVERY-th kernel start of the device lanes, segment by segment."""
    for found in segments(spills, lambda key: key[0] == "starts" and key[1] in devices):
        for starts in found.values():
            yield from sample_of(starts)


def _kernels(spills: list[Path], devices: list[int | str], lo: float, hi: float) -> Rows:
    """The kernels starting in [lo, hi), sorted by start as the whole trace's are, with their
    launch times."""
    starts_all, ends_all, flows = _kernels_and_finishes(spills, devices, lo, hi)
    _flow_starts(spills, flows)
    kernel_starts, kernel_ends = sorted_by_start(starts_all, ends_all)
    del starts_all, ends_all
    launch_at, _ = flows.launch_times(kernel_starts)
    return Rows(kernel_starts, kernel_ends, array("i", bytes(4 * len(kernel_starts))), launch_at)


def _context(
    whole: StepContext,
    group: list[StepWindow],
    spills: list[Path],
    lanes: list[str],
    kinds: list[str],
    exposure: bool,
) -> StepContext:
    """The step context of a group's time range: every interval that reaches into it and
    every call in it (measures within a window depend on nothing else); every lane and kind
    of the trace present, empty or not."""
    lo = min(w.start for w in group)
    hi = max(w.end for w in group)
    timed = PlainTrace(steps=list(whole.windows.values()))
    for name in lanes:
        timed.overlap[name] = [array("d"), array("d")]
    for kind in kinds:
        timed.collectives[kind] = [array("d"), array("d")]
    host = timed.host.columns()
    pairs = (
        ("sync_start", "sync_end"),
        ("malloc_start", "malloc_end"),
        ("loader_start", "loader_end"),
    )
    for found in segments(spills, lambda key: key[0] in TIMED):
        for table_name, table in (("overlap", timed.overlap), ("collective", timed.collectives)):
            for name, (starts, ends) in table.items():
                _keep(
                    found.get((table_name, name, 0)),
                    found.get((table_name, name, 1)),
                    starts,
                    ends,
                    lo,
                    hi,
                )
        for first, second in pairs:
            _keep(
                found.get((HOST, first)),
                found.get((HOST, second)),
                host[first],
                host[second],
                lo,
                hi,
            )
        for at in found.get((HOST, "free"), ()):
            if lo <= at < hi:
                host["free"].append(at)
    local = step_context(timed)
    local.windows = whole.windows
    local.exposure = exposure
    # the blocking calls are few: the whole trace's, read once
    local.host.blocking, local.host.blocking_time = whole.host.blocking, whole.host.blocking_time
    local.reads_blocking = whole.reads_blocking
    return local


def _keep(
    starts: array[float] | None,
    ends: array[float] | None,
    out_starts: array[float],
    out_ends: array[float],
    lo: float,
    hi: float,
) -> None:
    """The intervals reaching into [lo, hi)."""
    if starts is None or ends is None:
        return
    for start, end in zip(starts, ends, strict=True):
        if start < hi and end > lo:
            out_starts.append(start)
            out_ends.append(end)


def _kernels_and_finishes(
    spills: list[Path], devices: list[int | str], lo: float, hi: float
) -> tuple[array[float], array[float], FlowTable]:
    """The device lanes' kernels starting in [lo, hi) (lane after lane, each in file order),
    and the best category's flows ending there (a flow matters only where it ends at a
    kernel's start)."""
    kept_starts: dict[object, array[float]] = {pid: array("d") for pid in devices}
    kept_ends: dict[object, array[float]] = {pid: array("d") for pid in devices}
    flows = FlowTable()
    for found in segments(spills, big_columns(set(devices))):
        for pid in devices:
            _keep_starting(
                found.get(("starts", pid)),
                found.get(("ends", pid)),
                kept_starts[pid],
                kept_ends[pid],
                lo,
                hi,
            )
        _keep_starting(
            found.get(("flows", BEST, 2)),
            found.get(("flows", BEST, 3)),
            flows.finish_ids,
            flows.finish_ts,
            lo,
            hi,
            by_second=True,
        )
    starts_all: array[float] = array("d")
    ends_all: array[float] = array("d")
    for pid in devices:
        starts_all.extend(kept_starts.pop(pid))
        ends_all.extend(kept_ends.pop(pid))
    return starts_all, ends_all, flows


def _keep_starting(
    firsts: array[Any] | None,
    seconds: array[Any] | None,
    out_firsts: array[Any],
    out_seconds: array[Any],
    lo: float,
    hi: float,
    by_second: bool = False,
) -> None:
    """The pairs whose time (the first column, or the second `by_second`) lies in [lo, hi)."""
    if firsts is None or seconds is None:
        return
    for first, second in zip(firsts, seconds, strict=True):
        if lo <= (second if by_second else first) < hi:
            out_firsts.append(first)
            out_seconds.append(second)


def _flow_starts(spills: list[Path], flows: FlowTable) -> None:
    """The starts of the flows `flows` has the finishes of."""
    wanted = set(flows.finish_ids)
    for found in segments(spills, lambda key: key[:2] == ("flows", BEST) and key[2] in (0, 1)):
        ids, times = found.get(("flows", BEST, 0)), found.get(("flows", BEST, 1))
        if ids is None or times is None:
            continue
        for key, at in zip(ids, times, strict=True):
            if key in wanted:
                flows.start_ids.append(key)
                flows.start_ts.append(at)
