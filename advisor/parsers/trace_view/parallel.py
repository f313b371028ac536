"""Large traces: split trace_view.json into byte ranges decoded by worker processes.

Each worker streams its range exactly like the sequential reader and returns the compact
arrays; the parent merges them. The parent meanwhile reads the CSV files (see ascend.py).
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from advisor.inputs import progress
from advisor.inputs.taxonomy import Taxonomy
from advisor.model import InputError
from advisor.parsers.trace_view.accumulator import Accumulator, BadEvent
from advisor.parsers.trace_view.decode import BLOCK_BYTES, _stream_array, read_trace
from advisor.parsers.trace_view.grouped import Key, big_columns, count_rows, reduce_in_groups
from advisor.parsers.trace_view.schema import DEVICE_LANE, TRACE_VIEW
from advisor.parsers.traces import budget, workers
from advisor.parsers.traces.blocks import TAIL_WINDOW
from advisor.parsers.traces.spill import SpillWriter, segments
from advisor.parsers.traces.steps import TraceData
from advisor.parsers.traces.whole import reduce_steps
from advisor.parsers.traces.workers import split_points, start_parts, worker_count

# the file's first string timestamp: every worker cuts the same epoch prefix from its times
_TS_SAMPLE = re.compile(rb'"ts":\s*"([0-9]+\.[0-9]*)"')
MIB = 1024 * 1024
# the block a worker decodes at a time (read when the worker starts: tests make it small)
RANGE_BLOCK_BYTES = BLOCK_BYTES
# byte ranges per worker process, each taken by the first process free: the events' cost per
# byte differs along a trace (a torch_npu trace's first half costs ~5% more), so equal halves
# leave one core idle while the other finishes
PARTS_PER_PROCESS = 2


class _RangeHandle:
    """A read-only window [begin, end) of a file, followed by `suffix`."""

    def __init__(self, path: Path, begin: int, end: int, suffix: bytes) -> None:
        self.handle = path.open("rb")
        self.handle.seek(begin)
        self.left = end - begin
        self.suffix = suffix

    def read(self, size: int) -> bytes:
        if self.left <= 0:
            out, self.suffix = self.suffix, b""
            return out
        data = self.handle.read(min(size, self.left))
        self.left -= len(data)
        if not data:
            self.left = 0
        return data

    def readinto(self, view: memoryview) -> int:
        if self.left <= 0:
            data, self.suffix = self.suffix, b""
            view[: len(data)] = data
            return len(data)
        got = self.handle.readinto(view[: min(len(view), self.left)])
        self.left -= got
        if not got:
            self.left = 0
        return got

    def close(self) -> None:
        self.handle.close()


Job = tuple[Path, int, int, bool, Taxonomy, str | None]


def _read_part(job_and_spill: tuple[Job, Path]) -> Accumulator:
    """A worker's part: its byte range decoded, its rows in its spill file."""
    return _read_range(*job_and_spill)


def _read_range(job: Job, spill: Path, tick: Callable[[int], None] | None = None) -> Accumulator:
    """One byte range's accumulator, its arrays written to `spill` (never pickled back: that
    would hold them twice in the worker, and once more in the parent before the merge)."""
    path, begin, end, last, taxonomy, sample = job
    acc = Accumulator(taxonomy)
    if sample:
        acc.ts.seed(sample)
    handle = _RangeHandle(path, begin, end, b"" if last else b"]")
    with _SpillWriter(acc, spill) as writer:
        try:
            _stream_array(
                path,
                acc,
                b"",
                handle,
                tick,
                block=RANGE_BLOCK_BYTES,
                after_block=writer.flush_if_large,
            )
        except RecursionError:  # in the accumulator (an event's args): reported like the reader
            raise InputError(
                str(path), f"JSON nested too deeply for the decoder after byte {begin}"
            ) from None
        except BadEvent as exc:
            raise InputError(
                str(path), f"an event cannot be placed on the timeline: {exc}"
            ) from None
        finally:
            handle.close()
        acc.probe_starts.clear()  # the parent needs only whether a pair was found
        acc.probe_finishes.clear()
        acc.forget_names()
        writer.flush()
    return acc


class _SpillWriter:
    """Writes an accumulator's rows to its spill file whenever they pass budget.FLUSH_BYTES,
    and empties its arrays: a worker holds at most that much, whatever the size of its range."""

    def __init__(self, acc: Accumulator, path: Path) -> None:
        self.acc = acc
        self.file = SpillWriter(path)

    def __enter__(self) -> _SpillWriter:
        return self

    def __exit__(self, *_: object) -> None:
        self.file.close()

    def flush_if_large(self) -> None:
        held = sum(len(c) * c.itemsize for c in self.acc.columns().values())
        if held >= budget.FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        self.file.write((key, column) for key, column in self.acc.columns().items() if column)


def _restore(
    acc: Accumulator, path: Path, leave: Callable[[Key], bool] | None = None
) -> Accumulator:
    """The accumulator's rows read back from its spill file, segment by segment. Rows of a
    column the worker dropped after writing them (a process found not to be the device lane,
    a fallback flow category) are skipped, and so are the columns `leave` names (the file is
    then kept: they are read from it later)."""
    columns = {k: c for k, c in acc.columns().items() if leave is None or not leave(k)}

    def kept(key: Key) -> bool:
        return key in columns

    for found in segments(path, kept):
        for key, rows in found.items():
            columns[key].extend(rows)
    if leave is None:
        path.unlink()
    return acc


