"""The allocator's samples summarised: peaks, the floor held through every step, and the
operators holding memory at the peak (one meaning for the text and the database export)."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import replace

from advisor.parsers.profile_data import MemorySummary

# the allocator whose peak and fragmentation matter: the PyTorch one (PTA), else what exists
PREFERRED_COMPONENTS = ("PTA", "PTA+GE", "APP")
# the whole process on the device: what must fit in the device's memory
PROCESS_COMPONENT = "APP"
# operators named at the peak: the few holding the most
HOLDERS_SHOWN = 5

# (timestamp us or None, allocated MiB, reserved MiB)
Sample = tuple[float | None, float, float]
# (step number, start us, end us) in the samples' clock
Window = tuple[int, float, float]


def summarise(
    by_component: dict[str, list[Sample]], windows: Sequence[Window] = ()
) -> MemorySummary | None:
    """The peaks and the floor of the preferred allocator's samples (None without samples);
    with step windows, the floor and the rise are read per step (`per_step`)."""
    if not by_component:
        return None
    preferred = [c for c in PREFERRED_COMPONENTS if c in by_component]
    component = preferred[0] if preferred else sorted(by_component)[0]
    samples = by_component[component]
    allocated_peak = max(samples, key=lambda s: s[1])
    reserved_peak = max(samples, key=lambda s: (s[2], s[1]))
    summary = MemorySummary(
        allocated_peak_mb=allocated_peak[1],
        reserved_peak_mb=reserved_peak[2],
        allocated_at_reserved_peak_mb=reserved_peak[1],
        component=component,
        samples=len(samples),
        allocated_floor_mb=min(s[1] for s in samples),
        peak_time_us=allocated_peak[0],
        process_peak_mb=max((s[2] for s in by_component.get(PROCESS_COMPONENT, ())), default=None),
    )
    return per_step(summary, samples, windows)


def per_step(
    summary: MemorySummary, samples: list[Sample], windows: Sequence[Window]
) -> MemorySummary:
    """Seed 003's curve read step by step: what stays resident is the lowest allocated any
    steady step went down to, what a step raises is its peak above its own low. The first
    window is warm-up (optimizer states may be created in it) and is left out when others
    exist; a profile's start-up before the first step never counts. Unchanged without windows
    holding samples."""
    steady = list(windows[1:] if len(windows) > 1 else windows)
    lows, rises, steps = [], [], []
    timed = sorted((s[0], s[1]) for s in samples if s[0] is not None)
    starts = [t for t, _ in timed]
    for number, start, end in steady:
        inside = [a for _, a in timed[bisect_left(starts, start) : bisect_right(starts, end)]]
        if inside:
            lows.append(min(inside))
            rises.append(max(inside) - min(inside))
            steps.append(number)
    if not steps:
        return summary
    return replace(
        summary,
        allocated_floor_mb=min(lows),
        step_rise_mb=max(rises),
        window_steps=tuple(steps),
    )


# (name, size MiB, allocated at, released at or None: still held when the profile stopped)
Block = tuple[str, float, float, float | None]


def live_at(blocks: list[Block], at: float) -> tuple[tuple[str, float], ...]:
    """The operators holding the most memory at `at`, summed by operator name."""
    held: dict[str, float] = {}
    for name, size_mib, allocated, released in blocks:
        if allocated <= at and (released is None or released > at):
            held[name] = held.get(name, 0.0) + size_mib
    ranked = sorted(held.items(), key=lambda item: -item[1])
    return tuple((name, round(mib, 3)) for name, mib in ranked[:HOLDERS_SHOWN] if mib > 0)


def with_holders(memory: MemorySummary, blocks: list[Block]) -> MemorySummary:
    """The summary with the operators live at its allocated peak (unchanged without a time)."""
    if memory.peak_time_us is None or not blocks:
        return memory
    return replace(memory, holders=live_at(blocks, memory.peak_time_us))
