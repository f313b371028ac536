"""Readers for the individual files of an ASCEND_PROFILER_OUTPUT folder."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.inputs.taxonomy import Taxonomy
from advisor.model import InputError
from advisor.parsers.bounds import BadValues, Invalid, step_model_breach
from advisor.parsers.csvio import CsvTable, clean, integer
from advisor.parsers.profile_data import (
    ClusterStage,
    ClusterStepRow,
    CommStep,
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
    table: CsvTable,
    row: list[str],
    idx: dict[str, int | None],
    bad: BadValues,
    identities: bool = True,
) -> StepRow | None:
    """One step row; None when a value cannot be right and the row is dropped. `identities`
    False: the columns are not one device's step (a cluster file's stage row holds each column's
    highest over the stage's ranks), so only each value is checked, not their sums."""
    values: dict[str, float | None] = {}
    for name in (*STEP_COLUMNS, "Preparing", "Bubble", "Stage"):
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
    breach = step_model_breach(values) if identities else None
    if breach is not None:
        column, why = breach
        bad.drop(table.path, f"row {table.line}, {column}", row[idx[column] or 0], why)
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
    names = (*STEP_COLUMNS, "Step", "Preparing", "Bubble", "Stage", "Type", "Index")
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
            # each column the highest of the stage's ranks (msprof-analyze's cluster analysis):
            # the step model's sums do not hold across ranks
            stage_row = _step_row(table, row, idx, bad, identities=False)
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
                _add_comm_op(
                    step, (op_key, taxonomy.comm_kind(op_key)), op, _group_of(op_key), where
                )
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
                        (op_key, taxonomy.comm_kind(op_key)),
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
    step: CommStep, names: tuple[str, str], op: dict[str, Any], group: str | None, where: _Where
) -> None:
    """`names`: the op's name in the file and its kind."""
    name, kind = names
    info = op.get("Communication Time Info")
    info = info if isinstance(info, dict) else {}
    elapse = where.value("Elapse Time(ms)", info.get("Elapse Time(ms)"))
    wait = where.value("Wait Time(ms)", info.get("Wait Time(ms)"))
    if isinstance(elapse, Invalid) or isinstance(wait, Invalid):
        return  # the record is dropped (or the file refused)
    transit = where.value("Transit Time(ms)", info.get("Transit Time(ms)"))
    sync = where.value("Synchronization Time(ms)", info.get("Synchronization Time(ms)"))
    if isinstance(transit, Invalid) or isinstance(sync, Invalid):
        return
    if elapse is not None:
        step.add(kind, elapse, group)
    if wait is not None:
        step.wait_ms[kind] = step.wait_ms.get(kind, 0.0) + wait
    step.split(kind, group, (elapse, wait, transit, sync))
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
        if size > 0:
            step.transfers.setdefault(link, []).append((size, time))
            if link == "RDMA":
                step.rdma_ops.append((name, group, time))
        _add_packets(step, link, stats.get("Size Distribution"), where)


def _add_packets(step: CommStep, link: str, sizes: object, where: _Where) -> None:
    """An op's Size Distribution: {"<size MB>": [count, transit time ms]}; entries that are not
    that shape are left out (the op's totals are kept)."""
    if not isinstance(sizes, dict):
        return
    for size_text, entry in sizes.items():
        size = _float(size_text)
        if size is None or size <= 0 or not isinstance(entry, list) or len(entry) != 2:
            continue
        count = where.value(f"{link} Size Distribution {size_text} count", entry[0])
        time = where.value(f"{link} Size Distribution {size_text} time", entry[1])
        if not isinstance(count, float) or not isinstance(time, float):
            continue
        slot = step.packets.setdefault(link, {}).setdefault(size, [0.0, 0.0])
        slot[0] += count
        slot[1] += time


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
