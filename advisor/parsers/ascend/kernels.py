"""kernel_details.csv: every kernel the device ran, aggregated per (step, type, core).

Millions of rows, so the loop stays lean: raw cells are the group keys (cleaned once per group),
and where the export has the PMU pipe ratios each kernel is counted as compute- or memory-bound.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter
from pathlib import Path
from typing import cast

from advisor.inputs.thresholds import ReaderThresholds
from advisor.model import InputError
from advisor.parsers.bounds import MAX_DURATION_US, NOT_AVAILABLE, BadValues
from advisor.parsers.csvio import CsvTable, clean, integer
from advisor.parsers.kernel_sequences import SequenceCounter
from advisor.parsers.profile_data import (
    KERNEL_TYPES_MAX,
    BlockDimGroup,
    KernelGroup,
    KernelTable,
    OpDetail,
)
from advisor.parsers.trace_view.timestamps import KEPT_INTEGER_DIGITS

_PIPES = ("aic_mac_ratio", "aic_mte2_ratio", "aiv_vec_ratio", "aiv_mte2_ratio")


def read_kernels(
    path: Path, limits: ReaderThresholds, bad: BadValues | None = None, spans: bool = False
) -> KernelTable:
    """Aggregate kernel rows per (step, type, core); millions of rows, so the loop stays lean.
    With `spans`, also each step's first start and last end (the step windows a memory curve
    is read in; asked for only when the profile recorded memory)."""
    bad = bad or BadValues()
    table = CsvTable(path)
    columns = _KernelColumns(table)
    step_spans: dict[str, list[float]] | None = (
        {} if spans and columns.step is not None and columns.start is not None else None
    )
    small_max = limits.small_op_max_us
    pipes = _PipeReader(columns, limits, bad, table) if columns.has_pmu else None
    details = _DetailReader(columns) if columns.has_details else None
    # raw cells as keys; cleaned once per group at the end
    groups: dict[tuple[str, str, str], KernelGroup] = {}
    block_dims: dict[tuple[str, str, str, str, str], list[float]] | None = (
        {} if columns.block_dim is not None else None
    )
    key_of = columns.key_getter()
    duration_at = columns.duration
    sequences = SequenceCounter()
    types_at = columns.types_table()  # None without a start column
    start_at = columns.start_cell()
    rows = 0
    for row in table.rows():
        try:
            duration = float(row[duration_at])
        except ValueError:
            _bad_duration(path, table, row[duration_at], bad)
            continue
        if not 0.0 <= duration <= MAX_DURATION_US:  # also false for NaN
            bad.reject(path, f"row {table.line}, Duration(us)", row[duration_at])
            continue
        rows += 1
        key = key_of(row)
        group = groups.get(key)
        if group is None:
            group = groups[key] = columns.group(row, key)
        group.count += 1
        group.total_us += duration
        if duration < small_max:
            group.small_count += 1
            group.small_us += duration
        if pipes is not None:
            pipes.add(row, group, duration)
        if details is not None:
            details.add(row, key, duration)
        if block_dims is not None:
            columns.add_block_dim(block_dims, row, key, duration)
        if step_spans is not None:
            columns.add_span(step_spans, row, key[0], duration)
        sequences.add(group.step, group.op_type, duration)
        types_at = _add_type(types_at, row[start_at], group.op_type)
    if rows == 0:
        raise InputError(str(path), "no kernel rows")
    return KernelTable(
        groups=list(groups.values()),
        has_pmu=columns.has_pmu,
        has_step_ids=columns.step is not None,
        rows=rows,
        details=details.found if details is not None else None,
        has_op_state=columns.op_state is not None,
        step_spans=_spans(step_spans),
        sequences=sequences.counts,
        block_dims=_block_dim_groups(path, block_dims, bad) if block_dims is not None else None,
        types_at=types_at,
    )


def _add_type(
    types_at: dict[float, str] | None, cell: str, op_type: str
) -> dict[float, str] | None:
    """Keep the kernel's type by its start as trace_view.json's reader parses the same time
    (the shared epoch prefix cut off); None once more kernels than KERNEL_TYPES_MAX (or no
    start column)."""
    if types_at is None or len(types_at) >= KERNEL_TYPES_MAX:
        return None
    # the last KEPT_INTEGER_DIGITS digits before the point and the rest, cut from the cell as
    # it is (float() ignores the blanks around it: torch_npu writes a TAB after each start)
    dot = cell.find(".")
    kept = (
        cell[max(0, dot - KEPT_INTEGER_DIGITS) :]
        if dot >= 0
        else cell.strip()[-KEPT_INTEGER_DIGITS:]
    )
    try:
        at = float(kept)
    except ValueError:
        return types_at  # an unreadable start: that kernel goes unnamed
    types_at[at] = op_type
    return types_at


def _block_dim_groups(
    path: Path, raw: dict[tuple[str, str, str, str, str], list[float]], bad: BadValues
) -> list[BlockDimGroup]:
    """The (step, type, core, block dim, mix block dim) groups with their cells cleaned; a
    block dim that is not a count is left out with a warning (its kernels still count in the
    kernel groups)."""
    found: list[BlockDimGroup] = []
    for (step, op_type, core, block, mix), (count, total_us) in raw.items():
        block_dim = integer(block)
        if block_dim is None or block_dim < 0:
            if clean(block) not in NOT_AVAILABLE:
                bad.ignore(path, "Block Dim", block, "not a count", "no block dim", int(count))
            continue
        mix_dim = integer(mix)
        found.append(
            BlockDimGroup(
                integer(step),
                clean(op_type),
                clean(core),
                block_dim,
                mix_dim if mix_dim is not None and mix_dim >= 0 else None,
                int(count),
                total_us,
            )
        )
    return found


def _spans(step_spans: dict[str, list[float]] | None) -> tuple[tuple[int, float, float], ...]:
    """(step, first start, last end) in the profiler's clock (us), in time order."""
    if not step_spans:
        return ()
    found = []
    for raw, (start, end) in step_spans.items():
        number = integer(raw)
        if number is not None:
            found.append((number, start, end))
    return tuple(sorted(found, key=lambda span: span[1]))


