"""Step time model: step_trace_time.csv, cross-checked against the trace's Overlap Analysis."""

from __future__ import annotations

from statistics import median

from advisor.facts.base import Recorder, ratio
from advisor.facts.contract import Deriver, RankInputs, Scope
from advisor.facts.steady import LANE_COMPUTING, LANE_FREE
from advisor.parsers.profile_data import RankProfile, StepRow

STEP_IDS = (
    "step.time_ms",
    "step.compute_ratio",
    "step.comm_total_ratio",
    "step.comm_exposed_ratio",
    "step.comm_overlapped_ratio",
    "step.free_ratio",
    "step.preparing_ratio",
    "step.bubble_ratio",
)
CROSS_CHECK = "trace.step_cross_check"
# step model column -> the fact of its share of the step
SHARES = (
    ("step.compute_ratio", "Computing"),
    ("step.comm_total_ratio", "Communication"),
    ("step.comm_exposed_ratio", "Communication(Not Overlapped)"),
    ("step.comm_overlapped_ratio", "Overlapped"),
    ("step.free_ratio", "Free"),
)
# columns some step models lack (MindSpore and PyTorch traces: no Bubble)
OPTIONAL = (("step.preparing_ratio", "Preparing"), ("step.bubble_ratio", "Bubble"))


def _column(row: StepRow, column: str) -> float:
    return {
        "Computing": row.computing,
        "Communication": row.communication,
        "Communication(Not Overlapped)": row.comm_not_overlapped,
        "Overlapped": row.overlapped,
        "Free": row.free,
    }[column]


def _optional(row: StepRow, column: str) -> float | None:
    return row.preparing if column == "Preparing" else row.bubble


def _worst_lane_gap(rank: RankProfile, rows: list[StepRow]) -> tuple[float, int]:
    """The largest |lane - step model| / step time over the matched steps, and their count."""
    assert rank.trace is not None
    by_number = {s.number: s for s in rank.trace.steps}
    worst = 0.0
    matched = 0
    for row in rows:
        step = by_number.get(row.step) if row.step is not None else None
        if step is None or row.total <= 0:
            continue
        matched += 1
        for lane, value in ((LANE_COMPUTING, row.computing), (LANE_FREE, row.free)):
            lane_value = step.overlap_us.get(lane)
            if lane_value is not None:
                worst = max(worst, abs(lane_value - value) / row.total)
    return worst, matched


def _cross_check(rank: RankProfile, rows: list[StepRow], out: Recorder, tolerance: float) -> str:
    """Compare per-step computing/free with the trace lanes; returns a sentence for the notes."""
    trace = rank.trace
    if trace is None or not trace.overlap_lanes or not rank.step_rows:
        return ""
    worst, matched = _worst_lane_gap(rank, rows)
    if matched == 0:
        return "; trace_view.json step numbers do not match step_trace_time.csv (not cross-checked)"
    out.add(
        CROSS_CHECK,
        worst,
        "trace_view.json:Overlap Analysis",
        f"max |lane - step_trace| / step time over {matched} steady step(s), lanes Computing and Free",
    )
    verdict = "agrees" if worst <= tolerance else "DISAGREES"
    return f"; trace_view.json Overlap Analysis {verdict} (max difference {worst:.1%} of the step)"


def _profiled(rank: RankProfile, source: str, out: Recorder) -> None:
    if rank.stepless:
        out.add("profile.steps", 0, source, "no ProfilerStep#N markers: one window, no steps")
        return
    steps = rank.step_rows or (rank.trace.steps if rank.trace else [])
    out.add("profile.steps", len(steps), source, f"profiled steps in {source}")


def _time(rows: list[StepRow], source: str, note: str, steady_note: str, out: Recorder) -> None:
    center = median(r.total for r in rows)
    out.add("step.time_ms", center / 1000.0, source, "median of " + note)
    out.add("step.steady_steps", len(rows), source, steady_note)
    if len(rows) < 2:
        for fact_id in ("step.time_mad_ms", "step.time_mad_ratio"):
            out.miss(
                fact_id, "one steady step: no spread to measure (profile at least 3 steady steps)"
            )
        return
    mad = median(abs(r.total - center) for r in rows)
    out.add("step.time_mad_ms", mad / 1000.0, source, "MAD of " + note)
    if center > 0:
        out.add("step.time_mad_ratio", mad / center, source, "MAD / median of " + note)


def _shares(rows: list[StepRow], source: str, note: str, out: Recorder) -> None:
    total = sum(r.total for r in rows)
    for fact_id, column in SHARES:
        value = ratio(sum(_column(r, column) for r in rows), total)
        if value is None:
            out.miss(fact_id, "steady steps have zero total time")
            continue
        out.add(
            fact_id, value, f"{source}:{column}", f"sum of {column} / sum of step time over {note}"
        )
    memory = [r.memory for r in rows]
    value = ratio(sum(m or 0.0 for m in memory), total)
    if all(m is not None for m in memory) and value is not None:
        out.add(
            "step.memory_ratio",
            value,
            f"{source}:Memory",
            f"memcpy/memset time that no compute or communication hides / step time over {note}",
        )
    for fact_id, column in OPTIONAL:
        values = [_optional(r, column) for r in rows]
        present = [v for v in values if v is not None]
        if len(present) != len(values):
            out.miss(fact_id, f"{source} has no {column} column")
            continue
        value = ratio(sum(present), total)
        if value is not None:
            out.add(
                fact_id,
                value,
                f"{source}:{column}",
                f"sum of {column} / sum of step time over {note}",
            )


def derive(given: RankInputs, out: Recorder) -> None:
    rank, (rows, steady, source) = given.profile, given.steady
    if not rows:
        for fact_id in STEP_IDS:
            out.miss(
                fact_id, "no step_trace_time.csv and no Overlap Analysis lanes in trace_view.json"
            )
        return
    _profiled(rank, source, out)
    note = steady.note + _cross_check(rank, rows, out, given.thresholds.cross_check_tolerance)
    _time(rows, source, note, steady.note, out)
    _shares(rows, source, note, out)


DERIVER = Deriver[RankInputs](
    name="steps",
    scope=Scope.RANK,
    inputs=frozenset({"profile", "steady", "thresholds"}),
    reads=frozenset(),
    writes=frozenset(
        {
            *STEP_IDS,
            "profile.steps",
            CROSS_CHECK,
            "step.steady_steps",
            "step.time_mad_ms",
            "step.time_mad_ratio",
            "step.memory_ratio",
        }
    ),
    derive=derive,
)
