"""Kernels of a database export, aggregated by SQLite itself per (step, type, core).

The exports of long runs hold millions of tasks and tens of millions of PMU rows; the per-row
work (step lookup, pipe ratios, bound test) is plain arithmetic that the database does faster
than Python, and for large files it runs in two more processes (the kernel groups; the
details, sequences, block dims and types by start) while the first reads the rest.
"""

from __future__ import annotations

import multiprocessing
import os
from bisect import bisect_right
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path

from advisor.inputs.thresholds import ReaderThresholds
from advisor.model import InputError
from advisor.parsers.ascend_db.checks import PMU_RATIO_OK, PMU_RATIOS, valid_interval
from advisor.parsers.ascend_db.sqlite import Database
from advisor.parsers.kernel_sequences import SequenceCounter
from advisor.parsers.profile_data import (
    KERNEL_TYPES_MAX,
    BlockDimGroup,
    KernelGroup,
    KernelTable,
    OpDetail,
    SequenceCount,
)
from advisor.parsers.traces.steps import StepWindow

_PIPES = PMU_RATIOS
# Above this size the kernel aggregation (SQLite's own work, single-threaded) runs in two worker
# processes while this one reads the timeline tables; below it a process start costs more.
PARALLEL_MIN_BYTES = 64 * 1024 * 1024


Job = tuple[Path, dict[int, str], int, list[StepWindow], ReaderThresholds]


@dataclass
class _Groups:
    """The kernel groups (the query over the tasks and their pipe ratios)."""

    groups: list[KernelGroup]
    has_pmu: bool
    has_step_ids: bool
    rows: int


@dataclass
class _Extras:
    """What the other queries read: operator details, unfused sequences, block dims, each
    kernel's type and each task's kind by start."""

    details: list[OpDetail] | None
    sequences: dict[tuple[int | None, str], SequenceCount] | None
    block_dims: list[BlockDimGroup] | None
    types_at: dict[float, str] | None
    task_kinds_at: dict[float, str] | None


def _kernels_of(job: Job) -> KernelTable:
    return _table(_groups_of(job), _extras_of(job))


def _groups_of(job: Job) -> _Groups:
    path, strings, origin, windows, limits = job
    with Database(path) as db:
        return _groups(db, strings, origin, windows, limits)


def _extras_of(job: Job) -> _Extras:
    path, strings, origin, windows, _ = job
    with Database(path) as db:
        _steps_table(db, origin, windows)
        return _Extras(
            _details(db, strings, origin),
            _sequences(db, strings, origin, windows),
            _block_dims(db, strings, origin),
            _types_at(db, strings, origin),
            _task_kinds_at(db, strings, origin),
        )


def _table(found: _Groups, extras: _Extras) -> KernelTable:
    return KernelTable(
        found.groups,
        found.has_pmu,
        has_step_ids=found.has_step_ids,
        rows=found.rows,
        details=extras.details,
        sequences=extras.sequences,
        block_dims=extras.block_dims,
        types_at=extras.types_at,
        task_kinds_at=extras.task_kinds_at,
    )


def _steps_table(db: Database, origin: int, windows: list[StepWindow]) -> None:
    """The step windows as a temporary table the queries look each task's step up in."""
    db.temp_table("advisor_steps", ["id INTEGER", "lo INTEGER", "hi INTEGER"], "lo")
    db.insert(
        "advisor_steps",
        [(w.number, origin + round(w.start * 1000), origin + round(w.end * 1000)) for w in windows],
    )


