"""torch_npu / MindSpore database export (export_type db): one SQLite file per rank.

`ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_<rank>.db` holds the timeline (TASK,
COMPUTE_TASK_INFO, TASK_PMU_INFO, COMMUNICATION_OP, CANN_API, PYTORCH_API, STEP_TIME,
OVERLAP_ANALYSIS, MEMORY_RECORD, names in STRING_IDS); `analysis.db` beside it holds what the
text export's step_trace_time.csv and communication.json hold. The same plain data as from the
text export is built from them, so every fact is derived the same way. Rows are streamed;
timestamps (integer nanoseconds) become microseconds from the session start.
"""

from __future__ import annotations

import json
import multiprocessing
import os
from bisect import bisect_right
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.inputs.taxonomy import Taxonomy
from advisor.model import InputError
from advisor.parsers.db_analysis import read_comm, read_links, read_step_rows
from advisor.parsers.db_trace import read_db_trace
from advisor.parsers.profile_data import (
    CommStep,
    KernelGroup,
    KernelTable,
    LinkStat,
    MemorySummary,
    StepRow,
)
from advisor.parsers.sqlite_db import Database
from advisor.parsers.trace_steps import StepWindow, TraceData

PROFILER_DBS = ("ascend_pytorch_profiler*.db", "ascend_mindspore_profiler*.db")
ANALYSIS_DB = "analysis.db"
# MindSpore writes the same tables as communication_analyzer.db
ANALYSIS_DBS = (ANALYSIS_DB, "communication_analyzer.db")
# Export schema versions this reader follows (META_DATA SCHEMA_VERSION_MAJOR).
KNOWN_SCHEMA_MAJOR = 1
_PIPES = ("aic_mac_ratio", "aic_mte2_ratio", "aiv_vec_ratio", "aiv_mte2_ratio")
_BYTES_PER_MB = 1024.0 * 1024.0
# Above this size the kernel aggregation (SQLite's own work, single-threaded) runs in a second
# process while this one reads the timeline tables; below it a process start costs more.
PARALLEL_MIN_BYTES = 64 * 1024 * 1024


def analysis_db(output: Path) -> Path | None:
    """analysis.db (torch_npu) or communication_analyzer.db (MindSpore) in an output folder."""
    for name in ANALYSIS_DBS:
        if (output / name).is_file():
            return output / name
    return None


def profiler_db(output: Path) -> Path | None:
    for pattern in PROFILER_DBS:
        found = sorted(p for p in output.glob(pattern) if p.is_file())
        if found:
            return found[0]
    return None


@dataclass
class DbProfile:
    """What the facts need from one rank's database export."""

    rank: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    step_rows: list[StepRow] | None = None
    kernels: KernelTable | None = None
    comm: list[CommStep] | None = None
    memory: MemorySummary | None = None
    trace: TraceData | None = None
    links: list[LinkStat] | None = None
    # text-export file name -> the table it was read from instead
    sources: dict[str, str] = field(default_factory=dict)
    absent: dict[str, str] = field(default_factory=dict)


def read_database(path: Path, taxonomy: Taxonomy) -> DbProfile:
    out = DbProfile()
    with Database(path) as db:
        _check_schema(db)
        strings = db.strings()
        origin = _origin(db)
        out.metadata = _metadata(db)
        if db.has("RANK_DEVICE_MAP", "rankId"):
            ranks = [r for (r,) in db.rows("RANK_DEVICE_MAP", "SELECT rankId FROM RANK_DEVICE_MAP")]
            if ranks and isinstance(ranks[0], int) and ranks[0] >= 0:
                out.rank = ranks[0]
        windows = _step_windows(db, origin)
        kernels = _start_kernels(path, strings, origin, windows, taxonomy)
        out.sources["kernel_details.csv"] = f"{path.name}:TASK+COMPUTE_TASK_INFO"
        out.memory = _memory(db, strings)
        if out.memory is None:
            out.absent["memory_record.csv"] = f"{path.name} has no MEMORY_RECORD rows"
        else:
            out.sources["memory_record.csv"] = f"{path.name}:MEMORY_RECORD"
        out.trace = read_db_trace(db, path, strings, origin, windows, taxonomy)
        out.sources["trace_view.json"] = path.name
        out.comm = _comm_from_ops(db, strings, origin, windows, taxonomy)
        if out.comm is not None:
            out.sources["communication.json"] = f"{path.name}:COMMUNICATION_OP"
        out.kernels = kernels()
    analysis = analysis_db(path.parent)
    if analysis is not None:
        with Database(analysis) as db:
            if db.has("StepTraceTime"):
                out.step_rows = read_step_rows(db)
                out.sources["step_trace_time.csv"] = f"{analysis.name}:StepTraceTime"
            if db.has("CommAnalyzerTime"):
                out.comm = read_comm(db, taxonomy)
                out.sources["communication.json"] = f"{analysis.name}:CommAnalyzerTime"
            out.links = read_links(db)
            if out.links is not None:
                out.sources["communication_matrix.json"] = f"{analysis.name}:CommAnalyzerMatrix"
    else:
        out.absent["step_trace_time.csv"] = f"no {' or '.join(ANALYSIS_DBS)} beside {path.name}"
    return out


