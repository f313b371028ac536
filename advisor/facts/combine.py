"""The job's value of each rank fact: how the ranks' facts combine into one.

Each fact's catalogue entry says how (facts/catalogue.py): the largest value (step time, memory
peaks), the median (ratios, per-step counts), the value of the representative rank (the median
step time's: structured values), or the first rank's (identical everywhere). With pipeline
stages, medians and the representative come from the slowest stage, the one that sets the pace.
"""

from __future__ import annotations

from enum import Enum
from statistics import median

from advisor.facts.base import Recorder
from advisor.facts.catalogue import Combine, spec_for
from advisor.facts.stages import compute_ms
from advisor.model import JOB_SCOPE, Fact, MissingFact


class Staged(Enum):
    """Which ranks a median is taken over in a pipeline job."""

    NO = "no"  # no pipeline stages: every rank
    SLOWEST = "slowest"  # the ranks of the stage that sets the pace
    OTHERS = "others"  # that stage's ranks lack the fact: the other stages' ranks


def _numbers(facts: list[tuple[str, Fact]], booleans: bool) -> bool:
    return all(
        isinstance(f.value, int | float) and (booleans or not isinstance(f.value, bool))
        for _, f in facts
    )


def _max(fact_id: str, facts: list[tuple[str, Fact]]) -> Fact:
    label, best = max(facts, key=lambda lf: lf[1].value)
    note = f"max over {len(facts)} ranks (rank {label}); {best.note}"
    return Fact(fact_id, best.value, spec_for(fact_id).unit, JOB_SCOPE, best.source, note)


def _labels(facts: list[tuple[str, Fact]]) -> str:
    labels = [label for label, _ in facts]
    return ", ".join(labels) if len(labels) <= 8 else f"{', '.join(labels[:8])}, ..."


def _median(fact_id: str, facts: list[tuple[str, Fact]], staged: Staged) -> Fact:
    values = [f.value for _, f in facts]
    ranks = f"{len(facts)} ranks ({_labels(facts)})"
    which = {
        Staged.NO: ranks,
        Staged.SLOWEST: f"the {ranks} of the slowest pipeline stage",
        # the fact was measured only outside the pace-setting stage: say whose it is
        Staged.OTHERS: f"the {ranks} that have it, none of them in the slowest pipeline stage",
    }[staged]
    first = facts[0][1]
    note = f"median over {which} (min {min(values):.4g}, max {max(values):.4g}); per rank: {first.note}"
    return Fact(fact_id, median(values), spec_for(fact_id).unit, JOB_SCOPE, first.source, note)


def _first(fact_id: str, facts: list[tuple[str, Fact]]) -> Fact:
    first = facts[0][1]
    differing = sorted({str(f.value) for _, f in facts})
    note = (
        first.note
        if len(differing) == 1
        else f"differs across ranks ({', '.join(differing[:4])}); rank {facts[0][0]}'s value"
    )
    return Fact(fact_id, first.value, spec_for(fact_id).unit, JOB_SCOPE, first.source, note)


def _represented(
    fact_id: str, facts: list[tuple[str, Fact]], representative: str | None, staged: bool
) -> Fact | None:
    for label, fact in facts:
        if label == representative:
            return Fact(
                fact_id,
                fact.value,
                spec_for(fact_id).unit,
                JOB_SCOPE,
                fact.source,
                f"rank {label} (median step time"
                f"{' of the slowest pipeline stage' if staged else ''}); {fact.note}",
            )
    return None


