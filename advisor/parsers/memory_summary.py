"""The allocator's samples summarised: peaks, the floor held through every step, and the
operators holding memory at the peak (one meaning for the text and the database export)."""

from __future__ import annotations

from dataclasses import replace

from advisor.parsers.profile_data import MemorySummary

# the allocator whose peak and fragmentation matter: the PyTorch one (PTA), else what exists
PREFERRED_COMPONENTS = ("PTA", "PTA+GE", "APP")
# operators named at the peak: the few holding the most
HOLDERS_SHOWN = 5

# (timestamp us or None, allocated MiB, reserved MiB)
Sample = tuple[float | None, float, float]


def summarise(by_component: dict[str, list[Sample]]) -> MemorySummary | None:
    """The peaks and the floor of the preferred allocator's samples (None without samples)."""
    if not by_component:
        return None
    preferred = [c for c in PREFERRED_COMPONENTS if c in by_component]
    component = preferred[0] if preferred else sorted(by_component)[0]
    samples = by_component[component]
    allocated_peak = max(samples, key=lambda s: s[1])
    reserved_peak = max(samples, key=lambda s: (s[2], s[1]))
    return MemorySummary(
        allocated_peak_mb=allocated_peak[1],
        reserved_peak_mb=reserved_peak[2],
        allocated_at_reserved_peak_mb=reserved_peak[1],
        component=component,
        samples=len(samples),
        allocated_floor_mb=min(s[1] for s in samples),
        peak_time_us=allocated_peak[0],
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
