"""Readers for the individual files of an ASCEND_PROFILER_OUTPUT folder."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.inputs.taxonomy import Taxonomy
from advisor.model import InputError
from advisor.parsers.bounds import MAX_DURATION_US, NOT_AVAILABLE, BadValues, Invalid
from advisor.parsers.csvio import CsvTable, clean, integer
from advisor.parsers.profile_data import (
    ClusterStage,
    ClusterStepRow,
    CommStep,
    KernelGroup,
    KernelTable,
    MemorySummary,
    OpStat,
    StepRow,
)

STEP_COLUMNS = ("Computing", "Communication(Not Overlapped)", "Overlapped", "Communication", "Free")
_STEP_KEY = re.compile(r"step\s*(\d+)", re.IGNORECASE)


def read_json(path: Path) -> Any:
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise InputError(str(path), f"cannot read: {exc.strerror}") from None
    if not text.strip():
        raise InputError(str(path), "empty file")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.pos >= len(text.rstrip()) - 1:
            problem = f"truncated JSON (ends at byte {len(text)})"
        else:
            problem = f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        raise InputError(str(path), problem) from None
    except UnicodeDecodeError:
        raise InputError(str(path), "not UTF-8 JSON") from None
    except RecursionError:
        raise InputError(str(path), "JSON nested too deeply") from None


def _step_row(
    table: CsvTable, row: list[str], idx: dict[str, int | None], bad: BadValues
) -> StepRow | None:
    """One step row; None when a value cannot be right and the row is dropped."""
    values: dict[str, float | None] = {}
    for name in (*STEP_COLUMNS, "Preparing", "Bubble"):
        i = idx[name]
        if i is None:
            values[name] = None
            continue
        parsed = bad.measure(table.path, f"row {table.line}, {name}", row[i])
        if isinstance(parsed, Invalid):
            return None
        values[name] = parsed
    absent = [n for n in STEP_COLUMNS if values[n] is None]
    if absent:
        bad.reject(table.path, f"row {table.line}", ", ".join(absent), "missing in a step row")
        return None
    step_i = idx["Step"]
    return StepRow(
        step=integer(row[step_i]) if step_i is not None else None,
        computing=values["Computing"] or 0.0,
        comm_not_overlapped=values["Communication(Not Overlapped)"] or 0.0,
        overlapped=values["Overlapped"] or 0.0,
        communication=values["Communication"] or 0.0,
        free=values["Free"] or 0.0,
        preparing=values["Preparing"],
        bubble=values["Bubble"],
    )


def _step_indexes(table: CsvTable) -> dict[str, int | None]:
    table.require(*STEP_COLUMNS)
    names = (*STEP_COLUMNS, "Step", "Preparing", "Bubble", "Type", "Index")
    return {name: table.column(name) for name in names}


def read_step_trace(path: Path, bad: BadValues | None = None) -> list[StepRow]:
    bad = bad or BadValues()
    table = CsvTable(path)
    idx = _step_indexes(table)
    rows = [r for row in table.rows() if (r := _step_row(table, row, idx, bad)) is not None]
    if not rows:
        raise InputError(str(path), "no usable step rows")
    return rows


def read_cluster_step_trace(
    path: Path, bad: BadValues | None = None
) -> tuple[list[ClusterStepRow], list[ClusterStage]]:
    """The per-rank rows (Type=rank) and the per-stage rows (Type=stage, Index "(0, 1, 2, 3)")
    of msprof-analyze's cluster_step_trace_time.csv."""
    bad = bad or BadValues()
    table = CsvTable(path)
    idx = _step_indexes(table)
    type_i, index_i = idx["Type"], idx["Index"]
    if type_i is None or index_i is None:
        raise InputError(str(path), "missing column(s) Type, Index")
    out: list[ClusterStepRow] = []
    staged: list[ClusterStage] = []
    for row in table.rows():
        kind = clean(row[type_i]).lower()
        if kind == "stage":
            ranks = tuple(int(r) for r in re.findall(r"\d+", row[index_i]))
            stage_row = _step_row(table, row, idx, bad)
            if ranks and stage_row is not None:
                staged.append(ClusterStage(ranks=ranks, row=stage_row))
            continue
        if kind != "rank":
            continue
        rank = integer(row[index_i])
        if rank is None or rank < 0:
            raise InputError(str(path), f"rank index {row[index_i]!r} is not a rank number")
        step_row = _step_row(table, row, idx, bad)
        if step_row is not None:
            out.append(ClusterStepRow(rank=rank, row=step_row))
    if not out:
        raise InputError(str(path), "no rows with Type=rank")
    return out, staged


