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
from advisor.inputs.thresholds import reader_thresholds
from advisor.model import InputError
from advisor.parsers import memory_summary as memory
from advisor.parsers.ascend_db.analysis import read_comm, read_links, read_step_rows
from advisor.parsers.ascend_db.checks import check_intervals, check_pmu_ratios, valid_interval
from advisor.parsers.ascend_db.device_memory import module_memory, process_memory
from advisor.parsers.ascend_db.kernels import start_kernels
from advisor.parsers.ascend_db.sqlite import Database
from advisor.parsers.ascend_db.trace import read_db_trace
from advisor.parsers.bounds import BadValues
from advisor.parsers.profile_data import (
    CollectiveSize,
    CommStep,
    KernelTable,
    LinkStat,
    MemorySummary,
    ModuleMemory,
    StepRow,
)
from advisor.parsers.traces.steps import StepWindow, TraceData

PROFILER_DBS = ("ascend_pytorch_profiler*.db", "ascend_mindspore_profiler*.db")
ANALYSIS_DB = "analysis.db"
# MindSpore writes the same tables as communication_analyzer.db
ANALYSIS_DBS = (ANALYSIS_DB, "communication_analyzer.db")
# Export schema versions this reader follows (META_DATA SCHEMA_VERSION_MAJOR).
KNOWN_SCHEMA_MAJOR = 1
_BYTES_PER_MB = 1024.0 * 1024.0
_NS_PER_US = 1000.0


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
    module_memory: ModuleMemory | None = None
    process_sampled_peak_mb: float | None = None  # NPU_MEM app rows
    trace: TraceData | None = None
    links: list[LinkStat] | None = None
    device: str | None = None  # NPU_INFO's chip name (Ascend910B...)
    aicore_freq_mhz: list[float] | None = None  # AICORE_FREQ samples
    collective_sizes: list[CollectiveSize] | None = None  # COMMUNICATION_OP count x dataType
    # text-export file name -> the table it was read from instead
    sources: dict[str, str] = field(default_factory=dict)
    absent: dict[str, str] = field(default_factory=dict)


def read_database(path: Path, taxonomy: Taxonomy, bad: BadValues | None = None) -> DbProfile:
    out = DbProfile()
    bad = bad or BadValues()
    with Database(path) as db:
        _check_schema(db)
        strings = db.strings()
        origin = _origin(db)
        check_intervals(db, origin, bad)
        out.metadata = _metadata(db)
        out.rank = _rank(db)
        out.device = _device(db)
        out.aicore_freq_mhz = _aicore_freq(db)
        windows = _step_windows(db, origin)
        kernels = start_kernels(path, strings, origin, windows, reader_thresholds())
        out.sources["kernel_details.csv"] = f"{path.name}:TASK+COMPUTE_TASK_INFO"
        out.memory = _memory(db, strings, [(w.number, w.start, w.end) for w in windows], origin)
        if out.memory is None:
            out.absent["memory_record.csv"] = f"{path.name} has no MEMORY_RECORD rows"
        else:
            out.sources["memory_record.csv"] = f"{path.name}:MEMORY_RECORD"
            if out.memory.holders:
                out.sources["operator_memory.csv"] = f"{path.name}:OP_MEMORY"
        out.module_memory = module_memory(db)
        if out.module_memory is None:
            out.absent["npu_module_mem.csv"] = f"{path.name} has no NPU_MODULE_MEM rows"
        else:
            out.sources["npu_module_mem.csv"] = f"{path.name}:NPU_MODULE_MEM"
        out.process_sampled_peak_mb = process_memory(db, strings)
        if out.process_sampled_peak_mb is not None:
            out.sources["NPU_MEM"] = f"{path.name}:NPU_MEM"
        out.trace = read_db_trace(db, path, strings, origin, windows, taxonomy)
        out.sources["trace_view.json"] = path.name
        out.comm = _comm_from_ops(db, strings, origin, windows, taxonomy)
        if out.comm is not None:
            out.sources["communication.json"] = f"{path.name}:COMMUNICATION_OP"
        out.collective_sizes = _collective_sizes(db, strings)
        check_pmu_ratios(db, strings, bad)  # while a worker aggregates the kernels
        out.kernels = kernels()
    analysis = analysis_db(path.parent)
    if analysis is not None:
        with Database(analysis) as db:
            if db.has("StepTraceTime"):
                out.step_rows = read_step_rows(db, bad)
                out.sources["step_trace_time.csv"] = f"{analysis.name}:StepTraceTime"
            _analysis_comm(db, analysis, out, taxonomy)
    else:
        out.absent["step_trace_time.csv"] = f"no {' or '.join(ANALYSIS_DBS)} beside {path.name}"
    return out


