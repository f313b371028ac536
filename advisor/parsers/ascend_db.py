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
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.inputs.taxonomy import Taxonomy
from advisor.model import InputError
from advisor.parsers.ascend_files import add_pipes
from advisor.parsers.db_analysis import read_comm, read_step_rows
from advisor.parsers.db_trace import read_db_trace
from advisor.parsers.profile_data import (
    CommStep,
    KernelGroup,
    KernelTable,
    MemorySummary,
    StepRow,
)
from advisor.parsers.sqlite_db import Database
from advisor.parsers.trace_steps import StepWindow, TraceData

PROFILER_DBS = ("ascend_pytorch_profiler*.db", "ascend_mindspore_profiler*.db")
ANALYSIS_DB = "analysis.db"
# Export schema versions this reader follows (META_DATA SCHEMA_VERSION_MAJOR).
KNOWN_SCHEMA_MAJOR = 1
_PIPES = ("aic_mac_ratio", "aic_mte2_ratio", "aiv_vec_ratio", "aiv_mte2_ratio")
_BYTES_PER_MB = 1024.0 * 1024.0


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
        out.kernels = _kernels(db, strings, origin, windows, taxonomy)
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
    analysis = path.parent / ANALYSIS_DB
    if analysis.is_file():
        with Database(analysis) as db:
            if db.has("StepTraceTime"):
                out.step_rows = read_step_rows(db)
                out.sources["step_trace_time.csv"] = f"{ANALYSIS_DB}:StepTraceTime"
            if db.has("CommAnalyzerTime"):
                out.comm = read_comm(db, taxonomy)
                out.sources["communication.json"] = f"{ANALYSIS_DB}:CommAnalyzerTime"
    else:
        out.absent["step_trace_time.csv"] = f"no {ANALYSIS_DB} beside {path.name}"
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


def _step_of(windows: list[StepWindow], starts: list[float], at: float) -> int | None:
    i = bisect_right(starts, at) - 1
    if i >= 0 and at < windows[i].end:
        return windows[i].number
    return None


def _kernels(
    db: Database,
    strings: dict[int, str],
    origin: int,
    windows: list[StepWindow],
    taxonomy: Taxonomy,
) -> KernelTable:
    db.require("COMPUTE_TASK_INFO", "name", "globalTaskId", "taskType", "opType")
    db.require("TASK", "startNs", "endNs", "globalTaskId")
    ids = {value: key for key, value in strings.items() if value in _PIPES}
    has_pmu = db.has("TASK_PMU_INFO", "globalTaskId", "name", "value") and (
        "aic_mte2_ratio" in ids or "aiv_mte2_ratio" in ids
    )
    if has_pmu:
        pmu_sql = (
            "WITH pmu AS (SELECT globalTaskId AS id, "
            + ", ".join(
                f"MAX(CASE WHEN name = {ids.get(p, -1)} THEN value END) AS p{i}"
                for i, p in enumerate(_PIPES)
            )
            + " FROM TASK_PMU_INFO GROUP BY globalTaskId) "
        )
        columns, join = (
            ", pmu.p0, pmu.p1, pmu.p2, pmu.p3",
            " LEFT JOIN pmu ON pmu.id = c.globalTaskId",
        )
    else:
        pmu_sql, columns, join = "", ", NULL, NULL, NULL, NULL", ""
    sql = (
        f"{pmu_sql}SELECT t.startNs, t.endNs, c.name, c.opType, c.taskType{columns} "
        f"FROM COMPUTE_TASK_INFO c JOIN TASK t ON t.globalTaskId = c.globalTaskId{join}"
    )
    starts = [w.start for w in windows]
    small_max = taxonomy.small_op_max_us
    mte2_bound, compute_used = taxonomy.mte2_bound_min_ratio, taxonomy.compute_well_used_ratio
    groups: dict[tuple[int | None, int, int], KernelGroup] = {}
    rows = 0
    for start_ns, end_ns, name, op_type, core, mac, mte2, vec, vmte2 in db.rows(
        "COMPUTE_TASK_INFO", sql
    ):
        if not isinstance(start_ns, int) or not isinstance(end_ns, int) or end_ns < start_ns:
            continue
        rows += 1
        duration = (end_ns - start_ns) / 1000.0
        step = _step_of(windows, starts, (start_ns - origin) / 1000.0) if windows else None
        key = (step, op_type, core)
        group = groups.get(key)
        if group is None:
            group = groups[key] = KernelGroup(
                step,
                strings.get(op_type, str(op_type)),
                strings.get(core, str(core)),
                strings.get(name, str(name)),
            )
        group.count += 1
        group.total_us += duration
        if duration < small_max:
            group.small_count += 1
            group.small_us += duration
        if not has_pmu:
            continue
        compute, load = mac, mte2
        if compute is None or load is None or (compute == 0 and load == 0):
            compute, load = vec, vmte2
            if compute is None or load is None or (compute == 0 and load == 0):
                continue
        add_pipes(group, duration, float(compute), float(load), mte2_bound, compute_used)
    if rows == 0:
        raise InputError(str(db.path), "table COMPUTE_TASK_INFO has no kernels with device times")
    return KernelTable(list(groups.values()), has_pmu, has_step_ids=bool(windows), rows=rows)


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
        number = _step_of(windows, starts, (a - origin) / 1000.0) if windows else None
        step = by_step.setdefault(number, CommStep(step=number))
        kind = taxonomy.comm_kind(strings.get(name, ""))
        step.add(kind, (b - a) / 1e6, strings.get(group, str(group)))
        if isinstance(wait, int | float):
            step.wait_ms[kind] = step.wait_ms.get(kind, 0.0) + wait / 1e6
    return list(by_step.values()) or None
