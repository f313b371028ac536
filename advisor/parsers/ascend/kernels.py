"""kernel_details.csv: every kernel the device ran, aggregated per (step, type, core).

Millions of rows of a few thousand kinds, so the loop stays lean: a row's raw cells that are not
times (step, type, core, dtypes, OP State, block dims) name its class, looked up once per row;
the class holds the group, operator detail and block-dim slot the row counts into, built (cells
cleaned) the first time the class is seen. Where the export has the PMU pipe ratios each kernel
is also counted as compute- or memory-bound.
"""

from __future__ import annotations

from pathlib import Path

from advisor.inputs.thresholds import ReaderThresholds
from advisor.model import InputError
from advisor.parsers.ascend.kernel_columns import KernelColumns, PipeReader
from advisor.parsers.ascend.kernel_starts import KernelStarts
from advisor.parsers.bounds import MAX_DURATION_US, NOT_AVAILABLE, BadValues
from advisor.parsers.csvio import CsvTable, clean, integer
from advisor.parsers.kernel_sequences import SequenceCounter
from advisor.parsers.profile_data import (
    BlockDimGroup,
    KernelGroup,
    KernelTable,
    OpDetail,
)

# how many distinct OP State cells are remembered (a handful in real files)
_CELLS_MAX = 1 << 16


def read_kernels(
    path: Path, limits: ReaderThresholds, bad: BadValues | None = None, spans: bool = False
) -> KernelTable:
    """Aggregate kernel rows per (step, type, core); millions of rows, so the loop stays lean.
    With `spans`, also each step's first start and last end (the step windows a memory curve
    is read in; asked for only when the profile recorded memory)."""
    bad = bad or BadValues()
    table = CsvTable(path)
    columns = KernelColumns(table)
    reader = _KernelRows(columns, limits, bad, table, spans)
    reader.read(table)
    if reader.rows == 0:
        raise InputError(str(path), "no kernel rows")
    classes = reader.classes
    return KernelTable(
        groups=list(classes.groups.values()),
        has_pmu=columns.has_pmu,
        has_step_ids=columns.step is not None,
        rows=reader.rows,
        details=classes.details if columns.has_details else None,
        has_op_state=columns.op_state is not None,
        step_spans=_spans(reader.starts.spans if reader.starts is not None else None),
        sequences=reader.sequences.counts,
        block_dims=(
            _block_dim_groups(path, classes.block_dims, bad)
            if columns.block_dim is not None
            else None
        ),
        types_at=reader.starts.types_at if reader.starts is not None else None,
    )


class _RowClass:
    """What every row of one class counts into."""

    __slots__ = ("block", "detail", "dynamic", "group", "step")

    def __init__(
        self,
        group: KernelGroup,
        detail: OpDetail | None,
        dynamic: bool,
        block: list[float] | None,
        step: str,
    ) -> None:
        self.group, self.detail, self.dynamic, self.block = group, detail, dynamic, block
        self.step = step  # the raw Step Id cell: the key of the step's span


class _RowClasses:
    """The groups, operator details and block-dim slots of the rows read so far, each in the
    order first seen, and the class of each distinct row kind."""

    def __init__(self, columns: KernelColumns) -> None:
        self.columns = columns
        self.of_row = columns.class_getter()
        self.by_key: dict[tuple[str, ...], _RowClass] = {}
        self.groups: dict[tuple[str, str, str], KernelGroup] = {}
        self.by_dtypes: dict[tuple[str, str, str, str], OpDetail] = {}
        self.details: list[OpDetail] = []
        self.block_dims: dict[tuple[str, str, str, str, str], list[float]] = {}
        self.dynamic: dict[str, bool] = {}

    def new(self, row: list[str], key: tuple[str, ...]) -> _RowClass:
        """The class of a row kind first seen (its group, detail and slot, made if new)."""
        step, op_type, core, dtypes, op_state, block_dim, mix = key
        columns = self.columns
        group_key = (step, op_type, core)
        group = self.groups.get(group_key)
        if group is None:
            name = clean(row[columns.name]) if columns.name is not None else clean(op_type)
            group = KernelGroup(integer(step), clean(op_type), clean(core), name)
            self.groups[group_key] = group
        detail = None
        if columns.has_details:
            detail = self.by_dtypes.get((*group_key, dtypes))
            if detail is None:
                detail = OpDetail(group.step, group.op_type, group.core, clean(dtypes))
                self.by_dtypes[(*group_key, dtypes)] = detail
                self.details.append(detail)
        block = None
        if columns.block_dim is not None:
            block = self.block_dims.setdefault((*group_key, block_dim, mix), [0.0, 0.0])
        found = _RowClass(group, detail, self._is_dynamic(op_state), block, step)
        self.by_key[key] = found
        return found

    def _is_dynamic(self, cell: str) -> bool:
        known = self.dynamic.get(cell)
        if known is None:
            known = self.columns.op_state is not None and clean(cell).lower() == "dynamic"
            if len(self.dynamic) < _CELLS_MAX:
                self.dynamic[cell] = known
        return known


class _KernelRows:
    """The loop over kernel_details.csv's rows and what it fills."""

    def __init__(
        self,
        columns: KernelColumns,
        limits: ReaderThresholds,
        bad: BadValues,
        table: CsvTable,
        spans: bool,
    ) -> None:
        self.columns, self.bad, self.path = columns, bad, table.path
        self.small_max = limits.small_op_max_us
        self.classes = _RowClasses(columns)
        self.pipes = PipeReader(columns, limits, bad, table) if columns.has_pmu else None
        self.sequences = SequenceCounter()
        self.rows = 0
        # what the start column gives (None: the file has none)
        self.starts = (
            KernelStarts(True, spans and columns.step is not None)
            if columns.start is not None
            else None
        )

    def read(self, table: CsvTable) -> None:
        duration_at, small_max = self.columns.duration, self.small_max
        start_at = self.columns.start if self.columns.start is not None else 0
        classes, of_row = self.classes.by_key, self.classes.of_row
        pipes, sequences, starts = self.pipes, self.sequences, self.starts
        for row in table.rows():
            try:
                duration = float(row[duration_at])
            except ValueError:
                _bad_duration(self.path, table, row[duration_at], self.bad)
                continue
            if not 0.0 <= duration <= MAX_DURATION_US:  # also false for NaN
                self.bad.reject(self.path, f"row {table.line}, Duration(us)", row[duration_at])
                continue
            self.rows += 1
            key = of_row(row)
            kind = classes.get(key) or self.classes.new(row, key)
            group = kind.group
            group.count += 1
            group.total_us += duration
            if duration < small_max:
                group.small_count += 1
                group.small_us += duration
            if pipes is not None:
                pipes.add(row, group, duration)
            detail = kind.detail
            if detail is not None:
                detail.count += 1
                detail.total_us += duration
                if kind.dynamic:
                    detail.dynamic_count += 1
                    detail.dynamic_us += duration
            block = kind.block
            if block is not None:
                block[0] += 1.0
                block[1] += duration
            sequences.add(group.step, group.op_type, duration)
            if starts is not None:
                starts.add(row[start_at], group.op_type, kind.step, duration)
        if starts is not None:
            starts.flush()


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
