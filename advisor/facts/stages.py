"""Pipeline stages of a cluster profile, found from the ranks' own facts.

Ranks that exchange activations (send/recv) run pipeline stages; the ranks of one stage run
the same layers, so their device compute is nearly equal, while stages differ. Sorted by
compute, a jump larger than the taxonomy's `stage_split_gap` between neighbours starts a new
stage. Slow-rank facts then compare each rank with the ranks of its own stage.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import pairwise
from statistics import median

from advisor.facts.base import Recorder
from advisor.facts.contract import Deriver, JobInputs, Scope
from advisor.model import Fact

RankFacts = Mapping[str, Fact]


def _number(facts: RankFacts, fact_id: str) -> float | None:
    fact = facts.get(fact_id)
    if fact is None or isinstance(fact.value, bool) or not isinstance(fact.value, int | float):
        return None
    return float(fact.value)


def _pipelined(ranks: Mapping[str, RankFacts]) -> bool:
    return any(
        (fact := f.get("job.pipeline_parallel")) is not None and fact.value is True
        for f in ranks.values()
    )


def compute_ms(facts: RankFacts) -> float | None:
    step, share = _number(facts, "step.time_ms"), _number(facts, "step.compute_ratio")
    return None if step is None or share is None else step * share


def stages(ranks: Mapping[str, RankFacts], gap: float) -> list[list[str]] | None:
    """Ranks grouped by stage (fastest stage first); None when the job shows no pipeline or
    a rank lacks the facts to place it."""
    if not any(
        f.get("job.pipeline_parallel") and f["job.pipeline_parallel"].value for f in ranks.values()
    ):
        return None
    return compute_groups(ranks, gap)


def compute_groups(ranks: Mapping[str, RankFacts], gap: float) -> list[list[str]] | None:
    """Ranks grouped by device compute per step: sorted, a relative jump above `gap` starts a
    new group (the stages of a pipeline; a straggler apart from its peers)."""
    timed = {label: compute_ms(f) for label, f in ranks.items()}
    if any(value is None for value in timed.values()):
        return None
    ordered = sorted(timed, key=lambda label: (timed[label], label))
    groups: list[list[str]] = [[ordered[0]]]
    for previous, label in pairwise(ordered):
        low, high = timed[previous] or 0.0, timed[label] or 0.0
        if low > 0 and (high - low) / low > gap:
            groups.append([])
        groups[-1].append(label)
    return [sorted(group, key=_rank_order) for group in groups]


def _rank_order(label: str) -> tuple[int, str]:
    return (int(label), "") if label.isdigit() else (1 << 30, label)


def stage_of(groups: list[list[str]] | None, labels: list[str]) -> dict[str, int]:
    """rank label -> stage index (0 for every rank when there is no pipeline)."""
    if not groups:
        return dict.fromkeys(labels, 0)
    return {label: i for i, group in enumerate(groups) for label in group}


PIPELINE_IDS = (
    "pipeline.stages",
    "pipeline.stage_ranks",
    "pipeline.stage_compute_ms",
    "pipeline.stage_imbalance_ratio",
    "pipeline.stage_excess_ratio",
    "pipeline.slowest_stage_p2p_ratio",
)
_NOT_READ = (
    "step models only (--deep 0, no communication.json): whether ranks exchange "
    "activations (send/recv) was not read"
)


def _groups_or_reason(
    ranks: Mapping[str, RankFacts], groups: list[list[str]] | None, traffic_read: bool
) -> tuple[list[list[str]] | None, str]:
    """The stages to report, or why there are none."""
    if groups is not None:
        return groups, ""
    if len(ranks) >= 2 and not _pipelined(ranks):
        if not traffic_read:
            return None, _NOT_READ
        return [sorted(ranks, key=_rank_order)], ""  # no send/recv: every rank in one stage
    if len(ranks) < 2:
        return None, "fewer than two ranks with step data: stages cannot be told apart"
    return None, "a rank lacks step time or compute ratio: stages cannot be told apart"


def _how(ranks: Mapping[str, RankFacts], groups: list[list[str]], stated: str | None) -> str:
    if stated:
        return f"stages from the {stated}"
    if len(groups) > 1:
        return "send/recv between ranks; grouped by device compute per step"
    if _pipelined(ranks):
        return "send/recv between ranks, but every rank computes about the same (balanced stages)"
    return "no send/recv between ranks: one stage"


def _slowest_stage_p2p(
    ranks: Mapping[str, RankFacts], slowest: list[str], job: Recorder, source: str, stages: int
) -> None:
    fact_id = "pipeline.slowest_stage_p2p_ratio"
    waits = [w for label in slowest if (w := _number(ranks[label], "comm.p2p_ratio")) is not None]
    measure = "comm.p2p_ratio"
    if not waits and stages > 1:
        # stages stated by the cluster file without send/recv detail: the Bubble column is the
        # slowest stage's receive wait
        measure = "step.pipeline_wait_ratio"
        waits = [w for label in slowest if (w := _number(ranks[label], measure)) is not None]
    if not _pipelined(ranks) and stages < 2:
        job.miss(fact_id, "no send/recv between ranks: no pipeline")
    elif waits:
        job.add(
            fact_id,
            median(waits),
            source,
            f"median {measure} of ranks {', '.join(slowest)} (the slowest stage): no slower "
            "stage keeps them waiting, so their wait is the schedule's fill and drain plus the "
            "transfers",
        )
    else:
        job.miss(fact_id, "the slowest stage's ranks have no send/recv or receive-wait time")


def pipeline_facts(
    ranks: Mapping[str, RankFacts],
    groups: list[list[str]] | None,
    job: Recorder,
    source: str,
    stated: str | None = None,
    traffic_read: bool = True,
) -> None:
    """`stated`: where the stages were read from when the profile states them (else inferred);
    `traffic_read`: whether the ranks' send/recv was read (not with step models alone)."""
    groups, reason = _groups_or_reason(ranks, groups, traffic_read)
    if groups is None:
        for fact_id in PIPELINE_IDS:
            job.miss(fact_id, reason)
        return
    computes = [median(compute_ms(ranks[label]) or 0.0 for label in group) for group in groups]
    step = median(_number(f, "step.time_ms") or 0.0 for f in ranks.values())
    listing = "; ".join(
        f"ranks {', '.join(group)}: {ms:.1f} ms" for group, ms in zip(groups, computes, strict=True)
    )
    note = f"{_how(ranks, groups, stated)} ({listing})"
    job.add("pipeline.stages", len(groups), source, note)
    job.add(
        "pipeline.stage_ranks",
        [[int(r) if r.isdigit() else r for r in group] for group in groups],
        source,
        f"in {stated}'s order (pipeline order)" if stated else "fastest stage first",
    )
    job.add("pipeline.stage_compute_ms", [round(ms, 3) for ms in computes], source, note)
    imbalance = (max(computes) - min(computes)) / step if step > 0 else 0.0
    ratio = max(computes) / min(computes) if min(computes) > 0 else 0.0
    job.add(
        "pipeline.stage_imbalance_ratio",
        imbalance,
        source,
        f"slowest stage computes {ratio:.2f}x the fastest; difference / median step time "
        f"{step:.1f} ms",
    )
    mean = sum(computes) / len(computes)
    job.add(
        "pipeline.stage_excess_ratio",
        (max(computes) - mean) / step if step > 0 else 0.0,
        source,
        f"slowest stage's compute {max(computes):.1f} ms less the stages' mean {mean:.1f} ms, "
        f"over the median step time {step:.1f} ms: what moving layers to an even split removes",
    )
    _slowest_stage_p2p(ranks, groups[computes.index(max(computes))], job, source, len(groups))