def _to_float(text: str) -> float | None:
    """A pipe ratio in [0, 1]; None for N/A cells (AI-CPU kernels, Level0), blanks and values
    that are not ratios (the kernel then counts without pipe data)."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if 0.0 <= value <= 1.0 else None


def read_kernels(path: Path, taxonomy: Taxonomy, bad: BadValues | None = None) -> KernelTable:
    """Aggregate kernel rows per (step, type, core); millions of rows, so the loop stays lean."""
    bad = bad or BadValues()
    table = CsvTable(path)
    columns = _KernelColumns(table)
    small_max = taxonomy.small_op_max_us
    mte2_bound, compute_used = taxonomy.mte2_bound_min_ratio, taxonomy.compute_well_used_ratio
    # raw cells as keys; cleaned once per group at the end
    groups: dict[tuple[str, str, str], KernelGroup] = {}
    rows = 0
    for row in table.rows():
        duration = _kernel_duration(path, table, row, columns.duration, bad)
        if duration is None:
            continue
        rows += 1
        key = columns.key(row)
        group = groups.get(key)
        if group is None:
            group = groups[key] = columns.group(row, key)
        group.count += 1
        group.total_us += duration
        if duration < small_max:
            group.small_count += 1
            group.small_us += duration
        ratios = columns.pipe_ratios(row) if columns.has_pmu else None
        if ratios is not None:
            add_pipes(group, duration, *ratios, mte2_bound, compute_used)
    if rows == 0:
        raise InputError(str(path), "no kernel rows")
    return KernelTable(
        groups=list(groups.values()),
        has_pmu=columns.has_pmu,
        has_step_ids=columns.step is not None,
        rows=rows,
    )


def _kernel_duration(
    path: Path, table: CsvTable, row: list[str], column: int, bad: BadValues
) -> float | None:
    """A row's duration in microseconds; None (the row rejected, unless not available)."""
    try:
        duration = float(row[column])
    except ValueError:
        if clean(row[column]) not in NOT_AVAILABLE:
            bad.reject(path, f"row {table.line}, Duration(us)", row[column])
        return None
    if not 0.0 <= duration <= MAX_DURATION_US:  # also false for NaN
        bad.reject(path, f"row {table.line}, Duration(us)", row[column])
        return None
    return duration


class _KernelColumns:
    """Where kernel_details.csv keeps what the kernel table needs (-1 / None: not there)."""

    def __init__(self, table: CsvTable) -> None:
        self.type, self.duration = table.require("Type", "Duration(us)")
        self.name = table.column("Name")
        self.core = table.column("Accelerator Core", "Task Type")
        self.step = table.column("Step Id")
        pipes = [
            table.column(c)
            for c in ("aic_mac_ratio", "aic_mte2_ratio", "aiv_vec_ratio", "aiv_mte2_ratio")
        ]
        self.has_pmu = pipes[1] is not None or pipes[3] is not None
        self.aic_mac, self.aic_mte2, self.aiv_vec, self.aiv_mte2 = (
            i if i is not None else -1 for i in pipes
        )

    def key(self, row: list[str]) -> tuple[str, str, str]:
        """(step, type, core) as the raw cells."""
        return (
            row[self.step] if self.step is not None else "",
            row[self.type],
            row[self.core] if self.core is not None else "",
        )

    def group(self, row: list[str], key: tuple[str, str, str]) -> KernelGroup:
        name = clean(row[self.name]) if self.name is not None else clean(key[1])
        return KernelGroup(integer(key[0]), clean(key[1]), clean(key[2]), name)

    def pipe_ratios(self, row: list[str]) -> tuple[float, float] | None:
        """(compute, mte2) ratios of the unit that ran the kernel: cube ratios when present
        and non-zero, else vector ratios; None when neither is there."""
        ratios = _ratios(row, self.aic_mac, self.aic_mte2)
        return ratios if ratios is not None else _ratios(row, self.aiv_vec, self.aiv_mte2)


