"""How far the slowest rank is from its peers: step time and busy time (step time less
exposed communication) against the median of the ranks of its own pipeline stage, since
stages differ by design. The busy spread names the rank the others wait for."""

from __future__ import annotations

from statistics import median

from advisor.facts.base import Recorder
from advisor.facts.contract import Deriver, JobInputs, Scope
from advisor.facts.stages import stage_of, timed_ranks

SPREAD_FACTS = (
    "ranks.count",
    "ranks.step_time_spread_ratio",
    "ranks.busy_spread_ratio",
    "ranks.slowest",
)


def _slowest(values: dict[str, float], stage: dict[str, int]) -> tuple[str, float]:
    """The rank furthest above the median of its stage, and that median."""
    peers = {s: [label for label in values if stage[label] == s] for s in set(stage.values())}
    mid = {label: median(values[p] for p in peers[stage[label]]) for label in values}
    slow = max(values, key=lambda k: (values[k] - mid[k]) / (mid[k] or 1.0))
    return slow, mid[slow]


def derive(given: JobInputs, job: Recorder) -> None:
    timed = timed_ranks(given.recorders)
    if len(timed) < 2:
        for fact_id in SPREAD_FACTS:
            job.miss(fact_id, "fewer than two ranks with step data")
        return
    source, groups = given.source, given.stages[0]
    times = {label: float(f["step.time_ms"].value) for label, f in timed.items()}
    busy = {
        label: times[label]
        * (1.0 - (f["step.comm_exposed_ratio"].value if "step.comm_exposed_ratio" in f else 0.0))
        for label, f in timed.items()
    }
    stage = stage_of(groups, list(times))
    slow_time, mid_time = _slowest(times, stage)
    slow_busy, mid_busy = _slowest(busy, stage)
    within = " of its pipeline stage" if groups else ""
    job.add("ranks.count", len(timed), source, f"ranks: {', '.join(times)}")
    job.add(
        "ranks.step_time_spread_ratio",
        (times[slow_time] - mid_time) / mid_time if mid_time else 0.0,
        source,
        f"rank {slow_time}: {times[slow_time]:.1f} ms vs median {mid_time:.1f} ms{within}",
    )
    job.add(
        "ranks.busy_spread_ratio",
        (busy[slow_busy] - mid_busy) / mid_busy if mid_busy else 0.0,
        source,
        f"rank {slow_busy}: busy {busy[slow_busy]:.1f} ms vs median {mid_busy:.1f} ms{within}",
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
    inputs=frozenset({"recorders", "stages", "source"}),
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
