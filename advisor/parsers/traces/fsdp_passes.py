"""The exposed time of FSDP2's parameter all-gathers, split by the pass that issued them.

FSDP2 wraps every parameter all-gather it issues in an "FSDP::all_gather (<fqn>)" range inside
the hook that asked for it (rules/taxonomy.yaml host.fsdp): a forward hook (the layer's own
pre-forward unshard, or a forward prefetch) or a backward one (pre-backward, backward prefetch).
Forward prefetch can hide only the forward pass's all-gathers, backward prefetch only the
backward pass's, so a prefetch step is bounded by its own pass's exposed all-gathers.

A device collective is not linked to its host range, but FSDP2 runs its all-gathers on one
stream in the order it issues them: the n-th all-gather range on the host is the n-th
all-gather on the device. That pairing is made only when the two counts agree over the whole
trace; another all-gather (not FSDP's), or a trace that cut one off, leaves the split unknown
rather than guessed. Every microsecond counts once: time both passes' all-gathers overlap (they
share a stream, so none normally) is the forward pass's. A pass's first all-gather in a step is
left out of what its prefetch can hide: no earlier hook of the pass issues it ahead.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field

from advisor.parsers.traces.intervals import Intervals, clipped_sum, merged_intervals
from advisor.parsers.traces.phases import FSDP_KINDS, HostRanges, subtract

PASSES = ("forward", "backward")
_ALL_GATHER = FSDP_KINDS.index("all_gather")

NO_FSDP_RANGES = (
    "the trace has no FSDP::all_gather ranges (FSDP2 records them around each parameter "
    "all-gather, with CPU activity profiled): the all-gathers' pass is not known"
)
GROUPED = (
    "the trace was read in groups (more than 1,000,000 device operations): the all-gathers' "
    "pass is measured only on smaller traces; profile fewer steps"
)
NO_COMPUTING = "the trace has no Computing lane to tell exposed from hidden all-gathers"


@dataclass(frozen=True)
class AllGatherPasses:
    """Per step window, each pass's exposed all-gather time (us); or why it is unknown. With
    the launches linked, each pass's device lag too: how long the device still ran the pass's
    work after the host launched the pass's last kernel (a window without a backward hook has
    none)."""

    by_step: dict[int, dict[str, float]]
    absent: str = ""
    lag_by_step: dict[int, dict[str, float]] = field(default_factory=dict)
    # per window, each pass's all-gather stream idle time between its first and last
    # all-gather: the room prefetch has to start them earlier
    idle_by_step: dict[int, dict[str, float]] = field(default_factory=dict)


def _hook_intervals(ranges: HostRanges) -> dict[str, Intervals]:
    """Each pass's hook ranges, merged."""
    out = {}
    for name in PASSES:
        kind = FSDP_KINDS.index(name)
        picked = [
            (ranges.fsdp_starts[i], ranges.fsdp_ends[i])
            for i, k in enumerate(ranges.fsdp_kinds)
            if k == kind
        ]
        picked.sort()
        out[name] = merged_intervals((p[0] for p in picked), (p[1] for p in picked))
    return out


def _inside(at: float, intervals: Intervals) -> bool:
    i = bisect_right(intervals.starts, at) - 1
    return i >= 0 and at <= intervals.ends[i]


def issue_passes(ranges: HostRanges) -> list[str] | str:
    """The pass of each all-gather range in time order, or why they cannot all be placed."""
    issues = sorted(
        ranges.fsdp_starts[i] for i, k in enumerate(ranges.fsdp_kinds) if k == _ALL_GATHER
    )
    if not issues:
        return NO_FSDP_RANGES
    hooks = _hook_intervals(ranges)
    passes = []
    for at in issues:
        found = [name for name in PASSES if _inside(at, hooks[name])]
        if len(found) != 1:
            where = "none of FSDP's hooks" if not found else "hooks of both passes"
            return (
                f"an FSDP::all_gather range at {at:.3f} us sits in {where} (FSDP::pre_forward, "
                "forward_prefetch, pre_backward, backward_prefetch): its pass is not known"
            )
        passes.append(found[0])
    return passes


def _device_allgathers(starts: Sequence[float], ends: Sequence[float]) -> list[tuple[float, float]]:
    """The all-gathers on the device in start order, each once (a trace may show one on the
    device lane and again on the HCCL lane)."""
    return sorted(set(zip(starts, ends, strict=True)))


def _first_backward_hooks(
    windows: Sequence[tuple[int, float, float]], ranges: HostRanges
) -> dict[int, float]:
    """Each window's first backward hook on the host: where its forward launches end."""
    kind = FSDP_KINDS.index("backward")
    starts = sorted(
        s for s, k in zip(ranges.fsdp_starts, ranges.fsdp_kinds, strict=True) if k == kind
    )
    out = {}
    for number, lo, hi in windows:
        i = bisect_left(starts, lo)
        if i < len(starts) and starts[i] < hi:
            out[number] = starts[i]
    return out