def start_kernels(
    path: Path,
    strings: dict[int, str],
    origin: int,
    windows: list[StepWindow],
    limits: ReaderThresholds,
) -> Callable[[], KernelTable]:
    """Start the kernel aggregation (in a worker process for large files); the call waits.

    A worker that cannot start or dies falls back to this process, which then reports any
    problem of the file itself.
    """
    job: Job = (path, strings, origin, windows, limits)
    try:
        large = path.stat().st_size >= PARALLEL_MIN_BYTES
    except OSError:
        large = False
    if (
        not large
        or (os.cpu_count() or 1) < 2
        or "fork" not in multiprocessing.get_all_start_methods()
    ):
        return lambda: _kernels_of(job)
    try:
        # the kernel groups (the pipe ratios' pivot: most of the time) and the other queries,
        # each SQLite's single-threaded work, in two processes
        pool = ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("fork"))
        groups, extras = pool.submit(_groups_of, job), pool.submit(_extras_of, job)
    except OSError:
        return lambda: _kernels_of(job)

    def collect() -> KernelTable:
        try:
            return _table(groups.result(), extras.result())
        except (OSError, BrokenProcessPool):
            return _kernels_of(job)
        finally:
            pool.shutdown(cancel_futures=True)

    return collect


def _groups(
    db: Database,
    strings: dict[int, str],
    origin: int,
    windows: list[StepWindow],
    limits: ReaderThresholds,
) -> _Groups:
    """Kernels per (step, type, core), aggregated by SQLite itself: the exports of long runs hold
    millions of tasks, and the per-row work (step lookup, pipe ratios, bound test) is plain
    arithmetic that the database does faster than Python."""
    db.require("COMPUTE_TASK_INFO", "name", "globalTaskId", "taskType", "opType")
    db.require("TASK", "startNs", "endNs", "globalTaskId")
    ids = {value: key for key, value in strings.items() if value in _PIPES}
    has_pmu = db.has("TASK_PMU_INFO", "globalTaskId", "name", "value") and (
        "aic_mte2_ratio" in ids or "aiv_mte2_ratio" in ids
    )
    _steps_table(db, origin, windows)
    sql = _KERNEL_SQL.format(
        pmu=_pmu_cte(ids) if has_pmu else "",
        pipes="pmu.mac, pmu.mte2, pmu.vec, pmu.vmte2" if has_pmu else "NULL, NULL, NULL, NULL",
        join="LEFT JOIN pmu ON pmu.id = c.globalTaskId" if has_pmu else "",
        valid=valid_interval(origin, "t."),
    )
    params = {
        "small": limits.small_op_max_us,
        "bound": limits.mte2_bound_min_ratio,
        "used": limits.compute_well_used_ratio,
    }
    groups = []
    rows = 0
    for (
        step,
        op_type,
        core,
        _,
        name,
        count,
        total,
        small_n,
        small_us,
        pmu,
        cu,
        ld,
        bound,
    ) in db.rows("COMPUTE_TASK_INFO", sql, params):
        rows += count
        group = KernelGroup(
            step,
            strings.get(op_type, str(op_type)),
            strings.get(core, str(core)),
            strings.get(name, str(name)),
        )
        group.count, group.total_us = count, total
        group.small_count, group.small_us = small_n, small_us
        group.pmu_us, group.compute_pipe_us, group.mte2_pipe_us = pmu, cu, ld
        group.mte2_bound_us = bound
        groups.append(group)
    if rows == 0:
        raise InputError(str(db.path), "table COMPUTE_TASK_INFO has no kernels with device times")
    return _Groups(groups, has_pmu, bool(windows), rows)


def _task_kinds_at(db: Database, strings: dict[int, str], origin: int) -> dict[float, str] | None:
    """The device tasks that are not kernels, their kind by start (TASK.taskType); None when
    the table has no task type or above KERNEL_TYPES_MAX tasks."""
    if not db.has("TASK", "taskType"):
        return None
    sql = (
        "SELECT t.startNs, t.taskType FROM TASK t "
        "WHERE t.globalTaskId NOT IN (SELECT globalTaskId FROM COMPUTE_TASK_INFO) "
        f"AND {valid_interval(origin, 't.')} LIMIT {KERNEL_TYPES_MAX + 1}"
    )
    return _named_by_start(db, "TASK", sql, strings, origin)