def _plan_jobs(path: Path, taxonomy: Taxonomy) -> list[Job]:
    """Byte ranges for the worker processes (PARTS_PER_PROCESS each); [] when one process is
    the better choice."""
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            head = handle.read(65536)
    except OSError:
        return []
    stripped = head.lstrip()
    count = worker_count(size)
    if count < 2 or not stripped.startswith(b"["):
        return []
    start = len(head) - len(stripped) + 1
    points = split_points(path, start, size, count * PARTS_PER_PROCESS)
    if len(points) < 2:
        return []
    m = _TS_SAMPLE.search(head)
    sample = m.group(1).decode() if m else None
    bounds = [*points, size]
    jobs = []
    with path.open("rb") as handle:
        for i in range(len(points)):
            end = bounds[i + 1]
            if i + 1 < len(points):
                # end just after the '}' closing the range's last event
                lo = max(bounds[i], end - TAIL_WINDOW)
                handle.seek(lo)
                end = lo + handle.read(end - lo).rindex(b"}") + 1
            jobs.append((path, bounds[i], end, i == len(points) - 1, taxonomy, sample))
    return jobs


def start_trace(path: Path, taxonomy: Taxonomy) -> Callable[[], TraceData]:
    """Start reading a trace in worker processes (large files) and return the collector.

    The caller can parse the CSV files while the workers decode; calling the collector waits.
    Any problem in the parallel path falls back to the sequential reader, which reports the
    exact position of a malformed or truncated file.
    """
    jobs = _plan_jobs(path, taxonomy)
    if not jobs:
        return lambda: read_trace_bounded(path, taxonomy)
    scratch = tempfile.TemporaryDirectory(prefix="advisor-trace-")
    spills = [Path(scratch.name) / f"part-{i}" for i in range(len(jobs))]
    processes = -(-len(jobs) // PARTS_PER_PROCESS)
    decoded = start_parts(
        f"decoding {path.name}", _read_part, list(zip(jobs, spills, strict=True)), processes
    )

    def collect() -> TraceData:
        try:
            return _reduce_parts(path, decoded(), spills, aside=True)
        except (InputError, OSError, BrokenProcessPool):
            return read_trace(path, taxonomy)
        finally:
            scratch.cleanup()

    return collect


def _reduce_parts(
    path: Path, parts: list[Accumulator], spills: list[Path], aside: bool = False
) -> TraceData:
    """The step reduction of the parts' rows (in file order): read back and merged, or, when
    the kernels are too many to hold, measured a group of windows at a time from the files.
    `aside`: the trace was split between worker processes (the machine's cores are the
    reader's), so the phases may be measured in one too."""
    names: dict[int | str, str] = {}
    for part in parts:
        names.update(part.process_names)
    devices: set[object] = {pid for pid, name in names.items() if name == DEVICE_LANE}
    rows, keys = count_rows(spills, devices)
    grouped = rows > budget.GROUP_ROWS and any(part.best_paired for part in parts)
    leave = big_columns(devices) if grouped else None
    # each part is read back just before it is merged and let go after
    parts.reverse()
    acc = _restore(parts.pop(), spills[0], leave)
    for spill in spills[1:]:
        acc.merge(_restore(parts.pop(), spill, leave))
    if grouped:
        data = reduce_in_groups(path, acc, spills, rows, keys)
    else:
        data = reduce_steps(path, acc, TRACE_VIEW, aside=aside)
    data.collective_sizes = acc.collective_sizes
    return data


def read_trace_bounded(path: Path, taxonomy: Taxonomy) -> TraceData:
    """One process, memory bounded whatever the size: the rows are written out as they grow
    and reduced like the workers' parts. A small trace (or one that is not a plain array) is
    read by read_trace, which also reports a malformed file exactly."""
    job = _whole_job(path, taxonomy)
    if job is None:
        return read_trace(path, taxonomy)
    with tempfile.TemporaryDirectory(prefix="advisor-trace-") as scratch:
        spill = Path(scratch) / "part-0"
        try:
            with progress.task(f"decoding {path.name}", round(job[2] / MIB), "MiB") as bar:
                acc = _read_range(job, spill, lambda n: bar.advance(n / MIB))
            return _reduce_parts(path, [acc], [spill])
        except (InputError, OSError):
            return read_trace(path, taxonomy)


def _whole_job(path: Path, taxonomy: Taxonomy) -> Job | None:
    """The whole events array as one range, for a plain-array trace of PARALLEL_MIN_BYTES or
    more."""
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            head = handle.read(65536)
    except OSError:
        return None
    stripped = head.lstrip()
    if size < workers.PARALLEL_MIN_BYTES or not stripped.startswith(b"["):
        return None
    m = _TS_SAMPLE.search(head)
    return (
        path,
        len(head) - len(stripped) + 1,
        size,
        True,
        taxonomy,
        m.group(1).decode() if m else None,
    )
