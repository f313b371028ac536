"""The step model of a PyTorch trace too large to hold its operations at once, in groups.

Decoding left the operation and launch rows in spill files (kineto/spill.py). Up to GROUP_ROWS
operations they are read back and reduced at once (`read_back`); above, the trace engine's
grouped reduction (parsers/traces/ordered.py) with one pass of Kineto's own before it:

1. launches joined to operations by correlation id, a range of ids at a time (LAUNCH_ROWS
   launches in one table), each operation's launch time written to a file beside its segment;
2. the engine's start-time groups (cut from the segments' samples of their starts): each
   group sorted by (start, end), each operation's step assigned (carrying the last step of
   each stream from group to group), the per-step kernel tables and window bounds added up,
   and the group appended to the ordered file;
3. the engine's window groups over the device windows (in worker processes when the file is
   large), each measured from the operations that overlap it; a window holding more operations
   than a group (a long step, a trace without ProfilerStep markers) a piece at a time, its sums
   resumed (kineto/window.py).

Exact as the whole-trace reduction: rows are read in file order and sorted stably, and every
window measure looks only at the operations that overlap the window.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable
from itertools import accumulate, compress, pairwise, repeat
from operator import and_, gt, le
from pathlib import Path
from typing import Any

from advisor.inputs.taxonomy import Taxonomy
from advisor.inputs.thresholds import reader_thresholds
from advisor.model import InputError
from advisor.parsers.kineto.collectives import collective_kinds, name_collectives
from advisor.parsers.kineto.columns import (
    NAN,
    DeviceOps,
    LaunchIndex,
    Signatures,
)
from advisor.parsers.kineto.decoded import KinetoEvents
from advisor.parsers.kineto.device_steps import (
    STEPLESS_NUMBER,
    DeviceWindow,
    kept_steps,
    launch_times_in_place,
    stepless,
)
from advisor.parsers.kineto.kernel_tables import finish_rank
from advisor.parsers.kineto.spill import (
    Segment,
    SpilledRows,
    read_correlation,
    read_launches,
    read_ops,
    remove,
    segments,
)
from advisor.parsers.kineto.start_groups import GroupSorter
from advisor.parsers.kineto.window import (
    Measured,
    Whole,
    WindowSums,
    host_calls,
    lanes_of,
    measure_windows,
)
from advisor.parsers.profile_data import RankProfile
from advisor.parsers.traces import workers
from advisor.parsers.traces.columns import Permutation, in_order, nearly_sorted_order
from advisor.parsers.traces.ordered import (
    OrderedWriter,
    Rows,
    measure_in_groups,
    start_cuts,
    time_ranges,
    window_groups,
)

# operations held at a time (~150 bytes each while a group is measured)
# launches in one lookup table (at most 32 bytes each: LaunchIndex)
LAUNCH_ROWS = 2_000_000
INF = float("inf")


def read_back(events: KinetoEvents) -> None:
    """Every spilled row back into `events`, in file order, the operations then sorted."""
    ops = events.ops
    for rows, segment, handle in segments(events.spilled):
        part = read_ops(rows, segment, handle)
        ops.start.extend(part.start)
        ops.end.extend(part.end)
        ops.signature.extend(part.signature)
        ops.correlation.extend(part.correlation)
        del part
        keys, times = read_launches(segment, handle)
        events.launch_keys.extend(keys)
        events.launch_ts.extend(times)
    remove(events.spilled)
    events.spilled = []
    name_collectives(ops, events.launch_collectives)
    ops.sort()


class _Rows:
    """The spilled operations with their launch times (pass 1's file), read a range at a
    time."""

    def __init__(
        self,
        parts: list[SpilledRows],
        launches: Path,
        signatures: Signatures,
        named: dict[int, int],
    ) -> None:
        self.parts = parts
        self.signatures = signatures
        self.named = named
        self.launches = launches
        offsets, at = [], 0
        for rows in parts:
            for segment in rows.segments:
                offsets.append(at)
                at += segment.ops * 8
        self.offsets = offsets

    def read(self, lo: float, hi: float) -> tuple[DeviceOps, array[float]]:
        """The operations starting in [lo, hi), in file order, then sorted by (start, end)
        stably; with their launch times."""
        out = DeviceOps()
        launch_at: array[float] = array("d")
        with self.launches.open("rb") as joined:
            for k, (rows, segment, handle) in enumerate(segments(self.parts)):
                if not segment.ops or segment.first_start >= hi or segment.last_start < lo:
                    continue
                part = read_ops(rows, segment, handle)
                name_collectives(part, self.named, self.signatures)
                times: array[float] = array("d")
                joined.seek(self.offsets[k])
                times.fromfile(joined, segment.ops)
                if lo <= segment.first_start and segment.last_start < hi:
                    keep: slice | bytes = slice(None)
                else:
                    keep = _starting_in(part.start, lo, hi)
                _extend_picked(out.start, part.start, keep)
                _extend_picked(out.end, part.end, keep)
                _extend_picked(out.signature, part.signature, keep)
                _extend_picked(launch_at, times, keep)
        order = nearly_sorted_order(out.start, out.end)
        ops = DeviceOps()
        ops.signatures = self.signatures
        if order is None:
            ops.start, ops.end, ops.signature = out.start, out.end, out.signature
            return ops, launch_at
        by_start = Permutation(order)
        ops.start, ops.end = by_start.apply(out.start), by_start.apply(out.end)
        ops.signature = by_start.apply(out.signature)
        return ops, by_start.apply(launch_at)


def _extend_picked(column: array[Any], values: array[Any], keep: slice | bytes) -> None:
    column.extend(values[keep] if isinstance(keep, slice) else compress(values, keep))


def _starting_in(starts: array[float], lo: float, hi: float) -> slice | bytes:
    """The rows starting in [lo, hi): a slice where the starts are in order (as a profiler
    mostly writes them), else a mask for `compress`; both picked at C speed."""
    if in_order(starts):
        return slice(bisect_left(starts, lo), bisect_left(starts, hi))
    return bytes(map(and_, map(le, repeat(lo), starts), map(gt, repeat(hi), starts)))


def _join(parts: list[SpilledRows], out: Path) -> bool:
    """Pass 1: each operation's launch time (NaN: none), each segment's at its place in
    `out`; whether any operation has one. A large trace's segments are joined by worker
    processes, a run of consecutive segments each (mostly a range of ids of its own)."""
    spilled = [s for rows in parts for s in rows.segments]
    total = sum(s.launches for s in spilled)
    with_launches = [s for s in spilled if s.launches]
    low = min((s.low_key for s in with_launches), default=0)
    high = max((s.high_key for s in with_launches), default=0)
    # ids are spread about evenly: a range holding about LAUNCH_ROWS launches per table
    width = high - low + 1
    if total > LAUNCH_ROWS:
        width = max(1, (high - low + 1) * LAUNCH_ROWS // total)
    sizes = [s.ops for s in spilled]
    offsets = list(accumulate(sizes, initial=0))
    with out.open("wb") as handle:
        handle.truncate(offsets[-1] * 8)

    def join_run(run: tuple[int, int]) -> bool:
        first_k, stop_k = run
        tables = _Tables(parts, low, width)
        linked = False
        with out.open("r+b") as handle:
            for k, (_, segment, source) in enumerate(segments(parts)):
                if not first_k <= k < stop_k or not segment.ops:
                    continue
                launch_at = _segment_launches(segment, source, tables, low, high, width)
                linked = linked or any(t == t for t in launch_at)
                handle.seek(offsets[k] * 8)
                handle.write(launch_at)
        return linked

    runs = _runs(sizes, sum(_size(rows.path) for rows in parts))
    found = workers.in_forked_workers("joining launches", join_run, runs) if len(runs) > 1 else None
    return any(found) if found is not None else join_run((0, len(sizes)))


def _segment_launches(
    segment: Segment, source: Any, tables: _Tables, low: int, high: int, width: int
) -> Any:
    """One segment's operations' launch times, from the tables of the ids they hold."""
    keys = read_correlation(segment, source)
    first = max(0, (max(segment.low_key, low) - low) // width)
    last = (min(segment.high_key, high) - low) // width
    if first == last:  # every key in one table's range: looked up in place
        return launch_times_in_place(keys, tables.get(first))
    launch_at = array("d", [NAN]) * segment.ops
    if in_order(keys):  # as a profiler mostly writes them: each table's ids are one slice
        for bucket in range(first, last + 1):
            floor = low + bucket * width
            lo, hi = bisect_left(keys, floor), bisect_left(keys, floor + width)
            if lo < hi:
                times = launch_times_in_place(keys[lo:hi], tables.get(bucket))
                launch_at[lo:hi] = array("d", times.tobytes())
        return launch_at
    for bucket in range(first, last + 1):
        table, floor = tables.get(bucket), low + bucket * width
        for i, key in enumerate(keys):
            if floor <= key < floor + width:
                found = table.get(key)
                if found is not None:
                    launch_at[i] = found
    return launch_at


def _runs(sizes: list[int], spilled_bytes: int) -> list[tuple[int, int]]:
    """Runs of consecutive segments of about equal operation counts, one per worker process
    ([one run]: joined here)."""
    count = min(len(sizes), workers.worker_count(spilled_bytes))
    if count < 2:
        return [(0, len(sizes))]
    total = sum(sizes)
    bounds, held = [0], 0
    for k, size in enumerate(sizes):
        held += size
        if held >= total * len(bounds) / count and len(bounds) < count and k + 1 < len(sizes):
            bounds.append(k + 1)
    return list(pairwise([*bounds, len(sizes)]))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


class _Tables:
    """Launch tables by id range, the last two kept (operations come mostly in id order)."""

    def __init__(self, parts: list[SpilledRows], low: int, width: int) -> None:
        self.parts, self.low, self.width = parts, low, width
        self.kept: dict[int, LaunchIndex] = {}

    def get(self, bucket: int) -> LaunchIndex:
        table = self.kept.get(bucket)
        if table is None:
            if len(self.kept) >= 2:
                del self.kept[next(iter(self.kept))]
            table = self.kept[bucket] = self._load(bucket)
        return table

    def _load(self, bucket: int) -> LaunchIndex:
        floor = self.low + bucket * self.width
        ceiling = floor + self.width
        keys: array[int] = array("q")
        times: array[float] = array("d")
        for _, segment, handle in segments(self.parts):
            if not segment.launches or segment.high_key < floor or segment.low_key >= ceiling:
                continue
            theirs, at = read_launches(segment, handle)
            if floor <= segment.low_key and segment.high_key < ceiling:
                keys.extend(theirs)
                times.extend(at)
                continue
            if in_order(theirs):  # the launches of this table's ids: one slice
                lo, hi = bisect_left(theirs, floor), bisect_left(theirs, ceiling)
                keys.extend(theirs[lo:hi])
                times.extend(at[lo:hi])
                continue
            for key, t in zip(theirs, at, strict=True):
                if floor <= key < ceiling:
                    keys.append(key)
                    times.append(t)
        return LaunchIndex(keys, times)


def _cuts(parts: list[SpilledRows]) -> list[float]:
    """Start times cutting the operations into groups of about GROUP_ROWS, from the
    segments' samples."""
    return start_cuts(t for rows in parts for s in rows.segments for t in s.sample)


def reduce_in_groups(
    rank: RankProfile, path: Path, events: KinetoEvents, taxonomy: Taxonomy, scratch: Path
) -> None:
    parts = events.spilled
    launches = scratch / "launch-times"
    linked = _join(parts, launches)
    sigs, strings = events.ops.signatures, events.strings.values
    source = _Rows(parts, launches, sigs, events.launch_collectives)
    kind_of = collective_kinds(sigs, strings, taxonomy)
    # the names collectives take from their host ranges as their rows are read (pass 2)
    kind_of.update({c: taxonomy.comm_kind(strings[c]) for c in events.launch_collectives.values()})
    numbers = [w.number for w in events.steps] or [STEPLESS_NUMBER]
    ordered = OrderedWriter(scratch / "sorted")
    sorter = GroupSorter(source.read, sigs, strings, numbers, kind_of, reader_thresholds())
    spilled = sum(_size(rows.path) for rows in parts)
    cuts = _cuts(parts)
    done = sorter.sort_all(list(time_ranges(cuts)), events.steps, ordered, scratch, spilled)
    per_step, has_comm = done.per_step, done.has_comm
    ordered.close()
    remove(parts)
    launches.unlink()
    if done.first == INF:
        raise InputError(str(path), "no device kernels: a CPU-only trace has no step-time model")
    if events.steps:
        kept = kept_steps(rank, events.steps, done.bounds.launched())
        windows = done.bounds.device_windows(events.steps, kept)
    else:
        windows = stepless(rank, path, done.first, done.last_end, done.latest)
    whole = Whole(linked, has_comm)
    host = host_calls(events)

    def measure(group: list[DeviceWindow], rows: Rows) -> Measured:
        ops = _ops(rows, sigs)
        lanes = lanes_of(ops, kind_of)
        out = Measured([], [], [])
        measure_windows(group, ops, rows.launch_at, lanes, host, per_step, whole, out)
        return out

    def resumable(window: DeviceWindow) -> Callable[[Iterable[Rows]], Measured]:
        def measure_pieces(pieces: Iterable[Rows]) -> Measured:
            sums = WindowSums(window, host.blocking_time)
            for rows in pieces:
                ops = _ops(rows, sigs)
                sums.add(ops, rows.launch_at, lanes_of(ops, kind_of), whole)
            out = Measured([], [], [])
            sums.finish(host, per_step, whole, out)
            return out

        return measure_pieces

    measured = Measured([], [], [])
    for part in measure_in_groups(window_groups(windows, cuts), ordered, measure, resumable):
        measured.rows.extend(part.rows)  # pass 3
        measured.steps.extend(part.steps)
        measured.comm.extend(part.comm)
    ordered.path.unlink()
    finish_rank(rank, path, events.events, measured, per_step, done.kernel_rows, has_comm, whole)


def _ops(rows: Rows, signatures: Signatures) -> DeviceOps:
    """Rows of the ordered file as device operations (their tag is the signature)."""
    ops = DeviceOps()
    ops.signatures = signatures
    ops.start, ops.end, ops.signature = rows.start, rows.end, rows.tag
    return ops
