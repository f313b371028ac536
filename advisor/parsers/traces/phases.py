"""The phases of each step: its device time split by the phase of the step that launched the
work (forward, backward, optimizer update), the communication no compute hides, and the idle
time the host spent waiting for data; with the Python garbage collections inside the step.

A device operation belongs to the phase of the outermost phase range (rules/taxonomy.yaml
host.phases) the framework operator that enqueued it sits in (the host runs ahead of the
device); not its runtime launch, which with torch_npu's task queue on (the default) runs on a
thread of its own after the operator returned, often after its range closed. An operation not
linked to its operator is placed by its runtime launch. Ranges on different threads are read
as one timeline; a range inside another is the outer one's (activation recomputation inside a
backward node is backward time).

Every microsecond of a step counts once: a moment two phases' kernels run together counts for
the later phase of the loop (optimizer, then backward, then forward, then work launched outside
any phase range); communication counts only where no compute or memory operation runs; data
wait only where the device runs nothing. The phases therefore sum to at most the step's device
busy time, and data wait to at most its idle time.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field

from advisor.parsers.traces.intervals import Intervals, clipped_sum, merged_intervals

# the phases a range can name, in the loop's order (taxonomy host.phases keys)
PHASES = ("forward", "backward", "optimizer")
# device work launched outside any phase range (or whose launch the trace does not link)
OTHER = "other"
COMM_EXPOSED = "comm_exposed"
# a moment two phases run together counts for the first of these
_PRIORITY = ("optimizer", "backward", "forward", OTHER)
_OTHER_INDEX = len(PHASES)
# a host range that is a garbage collection (phase indices are >= 0; -1: neither)
GC = -2
NEITHER = -1
# FSDP2's ranges (taxonomy host.fsdp): kinds below GC, and their index in HostRanges.fsdp_kinds
FSDP_KINDS = ("all_gather", "forward", "backward")
_FSDP_BASE = GC - 1  # FSDP_KINDS[i] is kind _FSDP_BASE - i
# why a trace without phase ranges has no phases, and the profiler options that record them
NO_PHASE_RANGES = (
    "the trace has no forward, backward or optimizer ranges (Optimizer.step#..., "
    "autograd::engine::evaluate_function, nn.Module: or ## forward ##-style record_function "
    "ranges): profile with ProfilerActivity.CPU and with_modules=True, and label the loop's "
    "parts with torch.profiler.record_function"
)
# a trace of more device operations than budget.GROUP_ROWS is reduced in groups: no phases yet
GROUPED = (
    "the trace was read in groups (more than 1,000,000 device operations): phases are measured "
    "only on smaller traces; profile fewer steps"
)
# names whose kind a decoder remembers (Python ranges carry object addresses: unbounded names)
HOST_KINDS_MAX = 1 << 16
NAN = float("nan")


@dataclass
class HostRanges:
    """What the decoder keeps for the phases: the phase ranges and the garbage collections."""

    starts: array[float] = field(default_factory=lambda: array("d"))
    ends: array[float] = field(default_factory=lambda: array("d"))
    phases: array[int] = field(default_factory=lambda: array("b"))  # index into PHASES
    gc_starts: array[float] = field(default_factory=lambda: array("d"))
    gc_ends: array[float] = field(default_factory=lambda: array("d"))
    # FSDP2's all-gather ranges and the hooks around them (index into FSDP_KINDS)
    fsdp_starts: array[float] = field(default_factory=lambda: array("d"))
    fsdp_ends: array[float] = field(default_factory=lambda: array("d"))
    fsdp_kinds: array[int] = field(default_factory=lambda: array("b"))

    def add_phase(self, phase: int, start: float, end: float) -> None:
        self.starts.append(start)
        self.ends.append(end)
        self.phases.append(phase)

    def add_gc(self, start: float, end: float) -> None:
        self.gc_starts.append(start)
        self.gc_ends.append(end)

    def add_fsdp(self, kind: int, start: float, end: float) -> None:
        self.fsdp_starts.append(start)
        self.fsdp_ends.append(end)
        self.fsdp_kinds.append(kind)

    def extend(self, other: HostRanges) -> None:
        self.starts.extend(other.starts)
        self.ends.extend(other.ends)
        self.phases.extend(other.phases)
        self.gc_starts.extend(other.gc_starts)
        self.gc_ends.extend(other.gc_ends)
        self.fsdp_starts.extend(other.fsdp_starts)
        self.fsdp_ends.extend(other.fsdp_ends)
        self.fsdp_kinds.extend(other.fsdp_kinds)


class RangeReader:
    """Sorts a decoder's host ranges into the phases, the collections and FSDP2's all-gather
    ranges, remembering each name's kind (names repeat every step)."""

    def __init__(
        self,
        phases: dict[str, re.Pattern[str]],
        gc: re.Pattern[str],
        fsdp: dict[str, re.Pattern[str]] | None = None,
    ) -> None:
        self.patterns = phase_patterns(phases)
        self.gc = gc
        self.fsdp = tuple(
            (_FSDP_BASE - i, (fsdp or {})[name])
            for i, name in enumerate(FSDP_KINDS)
            if name in (fsdp or {})
        )
        self.kinds: dict[str, int] = {}

    def kind(self, name: str) -> int:
        """The name's phase index, GC, an FSDP range's kind, or -1 (neither)."""
        kind = self.kinds.get(name)
        if kind is None:
            kind = phase_of(name, self.patterns)
            if kind < 0 and self.gc.fullmatch(name):
                kind = GC
            if kind == NEITHER:
                kind = phase_of(name, self.fsdp)
            if len(self.kinds) < HOST_KINDS_MAX:
                self.kinds[name] = kind
        return kind

    def add(self, out: HostRanges, name: str, start: float, end: float) -> None:
        kind = self.kind(name)
        if kind >= 0:
            out.add_phase(kind, start, end)
        elif kind == GC:
            out.add_gc(start, end)
        elif kind <= _FSDP_BASE:
            out.add_fsdp(_FSDP_BASE - kind, start, end)


