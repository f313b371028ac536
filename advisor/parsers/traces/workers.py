"""Decoding a large trace in worker processes, one byte range of its events array each.

The events array is cut at event boundaries near equal fractions of the file; each worker
decodes its range into the format's columns (written to its own spill file) and the parent
merges the parts in file order, so the result is the one process's. Below PARALLEL_MIN_BYTES
one process is fastest.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, TypeVar

from advisor.inputs import progress
from advisor.parsers.traces.blocks import EVENT_BOUNDARY

PARALLEL_MIN_BYTES = 64 * 1024 * 1024
MAX_WORKERS = 4
# how far after a cut point the next event boundary is looked for
BOUNDARY_WINDOW = 1 << 20

Job = TypeVar("Job")
Part = TypeVar("Part")

# the work of the in_forked_workers call under way: forked workers inherit it (a closure over
# the caller's state cannot be pickled; forked, it need not be)
_FORKED: Callable[[Any], Any] | None = None


def pool_context() -> multiprocessing.context.BaseContext:
    """fork where the platform has it: workers start without importing the package again."""
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def worker_count(size: int) -> int:
    """How many processes decode a file of `size` bytes: 1 means the file is read in order."""
    workers = min(MAX_WORKERS, os.cpu_count() or 1)
    return workers if workers >= 2 and size >= PARALLEL_MIN_BYTES else 1


def split_points(path: Path, begin: int, end: int, parts: int) -> list[int]:
    """Offsets of the `{` starting an event near equal fractions of [begin, end); begin first.
    A boundary found inside a string makes a range that does not decode: the caller then reads
    the file in order."""
    points = [begin]
    with path.open("rb") as handle:
        for k in range(1, parts):
            at = begin + (end - begin) * k // parts
            handle.seek(at)
            match = EVENT_BOUNDARY.search(handle.read(min(BOUNDARY_WINDOW, end - at)))
            if match is None:
                continue
            point = at + match.end() - 1  # the '{'
            if point > points[-1]:
                points.append(point)
    return points


def start_parts(
    label: str, decode: Callable[[Job], Part], jobs: Sequence[Job], processes: int = 0
) -> Callable[[], list[Part]]:
    """The jobs handed to worker processes now: `processes` of them, each taking the next job
    when done with one (0: a process per job); the returned collector waits for the results,
    in the jobs' order (the caller reads other files meanwhile). The workers are gone, their
    memory back, when the collector returns; a worker's error propagates from it."""
    pool = ProcessPoolExecutor(max_workers=processes or len(jobs), mp_context=pool_context())
    futures = [pool.submit(decode, job) for job in jobs]

    def collect() -> list[Part]:
        try:
            with progress.task(label, len(futures), "parts") as bar:
                for _ in as_completed(futures):
                    bar.advance()
            return [future.result() for future in futures]
        finally:
            pool.shutdown(cancel_futures=True)
            futures.clear()  # the parts are held by the caller only

    return collect


def in_forked_workers(
    label: str, work: Callable[[Job], Part], jobs: Sequence[Job]
) -> list[Part] | None:
    """`work(job)` of each job in a worker process of its own, the results in the jobs' order;
    the workers are forked, so `work` may be a closure over anything the caller holds. None
    where the platform cannot fork (the caller does the work itself)."""
    collect = start_forked(label, work, jobs)
    return None if collect is None else collect()


def start_forked(
    label: str, work: Callable[[Job], Part], jobs: Sequence[Job]
) -> Callable[[], list[Part]] | None:
    """As in_forked_workers, but the workers start now and the returned collector waits for
    them (the caller works meanwhile). None where the platform cannot fork."""
    if pool_context().get_start_method() != "fork":
        return None
    global _FORKED
    _FORKED = work
    try:
        # a fork pool starts its processes when the first job is submitted: they inherit
        # `work` before it is cleared here
        return start_parts(label, _run_forked, jobs)
    finally:
        _FORKED = None


def aside(label: str, work: Callable[[], Part], worth: bool) -> Callable[[], Part]:
    """`work()` started now in a forked process of its own when it is `worth` a process (the
    caller has as much to do meanwhile, on a machine with a core to spare), and the collector
    that waits for its result; otherwise done here and now. Where the process cannot start or
    dies, the collector does the work itself; an error of the work propagates from it."""
    collect = None
    if worth and (os.cpu_count() or 1) >= 2:
        try:
            collect = start_forked(label, lambda _: work(), [None])
        except OSError:  # no room for another process
            collect = None
    if collect is None:
        done = work()
        return lambda: done

    def collected() -> Part:
        assert collect is not None
        try:
            return collect()[0]
        except (OSError, BrokenProcessPool):
            return work()

    return collected


def _run_forked(job: Any) -> Any:
    assert _FORKED is not None, "in_forked_workers' workers are forked with their work"
    return _FORKED(job)