def _types_at(db: Database, strings: dict[int, str], origin: int) -> dict[float, str] | None:
    """Each kernel's type by its start as the trace reader converts TASK times (us from the
    origin); None above KERNEL_TYPES_MAX kernels."""
    sql = (
        "SELECT t.startNs, c.opType FROM COMPUTE_TASK_INFO c "
        "JOIN TASK t ON t.globalTaskId = c.globalTaskId "
        f"WHERE {valid_interval(origin, 't.')} LIMIT {KERNEL_TYPES_MAX + 1}"
    )
    return _named_by_start(db, "COMPUTE_TASK_INFO", sql, strings, origin)


def _named_by_start(
    db: Database, table: str, sql: str, strings: dict[int, str], origin: int
) -> dict[float, str] | None:
    """(start ns, name id) rows as names by start in us from the origin; None above
    KERNEL_TYPES_MAX rows."""
    named: dict[float, str] = {}
    for start, name in db.rows(table, sql):
        if isinstance(start, int):
            named[(start - origin) / 1000.0] = strings.get(name, str(name))
    return named if len(named) <= KERNEL_TYPES_MAX else None


def _sequences(
    db: Database, strings: dict[int, str], origin: int, windows: list[StepWindow]
) -> dict[tuple[int | None, str], SequenceCount]:
    """The fusion patterns' unfused sequences, the kernels read in their start order."""
    sql = (
        "SELECT c.opType, t.startNs, t.endNs FROM COMPUTE_TASK_INFO c "
        "JOIN TASK t ON t.globalTaskId = c.globalTaskId "
        f"WHERE {valid_interval(origin, 't.')} ORDER BY t.startNs"
    )
    bounds = sorted(
        (origin + round(w.start * 1000), origin + round(w.end * 1000), w.number) for w in windows
    )
    starts = [lo for lo, _, _ in bounds]
    counter = SequenceCounter()
    for op_type, start, end in db.rows("COMPUTE_TASK_INFO", sql):
        at = bisect_right(starts, start) - 1
        step = bounds[at][2] if at >= 0 and start < bounds[at][1] else None
        counter.add(step, strings.get(op_type, str(op_type)), (end - start) / 1000.0)
    return counter.counts


def _details(db: Database, strings: dict[int, str], origin: int) -> list[OpDetail] | None:
    """Kernels per (step, type, core, input dtypes): what the AI-CPU analyzer lists. The
    export records no OP State, so no kernel counts as dynamic-shape (has_op_state stays off)."""
    if not db.has("COMPUTE_TASK_INFO", "inputDataTypes"):
        return None
    sql = _DETAIL_SQL.format(valid=valid_interval(origin, "t."))
    details = []
    for step, op_type, core, dtypes, count, total in db.rows("COMPUTE_TASK_INFO", sql):
        detail = OpDetail(
            step,
            strings.get(op_type, str(op_type)),
            strings.get(core, str(core)),
            strings.get(dtypes, "" if dtypes is None else str(dtypes)),
        )
        detail.count, detail.total_us = count, total
        details.append(detail)
    return details


def _block_dims(db: Database, strings: dict[int, str], origin: int) -> list[BlockDimGroup] | None:
    """Kernels per (step, type, core, block dim, mix block dim): what the block-dim analyzer
    reads (None: the export has no blockDim column)."""
    if not db.has("COMPUTE_TASK_INFO", "blockDim"):
        return None
    mix = "c.mixBlockDim" if db.has("COMPUTE_TASK_INFO", "mixBlockDim") else "NULL"
    sql = _BLOCK_DIM_SQL.format(mix=mix, valid=valid_interval(origin, "t."))
    found = []
    for step, op_type, core, block, mix_block, count, total in db.rows("COMPUTE_TASK_INFO", sql):
        if not isinstance(block, int) or block < 0:
            continue
        mix_dim = mix_block if isinstance(mix_block, int) and mix_block >= 0 else None
        found.append(
            BlockDimGroup(
                step,
                strings.get(op_type, str(op_type)),
                strings.get(core, str(core)),
                block,
                mix_dim,
                count,
                total,
            )
        )
    return found