@dataclass(frozen=True)
class StepPhases:
    """One step's phases (microseconds)."""

    number: int
    duration_us: float
    busy_us: float  # the device runs something
    # forward / backward / optimizer / other / comm_exposed: disjoint parts of busy_us
    phase_us: dict[str, float]
    data_wait_us: float  # the device idles while the host is in the data loader
    gc_us: float  # host time in garbage collection inside the step
    gc_max_us: float  # the longest collection overlapping the step


@dataclass(frozen=True)
class Placement:
    """How many device operations (collectives aside) were placed by the framework operator
    that enqueued them, how many by their runtime launch (the others: outside the phases)."""

    by_operator: int = 0
    by_launch: int = 0


@dataclass(frozen=True)
class PhaseTable:
    """The steps' phases, or why the trace cannot give them."""

    steps: list[StepPhases]
    # why the phases are not known ("" when they are)
    absent: str = ""
    # the trace records garbage collections (when not, gc_us is 0 and means nothing)
    gc_recorded: bool = False
    # the phases the trace has ranges of (a phase without one has no time, not zero time)
    recorded: tuple[str, ...] = ()
    placement: Placement = field(default_factory=Placement)


def phase_patterns(by_phase: dict[str, re.Pattern[str]]) -> tuple[tuple[int, re.Pattern[str]], ...]:
    """The taxonomy's phase patterns by their index in PHASES."""
    return tuple((i, by_phase[name]) for i, name in enumerate(PHASES) if name in by_phase)


def phase_of(name: str, patterns: Sequence[tuple[int, re.Pattern[str]]]) -> int:
    """The index of the phase whose pattern fully matches `name` (-1: none)."""
    for index, pattern in patterns:
        if pattern.fullmatch(name):
            return index
    return -1


def outermost_segments(ranges: HostRanges) -> tuple[array[float], array[float], array[int]]:
    """The host timeline cut into disjoint segments, each the phase of the outermost range
    covering it (a range partly past an earlier one's end continues where that one ends)."""
    order = sorted(range(len(ranges.starts)), key=lambda i: (ranges.starts[i], -ranges.ends[i]))
    seg_starts: array[float] = array("d")
    seg_ends: array[float] = array("d")
    seg_phases: array[int] = array("b")
    reached = float("-inf")
    for i in order:
        start, end = ranges.starts[i], ranges.ends[i]
        if end <= reached:
            continue
        seg_starts.append(max(start, reached))
        seg_ends.append(end)
        seg_phases.append(ranges.phases[i])
        reached = end
    return seg_starts, seg_ends, seg_phases


