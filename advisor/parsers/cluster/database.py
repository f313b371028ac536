"""msprof-analyze's cluster_analysis.db (database mode): what its CSV and JSON files carry.

ClusterStepTraceTime holds cluster_step_trace_time.csv's rows (type rank / stage, index the
rank or the stage's "(0, 1, ...)"); ClusterCommAnalyzerTime and ClusterCommAnalyzerBandwidth
hold cluster_communication.json's per-rank operator times and link totals.
"""

from __future__ import annotations

import re
from pathlib import Path

from advisor.inputs.taxonomy import Taxonomy
from advisor.model import InputError
from advisor.parsers.ascend_db.analysis import step_number
from advisor.parsers.ascend_db.sqlite import Database
from advisor.parsers.profile_data import ClusterStage, ClusterStepRow, CommStep, StepRow

CLUSTER_DB = "cluster_analysis.db"
_STEP_COLUMNS = ("computing", "communication_not_overlapped", "overlapped", "communication", "free")


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def read_cluster_steps(db: Database) -> tuple[list[ClusterStepRow], list[ClusterStage]]:
    db.require("ClusterStepTraceTime", "step", "type", "index", *_STEP_COLUMNS)
    present = db.columns("ClusterStepTraceTime")
    extra = [c if c in present else "NULL" for c in ("preparing", "bubble")]
    sql = (
        'SELECT step, type, "index", ' + ", ".join(_STEP_COLUMNS) + f", {extra[0]}, {extra[1]} "
        "FROM ClusterStepTraceTime"
    )
    rows: list[ClusterStepRow] = []
    stages: list[ClusterStage] = []
    for step, kind, index, *values in db.rows("ClusterStepTraceTime", sql):
        times = [_number(v) for v in values[:5]]
        if any(t is None or t < 0 for t in times):
            raise InputError(
                str(db.path), f"table ClusterStepTraceTime: non-numeric or negative time ({index})"
            )
        computing, exposed, overlapped, comm, free = (t or 0.0 for t in times)
        row = StepRow(
            step_number(step) if step not in (None, "") else None,
            computing,
            exposed,
            overlapped,
            comm,
            free,
            _number(values[5]),
            _number(values[6]),
        )
        if str(kind).lower() == "stage":
            ranks = tuple(int(r) for r in re.findall(r"\d+", str(index)))
            if ranks:
                stages.append(ClusterStage(ranks, row))
        elif str(kind).lower() == "rank":
            rank = int(index) if str(index).isdigit() else None
            if rank is None:
                raise InputError(
                    str(db.path),
                    f"table ClusterStepTraceTime: rank index {index!r} is not a number",
                )
            rows.append(ClusterStepRow(rank, row))
    if not rows:
        raise InputError(str(db.path), "table ClusterStepTraceTime has no rows with type rank")
    return rows, stages


def read_cluster_comm(db: Database, taxonomy: Taxonomy) -> dict[int, list[CommStep]]:
    db.require(
        "ClusterCommAnalyzerTime", "rank_id", "step", "hccl_op_name", "group_name", "elapsed_time"
    )
    wait = "wait_time" if "wait_time" in db.columns("ClusterCommAnalyzerTime") else "NULL"
    sql = (
        f"SELECT rank_id, step, hccl_op_name, group_name, elapsed_time, {wait} "
        "FROM ClusterCommAnalyzerTime"
    )
    by_rank: dict[int, dict[int | None, CommStep]] = {}
    for rank, step_text, name, group, elapse, waited in db.rows("ClusterCommAnalyzerTime", sql):
        if not isinstance(rank, int) or str(name).startswith("Total Op Info"):
            continue
        number = step_number(step_text)
        step = by_rank.setdefault(rank, {}).setdefault(number, CommStep(step=number))
        kind = taxonomy.comm_kind(str(name))
        if (value := _number(elapse)) is not None and value >= 0:
            step.add(kind, value, str(group) if group is not None else None)
        if (value := _number(waited)) is not None and value >= 0:
            step.wait_ms[kind] = step.wait_ms.get(kind, 0.0) + value
    _bandwidth(db, by_rank)
    if not by_rank:
        raise InputError(str(db.path), "table ClusterCommAnalyzerTime has no per-rank rows")
    return {rank: list(steps.values()) for rank, steps in sorted(by_rank.items())}


def _bandwidth(db: Database, by_rank: dict[int, dict[int | None, CommStep]]) -> None:
    columns = ("rank_id", "step", "hccl_op_name", "band_type", "transit_size", "transit_time")
    if not db.has("ClusterCommAnalyzerBandwidth", *columns):
        return
    sql = f"SELECT {', '.join(columns)} FROM ClusterCommAnalyzerBandwidth"
    seen: set[tuple[object, ...]] = set()
    for rank, step_text, name, link, size, time in db.rows("ClusterCommAnalyzerBandwidth", sql):
        key = (rank, step_text, name, link)
        # one row per packet-size bucket, each repeating the op's link totals
        if not isinstance(rank, int) or str(name).startswith("Total Op Info") or key in seen:
            continue
        seen.add(key)
        mb, ms = _number(size), _number(time)
        if mb is None or ms is None:
            continue
        number = step_number(step_text)
        step = by_rank.setdefault(rank, {}).setdefault(number, CommStep(step=number))
        step.link_size_mb[str(link)] = step.link_size_mb.get(str(link), 0.0) + mb
        step.link_time_ms[str(link)] = step.link_time_ms.get(str(link), 0.0) + ms


def read_cluster_db(
    path: Path, taxonomy: Taxonomy
) -> tuple[list[ClusterStepRow] | None, list[ClusterStage], dict[int, list[CommStep]] | None]:
    with Database(path) as db:
        rows, stages = read_cluster_steps(db) if db.has("ClusterStepTraceTime") else (None, [])
        comm = read_cluster_comm(db, taxonomy) if db.has("ClusterCommAnalyzerTime") else None
    if rows is None and comm is None:
        raise InputError(str(path), "no table ClusterStepTraceTime or ClusterCommAnalyzerTime")
    return rows, stages, comm