def timed_ranks(recorders: list[tuple[str, Recorder]]) -> dict[str, RankFacts]:
    """The facts of the ranks with a step time, by label."""
    return {label: r.facts for label, r in recorders if "step.time_ms" in r.facts}


def stage_groups(
    recorders: list[tuple[str, Recorder]], gap: float, known: list[list[str]] | None
) -> tuple[list[list[str]] | None, str | None]:
    """The ranks of each pipeline stage (stated by the cluster file, else inferred) and where
    they came from (None: inferred)."""
    timed = timed_ranks(recorders)
    if not known:
        return (stages(timed, gap) if len(timed) >= 2 else None), None
    kept = [[label for label in g if label in timed] for g in known]
    # ranks the file's stages do not list (a rank directory of another run) stand apart
    listed = {label for g in kept for label in g}
    kept.append(sorted(set(timed) - listed, key=lambda x: (not x.isdigit(), x.zfill(12))))
    return [g for g in kept if g] or None, "stage rows of cluster_step_trace_time.csv"


NO_MARKERS = (
    "the traces have no ProfilerStep#N markers: stages are told apart by compute per step "
    "(profile with torch.profiler.schedule and call prof.step() every iteration)"
)


def derive(given: JobInputs, job: Recorder) -> None:
    groups, stated = given.stages
    timed = timed_ranks(given.recorders)
    stepless = [label for label, r in given.recorders if "trace.window_ms" in r.facts]
    if len(timed) < 2 and len(stepless) >= 2:
        for fact_id in PIPELINE_IDS:
            job.miss(fact_id, NO_MARKERS)
        return
    pipeline_facts(
        timed_ranks(given.recorders), groups, job, given.source, stated, given.traffic_read
    )


DERIVER = Deriver[JobInputs](
    name="pipeline",
    scope=Scope.JOB,
    inputs=frozenset({"recorders", "stages", "source", "traffic_read"}),
    reads=frozenset(),
    writes=frozenset(PIPELINE_IDS),
    derive=derive,
    applies=lambda given: given.several,
)