def device_lags(
    windows: Sequence[tuple[int, float, float]],
    ranges: HostRanges,
    kernels: tuple[Sequence[float], Sequence[float], Sequence[float]],
) -> dict[int, dict[str, float]]:
    """Per window with a backward hook, each pass's device lag: the end of the last kernel the
    pass launched, less its last launch (kernels launched before the window's first backward
    hook are the forward's, the rest of the window's the backward's, the optimizer's with
    them). A pass the host paces ends right after its last launch; speeding up its device
    work can save at most this lag."""
    boundary = _first_backward_hooks(windows, ranges)
    lows = [lo for _, lo, _ in windows]
    last: dict[tuple[int, str], list[float]] = {}
    _, ends, launch_at = kernels
    for end, at in zip(ends, launch_at, strict=True):
        if at != at:
            continue
        i = bisect_right(lows, at) - 1
        if i < 0 or at >= windows[i][2] or windows[i][0] not in boundary:
            continue
        number = windows[i][0]
        name = "forward" if at < boundary[number] else "backward"
        slot = last.setdefault((number, name), [at, end])
        slot[0], slot[1] = max(slot[0], at), max(slot[1], end)
    return {
        number: {name: max(0.0, last[number, name][1] - last[number, name][0]) for name in PASSES}
        for number in boundary
        if all((number, name) in last for name in PASSES)
    }


def allgather_passes(
    windows: Sequence[tuple[int, float, float]],
    ranges: HostRanges,
    allgathers: tuple[Sequence[float], Sequence[float]] | None,
    computing: Intervals | None,
    kernels: tuple[Sequence[float], Sequence[float], Sequence[float]] | None = None,
) -> AllGatherPasses:
    """Each window's exposed all-gather time by the pass that issued it."""
    passes = issue_passes(ranges)
    device = _device_allgathers(*allgathers) if allgathers else []
    if passes == NO_FSDP_RANGES and not device:
        # no all-gather at all (a replicated job): none exposed, none to prefetch
        nothing = {number: dict.fromkeys(PASSES, 0.0) for number, _, _ in windows}
        return AllGatherPasses(nothing, idle_by_step=nothing)
    if isinstance(passes, str):
        return AllGatherPasses({}, passes)
    if computing is None:
        return AllGatherPasses({}, NO_COMPUTING)
    if len(device) != len(passes):
        return AllGatherPasses(
            {},
            f"{len(device)} all-gathers on the device, {len(passes)} FSDP::all_gather ranges "
            "on the host: not every all-gather is FSDP2's (or the trace cut one off), so they "
            "cannot be paired in order",
        )
    lists: dict[str, tuple[array[float], array[float]]] = {
        name: (array("d"), array("d")) for name in PASSES
    }
    later: dict[str, tuple[array[float], array[float]]] = {
        name: (array("d"), array("d")) for name in PASSES
    }
    lows = [lo for _, lo, _ in windows]
    firsts: set[tuple[int, str]] = set()
    for (start, end), name in zip(device, passes, strict=True):
        lists[name][0].append(start)
        lists[name][1].append(end)
        # a pass's first all-gather in a step has no earlier hook of the pass to be
        # prefetched from: only the later ones are what its prefetch can hide
        window = bisect_right(lows, start) - 1
        if (window, name) not in firsts:
            firsts.add((window, name))
            continue
        later[name][0].append(start)
        later[name][1].append(end)
    gathered = {name: merged_intervals(*lists[name]) for name in PASSES}
    forward = subtract(merged_intervals(*later["forward"]), computing)
    backward = subtract(subtract(merged_intervals(*later["backward"]), computing), forward)
    return AllGatherPasses(
        {
            number: {
                "forward": clipped_sum(forward, lo, hi),
                "backward": clipped_sum(backward, lo, hi),
            }
            for number, lo, hi in windows
        },
        lag_by_step=device_lags(windows, ranges, kernels) if kernels else {},
        idle_by_step={
            number: {name: stream_idle(gathered[name], lo, hi) for name in PASSES}
            for number, lo, hi in windows
        },
    )


def stream_idle(gathered: Intervals, lo: float, hi: float) -> float:
    """The time between the first and the last of a pass's all-gathers in [lo, hi) when none
    runs: prefetch starts all-gathers earlier, so it can hide at most this much more (a stream
    busy from the pass's first all-gather to its last leaves nothing to gain)."""
    starts = [s for s in gathered.starts if lo <= s < hi]
    if not starts:
        return 0.0
    first, last = (
        min(starts),
        max(e for s, e in zip(gathered.starts, gathered.ends, strict=True) if lo <= s < hi),
    )
    return max(0.0, (last - first) - clipped_sum(gathered, first, last))


def grouped_passes(ranges: HostRanges) -> AllGatherPasses:
    """What a trace reduced in groups says of its all-gathers' passes: not measured, unless it
    has no FSDP range, when it says so as a whole trace would."""
    return AllGatherPasses({}, GROUPED if len(ranges.fsdp_starts) else NO_FSDP_RANGES)
