"""Derive the facts of a whole profile: per rank, then combined into job-level facts."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from statistics import median
from typing import Any

from advisor.facts import cluster, comm, groups, links, stages, steps
from advisor.facts.base import Recorder
from advisor.facts.catalogue import CATALOGUE, Combine, spec_for
from advisor.facts.rank import RankSummary, rename_sources
from advisor.inputs.taxonomy import Taxonomy
from advisor.model import JOB_SCOPE, Fact, FactSet, MissingFact, rank_scope
from advisor.parsers.cluster.database import CLUSTER_DB
from advisor.parsers.profile_data import ProfileData, RankProfile

# present in a rank's facts once its send/recv is known (its communication was read)
PIPELINE_FACT = "job.pipeline_parallel"
CLUSTER_FACTS = (
    "ranks.count",
    "ranks.step_time_spread_ratio",
    "ranks.busy_spread_ratio",
    "ranks.slowest",
)


def _label(rank: RankSummary, index: int) -> str:
    return str(rank.rank) if rank.rank is not None else f"#{index}"


def _combine(
    fact_id: str,
    facts: list[tuple[str, Fact]],
    representative: str | None,
    critical: set[str] | None = None,
) -> Fact:
    spec = spec_for(fact_id)
    first = facts[0][1]
    n = len(facts)
    if spec.combine is Combine.MAX and all(isinstance(f.value, int | float) for _, f in facts):
        label, best = max(facts, key=lambda lf: lf[1].value)
        return Fact(
            fact_id,
            best.value,
            spec.unit,
            JOB_SCOPE,
            best.source,
            f"max over {n} ranks (rank {label}); {best.note}",
        )
    if spec.combine is Combine.MEDIAN and all(
        isinstance(f.value, int | float) and not isinstance(f.value, bool) for _, f in facts
    ):
        values = [f.value for _, f in facts]
        value = median(values)
        which = f"the {n} ranks of the slowest pipeline stage" if critical else f"{n} ranks"
        note = f"median over {which} (min {min(values):.4g}, max {max(values):.4g}); per rank: {first.note}"
        return Fact(fact_id, value, spec.unit, JOB_SCOPE, first.source, note)
    if spec.combine is Combine.REPRESENTATIVE and representative is not None:
        for label, fact in facts:
            if label == representative:
                return Fact(
                    fact_id,
                    fact.value,
                    spec.unit,
                    JOB_SCOPE,
                    fact.source,
                    f"rank {label} (median step time"
                    f"{' of the slowest pipeline stage' if critical else ''}); {fact.note}",
                )
    differing = sorted({str(f.value) for _, f in facts})
    note = (
        first.note
        if len(differing) == 1
        else f"differs across ranks ({', '.join(differing[:4])}); rank {facts[0][0]}'s value"
    )
    return Fact(fact_id, first.value, spec.unit, JOB_SCOPE, first.source, note)


def _representative(recorders: list[tuple[str, Recorder]]) -> str | None:
    timed = [
        (r.facts["step.time_ms"].value, label)
        for label, r in recorders
        if "step.time_ms" in r.facts
    ]
    if not timed:
        return None
    timed.sort()
    return timed[(len(timed) - 1) // 2][1]


def _stage_groups(
    recorders: list[tuple[str, Recorder]],
    taxonomy: Taxonomy,
    known_stages: list[list[str]] | None,
) -> tuple[list[list[str]] | None, str | None]:
    """The ranks of each pipeline stage (stated by the cluster file, else inferred) and where
    they came from (None: inferred)."""
    timed = [(label, r.facts) for label, r in recorders if "step.time_ms" in r.facts]
    if known_stages:
        timed_labels = {label for label, _ in timed}
        kept = [[label for label in g if label in timed_labels] for g in known_stages]
        # ranks the file's stages do not list (a rank directory of another run) stand apart
        listed = {label for g in kept for label in g}
        kept.append(sorted(timed_labels - listed, key=lambda x: (not x.isdigit(), x.zfill(12))))
        groups: list[list[str]] | None = [g for g in kept if g] or None
        how = "stage rows of cluster_step_trace_time.csv"
    else:
        groups = stages.stages(dict(timed), taxonomy.stage_split_gap) if len(timed) >= 2 else None
        how = None
    return groups, how


def _cluster_facts(
    recorders: list[tuple[str, Recorder]],
    job: Recorder,
    source: str,
    staged: tuple[list[list[str]] | None, str | None],
    traffic_read: bool,
) -> None:
    timed = [(label, r.facts) for label, r in recorders if "step.time_ms" in r.facts]
    groups, how = staged
    stages.pipeline_facts(dict(timed), groups, job, source, how, traffic_read)
    if len(timed) < 2:
        for fact_id in CLUSTER_FACTS:
            job.miss(fact_id, "fewer than two ranks with step data")
        return
    times = {label: f["step.time_ms"].value for label, f in timed}
    busy = {
        label: f["step.time_ms"].value
        * (1.0 - (f["step.comm_exposed_ratio"].value if "step.comm_exposed_ratio" in f else 0.0))
        for label, f in timed
    }
    # a rank is slow against the ranks of its own pipeline stage (stages differ by design)
    stage = stages.stage_of(groups, list(times))
    peers = {s: [label for label in times if stage[label] == s] for s in set(stage.values())}
    time_mid = {label: median(times[p] for p in peers[stage[label]]) for label in times}
    busy_mid = {label: median(busy[p] for p in peers[stage[label]]) for label in busy}
    slow_time = max(times, key=lambda k: (times[k] - time_mid[k]) / (time_mid[k] or 1.0))
    slow_busy = max(busy, key=lambda k: (busy[k] - busy_mid[k]) / (busy_mid[k] or 1.0))
    within = " of its pipeline stage" if groups else ""
    job.add("ranks.count", len(timed), source, f"ranks: {', '.join(times)}")
    mid_time, mid_busy = time_mid[slow_time], busy_mid[slow_busy]
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


def _job_from_ranks(
    recorders: list[tuple[str, Recorder]],
    source: str,
    taxonomy: Taxonomy,
    known_stages: list[list[str]] | None = None,
    traffic_read: bool = True,
) -> Recorder:
    """`traffic_read`: some rank was read in full, so the ranks' send/recv is known."""
    job = Recorder(JOB_SCOPE)
    staged = _stage_groups(recorders, taxonomy, known_stages)
    critical = _critical_stage(recorders, staged[0])
    in_stage = [(label, rec) for label, rec in recorders if critical is None or label in critical]
    representative = _representative(in_stage)
    ids: list[str] = []
    for _, rec in recorders:
        ids.extend(i for i in rec.facts if i not in ids)
        ids.extend(i for i in rec.missing if i not in ids)
    for fact_id in ids:
        present = [(label, rec.facts[fact_id]) for label, rec in recorders if fact_id in rec.facts]
        if critical is not None and spec_for(fact_id).combine is Combine.MEDIAN:
            # ranks of different stages play different roles: the pace-setting stage speaks
            present = [(label, fact) for label, fact in present if label in critical] or present
        if present:
            job.facts[fact_id] = _combine(fact_id, present, representative, critical)
        else:
            reasons = [rec.missing[fact_id] for _, rec in recorders if fact_id in rec.missing]
            job.missing[fact_id] = MissingFact(
                fact_id, JOB_SCOPE, f"{reasons[0].reason} (all ranks)"
            )
    _cluster_facts(recorders, job, source, staged, traffic_read)
    return job


