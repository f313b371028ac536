"""Readers for the individual files of an ASCEND_PROFILER_OUTPUT folder."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from advisor.inputs.taxonomy import Taxonomy
from advisor.model import InputError
from advisor.parsers.csvio import CsvTable, clean, integer, number
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


def _step_row(table: CsvTable, row: list[str], idx: dict[str, int | None]) -> StepRow:
    def val(name: str) -> float | None:
        i = idx[name]
        return None if i is None else number(row[i])

    values = {name: val(name) for name in STEP_COLUMNS}
    if any(v is None for v in values.values()):
        bad = [n for n, v in values.items() if v is None]
        raise InputError(str(table.path), f"non-numeric {', '.join(bad)} in a step row")
    step_i = idx["Step"]
    return StepRow(
        step=integer(row[step_i]) if step_i is not None else None,
        computing=values["Computing"] or 0.0,
        comm_not_overlapped=values["Communication(Not Overlapped)"] or 0.0,
        overlapped=values["Overlapped"] or 0.0,
        communication=values["Communication"] or 0.0,
        free=values["Free"] or 0.0,
        preparing=val("Preparing"),
        bubble=val("Bubble"),
    )


def _step_indexes(table: CsvTable) -> dict[str, int | None]:
    table.require(*STEP_COLUMNS)
    names = (*STEP_COLUMNS, "Step", "Preparing", "Bubble", "Type", "Index")
    return {name: table.column(name) for name in names}


def read_step_trace(path: Path) -> list[StepRow]:
    table = CsvTable(path)
    idx = _step_indexes(table)
    rows = [_step_row(table, row, idx) for row in table.rows()]
    if not rows:
        raise InputError(str(path), "no step rows")
    return rows


def read_cluster_step_trace(path: Path) -> tuple[list[ClusterStepRow], list[ClusterStage]]:
    """The per-rank rows (Type=rank) and the per-stage rows (Type=stage, Index "(0, 1, 2, 3)")
    of msprof-analyze's cluster_step_trace_time.csv."""
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
            if ranks:
                staged.append(ClusterStage(ranks=ranks, row=_step_row(table, row, idx)))
            continue
        if kind != "rank":
            continue
        rank = integer(row[index_i])
        if rank is None or rank < 0:
            raise InputError(str(path), f"rank index {row[index_i]!r} is not a rank number")
        out.append(ClusterStepRow(rank=rank, row=_step_row(table, row, idx)))
    if not out:
        raise InputError(str(path), "no rows with Type=rank")
    return out, staged


def _to_float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None  # N/A cells (AI-CPU kernels, Level0) and blanks


def read_kernels(path: Path, taxonomy: Taxonomy) -> KernelTable:
    """Aggregate kernel rows per (step, type, core); millions of rows, so the loop stays lean."""
    table = CsvTable(path)
    type_i, dur_i = table.require("Type", "Duration(us)")
    name_i = table.column("Name")
    core_i = table.column("Accelerator Core", "Task Type")
    step_i = table.column("Step Id")
    pipes = [
        table.column(c)
        for c in ("aic_mac_ratio", "aic_mte2_ratio", "aiv_vec_ratio", "aiv_mte2_ratio")
    ]
    has_pmu = pipes[1] is not None or pipes[3] is not None
    aic_mac, aic_mte2, aiv_vec, aiv_mte2 = (i if i is not None else -1 for i in pipes)
    small_max = taxonomy.small_op_max_us
    mte2_bound, compute_used = taxonomy.mte2_bound_min_ratio, taxonomy.compute_well_used_ratio
    # raw cells as keys; cleaned once per group at the end
    groups: dict[tuple[str, str, str], KernelGroup] = {}
    rows = 0
    for row in table.rows():
        try:
            duration = float(row[dur_i])
        except ValueError:
            continue
        rows += 1
        key = (
            row[step_i] if step_i is not None else "",
            row[type_i],
            row[core_i] if core_i is not None else "",
        )
        group = groups.get(key)
        if group is None:
            name = clean(row[name_i]) if name_i is not None else clean(key[1])
            group = groups[key] = KernelGroup(integer(key[0]), clean(key[1]), clean(key[2]), name)
        group.count += 1
        group.total_us += duration
        if duration < small_max:
            group.small_count += 1
            group.small_us += duration
        if not has_pmu:
            continue
        # the unit that ran the kernel: cube ratios when present and non-zero, else vector ratios
        compute = _to_float(row[aic_mac]) if aic_mac >= 0 else None
        mte2 = _to_float(row[aic_mte2]) if aic_mte2 >= 0 else None
        if compute is None or mte2 is None or (compute == 0 and mte2 == 0):
            compute = _to_float(row[aiv_vec]) if aiv_vec >= 0 else None
            mte2 = _to_float(row[aiv_mte2]) if aiv_mte2 >= 0 else None
            if compute is None or mte2 is None or (compute == 0 and mte2 == 0):
                continue
        add_pipes(group, duration, compute, mte2, mte2_bound, compute_used)
    if rows == 0:
        raise InputError(str(path), "no kernel rows")
    return KernelTable(
        groups=list(groups.values()), has_pmu=has_pmu, has_step_ids=step_i is not None, rows=rows
    )


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


