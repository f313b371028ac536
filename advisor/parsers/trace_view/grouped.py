"""The step reduction of a trace too large to hold its kernels at once, in groups of windows.

The worker processes leave each byte range's rows in a spill file (`trace_parallel`). When the
device kernels number more than GROUP_ROWS, the parent does not read them all back: it keeps the
small data (steps, host calls, overlap lanes), then for one group of consecutive step windows at
a time reads, from the spill files, only the kernels that start in the group's time range, the
launch-flow finishes at those times and the starts of those flows, and measures the group's
windows with the same functions as the whole-trace reduction. Memory is then bounded by the
group, not the trace; each group costs one more pass over the spill files.

Exact as the whole-trace reduction: the kernels keep their device-lane and file order before the
stable sort; a flow's launch is the last start of its id in file order and, of flows ending at
one time, the last one counts — both rules only look at the flows that end at the group's
kernels' starts. Used only when the best flow category is known to pair (the trace's first
HostToDevice pair was seen), so the category every window uses is that one.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from advisor.parsers.trace_view.schema import DEVICE_LANE, FLOW_PREFERENCE
from advisor.parsers.traces import budget, spill
from advisor.parsers.traces.intervals import Intervals
from advisor.parsers.traces.plain import PlainTrace
from advisor.parsers.traces.steps import (
    FlowTable,
    RawTrace,
    StepContext,
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
TIMED = (
    "overlap",
    "collective",
    "sync",
    "sync_end",
    "malloc",
    "malloc_end",
    "free",
    "loader_start",
    "loader_end",
)


def big_columns(devices: set[object]) -> Callable[[Key], bool]:
    """The columns left in the spill files: the device lane's kernel rows, the best flow
    category's ends, and the host calls, overlap lanes and collectives."""

    def big(key: Key) -> bool:
        if key[0] in ("starts", "ends"):
            return key[1] in devices
        if key[0] == "flows":
            return key[1] == BEST
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
    numbers = sorted(ctx.windows, key=lambda n: (ctx.windows[n].start, n))
    steps: dict[int, TraceStep] = {}
    for group in _plan(ctx, numbers, spills, raw, rows):
        local = _context(ctx, group, spills, lanes, kinds, exposure)
        steps.update(_measure(local, group, spills, raw, rows > 0))
    ordered = [steps[number] for number in sorted(steps)]
    ctx.overlap = {lane: ctx.overlap.get(lane, Intervals()) for lane in lanes}
    return trace_data(path, raw, ctx, ordered, BEST, rows > 0)


def _context(
    whole: StepContext,
    group: list[int],
    spills: list[Path],
    lanes: list[str],
    kinds: list[str],
    exposure: bool,
) -> StepContext:
    """The step context of a group's time range: every interval that reaches into it and
    every call in it (measures within a window depend on nothing else); every lane and kind
    of the trace present, empty or not."""
    lo = min(whole.windows[n].start for n in group)
    hi = max(whole.windows[n].end for n in group)
    timed = PlainTrace(steps=list(whole.windows.values()))
    for name in lanes:
        timed.overlap[name] = [array("d"), array("d")]
    for kind in kinds:
        timed.collectives[kind] = [array("d"), array("d")]
    pairs = (("sync", "sync_end"), ("malloc", "malloc_end"), ("loader_start", "loader_end"))
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
                found.get((first,)),
                found.get((second,)),
                getattr(timed, first),
                getattr(timed, second),
                lo,
                hi,
            )
        for at in found.get(("free",), ()):
            if lo <= at < hi:
                timed.free.append(at)
    local = step_context(timed)
    local.windows = whole.windows
    local.exposure = exposure
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


def _plan(
    ctx: StepContext, numbers: list[int], spills: list[Path], raw: RawTrace, rows: int
) -> list[list[int]]:
    """Consecutive windows (in time order) whose kernels number about GROUP_ROWS together,
    from a count of the kernel starts per window."""
    if rows <= budget.GROUP_ROWS:
        return [numbers]
    los = [ctx.windows[n].start for n in numbers]
    counts = [0] * len(numbers)
    devices = set(device_pids(raw, DEVICE_LANE))
    for found in segments(spills, lambda key: key[0] == "starts" and key[1] in devices):
        for starts in found.values():
            for start in starts:
                i = bisect_right(los, start) - 1
                if i >= 0:
                    counts[i] += 1
    groups: list[list[int]] = [[]]
    held = 0
    for number, count in zip(numbers, counts, strict=True):
        if groups[-1] and held + count > budget.GROUP_ROWS:
            groups.append([])
            held = 0
        groups[-1].append(number)
        held += count
    return groups


def _measure(
    ctx: StepContext, group: list[int], spills: list[Path], raw: RawTrace, any_rows: bool
) -> dict[int, TraceStep]:
    lo = min(ctx.windows[n].start for n in group)
    hi = max(ctx.windows[n].end for n in group)
    devices = device_pids(raw, DEVICE_LANE)
    starts_all, ends_all, flows = _kernels_and_finishes(spills, devices, lo, hi)
    _flow_starts(spills, flows)
    kernel_starts, kernel_ends = sorted_by_start(starts_all, ends_all)
    launch_at, _ = flows.launch_times(kernel_starts)
    linked = launch_at if any_rows else None  # as the whole trace's: kernels anywhere
    return {n: window_step(ctx, n, kernel_starts, kernel_ends, linked) for n in group}


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