def subtract(a: Intervals, b: Intervals) -> Intervals:
    """The parts of merged intervals `a` that merged intervals `b` do not cover."""
    out = Intervals()
    j, m = 0, len(b.starts)
    for start, end in zip(a.starts, a.ends, strict=True):
        while j < m and b.ends[j] <= start:
            j += 1
        k, lo = j, start
        while k < m and b.starts[k] < end:
            if b.starts[k] > lo:
                out.starts.append(lo)
                out.ends.append(b.starts[k])
            lo = max(lo, b.ends[k])
            if lo >= end:
                break
            k += 1
        if lo < end:
            out.starts.append(lo)
            out.ends.append(end)
    return out


def _union(a: Intervals, b: Intervals) -> Intervals:
    """The union of two merged interval lists, merged (one pass over both, in start order)."""
    out = Intervals()
    starts, ends = out.starts, out.ends
    i = j = 0
    n, m = len(a.starts), len(b.starts)
    while i < n or j < m:
        if j >= m or (i < n and a.starts[i] <= b.starts[j]):
            lo, hi = a.starts[i], a.ends[i]
            i += 1
        else:
            lo, hi = b.starts[j], b.ends[j]
            j += 1
        if ends and lo <= ends[-1]:
            if hi > ends[-1]:
                ends[-1] = hi
        else:
            starts.append(lo)
            ends.append(hi)
    return out


@dataclass
class DeviceOps:
    """The device operations the phases read, sorted by start: times, launch times (NaN: not
    linked), the start of the framework operator that enqueued each (NaN or None: not
    linked; where known it places the operation, not the launch) and whether each is a
    collective. `computing` and `exposed`, when the trace has its own lanes for them
    (torch_npu's Overlap Analysis: Computing, Communication(Not Overlapped)), are the compute
    time and the exposed communication; otherwise they are the union of the other operations
    and the collectives' time outside it."""

    starts: Sequence[float]
    ends: Sequence[float]
    launch_at: Sequence[float] | None
    is_comm: Sequence[bool]
    computing: Intervals | None = None
    exposed: Intervals | None = None
    enqueued_at: Sequence[float] | None = None


def _by_phase(
    ops: DeviceOps, ranges: HostRanges
) -> tuple[dict[str, Intervals], Intervals, Placement]:
    """Each phase's merged device intervals (compute and memory operations), the
    collectives' merged intervals, and how the operations were placed."""
    seg_starts, seg_ends, seg_phases = outermost_segments(ranges)
    lists: list[tuple[array[float], array[float]]] = [(array("d"), array("d")) for _ in PHASES]
    other: tuple[array[float], array[float]] = (array("d"), array("d"))
    comm: tuple[array[float], array[float]] = (array("d"), array("d"))
    launch_at, enqueued_at = ops.launch_at, ops.enqueued_at
    by_operator = by_launch = 0
    for i, (start, end) in enumerate(zip(ops.starts, ops.ends, strict=True)):
        if ops.is_comm[i]:
            comm[0].append(start)
            comm[1].append(end)
            continue
        at = enqueued_at[i] if enqueued_at is not None else NAN
        if at == at:
            by_operator += 1
        elif launch_at is not None and launch_at[i] == launch_at[i]:
            at = launch_at[i]
            by_launch += 1
        target = other
        if at == at:
            j = bisect_right(seg_starts, at) - 1
            if j >= 0 and at < seg_ends[j]:
                target = lists[seg_phases[j]]
        target[0].append(start)
        target[1].append(end)
    merged = {name: merged_intervals(*lists[k]) for k, name in enumerate(PHASES)}
    merged[OTHER] = merged_intervals(*other)
    return merged, merged_intervals(*comm), Placement(by_operator, by_launch)


