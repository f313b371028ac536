"""The steady step rows of a rank: the step model (step_trace_time.csv, a PyTorch trace's
ProfilerStep windows, or else the Overlap Analysis lanes of trace_view.json) less the warm-up
step and a last step cut short. Every per-step fact of a rank is measured over these rows, with
one statistic (`PerStep`)."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import NamedTuple

from advisor.facts.base import SteadySteps, select_steady
from advisor.facts.wording import step_windows
from advisor.inputs.thresholds import FactThresholds
from advisor.parsers.profile_data import CommStep, RankProfile, StepRow

STEP_TRACE = "step_trace_time.csv"
LANE_COMPUTING = "Computing"
LANE_COMM = "Communication"
LANE_EXPOSED = "Communication(Not Overlapped)"
LANE_FREE = "Free"


class SteadyRows(NamedTuple):
    """The kept rows, which steps they are (with the sentence saying why) and their source
    ("" when the rank has no step model)."""

    rows: list[StepRow]
    steps: SteadySteps
    source: str


@dataclass(frozen=True)
class PerStep:
    """The one statistic of every per-step time of a rank: the median steady step
    (step.time_ms) times the part's share of the steady steps' time (sum of the part / sum of
    step time, as the step.*_ratio facts). Parts measured so add up to step.time_ms as the
    shares add up to 1; one steady step gives its own figures exactly."""

    median_us: float
    total_us: float
    steps: int

    @classmethod
    def of(cls, totals: list[float]) -> PerStep:
        return cls(median(totals) if totals else 0.0, sum(totals), len(totals))

    def ms(self, part_us: float) -> float:
        """A part summed over the steady steps (us), as milliseconds of the median step."""
        if self.total_us <= 0:
            return 0.0
        # median / total is exactly 1.0 for one step: its own value, bit for bit
        return part_us * (self.median_us / self.total_us) / 1000.0

    @property
    def note(self) -> str:
        return (
            f"the median steady step x the part's share of the {self.steps} steady step(s)' "
            "time (sum of the part / sum of step time)"
        )


def rows_from_lanes(overlap_us: dict[str, float], number: int, duration_us: float) -> StepRow:
    """One step's row rebuilt from its Overlap Analysis lanes."""
    computing = overlap_us.get(LANE_COMPUTING, 0.0)
    comm = overlap_us.get(LANE_COMM, 0.0)
    exposed = overlap_us.get(LANE_EXPOSED, 0.0)
    free = overlap_us.get(LANE_FREE, 0.0)
    busy = computing + exposed + free
    return StepRow(
        step=number,
        computing=computing,
        comm_not_overlapped=exposed,
        overlapped=max(0.0, comm - exposed),
        communication=comm,
        free=free,
        preparing=max(0.0, duration_us - busy),
        bubble=None,
    )


def open_last_ratio(rank: RankProfile, thresholds: FactThresholds) -> float | None:
    """A PyTorch trace's last step window runs to its last operation (device-paced, no next
    step to end it): how much longer than the others it may be and still be one step."""
    return thresholds.open_last_step_ratio if rank.origin is not None else None


def steady_rows(rank: RankProfile, thresholds: FactThresholds) -> SteadyRows:
    """The steady step rows of a rank, the selection, and the source they came from."""
    if rank.step_rows:
        rows = rank.step_rows
        source = f"{rank.origin}:{step_windows(rank)} + kernels" if rank.origin else STEP_TRACE
    elif rank.trace is not None and rank.trace.steps and rank.trace.overlap_lanes:
        rows = [rows_from_lanes(s.overlap_us, s.number, s.duration_us) for s in rank.trace.steps]
        source = "trace_view.json:Overlap Analysis"
    else:
        return SteadyRows([], SteadySteps([], [], "no steps"), "")
    steady = select_steady(
        [r.step for r in rows],
        [r.total for r in rows],
        thresholds.partial_step_ratio,
        open_last_ratio(rank, thresholds),
    )
    return SteadyRows([rows[i] for i in steady.kept], steady, source)


def steady_comm_steps(steps: list[CommStep], labels: list[str]) -> tuple[list[CommStep], str]:
    """A rank's communication steps of the steady steps (by label), else all but the first
    (warm-up), else the one profiled step; with the note that says which."""
    wanted = {int(label) for label in labels if label.isdigit()}
    matched = [s for s in steps if s.step in wanted]
    if matched:
        return matched, f"steps {', '.join(str(s.step) for s in matched)}"
    if len(steps) > 1:
        ordered = sorted(steps, key=lambda s: (s.step is None, s.step or 0))
        return ordered[1:], f"{len(ordered) - 1} step(s), the first dropped (warm-up)"
    return steps, "the single profiled step"