_BLOCK_DIM_SQL = """
SELECT
  (SELECT CASE WHEN t.startNs < s.hi THEN s.id END FROM temp.advisor_steps s
   WHERE s.lo <= t.startNs ORDER BY s.lo DESC LIMIT 1) AS step,
  c.opType, c.taskType, c.blockDim, {mix}, COUNT(*), TOTAL((t.endNs - t.startNs) / 1000.0)
FROM COMPUTE_TASK_INFO c JOIN TASK t ON t.globalTaskId = c.globalTaskId
WHERE {valid}
GROUP BY 1, 2, 3, 4, 5
"""


_DETAIL_SQL = """
SELECT
  (SELECT CASE WHEN t.startNs < s.hi THEN s.id END FROM temp.advisor_steps s
   WHERE s.lo <= t.startNs ORDER BY s.lo DESC LIMIT 1) AS step,
  c.opType, c.taskType, c.inputDataTypes, COUNT(*), TOTAL((t.endNs - t.startNs) / 1000.0)
FROM COMPUTE_TASK_INFO c JOIN TASK t ON t.globalTaskId = c.globalTaskId
WHERE {valid}
GROUP BY 1, 2, 3, 4
"""


def _pmu_cte(ids: dict[str, int]) -> str:
    """The four pipe ratios of each task, one row per task (TASK_PMU_INFO has one per metric)."""
    # a value that is no ratio is left out (checks.check_pmu_ratios warns about it)
    pivot = ", ".join(
        f"MAX(CASE WHEN name = {ids.get(p, -1)} AND {PMU_RATIO_OK} THEN value END) AS {alias}"
        for p, alias in zip(_PIPES, ("mac", "mte2", "vec", "vmte2"), strict=True)
    )
    wanted = ", ".join(str(ids.get(p, -1)) for p in _PIPES)
    return (
        f"pmu AS (SELECT globalTaskId AS id, {pivot} FROM TASK_PMU_INFO "
        f"WHERE name IN ({wanted}) GROUP BY globalTaskId),"
    )


# The unit that ran a kernel: cube ratios when present and non-zero, else vector ratios; the
# bound test is the text reader's (ascend/kernels._PipeReader: the readers'
# mte2_bound_min_ratio, compute_well_used_ratio).
_KERNEL_SQL = """
WITH {pmu}
k AS (
  SELECT
    (SELECT CASE WHEN t.startNs < s.hi THEN s.id END FROM temp.advisor_steps s
     WHERE s.lo <= t.startNs ORDER BY s.lo DESC LIMIT 1) AS step,
    c.opType AS op_type, c.taskType AS core, c.name AS name, t.startNs AS start,
    (t.endNs - t.startNs) / 1000.0 AS dur,
    {pipes}
  FROM COMPUTE_TASK_INFO c JOIN TASK t ON t.globalTaskId = c.globalTaskId {join}
  WHERE {valid}
),
u AS (
  SELECT step, op_type, core, name, start, dur,
    CASE WHEN mac IS NOT NULL AND mte2 IS NOT NULL AND NOT (mac = 0 AND mte2 = 0) THEN mac
         WHEN vec IS NOT NULL AND vmte2 IS NOT NULL AND NOT (vec = 0 AND vmte2 = 0) THEN vec
    END AS cu,
    CASE WHEN mac IS NOT NULL AND mte2 IS NOT NULL AND NOT (mac = 0 AND mte2 = 0) THEN mte2
         WHEN vec IS NOT NULL AND vmte2 IS NOT NULL AND NOT (vec = 0 AND vmte2 = 0) THEN vmte2
    END AS ld
  FROM k
)
SELECT step, op_type, core, MIN(start), name, COUNT(*), TOTAL(dur),
  TOTAL(dur < :small), TOTAL(CASE WHEN dur < :small THEN dur END),
  TOTAL(CASE WHEN cu IS NOT NULL THEN dur END), TOTAL(dur * cu), TOTAL(dur * ld),
  TOTAL(CASE WHEN ld > cu AND ld >= :bound AND cu < :used THEN dur END)
FROM u GROUP BY step, op_type, core ORDER BY MIN(start)
"""