def _ratios(row: list[str], compute_i: int, mte2_i: int) -> tuple[float, float] | None:
    compute = _to_float(row[compute_i]) if compute_i >= 0 else None
    mte2 = _to_float(row[mte2_i]) if mte2_i >= 0 else None
    if compute is None or mte2 is None or (compute == 0 and mte2 == 0):
        return None
    return compute, mte2


def add_pipes(
    group: KernelGroup,
    duration: float,
    compute: float,
    mte2: float,
    mte2_bound: float,
    compute_used: float,
) -> None:
    """Count one kernel's pipe ratios; it is memory-bound when mte2 dominates a compute pipe
    that is not well used (taxonomy thresholds mte2_bound_min_ratio, compute_well_used_ratio)."""
    group.pmu_us += duration
    group.compute_pipe_us += duration * compute
    group.mte2_pipe_us += duration * mte2
    if mte2 > compute and mte2 >= mte2_bound and compute < compute_used:
        group.mte2_bound_us += duration


def read_op_statistic(path: Path, bad: BadValues | None = None) -> list[OpStat]:
    bad = bad or BadValues()
    table = CsvTable(path)
    type_i, count_i, total_i = table.require("OP Type", "Count", "Total Time(us)")
    core_i = table.column("Core Type")
    out = []
    for row in table.rows():
        total = bad.measure(path, f"row {table.line}, Total Time(us)", row[total_i])
        counted = bad.measure(path, f"row {table.line}, Count", row[count_i])
        if isinstance(total, Invalid) or isinstance(counted, Invalid):
            continue
        count = None if counted is None else int(counted)
        if total is None or count is None:
            continue
        core = clean(row[core_i]) if core_i is not None else ""
        out.append(OpStat(clean(row[type_i]), core, count, total))
    if not out:
        raise InputError(str(path), "no operator rows")
    return out


def read_memory_record(path: Path, bad: BadValues | None = None) -> MemorySummary:
    bad = bad or BadValues()
    table = CsvTable(path)
    comp_i, alloc_i, res_i = table.require("Component", "Total Allocated(MB)", "Total Reserved(MB)")
    by_component: dict[str, list[tuple[float, float]]] = {}
    for row in table.rows():
        allocated = bad.measure(path, f"row {table.line}, Total Allocated(MB)", row[alloc_i])
        reserved = bad.measure(path, f"row {table.line}, Total Reserved(MB)", row[res_i])
        if not isinstance(allocated, float) or not isinstance(reserved, float):
            continue
        by_component.setdefault(clean(row[comp_i]), []).append((allocated, reserved))
    # The PyTorch allocator (PTA) is what fragmentation is about; fall back to whatever exists.
    if not by_component:
        raise InputError(str(path), "no memory samples")
    preferred = [c for c in ("PTA", "PTA+GE", "APP") if c in by_component]
    component: str = preferred[0] if preferred else sorted(by_component)[0]
    samples = by_component[component]
    allocated_peak = max(a for a, _ in samples)
    reserved_peak_sample = max(samples, key=lambda s: (s[1], s[0]))
    return MemorySummary(
        allocated_peak_mb=allocated_peak,
        reserved_peak_mb=reserved_peak_sample[1],
        allocated_at_reserved_peak_mb=reserved_peak_sample[0],
        component=component,
        samples=len(samples),
    )


