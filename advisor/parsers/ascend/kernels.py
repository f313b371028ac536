"""kernel_details.csv: every kernel the device ran, aggregated per (step, type, core).

Millions of rows, so the loop stays lean: raw cells are the group keys (cleaned once per group),
and where the export has the PMU pipe ratios each kernel is counted as compute- or memory-bound.
"""

from __future__ import annotations

from pathlib import Path

from advisor.inputs.thresholds import ReaderThresholds
from advisor.model import InputError
from advisor.parsers.bounds import MAX_DURATION_US, NOT_AVAILABLE, BadValues
from advisor.parsers.csvio import CsvTable, clean, integer
from advisor.parsers.kernel_sequences import SequenceCounter
from advisor.parsers.profile_data import BlockDimGroup, KernelGroup, KernelTable, OpDetail

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
    mte2_bound, compute_used = limits.mte2_bound_min_ratio, limits.compute_well_used_ratio
    # raw cells as keys; cleaned once per group at the end
    groups: dict[tuple[str, str, str], KernelGroup] = {}
    details: dict[tuple[str, str, str, str], OpDetail] = {}
    block_dims: dict[tuple[str, str, str, str, str], list[float]] = {}
    sequences = SequenceCounter()
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
        ratios = columns.pipe_ratios(row, table.line, bad) if columns.has_pmu else None
        if ratios is not None:
            add_pipes(group, duration, *ratios, mte2_bound, compute_used)
        if columns.has_details:
            columns.add_detail(details, row, key, duration)
        if columns.block_dim is not None:
            columns.add_block_dim(block_dims, row, key, duration)
        if step_spans is not None:
            columns.add_span(step_spans, row, key[0], duration)
        sequences.add(group.step, group.op_type, duration)
    if rows == 0:
        raise InputError(str(path), "no kernel rows")
    return KernelTable(
        groups=list(groups.values()),
        has_pmu=columns.has_pmu,
        has_step_ids=columns.step is not None,
        rows=rows,
        details=list(details.values()) if columns.has_details else None,
        has_op_state=columns.op_state is not None,
        step_spans=_spans(step_spans),
        sequences=sequences.counts,
        block_dims=_block_dim_groups(path, block_dims, bad)
        if columns.block_dim is not None
        else None,
    )


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

    def add_detail(
        self,
        details: dict[tuple[str, str, str, str], OpDetail],
        row: list[str],
        key: tuple[str, str, str],
        duration: float,
    ) -> None:
        """Count the row under its (step, type, core, input dtypes), and whether it ran as a
        dynamic-shape operator."""
        dtypes = row[self.dtypes] if self.dtypes is not None else ""
        detail_key = (*key, dtypes)
        detail = details.get(detail_key)
        if detail is None:
            detail = details[detail_key] = OpDetail(
                integer(key[0]), clean(key[1]), clean(key[2]), clean(dtypes)
            )
        detail.count += 1
        detail.total_us += duration
        if self.op_state is not None and clean(row[self.op_state]).lower() == "dynamic":
            detail.dynamic_count += 1
            detail.dynamic_us += duration

    def add_span(
        self, spans: dict[str, list[float]], row: list[str], step: str, duration: float
    ) -> None:
        """Widen the step's [first start, last end] by the row (a start that is not a time
        is left out: the kernel still counts in its group)."""
        assert self.start is not None
        try:
            start = float(row[self.start])
        except ValueError:
            return
        span = spans.get(step)
        if span is None:
            spans[step] = [start, start + duration]
        else:
            span[0] = min(span[0], start)
            span[1] = max(span[1], start + duration)

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

    def pipe_ratios(self, row: list[str], line: int, bad: BadValues) -> tuple[float, float] | None:
        """(compute, mte2) ratios of the unit that ran the kernel: cube ratios when present
        and non-zero, else vector ratios; None when neither is there. A ratio outside [0, 1]
        is left out with a warning naming the file, row and column."""
        cube = self._ratios(row, self.aic_mac, self.aic_mte2, line, bad)
        if not isinstance(cube, _OutOfRange) and cube is None:
            vector = self._ratios(row, self.aiv_vec, self.aiv_mte2, line, bad)
            return None if isinstance(vector, _OutOfRange) else vector
        return None if isinstance(cube, _OutOfRange) else cube

    def _ratios(
        self, row: list[str], compute_i: int, mte2_i: int, line: int, bad: BadValues
    ) -> tuple[float, float] | _OutOfRange | None:
        compute = _to_float(row[compute_i]) if compute_i >= 0 else None
        mte2 = _to_float(row[mte2_i]) if mte2_i >= 0 else None
        if isinstance(compute, _OutOfRange) or isinstance(mte2, _OutOfRange):
            column = compute_i if isinstance(compute, _OutOfRange) else mte2_i
            bad.ignore(
                self.path,
                f"row {line}, {self.pipe_names[column]}",
                row[column],
                "not a ratio in [0, 1]",
                "the kernel counts without pipe data",
            )
            return _OUT_OF_RANGE
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
    that is not well used (the readers' thresholds mte2_bound_min_ratio, compute_well_used_ratio)."""
    group.pmu_us += duration
    group.compute_pipe_us += duration * compute
    group.mte2_pipe_us += duration * mte2
    if mte2 > compute and mte2 >= mte2_bound and compute < compute_used:
        group.mte2_bound_us += duration


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