def _critical_stage(
    recorders: list[tuple[str, Recorder]], groups: list[list[str]] | None
) -> set[str] | None:
    """The ranks of the stage with the most device compute per step (it sets the pipeline's
    pace); None without pipeline stages."""
    if groups is None or len(groups) < 2:
        return None
    facts = dict(recorders)

    def stage_compute(group: list[str]) -> float:
        values = [stages.compute_ms(facts[label].facts) for label in group if label in facts]
        known = [v for v in values if v is not None]
        return median(known) if known else 0.0

    computes = [stage_compute(group) for group in groups]
    return set(groups[computes.index(max(computes))])


def _cluster_only(data: ProfileData, taxonomy: Taxonomy) -> list[tuple[str, Recorder]]:
    """Per-rank facts from msprof-analyze's cluster output alone (no rank directories)."""
    by_rank: dict[int, list[Any]] = {}
    for row in data.cluster_rows or []:
        by_rank.setdefault(row.rank, []).append(row.row)
    comm_by_rank = data.cluster_comm or {}
    step_source = (
        f"{CLUSTER_DB}:ClusterStepTraceTime"
        if data.cluster_source is not None and data.cluster_source.name == CLUSTER_DB
        else "cluster_step_trace_time.csv"
    )
    comm_source = (
        f"{CLUSTER_DB}:ClusterCommAnalyzerTime"
        if data.cluster_comm_source is not None and data.cluster_comm_source.name == CLUSTER_DB
        else "cluster_communication.json"
    )
    recorders = []
    for rank_id in sorted(set(by_rank) | set(comm_by_rank)):
        rank = RankProfile(
            path=data.cluster_source or data.cluster_comm_source or data.root,
            output_dir=None,
            framework="torch_npu",
            rank=rank_id,
            step_rows=by_rank.get(rank_id),
            comm=comm_by_rank.get(rank_id),
        )
        out = Recorder(rank_scope(rank_id))
        if rank.step_rows:
            steps.derive(rank, taxonomy, out)
        if rank.comm is not None:
            _, steady, _ = steps.steady_rows(rank, taxonomy)
            comm.derive(rank, steady, out, taxonomy, source=comm_source)
        rename_sources(out, {"step_trace_time.csv": step_source})
        recorders.append((str(rank_id), out))
    return recorders


