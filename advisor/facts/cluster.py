"""msprof-analyze's cluster output beside (or instead of) rank directories.

cluster_step_trace_time.csv holds every rank's step model; a large job is often shared as that
file plus the trace of a few ranks. Every rank of the cluster file takes part in the job-level
facts; a rank directory adds its detail (kernels, trace, memory) for its rank. The file's stage
rows say which ranks form a pipeline stage: stage facts and the bubble are then reported per
stage, never as a median over ranks that play different roles.
"""

from __future__ import annotations

from statistics import median

from advisor.facts.base import Recorder
from advisor.facts.contract import Deriver, JobInputs, Scope
from advisor.parsers.profile_data import ClusterStage


def stage_groups(stages: list[ClusterStage] | None, labels: list[str]) -> list[list[str]] | None:
    """Stage membership from the file's stage rows, restricted to the ranks present."""
    if not stages:
        return None
    present = set(labels)
    groups = [[str(r) for r in s.ranks if str(r) in present] for s in stages]
    groups = [g for g in groups if g]
    return groups or None


def stage_bubbles(given: JobInputs, job: Recorder) -> None:
    """pipeline.stage_bubble_ratio per stage and the job's bubble: the worst stage's."""
    data = given.data
    stages = data.cluster_stages
    if not stages or len(stages) < 2:
        return
    by_label = dict(given.recorders)
    source = data.cluster_source.name if data.cluster_source else "cluster_step_trace_time.csv"
    ratios: list[float] = []
    for stage in stages:
        values = [
            float(fact.value)
            for r in stage.ranks
            if (rec := by_label.get(str(r))) is not None
            and (fact := rec.facts.get("step.bubble_ratio")) is not None
        ]
        if values:
            ratios.append(median(values))
        else:
            row = stage.row
            ratios.append((row.bubble or 0.0) / row.total if row.total > 0 else 0.0)
    listing = "; ".join(
        f"ranks {s.ranks[0]}-{s.ranks[-1]}: {ratio:.1%}"
        for s, ratio in zip(stages, ratios, strict=True)
    )
    job.add(
        "pipeline.stage_bubble_ratio",
        [round(r, 4) for r in ratios],
        f"{source}:Bubble",
        f"median Bubble / step time of each stage's ranks, in the file's stage order ({listing})",
    )
    worst = max(range(len(ratios)), key=ratios.__getitem__)
    ranks = stages[worst].ranks
    job.add(
        "step.bubble_ratio",
        ratios[worst],
        f"{source}:Bubble",
        f"the stage of ranks {ranks[0]}-{ranks[-1]} (the largest bubble of {len(stages)} stages; "
        "stages differ by role, so no median across them)",
    )


DERIVER = Deriver[JobInputs](
    name="stage-bubbles",
    scope=Scope.JOB,
    inputs=frozenset({"data", "recorders"}),
    reads=frozenset(),
    # the job's bubble is the worst stage's, never a median over stages
    writes=frozenset({"pipeline.stage_bubble_ratio", "step.bubble_ratio"}),
    derive=stage_bubbles,
    applies=lambda given: given.several,
)
