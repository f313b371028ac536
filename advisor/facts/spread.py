"""How far the slowest rank is from its peers: step time and busy time (step time less
exposed communication) against the median of the ranks of its own pipeline stage, since
stages differ by design. The busy spread names the rank the others wait for."""

from __future__ import annotations

from collections.abc import Mapping
from statistics import median

from advisor.facts.base import Recorder
from advisor.facts.contract import Deriver, JobInputs, Scope
from advisor.facts.stages import stage_of, timed_ranks
from advisor.model import Fact

SPREAD_FACTS = (
    "ranks.count",
    "ranks.step_time_spread_ratio",
    "ranks.busy_spread_ratio",
    "ranks.slowest",
    "ranks.wait_for_slowest_ratio",
    "ranks.median_busy_ratio",
)


def _slowest(values: dict[str, float], stage: dict[str, int]) -> tuple[str, float]:
    """The rank furthest above the median of its stage, and that median."""
    peers = {s: [label for label in values if stage[label] == s] for s in set(stage.values())}
    mid = {label: median(values[p] for p in peers[stage[label]]) for label in values}
    slow = max(values, key=lambda k: (values[k] - mid[k]) / (mid[k] or 1.0))
    return slow, mid[slow]


WINDOW = "trace.window_ms"
STEPLESS = (
    "the traces have no ProfilerStep#N markers, and their windows differ by more than {:.0%}: "
    "they were not recorded over the same time (profile with torch.profiler.schedule and call "
    "prof.step() every iteration)"
)


def _windows(given: JobInputs) -> dict[str, Mapping[str, Fact]]:
    """Ranks of traces without step markers, by label: compared on their one window when the
    windows are about as long (the ranks were recorded over the same time)."""
    return {label: r.facts for label, r in given.recorders if WINDOW in r.facts}


def _comparable(windows: Mapping[str, Mapping[str, Fact]], tolerance: float) -> bool:
    lengths = [float(f[WINDOW].value) for f in windows.values()]
    return len(lengths) >= 2 and min(lengths) > 0 and max(lengths) / min(lengths) <= 1 + tolerance


def derive(given: JobInputs, job: Recorder) -> None:
    timed: Mapping[str, Mapping[str, Fact]] = timed_ranks(given.recorders)
    key, unit = "step.time_ms", "step"
    if len(timed) < 2:
        windows = _windows(given)
        tolerance = given.thresholds.stepless_window_tolerance
        if len(windows) < 2:
            for fact_id in SPREAD_FACTS:
                job.miss(fact_id, "fewer than two ranks with step data")
            return
        if not _comparable(windows, tolerance):
            for fact_id in SPREAD_FACTS:
                job.miss(fact_id, STEPLESS.format(tolerance))
            return
        timed, key, unit = windows, WINDOW, "window"
    source, groups = given.source, given.stages[0]
    times = {label: float(f[key].value) for label, f in timed.items()}
    busy = {
        label: times[label]
        * (1.0 - (f["step.comm_exposed_ratio"].value if "step.comm_exposed_ratio" in f else 0.0))
        for label, f in timed.items()
    }
    stage = stage_of(groups, list(times))
    slow_time, mid_time = _slowest(times, stage)
    slow_busy, mid_busy = _slowest(busy, stage)
    within = " of its pipeline stage" if groups else ""
    if unit == "window":
        within += (
            "; no ProfilerStep#N markers: each rank's one window (the whole trace), compared "
            "because the windows cover about the same time"
        )
    job.add("ranks.count", len(timed), source, f"ranks: {', '.join(times)}")
    job.add(
        "ranks.step_time_spread_ratio",
        (times[slow_time] - mid_time) / mid_time if mid_time else 0.0,
        source,
        f"rank {slow_time}: {'window ' if unit == 'window' else ''}{times[slow_time]:.1f} ms vs "
        f"median {mid_time:.1f} ms{within}",
    )
    job.add(
        "ranks.busy_spread_ratio",
        (busy[slow_busy] - mid_busy) / mid_busy if mid_busy else 0.0,
        source,
        f"rank {slow_busy}: busy {busy[slow_busy]:.1f} ms vs median {mid_busy:.1f} ms{within}",
    )
    wait = max(0.0, busy[slow_busy] - mid_busy)
    pace = median(times[label] for label in times if stage[label] == stage[slow_busy])
    job.add(
        "ranks.wait_for_slowest_ratio",
        wait / pace if pace > 0 else 0.0,
        source,
        f"rank {slow_busy} is busy {wait:.1f} ms longer than the median of its peers{within}: "
        f"their wait for it, in their collectives, / their median {unit} time {pace:.1f} ms",
    )
    job.add(
        "ranks.median_busy_ratio",
        mid_busy / pace if pace > 0 else 0.0,
        source,
        f"median busy time {mid_busy:.1f} ms of the slowest rank's peers{within} / their median "
        f"{unit} time {pace:.1f} ms: turns the busy spread into a share of the step",
    )
    job.add(
        "ranks.slowest",
        int(slow_busy) if slow_busy.isdigit() else slow_busy,
        source,
        "largest step time minus exposed communication against its peers: the rank the others "
        "wait for",
    )


def derive_single(given: JobInputs, job: Recorder) -> None:
    job.add("ranks.count", 1, str(given.data.root), "single-rank profile")
    for fact_id in SPREAD_FACTS[1:]:
        job.miss(fact_id, "single-rank profile: profile several ranks to compare them")


DERIVER = Deriver[JobInputs](
    name="spread",
    scope=Scope.JOB,
    inputs=frozenset({"recorders", "stages", "source", "thresholds"}),
    reads=frozenset(),
    writes=frozenset(SPREAD_FACTS),
    derive=derive,
    applies=lambda given: given.several,
)
SINGLE_RANK = Deriver[JobInputs](
    name="single-rank",
    scope=Scope.JOB,
    inputs=frozenset({"data", "recorders"}),
    reads=frozenset(),
    writes=frozenset(SPREAD_FACTS),
    derive=derive_single,
    applies=lambda given: not given.several,
)
