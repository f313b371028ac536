"""Step time model: step_trace_time.csv, cross-checked against the trace's Overlap Analysis."""

from __future__ import annotations

from statistics import median

from advisor.facts.base import Recorder, SteadySteps, ratio, select_steady
from advisor.inputs.taxonomy import Taxonomy
from advisor.parsers.profile_data import RankProfile, StepRow
from advisor.parsers.traces.steps import TraceStep

STEP_TRACE = "step_trace_time.csv"
LANE_COMPUTING = "Computing"
LANE_COMM = "Communication"
LANE_EXPOSED = "Communication(Not Overlapped)"
LANE_FREE = "Free"


def rows_from_trace(steps: list[TraceStep]) -> list[StepRow]:
    """Rebuild step rows from the Overlap Analysis lanes when step_trace_time.csv is absent."""
    rows = []
    for s in steps:
        lanes = s.overlap_us
        computing = lanes.get(LANE_COMPUTING, 0.0)
        comm = lanes.get(LANE_COMM, 0.0)
        exposed = lanes.get(LANE_EXPOSED, 0.0)
        free = lanes.get(LANE_FREE, 0.0)
        busy = computing + exposed + free
        rows.append(
            StepRow(
                step=s.number,
                computing=computing,
                comm_not_overlapped=exposed,
                overlapped=max(0.0, comm - exposed),
                communication=comm,
                free=free,
                preparing=max(0.0, s.duration_us - busy),
                bubble=None,
            )
        )
    return rows


def steady_rows(rank: RankProfile, taxonomy: Taxonomy) -> tuple[list[StepRow], SteadySteps, str]:
    """The steady step rows of a rank, the selection, and the source they came from."""
    if rank.step_rows:
        rows = rank.step_rows
        source = f"{rank.origin}:ProfilerStep windows + kernels" if rank.origin else STEP_TRACE
    elif rank.trace is not None and rank.trace.steps and rank.trace.overlap_lanes:
        rows, source = rows_from_trace(rank.trace.steps), "trace_view.json:Overlap Analysis"
    else:
        return [], SteadySteps([], [], "no steps"), ""
    steady = select_steady(
        [r.step for r in rows], [r.total for r in rows], taxonomy.partial_step_ratio
    )
    return [rows[i] for i in steady.kept], steady, source


def _cross_check(rank: RankProfile, rows: list[StepRow], out: Recorder, tolerance: float) -> str:
    """Compare per-step computing/free with the trace lanes; returns a sentence for the notes."""
    trace = rank.trace
    if trace is None or not trace.overlap_lanes or not rank.step_rows:
        return ""
    by_number = {s.number: s for s in trace.steps}
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
    if matched == 0:
        return "; trace_view.json step numbers do not match step_trace_time.csv (not cross-checked)"
    out.add(
        "trace.step_cross_check",
        worst,
        "trace_view.json:Overlap Analysis",
        f"max |lane - step_trace| / step time over {matched} steady step(s), lanes Computing and Free",
    )
    verdict = "agrees" if worst <= tolerance else "DISAGREES"
    return f"; trace_view.json Overlap Analysis {verdict} (max difference {worst:.1%} of the step)"


def derive(rank: RankProfile, taxonomy: Taxonomy, out: Recorder) -> None:
    rows, steady, source = steady_rows(rank, taxonomy)
    step_ids = [
        "step.time_ms",
        "step.compute_ratio",
        "step.comm_total_ratio",
        "step.comm_exposed_ratio",
        "step.comm_overlapped_ratio",
        "step.free_ratio",
        "step.preparing_ratio",
        "step.bubble_ratio",
    ]
    if not rows:
        for fact_id in step_ids:
            out.miss(
                fact_id, "no step_trace_time.csv and no Overlap Analysis lanes in trace_view.json"
            )
        return
    profiled = (
        len(rank.step_rows) if rank.step_rows else len(rank.trace.steps if rank.trace else [])
    )
    if rank.stepless:
        out.add("profile.steps", 0, source, "no ProfilerStep#N markers: one window, no steps")
    else:
        out.add("profile.steps", profiled, source, f"profiled steps in {source}")
    check = _cross_check(rank, rows, out, taxonomy.cross_check_tolerance)
    note = steady.note + check
    total = sum(r.total for r in rows)
    center = median(r.total for r in rows)
    out.add("step.time_ms", center / 1000.0, source, "median of " + note)
    out.add("step.steady_steps", len(rows), source, steady.note)
    if len(rows) >= 2:
        mad = median(abs(r.total - center) for r in rows)
        out.add("step.time_mad_ms", mad / 1000.0, source, "MAD of " + note)
        if center > 0:
            out.add("step.time_mad_ratio", mad / center, source, "MAD / median of " + note)
    else:
        for fact_id in ("step.time_mad_ms", "step.time_mad_ratio"):
            out.miss(
                fact_id, "one steady step: no spread to measure (profile at least 3 steady steps)"
            )
    shares = {
        "step.compute_ratio": ("Computing", sum(r.computing for r in rows)),
        "step.comm_total_ratio": ("Communication", sum(r.communication for r in rows)),
        "step.comm_exposed_ratio": (
            "Communication(Not Overlapped)",
            sum(r.comm_not_overlapped for r in rows),
        ),
        "step.comm_overlapped_ratio": ("Overlapped", sum(r.overlapped for r in rows)),
        "step.free_ratio": ("Free", sum(r.free for r in rows)),
    }
    for fact_id, (column, part) in shares.items():
        value = ratio(part, total)
        if value is None:
            out.miss(fact_id, "steady steps have zero total time")
            continue
        out.add(
            fact_id, value, f"{source}:{column}", f"sum of {column} / sum of step time over {note}"
        )
    memory = [r.memory for r in rows]
    if all(m is not None for m in memory):
        value = ratio(sum(m or 0.0 for m in memory), total)
        if value is not None:
            out.add(
                "step.memory_ratio",
                value,
                f"{source}:Memory",
                f"memcpy/memset time that no compute or communication hides / step time over {note}",
            )
    for fact_id, column, values in (
        ("step.preparing_ratio", "Preparing", [r.preparing for r in rows]),
        ("step.bubble_ratio", "Bubble", [r.bubble for r in rows]),
    ):
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
