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
from advisor.parsers.profile_data import ClusterStage, ProfileData

# a rank directory and the cluster file disagree when their step times differ by more than this
DISAGREE_RATIO = 0.10


def add_cluster_ranks(
    data: ProfileData,
    recorders: list[tuple[str, Recorder]],
    cluster: list[tuple[str, Recorder]],
    warnings: list[str],
) -> list[tuple[str, Recorder]]:
    """The ranks of the cluster file that no rank directory covers; warns where both cover a
    rank and disagree, or where a rank directory is absent from the cluster file."""
    mine = dict(recorders)
    theirs = dict(cluster)
    where = data.cluster_source or data.cluster_comm_source or data.root
    for label, rec in recorders:
        other = theirs.get(label)
        if other is None:
            if data.cluster_rows:
                warnings.append(
                    f"rank {label} has a rank directory but no row in {where}: the cluster "
                    "output and the rank directories may come from different runs"
                )
            continue
        a, b = _step_ms(rec), _step_ms(other)
        if a and b and abs(a - b) / max(a, b) > DISAGREE_RATIO:
            warnings.append(
                f"rank {label}: its rank directory gives a {a:.1f} ms step, {where} "
                f"{b:.1f} ms: not the same run? (the rank directory's facts are used for it)"
            )
    return [(label, rec) for label, rec in cluster if label not in mine]


def _step_ms(rec: Recorder) -> float | None:
    fact = rec.facts.get("step.time_ms")
    return float(fact.value) if fact is not None else None


def stage_groups(stages: list[ClusterStage] | None, labels: list[str]) -> list[list[str]] | None:
    """Stage membership from the file's stage rows, restricted to the ranks present."""
    if not stages:
        return None
    present = set(labels)
    groups = [[str(r) for r in s.ranks if str(r) in present] for s in stages]
    groups = [g for g in groups if g]
    return groups or None


def stage_bubbles(data: ProfileData, recorders: list[tuple[str, Recorder]], job: Recorder) -> None:
    """pipeline.stage_bubble_ratio per stage and the job's bubble: the worst stage's."""
    stages = data.cluster_stages
    if not stages or len(stages) < 2:
        return
    by_label = dict(recorders)
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