def combine(
    fact_id: str,
    facts: list[tuple[str, Fact]],
    representative: str | None,
    staged: Staged,
    peak_rank: str | None = None,
) -> Fact:
    """One fact of the job from the ranks' (`staged`: which ranks the medians are over;
    `peak_rank`: the rank with the highest memory peak)."""
    how = spec_for(fact_id).combine
    if how is Combine.MAX and _numbers(facts, booleans=True):
        return _max(fact_id, facts)
    if how is Combine.PEAK_RANK:
        for label, fact in facts:
            if label == peak_rank:
                note = f"rank {label} (the highest memory peak); {fact.note}"
                return Fact(fact_id, fact.value, fact.unit, JOB_SCOPE, fact.source, note)
    if how is Combine.MEDIAN and _numbers(facts, booleans=False):
        return _median(fact_id, facts, staged)
    if how is Combine.REPRESENTATIVE and representative is not None:
        found = _represented(fact_id, facts, representative, staged is not Staged.NO)
        if found is not None:
            return found
    return _first(fact_id, facts)


# the peak a rank's memory attribution belongs to, best first
PEAK_FACTS = ("memory.allocated_peak_bytes", "memory.reserved_peak_bytes")


def highest_memory_peak(recorders: list[tuple[str, Recorder]]) -> str | None:
    """The rank whose allocator peaked highest: the one that runs out of memory first, whose
    own curve says what to shrink (static and dynamic of different ranks do not add up)."""
    for fact_id in PEAK_FACTS:
        peaks = [
            (r.facts[fact_id].value, label)
            for label, r in recorders
            if fact_id in r.facts and isinstance(r.facts[fact_id].value, int | float)
        ]
        if peaks:
            return max(peaks)[1]
    return None


def representative(recorders: list[tuple[str, Recorder]]) -> str | None:
    """The rank with the median step time (the lower middle of an even count)."""
    timed = [
        (r.facts["step.time_ms"].value, label)
        for label, r in recorders
        if "step.time_ms" in r.facts
    ]
    if not timed:
        return None
    timed.sort()
    return timed[(len(timed) - 1) // 2][1]


def critical_stage(
    recorders: list[tuple[str, Recorder]], groups: list[list[str]] | None
) -> set[str] | None:
    """The ranks of the stage with the most device compute per step (it sets the pipeline's
    pace); None without pipeline stages."""
    if groups is None or len(groups) < 2:
        return None
    facts = dict(recorders)

    def stage_compute(group: list[str]) -> float:
        values = [compute_ms(facts[label].facts) for label in group if label in facts]
        known = [v for v in values if v is not None]
        return median(known) if known else 0.0

    computes = [stage_compute(group) for group in groups]
    return set(groups[computes.index(max(computes))])


def combine_ranks(
    recorders: list[tuple[str, Recorder]], groups: list[list[str]] | None
) -> Recorder:
    """The job's recorder holding every rank fact combined (and the facts no rank has, missing
    with the first rank's reason)."""
    job = Recorder(JOB_SCOPE)
    critical = critical_stage(recorders, groups)
    in_stage = [(label, rec) for label, rec in recorders if critical is None or label in critical]
    chosen = representative(in_stage)
    peak_rank = highest_memory_peak(recorders)
    ids: dict[str, None] = {}
    for _, rec in recorders:
        ids.update(dict.fromkeys(rec.facts))
        ids.update(dict.fromkeys(rec.missing))
    for fact_id in ids:
        present = [(label, rec.facts[fact_id]) for label, rec in recorders if fact_id in rec.facts]
        staged = Staged.NO if critical is None else Staged.SLOWEST
        if critical is not None and spec_for(fact_id).combine is Combine.MEDIAN:
            # ranks of different stages play different roles: the pace-setting stage speaks
            of_stage = [(label, fact) for label, fact in present if label in critical]
            if not of_stage:
                staged = Staged.OTHERS
            present = of_stage or present
        if present:
            job.facts[fact_id] = combine(fact_id, present, chosen, staged, peak_rank)
        else:
            reasons = [rec.missing[fact_id] for _, rec in recorders if fact_id in rec.missing]
            job.missing[fact_id] = MissingFact(
                fact_id, JOB_SCOPE, f"{reasons[0].reason} (all ranks)"
            )
    return job