def read_op_statistic(path: Path) -> list[OpStat]:
    table = CsvTable(path)
    type_i, count_i, total_i = table.require("OP Type", "Count", "Total Time(us)")
    core_i = table.column("Core Type")
    out = []
    for row in table.rows():
        total = number(row[total_i])
        count = integer(row[count_i])
        if total is None or count is None:
            continue
        core = clean(row[core_i]) if core_i is not None else ""
        out.append(OpStat(clean(row[type_i]), core, count, total))
    if not out:
        raise InputError(str(path), "no operator rows")
    return out


def read_memory_record(path: Path) -> MemorySummary:
    table = CsvTable(path)
    comp_i, alloc_i, res_i = table.require("Component", "Total Allocated(MB)", "Total Reserved(MB)")
    by_component: dict[str, list[tuple[float, float]]] = {}
    for row in table.rows():
        allocated, reserved = number(row[alloc_i]), number(row[res_i])
        if allocated is None or reserved is None:
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


def read_communication(path: Path, taxonomy: Taxonomy) -> list[CommStep]:
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
                _add_comm_op(step, taxonomy.comm_kind(op_key), op, _group_of(op_key))
        steps.append(step)
    if not steps:
        raise InputError(str(path), "no steps")
    return steps


def read_cluster_communication(path: Path, taxonomy: Taxonomy) -> dict[int, list[CommStep]]:
    """msprof-analyze's cluster_communication.json: {group: {step: {op: {rank: op info}}}}."""
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
                    _add_comm_op(
                        step, taxonomy.comm_kind(op_key), info, _group_of(op_key) or group_key
                    )
    if not by_rank:
        raise InputError(str(path), "no per-rank communication entries")
    return {rank: list(steps.values()) for rank, steps in sorted(by_rank.items())}


def _group_of(op_key: str) -> str | None:
    """HCCL op names end in `@<group>` (e.g. hcom_allReduce__586_0_1@17522688603477080586)."""
    _, at, group = op_key.rpartition("@")
    return group.strip() or None if at else None


def _add_comm_op(step: CommStep, kind: str, op: dict[str, Any], group: str | None) -> None:
    info = op.get("Communication Time Info") or {}
    elapse = _float(info.get("Elapse Time(ms)"))
    wait = _float(info.get("Wait Time(ms)"))
    if elapse is not None:
        step.add(kind, elapse, group)
    if wait is not None:
        step.wait_ms[kind] = step.wait_ms.get(kind, 0.0) + wait
    for link, stats in (op.get("Communication Bandwidth Info") or {}).items():
        if not isinstance(stats, dict):
            continue
        size = _float(stats.get("Transit Size(MB)"))
        time = _float(stats.get("Transit Time(ms)"))
        if size is None or time is None:
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
