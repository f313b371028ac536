"""How much of the job the facts rest on: the ranks profiled, and how many were read in full
when the ranks were read in two tiers (the others: their step model only, --deep)."""

from __future__ import annotations

from advisor.facts.base import Recorder
from advisor.facts.contract import Deriver, JobInputs, Scope
from advisor.facts.summary import RankSummary


def _ranks_note(ranks: list[RankSummary], count: int, coverage: str) -> str:
    if not ranks:
        return "ranks in the cluster analysis output" + coverage
    if count > len(ranks):
        return (
            f"{count} ranks: {len(ranks)} rank directories (full detail) and the others "
            "from the cluster analysis output (step model and communication only)" + coverage
        )
    return "rank directories read" + coverage


def derive(given: JobInputs, job: Recorder) -> None:
    ranks, root = given.ranks, str(given.data.root)
    if given.several:
        note = _ranks_note(ranks, len(given.recorders), given.coverage)
    else:
        note = f"single rank ({ranks[0].label}){given.coverage}"
    job.add("profile.ranks", len(given.recorders), root, note)
    deep = sum(1 for r in ranks if r.deep)
    if ranks and deep < len(ranks):
        job.add(
            "profile.ranks_in_full",
            deep,
            root,
            f"{deep} of {len(ranks)} ranks read in full, the others' step model only (--deep)",
        )


DERIVER = Deriver[JobInputs](
    name="coverage",
    scope=Scope.JOB,
    inputs=frozenset({"data", "ranks", "recorders", "coverage"}),
    reads=frozenset(),
    writes=frozenset({"profile.ranks", "profile.ranks_in_full"}),
    derive=derive,
)