def _ranks_note(ranks: list[RankSummary], count: int, coverage: str) -> str:
    if not ranks:
        return "ranks in the cluster analysis output" + coverage
    if count > len(ranks):
        return (
            f"{count} ranks: {len(ranks)} rank directories (full detail) and the others "
            "from the cluster analysis output (step model and communication only)" + coverage
        )
    return "rank directories read" + coverage


def _cluster_files(data: ProfileData) -> str:
    used = [p.name for p in (data.cluster_source, data.cluster_comm_source) if p is not None]
    return "+".join(used) or "cluster_analysis_output"


def _ordered(facts: Iterable[Fact]) -> list[Fact]:
    order = {spec.id: i for i, spec in enumerate(CATALOGUE)}
    return sorted(facts, key=lambda f: (order.get(f.id, len(order)), f.id))


def derive_facts(
    data: ProfileData,
    ranks: list[RankSummary],
    taxonomy: Taxonomy,
    inputs: list[Path],
    coverage: str = "",
) -> FactSet:
    """Job-level facts from the ranks' summaries (and msprof-analyze's cluster output).
    `coverage` is appended to profile.ranks' note: which ranks were read how, which failed."""
    result = FactSet(inputs=[str(p) for p in inputs])
    if ranks:
        multi = len(ranks) > 1
        recorders = [
            (
                _label(rank, i),
                rank.recorder(
                    rank_scope(rank.rank if rank.rank is not None else i) if multi else JOB_SCOPE
                ),
            )
            for i, rank in enumerate(ranks)
        ]
        source = "rank directories"
        if data.cluster_rows or data.cluster_comm:
            extra = cluster.add_cluster_ranks(
                data, recorders, _cluster_only(data, taxonomy), result.warnings
            )
            if extra:
                if not multi:  # the one rank directory is a rank among the cluster's
                    single = ranks[0]
                    scope = rank_scope(single.rank if single.rank is not None else 0)
                    recorders = [(_label(single, 0), single.recorder(scope))]
                recorders = recorders + extra
                multi = True
                source = f"rank directories + {_cluster_files(data)}"
    else:
        recorders = _cluster_only(data, taxonomy)
        multi = True
        source = _cluster_files(data)
    if multi:
        groups_known = cluster.stage_groups(data.cluster_stages, [label for label, _ in recorders])
        # send/recv is known from a rank read in full or from a communication summary
        traffic_read = not ranks or any(r.deep or PIPELINE_FACT in r.facts for r in ranks)
        job = _job_from_ranks(recorders, source, taxonomy, groups_known, traffic_read)
        cluster.stage_bubbles(data, recorders, job)
        if ranks:
            by_label = {label: rank for (label, _), rank in zip(recorders, ranks, strict=False)}
            groups.job_groups(
                by_label,
                {
                    label: rec.facts[groups.GROUP_FACT].value
                    for label, rec in recorders
                    if groups.GROUP_FACT in rec.facts
                },
                job,
            )
        links.job_links(data, ranks, job, taxonomy)
        job.add(
            "profile.ranks",
            len(recorders),
            str(data.root),
            _ranks_note(ranks, len(recorders), coverage),
        )
        _ranks_in_full(ranks, str(data.root), job)
        scoped = [f for _, rec in recorders for f in rec.facts.values()]
        result.facts = _ordered(job.facts.values()) + _ordered(scoped)
        result.missing = list(job.missing.values())
    else:
        only = recorders[0][1]
        links.job_links(data, ranks, only, taxonomy)
        only.add("profile.ranks", 1, str(data.root), f"single rank ({ranks[0].label}){coverage}")
        only.add("ranks.count", 1, str(data.root), "single-rank profile")
        _ranks_in_full(ranks, str(data.root), only)
        for fact_id in CLUSTER_FACTS[1:]:
            only.miss(fact_id, "single-rank profile: profile several ranks to compare them")
        result.facts = _ordered(only.facts.values())
        result.missing = list(only.missing.values())
    return result


def _ranks_in_full(ranks: list[RankSummary], source: str, job: Recorder) -> None:
    """How many ranks were read in full, when not all were (two tiers, --deep)."""
    deep = sum(1 for r in ranks if r.deep)
    if ranks and deep < len(ranks):
        job.add(
            "profile.ranks_in_full",
            deep,
            source,
            f"{deep} of {len(ranks)} ranks read in full, the others' step model only (--deep)",
        )