def _bad_duration(path: Path, table: CsvTable, cell: str, bad: BadValues) -> None:
    """A Duration(us) cell that is not a number: the row is rejected, unless not available."""
    if clean(cell) not in NOT_AVAILABLE:
        bad.reject(path, f"row {table.line}, Duration(us)", cell)


class _KernelColumns:
    """Where kernel_details.csv keeps what the kernel table needs (-1 / None: not there)."""

    def __init__(self, table: CsvTable) -> None:
        self.type, self.duration = table.require("Type", "Duration(us)")
        self.name = table.column("Name")
        self.core = table.column("Accelerator Core", "Task Type")
        self.step = table.column("Step Id")
        self.start = table.column("Start Time(us)")
        self.path = table.path
        pipes = [table.column(c) for c in _PIPES]
        self.pipe_names = {i: name for i, name in zip(pipes, _PIPES, strict=True) if i is not None}
        self.has_pmu = pipes[1] is not None or pipes[3] is not None
        self.aic_mac, self.aic_mte2, self.aiv_vec, self.aiv_mte2 = (
            i if i is not None else -1 for i in pipes
        )
        self.dtypes = table.column("Input Data Types")
        self.op_state = table.column("OP State")
        self.has_details = self.dtypes is not None or self.op_state is not None
        self.block_dim = table.column("Block Dim")
        self.mix_block_dim = table.column("Mix Block Dim")

    def start_cell(self) -> int:
        """Where a row's start is (0 without a start column: the types table is None then)."""
        return self.start if self.start is not None else 0

    def types_table(self) -> dict[float, str] | None:
        """An empty table of the kernels' types by start (None: no start column)."""
        return {} if self.start is not None else None

    def add_block_dim(
        self,
        groups: dict[tuple[str, str, str, str, str], list[float]],
        row: list[str],
        key: tuple[str, str, str],
        duration: float,
    ) -> None:
        """Count the row under its (step, type, core, block dim, mix block dim), raw cells."""
        assert self.block_dim is not None
        mix = row[self.mix_block_dim] if self.mix_block_dim is not None else ""
        group_key = (*key, row[self.block_dim], mix)
        slot = groups.get(group_key)
        if slot is None:
            groups[group_key] = [1.0, duration]
        else:
            slot[0] += 1.0
            slot[1] += duration

    def add_span(
        self, spans: dict[str, list[float]], row: list[str], step: str, duration: float
    ) -> None:
        """Widen the step's [first start, last end] by the row (a start that is not a time
        is left out: the kernel still counts in its group). The comparisons are min's and
        max's (a NaN start widens nothing)."""
        assert self.start is not None
        try:
            start = float(row[self.start])
        except ValueError:
            return
        span = spans.get(step)
        if span is None:
            spans[step] = [start, start + duration]
            return
        if start < span[0]:
            span[0] = start
        end = start + duration
        if end > span[1]:
            span[1] = end

    def key_getter(self) -> Callable[[list[str]], tuple[str, str, str]]:
        """(step, type, core) of a row as the raw cells ("" for a column the file lacks)."""
        if self.step is not None and self.core is not None:
            return cast(
                Callable[[list[str]], tuple[str, str, str]],
                itemgetter(self.step, self.type, self.core),
            )
        step, op_type, core = self.step, self.type, self.core
        return lambda row: (
            row[step] if step is not None else "",
            row[op_type],
            row[core] if core is not None else "",
        )

    def group(self, row: list[str], key: tuple[str, str, str]) -> KernelGroup:
        name = clean(row[self.name]) if self.name is not None else clean(key[1])
        return KernelGroup(integer(key[0]), clean(key[1]), clean(key[2]), name)


# how many distinct cells a reader remembers the value of (ratios, OP states: a few hundred in
# real files; bounded whatever the file holds)
_CELLS_MAX = 1 << 16
_UNSEEN = object()


