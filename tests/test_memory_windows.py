"""The peak's attribution read step window by step window on the rank with the highest peak:
start-up and warm-up samples do not lower the resident floor, and the static part of one rank
is never added to the dynamic part of another."""

from __future__ import annotations

from pathlib import Path

from advisor.facts.base import Recorder
from advisor.facts.combine import combine_ranks
from advisor.parsers.ascend.memory import read_memory_record
from advisor.parsers.memory_summary import Sample, summarise

MIB = 1024 * 1024


def _curve() -> list[Sample]:
    """Start-up at 1 GiB, a warm-up step that allocates the optimizer states, then two steady
    steps each rising 20 (then 15) GiB above a 10 GiB resident floor."""
    gib = 1024.0
    points = [(0.0, 1), (5.0, 1)]  # loading: before any step
    points += [(10.0, 5), (15.0, 18), (19.0, 10)]  # step 1 (warm-up)
    points += [(20.0, 10), (25.0, 30), (29.0, 10)]  # step 2
    points += [(30.0, 10), (35.0, 25), (39.0, 11)]  # step 3
    return [(t, a * gib, a * gib + 2 * gib) for t, a in points]


WINDOWS = [(1, 10.0, 19.5), (2, 20.0, 29.5), (3, 30.0, 39.5)]


def test_the_floor_and_the_rise_are_read_per_steady_step() -> None:
    summary = summarise({"PTA": _curve()}, WINDOWS)
    assert summary is not None
    assert summary.allocated_floor_mb == 10 * 1024  # not the start-up's 1 GiB
    assert summary.step_rise_mb == 20 * 1024  # step 2: 10 -> 30
    assert summary.window_steps == (2, 3)  # step 1 is warm-up


def test_without_step_windows_the_whole_profile_counts() -> None:
    summary = summarise({"PTA": _curve()})
    assert summary is not None
    assert summary.allocated_floor_mb == 1024 and summary.step_rise_mb is None


def test_windows_without_samples_leave_the_whole_profile_reading() -> None:
    summary = summarise({"PTA": _curve()}, [(7, 100.0, 110.0), (8, 120.0, 130.0)])
    assert summary is not None and summary.window_steps == ()
    assert summary.allocated_floor_mb == 1024


def test_memory_record_csv_read_in_the_kernels_step_windows(tmp_path: Path) -> None:
    path = tmp_path / "memory_record.csv"
    rows = [
        "Component,Timestamp(us),Total Allocated(MB),Total Reserved(MB),Total Active(MB),"
        "Stream Ptr,Device Type"
    ]
    rows += [f"PTA,{t}\t,{a},{r},{a},0,NPU:0" for t, a, r in _curve()]
    path.write_text("\n".join(rows) + "\n")
    summary = read_memory_record(path, windows=WINDOWS)
    assert (summary.allocated_floor_mb, summary.step_rise_mb) == (10 * 1024, 20 * 1024)


def _rank(label: str, peak: int, static: int, dynamic: int) -> tuple[str, Recorder]:
    rec = Recorder(f"rank:{label}")
    rec.add("memory.allocated_peak_bytes", peak * MIB, "memory_record.csv")
    rec.add("memory.static_bytes", static * MIB, "memory_record.csv")
    rec.add("memory.dynamic_bytes", dynamic * MIB, "memory_record.csv")
    rec.add("memory.peak_holders", {f"op{label}": dynamic * MIB}, "operator_memory.csv")
    return label, rec


def test_the_job_s_attribution_is_the_highest_peak_rank_s_own() -> None:
    # rank 0 holds a lot resident, rank 1 peaks higher on activations: the job is rank 1's
    job = combine_ranks([_rank("0", 20, 15, 5), _rank("1", 30, 5, 25)], None)
    assert job.facts["memory.static_bytes"].value == 5 * MIB  # not rank 0's 15
    assert job.facts["memory.dynamic_bytes"].value == 25 * MIB
    assert job.facts["memory.peak_holders"].value == {"op1": 25 * MIB}
    assert "rank 1 (the highest memory peak)" in job.facts["memory.static_bytes"].note
