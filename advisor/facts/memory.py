"""Allocator facts from memory_record.csv (profile_with_memory): the peaks, fragmentation, and
the peak split into what stays resident (the window's lowest allocated) and what a step raises,
with the operators holding the most at the peak (operator_memory.csv)."""

from __future__ import annotations

from advisor.facts.base import Recorder
from advisor.facts.contract import Deriver, RankInputs, Scope

MEMORY = "memory_record.csv"
MIB = 1024 * 1024
MEMORY_FACTS = (
    "memory.allocated_peak_bytes",
    "memory.reserved_peak_bytes",
    "memory.fragmentation_ratio",
    "memory.static_bytes",
    "memory.dynamic_bytes",
    "memory.peak_holders",
)


def derive(given: RankInputs, out: Recorder) -> None:
    rank = given.profile
    mem = rank.memory
    if mem is None:
        reason = (
            f"{MEMORY} {rank.absent.get(MEMORY, 'not in the profile')} (profile_with_memory off)"
        )
        for fact_id in MEMORY_FACTS:
            out.miss(fact_id, reason)
        return
    note = f"component {mem.component}, {mem.samples} samples; MB read as MiB"
    out.add(
        "memory.allocated_peak_bytes",
        int(mem.allocated_peak_mb * MIB),
        f"{MEMORY}:Total Allocated(MB)",
        note,
    )
    out.add(
        "memory.reserved_peak_bytes",
        int(mem.reserved_peak_mb * MIB),
        f"{MEMORY}:Total Reserved(MB)",
        note,
    )
    _split(given, out)
    if mem.reserved_peak_mb > 0:
        out.add(
            "memory.fragmentation_ratio",
            1.0 - mem.allocated_at_reserved_peak_mb / mem.reserved_peak_mb,
            f"{MEMORY}:Total Allocated(MB),Total Reserved(MB)",
            f"1 - allocated/reserved at the sample with the highest reserved; {note}",
        )
    else:
        out.miss("memory.fragmentation_ratio", f"{MEMORY} never reserved any memory")


def _split(given: RankInputs, out: Recorder) -> None:
    """Seed 003's curve shape: memory held high through the window is parameters and optimizer
    states (static); what rises above that floor and is freed is activations and temporaries."""
    rank = given.profile
    mem = rank.memory
    assert mem is not None
    source = rank.sources.get(MEMORY, MEMORY)
    if mem.allocated_floor_mb is None or mem.samples < 2:
        for fact_id in ("memory.static_bytes", "memory.dynamic_bytes"):
            out.miss(fact_id, f"{MEMORY} has too few allocated samples for a curve")
    else:
        floor = mem.allocated_floor_mb
        steps = _steps(mem.window_steps) if mem.window_steps else ""
        held = (
            f"lowest allocated within {steps} (read step by step: samples outside the "
            "steady steps left out)"
            if mem.step_rise_mb is not None
            else f"lowest allocated of the {mem.samples} samples (no step windows: the whole "
            "profile, start-up included)"
        )
        out.add("memory.static_bytes", int(floor * MIB), f"{source}:Total Allocated(MB)", held)
        if mem.step_rise_mb is not None:
            rise = mem.step_rise_mb
            raised = f"largest rise within one step above that step's own low ({steps})"
        else:
            rise = mem.allocated_peak_mb - floor
            raised = "allocated peak above that floor: raised and freed within a step"
        out.add("memory.dynamic_bytes", int(rise * MIB), f"{source}:Total Allocated(MB)", raised)
    holders_from = rank.sources.get("operator_memory.csv", "operator_memory.csv")
    if mem.holders:
        out.add(
            "memory.peak_holders",
            {name: int(mib * MIB) for name, mib in mem.holders},
            holders_from,
            "operators holding the most at the allocated peak, largest first, summed by name",
        )
    elif mem.peak_time_us is None:
        out.miss("memory.peak_holders", f"{MEMORY} has no timestamps")
    else:
        reason = rank.absent.get("operator_memory.csv", "not in the profile")
        out.miss("memory.peak_holders", f"operator_memory.csv {reason}")


def _steps(numbers: tuple[int, ...]) -> str:
    """'step 13', 'steps 2-4', 'steps 2, 5'."""
    if len(numbers) == 1:
        return f"step {numbers[0]}"
    if list(numbers) == list(range(numbers[0], numbers[0] + len(numbers))):
        return f"steps {numbers[0]}-{numbers[-1]}"
    return "steps " + ", ".join(map(str, numbers))


DERIVER = Deriver[RankInputs](
    name="memory",
    scope=Scope.RANK,
    inputs=frozenset({"profile"}),
    reads=frozenset(),
    writes=frozenset(MEMORY_FACTS),
    derive=derive,
)