class _PipeReader:
    """Each kernel's pipe ratios counted into its group: the ratios of the unit that ran it
    (cube ratios when present and non-zero, else vector ratios). It is memory-bound when mte2
    dominates a compute pipe that is not well used (the readers' thresholds
    mte2_bound_min_ratio, compute_well_used_ratio). A ratio outside [0, 1] is left out with a
    warning naming the file, row and column, and the kernel counts without pipe data."""

    def __init__(
        self, columns: _KernelColumns, limits: ReaderThresholds, bad: BadValues, table: CsvTable
    ) -> None:
        self.columns, self.bad, self.table = columns, bad, table
        self.mte2_bound = limits.mte2_bound_min_ratio
        self.compute_used = limits.compute_well_used_ratio
        self.values: dict[str, float | _OutOfRange | None] = {}

    def value(self, cell: str) -> float | _OutOfRange | None:
        """A ratio cell's value, learnt once (cells repeat)."""
        known = _to_float(cell)
        if len(self.values) < _CELLS_MAX:
            self.values[cell] = known
        return known

    def add(self, row: list[str], group: KernelGroup, duration: float) -> None:
        columns = self.columns
        found = self._pair(row, columns.aic_mac, columns.aic_mte2)
        if found is None:
            found = self._pair(row, columns.aiv_vec, columns.aiv_mte2)
        if found is None or found is _OUT_OF_RANGE:
            return
        compute, mte2 = found  # type: ignore[misc]
        group.pmu_us += duration
        group.compute_pipe_us += duration * compute
        group.mte2_pipe_us += duration * mte2
        if mte2 > compute and mte2 >= self.mte2_bound and compute < self.compute_used:
            group.mte2_bound_us += duration

    def _pair(
        self, row: list[str], compute_at: int, mte2_at: int
    ) -> tuple[float, float] | _OutOfRange | None:
        """One unit's (compute, mte2); None when not there or both zero."""
        values = self.values
        compute = mte2 = None
        if compute_at >= 0:
            compute = values.get(row[compute_at], _UNSEEN)
            if compute is _UNSEEN:
                compute = self.value(row[compute_at])
        if mte2_at >= 0:
            mte2 = values.get(row[mte2_at], _UNSEEN)
            if mte2 is _UNSEEN:
                mte2 = self.value(row[mte2_at])
        if compute is _OUT_OF_RANGE or mte2 is _OUT_OF_RANGE:
            return self._out_of_range(row, compute_at if compute is _OUT_OF_RANGE else mte2_at)
        if compute is None or mte2 is None or (compute == 0 and mte2 == 0):
            return None
        return compute, mte2  # type: ignore[return-value]

    def _out_of_range(self, row: list[str], column: int) -> _OutOfRange:
        self.bad.ignore(
            self.columns.path,
            f"row {self.table.line}, {self.columns.pipe_names[column]}",
            row[column],
            "not a ratio in [0, 1]",
            "the kernel counts without pipe data",
        )
        return _OUT_OF_RANGE


class _DetailReader:
    """Each kernel counted under its (step, type, core, input dtypes), and whether it ran as a
    dynamic-shape operator."""

    def __init__(self, columns: _KernelColumns) -> None:
        self.dtypes, self.op_state = columns.dtypes, columns.op_state
        # by the group's raw key, then the raw dtypes cell; `found` in the order first seen
        self.by_key: dict[tuple[str, str, str], dict[str, OpDetail]] = {}
        self.found: list[OpDetail] = []
        self.dynamic: dict[str, bool] = {}

    def add(self, row: list[str], key: tuple[str, str, str], duration: float) -> None:
        dtypes = row[self.dtypes] if self.dtypes is not None else ""
        by_dtypes = self.by_key.get(key)
        if by_dtypes is None:
            by_dtypes = self.by_key[key] = {}
        detail = by_dtypes.get(dtypes)
        if detail is None:
            detail = by_dtypes[dtypes] = OpDetail(
                integer(key[0]), clean(key[1]), clean(key[2]), clean(dtypes)
            )
            self.found.append(detail)
        detail.count += 1
        detail.total_us += duration
        if self.op_state is not None and self._is_dynamic(row[self.op_state]):
            detail.dynamic_count += 1
            detail.dynamic_us += duration

    def _is_dynamic(self, cell: str) -> bool:
        known = self.dynamic.get(cell)
        if known is None:
            known = clean(cell).lower() == "dynamic"
            if len(self.dynamic) < _CELLS_MAX:
                self.dynamic[cell] = known
        return known


class _OutOfRange:
    """A pipe cell that holds a value but not a ratio in [0, 1] (1.7, -0.2, nan, "abc")."""

    __slots__ = ()


_OUT_OF_RANGE = _OutOfRange()


def _to_float(text: str) -> float | _OutOfRange | None:
    """A pipe ratio in [0, 1]; None for N/A cells (AI-CPU kernels, Level0) and blanks."""
    try:
        value = float(text)
    except ValueError:
        return None if clean(text) in NOT_AVAILABLE else _OUT_OF_RANGE
    return value if 0.0 <= value <= 1.0 else _OUT_OF_RANGE  # also out of range for NaN