def _check_schema(db: Database) -> None:
    for table in ("STRING_IDS", "TASK"):
        db.require(table)
    if not db.has("META_DATA", "name", "value"):
        return
    for name, value in db.rows("META_DATA", "SELECT name, value FROM META_DATA"):
        newer = str(value).isdigit() and int(value) > KNOWN_SCHEMA_MAJOR
        if name == "SCHEMA_VERSION_MAJOR" and newer:
            raise InputError(
                str(db.path),
                f"export schema version {value} is newer than this reader knows "
                f"({KNOWN_SCHEMA_MAJOR}.x): table META_DATA",
            )


def _origin(db: Database) -> int:
    """The session start in ns: every time is kept relative to it (float64 stays exact)."""
    if db.has("SESSION_TIME_INFO", "startNs"):
        for (start,) in db.rows("SESSION_TIME_INFO", "SELECT startNs FROM SESSION_TIME_INFO"):
            if isinstance(start, int):
                return start
    for (start,) in db.rows("TASK", "SELECT MIN(startNs) FROM TASK"):
        if isinstance(start, int):
            return start
    return 0


def _metadata(db: Database) -> dict[str, Any]:
    """META_DATA's JSON values (ENV_VARIABLES, distributed_args, parallel_group_info...)."""
    meta: dict[str, Any] = {}
    if not db.has("META_DATA", "name", "value"):
        return meta
    for name, value in db.rows("META_DATA", "SELECT name, value FROM META_DATA"):
        if isinstance(value, str) and value[:1] in "{[":
            try:
                meta[str(name)] = json.loads(value)
            except json.JSONDecodeError:
                continue
    return meta


def _step_windows(db: Database, origin: int) -> list[StepWindow]:
    if not db.has("STEP_TIME", "id", "startNs", "endNs"):
        return []
    windows = [
        StepWindow(int(n), (a - origin) / 1000.0, (b - origin) / 1000.0)
        for n, a, b in db.rows(
            "STEP_TIME", "SELECT id, startNs, endNs FROM STEP_TIME ORDER BY startNs"
        )
        if isinstance(n, int) and isinstance(a, int) and isinstance(b, int) and b >= a
    ]
    return windows


def step_of(windows: list[StepWindow], starts: list[float], at: float) -> int | None:
    i = bisect_right(starts, at) - 1
    if i >= 0 and at < windows[i].end:
        return windows[i].number
    return None


def _kernels_of(
    path: Path,
    strings: dict[int, str],
    origin: int,
    windows: list[StepWindow],
    taxonomy: Taxonomy,
) -> KernelTable:
    with Database(path) as db:
        return _kernels(db, strings, origin, windows, taxonomy)


def _start_kernels(
    path: Path,
    strings: dict[int, str],
    origin: int,
    windows: list[StepWindow],
    taxonomy: Taxonomy,
) -> Callable[[], KernelTable]:
    """Start the kernel aggregation (in a worker process for large files); the call waits.

    A worker that cannot start or dies falls back to this process, which then reports any
    problem of the file itself.
    """
    args = (path, strings, origin, windows, taxonomy)
    try:
        large = path.stat().st_size >= PARALLEL_MIN_BYTES
    except OSError:
        large = False
    if (
        not large
        or (os.cpu_count() or 1) < 2
        or "fork" not in multiprocessing.get_all_start_methods()
    ):
        return lambda: _kernels_of(*args)
    try:
        pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork"))
        future = pool.submit(_kernels_of, *args)
    except OSError:
        return lambda: _kernels_of(*args)

    def collect() -> KernelTable:
        try:
            return future.result()
        except (OSError, BrokenProcessPool):
            return _kernels_of(*args)
        finally:
            pool.shutdown(cancel_futures=True)

    return collect


