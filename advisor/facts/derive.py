"""Derive the facts of a whole profile: per rank, then combined into job-level facts.

The ranks' facts come from rank directories (their summaries) and from msprof-analyze's
cluster output; several ranks combine into the job's facts (facts/combine.py), then the job
derivers (the registry's job scope) add what only the job has: stages, spread, groups, links.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from advisor.facts import cluster, registry, stages
from advisor.facts.base import Recorder
from advisor.facts.catalogue import catalogue
from advisor.facts.cluster_ranks import add_cluster_ranks, cluster_only
from advisor.facts.combine import combine_ranks
from advisor.facts.contract import JobInputs, Scope
from advisor.facts.summary import RankSummary
from advisor.inputs.taxonomy import Taxonomy
from advisor.model import JOB_SCOPE, Fact, FactSet, rank_scope
from advisor.parsers.profile_data import ProfileData

# present in a rank's facts once its send/recv is known (its communication was read)
PIPELINE_FACT = "job.pipeline_parallel"


def _label(rank: RankSummary, index: int) -> str:
    return str(rank.rank) if rank.rank is not None else f"#{index}"


def _cluster_files(data: ProfileData) -> str:
    used = [p.name for p in (data.cluster_source, data.cluster_comm_source) if p is not None]
    return "+".join(used) or "cluster_analysis_output"


def _ordered(facts: Iterable[Fact]) -> list[Fact]:
    order = {fact_id: i for i, fact_id in enumerate(catalogue().specs)}
    return sorted(facts, key=lambda f: (order.get(f.id, len(order)), f.id))


def _rank_recorders(
    data: ProfileData, ranks: list[RankSummary], taxonomy: Taxonomy, warnings: list[str]
) -> tuple[list[tuple[str, Recorder]], str]:
    """Every rank's facts by label (rank directories first, then the cluster file's other
    ranks), scoped rank:N when there are several, and the source the job's facts cite."""
    if not ranks:
        return cluster_only(data, taxonomy), _cluster_files(data)

    def scoped(rank: RankSummary, i: int, several: bool) -> tuple[str, Recorder]:
        scope = rank_scope(rank.rank if rank.rank is not None else i) if several else JOB_SCOPE
        return _label(rank, i), rank.recorder(scope)

    several = len(ranks) > 1
    recorders = [scoped(rank, i, several) for i, rank in enumerate(ranks)]
    if not (data.cluster_rows or data.cluster_comm):
        return recorders, "rank directories"
    extra = add_cluster_ranks(data, recorders, cluster_only(data, taxonomy), warnings)
    if not extra:
        return recorders, "rank directories"
    if not several:  # the one rank directory is a rank among the cluster's
        recorders = [scoped(ranks[0], 0, True)]
    return recorders + extra, f"rank directories + {_cluster_files(data)}"


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
    recorders, source = _rank_recorders(data, ranks, taxonomy, result.warnings)
    # a job of several ranks: rank directories, or the cluster file's ranks
    several = not ranks or len(ranks) > 1 or len(recorders) > len(ranks)
    given = JobInputs(data, ranks, recorders, taxonomy, several, source, coverage=coverage)
    if not given.several:
        job = recorders[0][1]
        registry.run(Scope.JOB, given, job)
        result.facts = _ordered(job.facts.values())
        result.missing = list(job.missing.values())
        return result
    known = cluster.stage_groups(data.cluster_stages, [label for label, _ in recorders])
    given.stages = stages.stage_groups(recorders, given.thresholds.stage_split_gap, known)
    # send/recv is known from a rank read in full or from a communication summary
    given.traffic_read = not ranks or any(r.deep or PIPELINE_FACT in r.facts for r in ranks)
    job = combine_ranks(recorders, given.stages[0])
    registry.run(Scope.JOB, given, job)
    scoped = [f for _, rec in recorders for f in rec.facts.values()]
    result.facts = _ordered(job.facts.values()) + _ordered(scoped)
    result.missing = list(job.missing.values())
    return result