def read_communication(
    path: Path, taxonomy: Taxonomy, bad: BadValues | None = None
) -> list[CommStep]:
    bad = bad or BadValues()
    data = read_json(path)
    if not isinstance(data, dict):
        raise InputError(str(path), "expected a JSON object keyed by step")
    steps = []
    for step_key, buckets in data.items():
        if not isinstance(buckets, dict):
            raise InputError(str(path), f"{step_key}: expected an object of op buckets")
        m = _STEP_KEY.fullmatch(str(step_key).strip())
        step = CommStep(step=int(m.group(1)) if m else None)
        for bucket in buckets.values():
            if not isinstance(bucket, dict):
                continue
            for op_key, op in bucket.items():
                if op_key.startswith("Total Op Info") or not isinstance(op, dict):
                    continue  # aggregated pseudo-op: counting it would double every number
                where = _Where(path, bad, f"{step_key} {op_key}")
                _add_comm_op(step, taxonomy.comm_kind(op_key), op, _group_of(op_key), where)
        steps.append(step)
    if not steps:
        raise InputError(str(path), "no steps")
    return steps


def read_cluster_communication(
    path: Path, taxonomy: Taxonomy, bad: BadValues | None = None
) -> dict[int, list[CommStep]]:
    """msprof-analyze's cluster_communication.json: {group: {step: {op: {rank: op info}}}}."""
    bad = bad or BadValues()
    data = read_json(path)
    if not isinstance(data, dict):
        raise InputError(str(path), "expected a JSON object keyed by communication group")
    by_rank: dict[int, dict[int | None, CommStep]] = {}
    for group_key, steps in data.items():
        if not isinstance(steps, dict):
            continue
        for step_key, ops in steps.items():
            m = _STEP_KEY.fullmatch(str(step_key).strip())
            number = int(m.group(1)) if m else None
            if not isinstance(ops, dict):
                continue
            for op_key, per_rank in ops.items():
                if op_key.startswith("Total Op Info") or not isinstance(per_rank, dict):
                    continue
                for rank_key, info in per_rank.items():
                    if not str(rank_key).isdigit() or not isinstance(info, dict):
                        continue
                    steps_of_rank = by_rank.setdefault(int(rank_key), {})
                    step = steps_of_rank.setdefault(number, CommStep(step=number))
                    where = _Where(path, bad, f"{step_key} {op_key} rank {rank_key}")
                    _add_comm_op(
                        step,
                        taxonomy.comm_kind(op_key),
                        info,
                        _group_of(op_key) or group_key,
                        where,
                    )
    if not by_rank:
        raise InputError(str(path), "no per-rank communication entries")
    return {rank: list(steps.values()) for rank, steps in sorted(by_rank.items())}


def _group_of(op_key: str) -> str | None:
    """HCCL op names end in `@<group>` (e.g. hcom_allReduce__586_0_1@17522688603477080586)."""
    _, at, group = op_key.rpartition("@")
    return group.strip() or None if at else None


@dataclass(frozen=True)
class _Where:
    """Where a communication record sits, for the error that names a bad value."""

    path: Path
    bad: BadValues
    record: str

    def value(self, field_name: str, raw: object) -> float | Invalid | None:
        return self.bad.measure(self.path, f"{self.record}: {field_name}", raw)


def _add_comm_op(
    step: CommStep, kind: str, op: dict[str, Any], group: str | None, where: _Where
) -> None:
    info = op.get("Communication Time Info")
    info = info if isinstance(info, dict) else {}
    elapse = where.value("Elapse Time(ms)", info.get("Elapse Time(ms)"))
    wait = where.value("Wait Time(ms)", info.get("Wait Time(ms)"))
    if isinstance(elapse, Invalid) or isinstance(wait, Invalid):
        return  # the record is dropped (or the file refused)
    if elapse is not None:
        step.add(kind, elapse, group)
    if wait is not None:
        step.wait_ms[kind] = step.wait_ms.get(kind, 0.0) + wait
    bandwidth = op.get("Communication Bandwidth Info")
    for link, stats in (bandwidth if isinstance(bandwidth, dict) else {}).items():
        if not isinstance(stats, dict):
            continue
        size = where.value(f"{link} Transit Size(MB)", stats.get("Transit Size(MB)"))
        time = where.value(f"{link} Transit Time(ms)", stats.get("Transit Time(ms)"))
        if not isinstance(size, float) or not isinstance(time, float):
            continue
        step.link_size_mb[link] = step.link_size_mb.get(link, 0.0) + size
        step.link_time_ms[link] = step.link_time_ms.get(link, 0.0) + time


def _float(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None