def read_step_model(
    path: Path, taxonomy: Taxonomy, bad: BadValues | None = None
) -> DbProfile | None:
    """The cheap tier of a large cluster: the export's header and the analysis database's
    StepTraceTime rows, with its communication summaries (CommAnalyzerTime, the link matrix)
    when it has them; no task table scanned. None when there is no step table (the rank is
    then read in full: its tasks hold the steps)."""
    analysis = analysis_db(path.parent)
    if analysis is None:
        return None
    out = DbProfile()
    with Database(analysis) as db:
        if not db.has("StepTraceTime"):
            return None
        out.step_rows = read_step_rows(db, bad)
        out.sources["step_trace_time.csv"] = f"{analysis.name}:StepTraceTime"
        _analysis_comm(db, analysis, out, taxonomy)
    with Database(path) as db:
        _check_schema(db)
        out.metadata = _metadata(db)
        out.rank = _rank(db)
    return out


def _analysis_comm(db: Database, analysis: Path, out: DbProfile, taxonomy: Taxonomy) -> None:
    """The analysis database's communication time per collective and step, and its links."""
    if db.has("CommAnalyzerTime"):
        out.comm = read_comm(db, taxonomy)
        out.sources["communication.json"] = f"{analysis.name}:CommAnalyzerTime"
    out.links = read_links(db)
    if out.links is not None:
        out.sources["communication_matrix.json"] = f"{analysis.name}:CommAnalyzerMatrix"


def _rank(db: Database) -> int | None:
    if db.has("RANK_DEVICE_MAP", "rankId"):
        ranks = [r for (r,) in db.rows("RANK_DEVICE_MAP", "SELECT rankId FROM RANK_DEVICE_MAP")]
        if ranks and isinstance(ranks[0], int) and ranks[0] >= 0:
            return ranks[0]
    return None


def _device(db: Database) -> str | None:
    """The chip the export names (NPU_INFO.name, e.g. Ascend910B); None when it does not."""
    if not db.has("NPU_INFO", "name"):
        return None
    names = [n for (n,) in db.rows("NPU_INFO", "SELECT name FROM NPU_INFO") if isinstance(n, str)]
    return names[0].strip() or None if names else None


def _aicore_freq(db: Database) -> list[float] | None:
    """The AI Core frequency samples (MHz); None when the export has none."""
    if not db.has("AICORE_FREQ", "freq"):
        return None
    sql = "SELECT freq FROM AICORE_FREQ"
    freqs = [
        float(f)
        for (f,) in db.rows("AICORE_FREQ", sql)
        if isinstance(f, int | float) and not isinstance(f, bool) and 0 < f < 100_000
    ]
    return freqs or None


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
            except (json.JSONDecodeError, RecursionError):
                continue  # a value no profiler writes: the metadata it would give is unknown
    return meta


def _step_windows(db: Database, origin: int) -> list[StepWindow]:
    if not db.has("STEP_TIME", "id", "startNs", "endNs"):
        return []
    windows = [
        StepWindow(int(n), (a - origin) / 1000.0, (b - origin) / 1000.0)
        for n, a, b in db.rows(
            "STEP_TIME",
            f"SELECT id, startNs, endNs FROM STEP_TIME WHERE {valid_interval(origin)} "
            "ORDER BY startNs",
        )
        if isinstance(n, int) and isinstance(a, int) and isinstance(b, int) and b >= a
    ]
    return windows


