"""Device memory of a text export: memory_record.csv (the allocator over time) and
operator_memory.csv (which operator holds which block from allocation to release)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Protocol, TypeVar

from advisor.model import InputError
from advisor.parsers.bounds import BadValues
from advisor.parsers.csvio import CsvTable, clean
from advisor.parsers.memory_summary import (
    PROCESS_COMPONENT,
    Block,
    Sample,
    Window,
    summarise,
    with_holders,
)
from advisor.parsers.profile_data import MemorySummary, ModuleMemory

KIB_PER_MIB = 1024.0
T = TypeVar("T")


class FileReader(Protocol):
    """Reads one file of the export: None when absent (noted) or unreadable and skipped."""

    def __call__(self, path: Path | None, name: str, parse: Callable[[Path], T]) -> T | None: ...


def read_memory(
    out: Callable[[str], Path], read: FileReader, bad: BadValues, windows: Sequence[Window] = ()
) -> MemorySummary | None:
    """The allocator's samples (read per step window when `windows` are given) and, when
    recorded, the operators holding memory at its peak."""
    summary = read(
        out("memory_record.csv"),
        "memory_record.csv",
        lambda p: read_memory_record(p, bad, windows),
    )
    if summary is None or not out("operator_memory.csv").is_file():
        return summary
    blocks = read(
        out("operator_memory.csv"), "operator_memory.csv", lambda p: read_operator_memory(p, bad)
    )
    return with_holders(summary, blocks) if blocks else summary


def _time(text: str) -> float | None:
    """A timestamp as the profiler writes it (with a trailing tab); None when empty or not one."""
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def read_operator_memory(path: Path, bad: BadValues | None = None) -> list[Block]:
    bad = bad or BadValues()
    table = CsvTable(path)
    name_i, size_i, alloc_i = table.require("Name", "Size(KB)", "Allocation Time(us)")
    release_i = table.column("Release Time(us)")
    blocks: list[Block] = []
    for row in table.rows():
        size = bad.measure(path, f"row {table.line}, Size(KB)", row[size_i])
        allocated = _time(row[alloc_i])
        if not isinstance(size, float) or allocated is None:
            continue
        released = _time(row[release_i]) if release_i is not None else None
        blocks.append((clean(row[name_i]), size / KIB_PER_MIB, allocated, released))
    return blocks


def read_memory_record(
    path: Path, bad: BadValues | None = None, windows: Sequence[Window] = ()
) -> MemorySummary:
    bad = bad or BadValues()
    table = CsvTable(path)
    comp_i, alloc_i, res_i = table.require("Component", "Total Allocated(MB)", "Total Reserved(MB)")
    time_i = table.column("Timestamp(us)")
    by_component: dict[str, list[Sample]] = {}
    process: list[float] = []  # the whole process (APP) records its reserved memory only
    for row in table.rows():
        component = clean(row[comp_i])
        reserved = bad.measure(path, f"row {table.line}, Total Reserved(MB)", row[res_i])
        if component == PROCESS_COMPONENT and isinstance(reserved, float):
            process.append(reserved)
        allocated = bad.measure(path, f"row {table.line}, Total Allocated(MB)", row[alloc_i])
        if not isinstance(allocated, float) or not isinstance(reserved, float):
            continue
        at = _time(row[time_i]) if time_i is not None else None
        by_component.setdefault(component, []).append((at, allocated, reserved))
    summary = summarise(by_component, windows)
    if summary is None:
        raise InputError(str(path), "no memory samples")
    return replace(summary, process_peak_mb=max(process)) if process else summary


def read_module_memory(path: Path, bad: BadValues | None = None) -> ModuleMemory:
    """npu_module_mem.csv: each module's highest Total Reserved(MB), sampled by the driver (APP is
    the framework's allocator pool; the others are outside it: HCCL's buffers, the runtime...),
    and the highest sum over the modules at one sample time: the process as they account for it."""
    bad = bad or BadValues()
    table = CsvTable(path)
    comp_i, res_i = table.require("Component", "Total Reserved(MB)")
    time_i = table.column("Timestamp(us)")
    peaks: dict[str, float] = {}
    at_time: dict[str, dict[str, float]] = {}  # sample time -> module -> MiB
    for row in table.rows():
        reserved = bad.measure(path, f"row {table.line}, Total Reserved(MB)", row[res_i])
        if isinstance(reserved, float):
            name = clean(row[comp_i])
            peaks[name] = max(peaks.get(name, 0.0), reserved)
            if time_i is not None:
                # a module sampled twice at one time counts once
                modules = at_time.setdefault(clean(row[time_i]), {})
                modules[name] = max(modules.get(name, 0.0), reserved)
    if not peaks:
        raise InputError(str(path), "no module memory samples")
    # without timestamps the modules cannot be added up at one instant: the sum of their peaks
    # is then the bound
    total = max(sum(m.values()) for m in at_time.values()) if at_time else sum(peaks.values())
    return ModuleMemory(peaks, total)