def _kernels(
    db: Database,
    strings: dict[int, str],
    origin: int,
    windows: list[StepWindow],
    taxonomy: Taxonomy,
) -> KernelTable:
    """Kernels per (step, type, core), aggregated by SQLite itself: the exports of long runs hold
    millions of tasks, and the per-row work (step lookup, pipe ratios, bound test) is plain
    arithmetic that the database does faster than Python."""
    db.require("COMPUTE_TASK_INFO", "name", "globalTaskId", "taskType", "opType")
    db.require("TASK", "startNs", "endNs", "globalTaskId")
    ids = {value: key for key, value in strings.items() if value in _PIPES}
    has_pmu = db.has("TASK_PMU_INFO", "globalTaskId", "name", "value") and (
        "aic_mte2_ratio" in ids or "aiv_mte2_ratio" in ids
    )
    db.temp_table("advisor_steps", ["id INTEGER", "lo INTEGER", "hi INTEGER"], "lo")
    db.insert(
        "advisor_steps",
        [(w.number, origin + round(w.start * 1000), origin + round(w.end * 1000)) for w in windows],
    )
    sql = _KERNEL_SQL.format(
        pmu=_pmu_cte(ids) if has_pmu else "",
        pipes="pmu.mac, pmu.mte2, pmu.vec, pmu.vmte2" if has_pmu else "NULL, NULL, NULL, NULL",
        join="LEFT JOIN pmu ON pmu.id = c.globalTaskId" if has_pmu else "",
    )
    params = {
        "small": taxonomy.small_op_max_us,
        "bound": taxonomy.mte2_bound_min_ratio,
        "used": taxonomy.compute_well_used_ratio,
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
    return KernelTable(groups, has_pmu, has_step_ids=bool(windows), rows=rows)


def _pmu_cte(ids: dict[str, int]) -> str:
    """The four pipe ratios of each task, one row per task (TASK_PMU_INFO has one per metric)."""
    pivot = ", ".join(
        f"MAX(CASE WHEN name = {ids.get(p, -1)} THEN value END) AS {alias}"
        for p, alias in zip(_PIPES, ("mac", "mte2", "vec", "vmte2"), strict=True)
    )
    wanted = ", ".join(str(ids.get(p, -1)) for p in _PIPES)
    return (
        f"pmu AS (SELECT globalTaskId AS id, {pivot} FROM TASK_PMU_INFO "
        f"WHERE name IN ({wanted}) GROUP BY globalTaskId),"
    )


# The unit that ran a kernel: cube ratios when present and non-zero, else vector ratios; the
# bound test is add_pipes' (taxonomy mte2_bound_min_ratio, compute_well_used_ratio).
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
  WHERE t.endNs >= t.startNs
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


def _memory(db: Database, strings: dict[int, str]) -> MemorySummary | None:
    if not db.has("MEMORY_RECORD", "component", "totalAllocated", "totalReserved"):
        return None
    by_component: dict[str, list[tuple[float, float]]] = {}
    sql = "SELECT component, totalAllocated, totalReserved FROM MEMORY_RECORD"
    for component, allocated, reserved in db.rows("MEMORY_RECORD", sql):
        if not isinstance(allocated, int | float) or not isinstance(reserved, int | float):
            continue
        name = strings.get(component, str(component))
        by_component.setdefault(name, []).append(
            (allocated / _BYTES_PER_MB, reserved / _BYTES_PER_MB)
        )
    if not by_component:
        return None
    # the PyTorch allocator (PTA) is what fragmentation is about, as in memory_record.csv
    preferred = [c for c in ("PTA", "PTA+GE", "APP") if c in by_component]
    component = preferred[0] if preferred else sorted(by_component)[0]
    samples = by_component[component]
    reserved_peak = max(samples, key=lambda s: (s[1], s[0]))
    return MemorySummary(
        allocated_peak_mb=max(a for a, _ in samples),
        reserved_peak_mb=reserved_peak[1],
        allocated_at_reserved_peak_mb=reserved_peak[0],
        component=component,
        samples=len(samples),
    )


def _comm_from_ops(
    db: Database,
    strings: dict[int, str],
    origin: int,
    windows: list[StepWindow],
    taxonomy: Taxonomy,
) -> list[CommStep] | None:
    """Collectives per step from COMMUNICATION_OP when analysis.db is absent (no link stats)."""
    if not db.has("COMMUNICATION_OP", "opName", "startNs", "endNs", "groupName"):
        return None
    wait_col = "waitNs" if "waitNs" in db.columns("COMMUNICATION_OP") else "NULL"
    sql = f"SELECT opName, startNs, endNs, groupName, {wait_col} FROM COMMUNICATION_OP"
    starts = [w.start for w in windows]
    by_step: dict[int | None, CommStep] = {}
    for name, a, b, group, wait in db.rows("COMMUNICATION_OP", sql):
        if not isinstance(a, int) or not isinstance(b, int) or b < a:
            continue
        number = step_of(windows, starts, (a - origin) / 1000.0) if windows else None
        step = by_step.setdefault(number, CommStep(step=number))
        kind = taxonomy.comm_kind(strings.get(name, ""))
        step.add(kind, (b - a) / 1e6, strings.get(group, str(group)))
        if isinstance(wait, int | float):
            step.wait_ms[kind] = step.wait_ms.get(kind, 0.0) + wait / 1e6
    return list(by_step.values()) or None
