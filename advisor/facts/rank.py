"""One rank: its facts, then the compact summary the job-level facts are built from.

`summarize` is what a worker returns for a rank: the rank's own facts and the few small things
the job level needs (its id, process groups, link totals, where each value came from), never
raw events or tables, so thousands of ranks fit in memory and travel between processes.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from advisor.facts import attrib, comm, host, memory, ops, steps
from advisor.facts import profile as profile_facts
from advisor.facts.base import Recorder
from advisor.inputs.taxonomy import Taxonomy
from advisor.model import JOB_SCOPE, Fact, MissingFact
from advisor.parsers.profile_data import LinkStat, ProcessGroup, RankProfile


def derive_rank(rank: RankProfile, taxonomy: Taxonomy, scope: str) -> Recorder:
    out = Recorder(scope)
    profile_facts.derive(rank, out, taxonomy)
    steps.derive(rank, taxonomy, out)
    rows, steady, source = steps.steady_rows(rank, taxonomy)
    attrib.derive(rank, rows, source, out)
    ops.derive(rank, steady, taxonomy, out)
    host.derive(rank, taxonomy, out)
    comm.derive(
        rank,
        steady,
        out,
        taxonomy,
        source=rank.path.name if rank.framework == "pytorch" else comm.COMM,
    )
    memory.derive(rank, out)
    if rank.sources:
        rename_sources(out, rank.sources)
    if rank.stepless:
        _withhold_step_claims(out)
    for name, count in rank.dropped.items():
        for fact_id, fact in list(out.facts.items()):
            if name in fact.source:
                note = (
                    f"{fact.note}; {count} row(s) of {name} dropped (values that cannot be right)"
                )
                out.facts[fact_id] = replace(fact, note=note.lstrip("; "))
    return out


# Facts that claim something per step or about the step's length; a trace without step markers
# has one window of arbitrary length, so they are withheld (ratios over the window remain).
_STEP_CLAIMS = ("step.time_ms", "step.time_mad_ms", "step.steady_steps", "attrib.")


def _withhold_step_claims(out: Recorder) -> None:
    for fact_id in list(out.facts):
        if fact_id.endswith("_per_step") or fact_id.startswith(_STEP_CLAIMS):
            if fact_id.endswith("_ratio") or fact_id == "attrib.comm_exposed_by_kind_ms":
                continue
            del out.facts[fact_id]
            out.miss(
                fact_id,
                "the trace has no ProfilerStep#N markers: one window of arbitrary length, no "
                "per-step value (profile with torch.profiler.schedule and call prof.step())",
            )


def rename_sources(out: Recorder, sources: dict[str, str]) -> None:
    """Facts name the text export's files; say which table a database export's value came from."""
    for fact_id, fact in list(out.facts.items()):
        for name, replacement in sources.items():
            if name in fact.source:
                fact = replace(fact, source=fact.source.replace(name, replacement))
        out.facts[fact_id] = fact


@dataclass
class RankSummary:
    """A rank once read: its facts (scope job until the cluster places it) and what the job
    level needs besides."""

    path: Path
    rank: int | None
    facts: dict[str, Fact]
    missing: dict[str, MissingFact]
    process_groups: dict[str, ProcessGroup] = field(default_factory=dict)
    links: list[LinkStat] | None = None
    sources: dict[str, str] = field(default_factory=dict)
    inputs: list[Path] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # read in full (kernels, trace, communication); False: the step model only (two-tier reads)
    deep: bool = True

    @property
    def label(self) -> str:
        return f"rank {self.rank}" if self.rank is not None else self.path.name

    def recorder(self, scope: str) -> Recorder:
        """The rank's facts under `scope` (rank:N in a cluster, job for a single rank)."""
        if scope == JOB_SCOPE:
            return Recorder(scope, dict(self.facts), dict(self.missing))
        return Recorder(
            scope,
            {k: replace(f, scope=scope) for k, f in self.facts.items()},
            {k: replace(m, scope=scope) for k, m in self.missing.items()},
        )


def summarize(rank: RankProfile, taxonomy: Taxonomy, deep: bool = True) -> RankSummary:
    """Derive a rank's facts and keep only what the job level needs."""
    out = derive_rank(rank, taxonomy, JOB_SCOPE) if deep else derive_steps_only(rank, taxonomy)
    return RankSummary(
        path=rank.path,
        rank=rank.rank,
        facts=out.facts,
        missing=out.missing,
        process_groups=dict(rank.process_groups),
        links=rank.links,
        sources=dict(rank.sources),
        inputs=list(rank.inputs),
        warnings=list(rank.warnings),
        deep=deep,
    )


def derive_steps_only(rank: RankProfile, taxonomy: Taxonomy) -> Recorder:
    """The cheap tier: the profile's header, the step model and, when read, the communication
    summary; nothing is called missing (the deep ranks speak for what this rank was not read
    for)."""
    out = Recorder(JOB_SCOPE)
    profile_facts.derive(rank, out, taxonomy)
    steps.derive(rank, taxonomy, out)
    if rank.comm is not None:
        _, steady, _ = steps.steady_rows(rank, taxonomy)
        comm.derive(rank, steady, out, taxonomy)
    if rank.sources:
        rename_sources(out, rank.sources)
    out.missing.clear()
    return out