def step_of(windows: list[StepWindow], starts: list[float], at: float) -> int | None:
    i = bisect_right(starts, at) - 1
    if i >= 0 and at < windows[i].end:
        return windows[i].number
    return None


def _memory(
    db: Database, strings: dict[int, str], windows: list[memory.Window], origin: int
) -> MemorySummary | None:
    """MEMORY_RECORD as memory_record.csv's samples, read per step window (STEP_TIME)."""
    if not db.has("MEMORY_RECORD", "component", "totalAllocated", "totalReserved"):
        return None
    by_component: dict[str, list[memory.Sample]] = {}
    stamp = "timestamp" if "timestamp" in db.columns("MEMORY_RECORD") else "NULL"
    sql = f"SELECT component, totalAllocated, totalReserved, {stamp} FROM MEMORY_RECORD"
    for component, allocated, reserved, at in db.rows("MEMORY_RECORD", sql):
        if not isinstance(allocated, int | float) or not isinstance(reserved, int | float):
            continue
        name = strings.get(component, str(component))
        at_us = at / _NS_PER_US if isinstance(at, int | float) else None
        by_component.setdefault(name, []).append(
            (at_us, allocated / _BYTES_PER_MB, reserved / _BYTES_PER_MB)
        )
    # the windows are relative to the export's origin (ns); the samples in absolute us
    shift = origin / _NS_PER_US
    summary = memory.summarise(by_component, [(n, a + shift, b + shift) for n, a, b in windows])
    if summary is None:
        return None
    return memory.with_holders(summary, _op_memory(db, strings))


def _op_memory(db: Database, strings: dict[int, str]) -> list[memory.Block]:
    """OP_MEMORY as operator_memory.csv's blocks: name, MiB, allocated and released (us)."""
    if not db.has("OP_MEMORY", "name", "size", "allocationTime", "releaseTime"):
        return []
    sql = "SELECT name, size, allocationTime, releaseTime FROM OP_MEMORY"
    blocks: list[memory.Block] = []
    for name, size, allocated, released in db.rows("OP_MEMORY", sql):
        if not isinstance(size, int | float) or not isinstance(allocated, int | float):
            continue
        blocks.append(
            (
                strings.get(name, str(name)),
                size / _BYTES_PER_MB,
                allocated / _NS_PER_US,
                released / _NS_PER_US if isinstance(released, int | float) else None,
            )
        )
    return blocks


def _collective_sizes(db: Database, strings: dict[int, str]) -> list[CollectiveSize] | None:
    """Each collective's element count and data type (COMMUNICATION_OP, ENUM_HCCL_DATA_TYPE)."""
    if not db.has("COMMUNICATION_OP", "opName", "groupName", "count", "dataType"):
        return None
    types: dict[int, str] = {}
    if db.has("ENUM_HCCL_DATA_TYPE", "id", "name"):
        sql = "SELECT id, name FROM ENUM_HCCL_DATA_TYPE"
        types = {int(i): str(n) for i, n in db.rows("ENUM_HCCL_DATA_TYPE", sql)}
    sql = "SELECT opName, groupName, count, dataType FROM COMMUNICATION_OP"
    sizes = [
        CollectiveSize(
            strings.get(name, str(name)),
            strings.get(group, str(group)),
            count,
            types.get(dtype, str(dtype)),
        )
        for name, group, count, dtype in db.rows("COMMUNICATION_OP", sql)
        if isinstance(count, int) and count > 0
    ]
    return sizes or None


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
    sql = (
        f"SELECT opName, startNs, endNs, groupName, {wait_col} FROM COMMUNICATION_OP "
        f"WHERE {valid_interval(origin)}"
    )
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
