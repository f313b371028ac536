"""One rank: its facts, then the compact summary the job-level facts are built from.

`summarize` is what a worker returns for a rank (facts/summary.py): the rank's own facts and
the few small things the job level needs, never raw events or tables.
"""

from __future__ import annotations

from dataclasses import replace

from advisor.facts import registry
from advisor.facts.base import Recorder
from advisor.facts.comm import COMM
from advisor.facts.contract import RankInputs, Scope
from advisor.facts.summary import RankSummary
from advisor.inputs.taxonomy import Taxonomy
from advisor.model import JOB_SCOPE
from advisor.parsers.profile_data import RankProfile

__all__ = ["RankSummary", "derive_rank", "derive_steps_only", "rename_sources", "summarize"]

WINDOW = "trace.window_ms"
# the cheap tier: the profile's header, the step model and, when read, the communication summary
# the cheap tier's derivers: the header, the step model, the communication summary, and the
# exposed communication split into pipeline wait and the rest, so the pipeline's receive wait is
# left out of the communication bottleneck's cost on every tier
STEP_MODEL = ("profile", "steps", "comm", "exposure")


def derive_rank(rank: RankProfile, taxonomy: Taxonomy, scope: str) -> Recorder:
    out = Recorder(scope)
    comm_source = rank.path.name if rank.framework == "pytorch" else COMM
    registry.run(Scope.RANK, RankInputs(rank, taxonomy, comm_source), out)
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
    whole = out.facts.get("step.time_ms")
    if whole is not None:
        # the one window itself: what ranks recorded together can be compared on
        out.add(
            WINDOW,
            whole.value,
            whole.source,
            "the device activity of the whole trace (no ProfilerStep#N markers): not a step",
        )
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
    wanted = STEP_MODEL if rank.comm is not None else tuple(d for d in STEP_MODEL if d != "comm")
    registry.run(Scope.RANK, RankInputs(rank, taxonomy), out, only=wanted)
    if rank.sources:
        rename_sources(out, rank.sources)
    out.missing.clear()
    return out