def _merged(starts: Sequence[float], ends: Sequence[float]) -> Intervals:
    pairs = sorted(zip(starts, ends, strict=True))
    return merged_intervals((p[0] for p in pairs), (p[1] for p in pairs))


def _disjoint(
    ops: DeviceOps, ranges: HostRanges
) -> tuple[dict[str, Intervals], Intervals, Placement]:
    """Each phase's time, disjoint from the others' (the later phase of the loop wins), the
    exposed communication among them; the device's busy time; how operations were placed."""
    merged, comm, placement = _by_phase(ops, ranges)
    computing = ops.computing
    if computing is None:
        computing = Intervals()
        for name in PHASES:
            computing = _union(computing, merged[name])
        computing = _union(computing, merged[OTHER])
    exposed = ops.exposed if ops.exposed is not None else subtract(comm, computing)
    disjoint: dict[str, Intervals] = {}
    covered = Intervals()
    for name in _PRIORITY[:-1]:
        # only the compute time counts: a wait task the lane leaves out is not the phase's
        mine = subtract(merged[name], subtract(merged[name], computing))
        disjoint[name] = subtract(mine, covered)
        covered = _union(covered, mine)
    # the compute time no phase range launched
    disjoint[OTHER] = subtract(computing, covered)
    disjoint[COMM_EXPOSED] = subtract(exposed, computing)
    return disjoint, _union(computing, exposed), placement


def step_phases(
    windows: Sequence[tuple[int, float, float]],
    ops: DeviceOps,
    ranges: HostRanges,
    loader: tuple[Sequence[float], Sequence[float]],
) -> list[StepPhases]:
    """Each window's phases from the operations and host ranges of the whole trace."""
    return _step_phases(windows, ops, ranges, loader)[0]


def _step_phases(
    windows: Sequence[tuple[int, float, float]],
    ops: DeviceOps,
    ranges: HostRanges,
    loader: tuple[Sequence[float], Sequence[float]],
) -> tuple[list[StepPhases], Placement]:
    disjoint, busy, placement = _disjoint(ops, ranges)
    waiting = subtract(_merged(*loader), busy)
    gc_pairs = sorted(zip(ranges.gc_starts, ranges.gc_ends, strict=True))
    gc = _merged(ranges.gc_starts, ranges.gc_ends)
    out = []
    for number, lo, hi in windows:
        longest = max(
            (min(b, hi) - max(a, lo) for a, b in gc_pairs if a < hi and b > lo), default=0.0
        )
        out.append(
            StepPhases(
                number=number,
                duration_us=hi - lo,
                busy_us=clipped_sum(busy, lo, hi),
                phase_us={name: clipped_sum(iv, lo, hi) for name, iv in disjoint.items()},
                data_wait_us=clipped_sum(waiting, lo, hi),
                gc_us=clipped_sum(gc, lo, hi),
                gc_max_us=longest,
            )
        )
    return out, placement


def grouped_table(ranges: HostRanges) -> PhaseTable:
    """What a trace reduced in groups says of its phases: not measured, unless it has no
    phase range or collection, when it says why as a whole trace would."""
    if len(ranges.starts) or len(ranges.gc_starts):
        return PhaseTable([], absent=GROUPED)
    return PhaseTable([], absent=NO_PHASE_RANGES)


def phase_table(
    windows: Sequence[tuple[int, float, float]],
    ops: DeviceOps,
    ranges: HostRanges,
    loader: tuple[Sequence[float], Sequence[float]],
    no_ranges: str,
) -> PhaseTable:
    """The steps' phases; absent with `no_ranges` when the trace has no phase range."""
    gc_recorded = len(ranges.gc_starts) > 0
    if not len(ranges.starts):
        steps = step_phases(windows, ops, ranges, loader) if gc_recorded else []
        return PhaseTable(steps, absent=no_ranges, gc_recorded=gc_recorded)
    recorded = tuple(PHASES[k] for k in sorted(set(ranges.phases)))
    steps, placement = _step_phases(windows, ops, ranges, loader)
    return PhaseTable(steps, gc_recorded=gc_recorded, recorded=recorded, placement=placement)
