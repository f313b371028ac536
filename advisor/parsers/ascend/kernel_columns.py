"""Where kernel_details.csv keeps what the kernel table needs, and the cells read per row:
the PMU pipe ratios (is a kernel compute- or memory-bound) and the OP State."""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter
from typing import cast

from advisor.inputs.thresholds import ReaderThresholds
from advisor.parsers.bounds import NOT_AVAILABLE, BadValues
from advisor.parsers.csvio import CsvTable, clean
from advisor.parsers.profile_data import KernelGroup

_PIPES = ("aic_mac_ratio", "aic_mte2_ratio", "aiv_vec_ratio", "aiv_mte2_ratio")


class KernelColumns:
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

    def class_getter(self) -> Callable[[list[str]], tuple[str, ...]]:
        """A row's class: its (step, type, core) group's raw cells and the cells that split a
        group further (input dtypes, OP State, block dim, mix block dim), "" for a column the
        file lacks. Rows of one class differ only in time and pipe ratios."""
        at = (
            self.step,
            self.type,
            self.core,
            self.dtypes,
            self.op_state,
            self.block_dim,
            self.mix_block_dim,
        )
        if None not in at:
            return cast(Callable[[list[str]], tuple[str, ...]], itemgetter(*at))
        return lambda row: tuple(row[i] if i is not None else "" for i in at)


# how many distinct cells a reader remembers the value of (ratios, OP states: a few hundred in
# real files; bounded whatever the file holds)
_CELLS_MAX = 1 << 16
_UNSEEN = object()


class PipeReader:
    """Each kernel's pipe ratios counted into its group: the ratios of the unit that ran it
    (cube ratios when present and non-zero, else vector ratios). It is memory-bound when mte2
    dominates a compute pipe that is not well used (the readers' thresholds
    mte2_bound_min_ratio, compute_well_used_ratio). A ratio outside [0, 1] is left out with a
    warning naming the file, row and column, and the kernel counts without pipe data."""

    def __init__(
        self, columns: KernelColumns, limits: ReaderThresholds, bad: BadValues, table: CsvTable
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
