"""The ranks of msprof-analyze's cluster output: their facts from the file's step model and
communication rows, and how they join the ranks read from rank directories.

cluster_step_trace_time.csv (or cluster_analysis.db) holds every rank's step model; a large job
is often shared as that file plus the rank directories of a few ranks. Each rank of the file
runs the step-model derivers; a rank directory's own facts stand for its rank, and where both
speak of a rank and disagree the user is warned.
"""

from __future__ import annotations

from typing import Any

from advisor.facts import registry
from advisor.facts.base import Recorder
from advisor.facts.contract import RankInputs, Scope
from advisor.facts.rank import rename_sources
from advisor.inputs.taxonomy import Taxonomy
from advisor.model import rank_scope
from advisor.parsers.cluster.database import CLUSTER_DB
from advisor.parsers.profile_data import ProfileData, RankProfile

# msprof-analyze reads torch_npu and MindSpore profiles only: its cluster output (hcom_*
# operations over HCCS/RDMA/SDMA links) is an Ascend job's, even with no rank directory beside it
CLUSTER_PLATFORM_NOTE = (
    "msprof-analyze's cluster output (it analyses Ascend torch_npu / MindSpore profiles only): "
    "Ascend NPU"
)

# a rank directory and the cluster file disagree when their step times differ by more than this
DISAGREE_RATIO = 0.10


def _sources(data: ProfileData) -> tuple[str, str]:
    """The names the step-model and communication facts of the file's ranks cite."""
    step = (
        f"{CLUSTER_DB}:ClusterStepTraceTime"
        if data.cluster_source is not None and data.cluster_source.name == CLUSTER_DB
        else "cluster_step_trace_time.csv"
    )
    comm = (
        f"{CLUSTER_DB}:ClusterCommAnalyzerTime"
        if data.cluster_comm_source is not None and data.cluster_comm_source.name == CLUSTER_DB
        else "cluster_communication.json"
    )
    return step, comm


def cluster_only(data: ProfileData, taxonomy: Taxonomy) -> list[tuple[str, Recorder]]:
    """Per-rank facts from msprof-analyze's cluster output alone (no rank directories)."""
    by_rank: dict[int, list[Any]] = {}
    for row in data.cluster_rows or []:
        by_rank.setdefault(row.rank, []).append(row.row)
    comm_by_rank = data.cluster_comm or {}
    step_source, comm_source = _sources(data)
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
        wanted = ["steps"] if rank.step_rows else []
        if rank.comm is not None:
            wanted.append("comm")
        wanted.append("exposure")  # exposed communication split: receive wait, collectives
        registry.run(Scope.RANK, RankInputs(rank, taxonomy, comm_source), out, only=wanted)
        rename_sources(out, {"step_trace_time.csv": step_source})
        source = step_source if rank.step_rows else comm_source
        out.add("profile.platform", "ascend", source, CLUSTER_PLATFORM_NOTE)
        recorders.append((str(rank_id), out))
    return recorders


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
