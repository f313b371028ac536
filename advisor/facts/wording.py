"""Where a fact was read, in the words of the profiler that wrote it: a PyTorch trace from a
GPU has NCCL/RCCL kernels and ProfilerStep markers (or none), not HCCL hcom_* tasks, an
Accelerator Core column or communication.json's Elapse Time(ms)."""

from __future__ import annotations

from advisor.parsers.profile_data import RankProfile

_COLLECTIVES = {"cuda": "NCCL kernels", "rocm": "RCCL kernels"}


def collective_tasks(rank: RankProfile) -> str:
    """What the profile calls its collectives."""
    if rank.origin is None:
        return "HCCL hcom_* tasks"
    return _COLLECTIVES.get(rank.platform, "collective kernels")


def comm_time_column(rank: RankProfile, source: str) -> str:
    """The column (or events) a collective's time is read from."""
    if rank.origin is None:
        return f"{source}:Elapse Time(ms)"
    return f"{source}:{collective_tasks(rank)} (durations)"


def step_windows(rank: RankProfile) -> str:
    """What a step is on this profile."""
    if rank.stepless:
        return "the whole trace (no ProfilerStep#N markers)"
    return "ProfilerStep windows"


def exposed_collectives(rank: RankProfile) -> tuple[str, str]:
    """Where the exposed time of each collective is read, and why it may be missing."""
    if rank.origin is None:
        return (
            "HCCL hcom_* tasks outside the Computing lane",
            "has no HCCL collective tasks or no Overlap Analysis Computing lane",
        )
    tasks = collective_tasks(rank)
    return f"{tasks} outside compute kernels", f"has no {tasks} or no compute kernels"
