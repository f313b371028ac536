"""Allocator facts from memory_record.csv (profile_with_memory)."""

from __future__ import annotations

from advisor.facts.base import Recorder
from advisor.facts.contract import Deriver, RankInputs, Scope

MEMORY = "memory_record.csv"
MIB = 1024 * 1024
MEMORY_FACTS = (
    "memory.allocated_peak_bytes",
    "memory.reserved_peak_bytes",
    "memory.fragmentation_ratio",
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
    if mem.reserved_peak_mb > 0:
        out.add(
            "memory.fragmentation_ratio",
            1.0 - mem.allocated_at_reserved_peak_mb / mem.reserved_peak_mb,
            f"{MEMORY}:Total Allocated(MB),Total Reserved(MB)",
            f"1 - allocated/reserved at the sample with the highest reserved; {note}",
        )
    else:
        out.miss("memory.fragmentation_ratio", f"{MEMORY} never reserved any memory")


DERIVER = Deriver[RankInputs](
    name="memory",
    scope=Scope.RANK,
    inputs=frozenset({"profile"}),
    reads=frozenset(),
    writes=frozenset(MEMORY_FACTS),
    derive=derive,
)
