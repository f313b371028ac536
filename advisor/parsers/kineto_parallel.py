"""Large plain PyTorch traces: the events array split in byte ranges decoded by worker
processes, each into its own columns; the parent merges them in file order, so the result is
the sequential reader's. Anything unusual (a rejected event, a correlation id that is not a
plain integer, a range that does not decode) sends the trace back to the sequential reader,
which reports it exactly.
"""

from __future__ import annotations

import contextlib
import os
from array import array
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from advisor.inputs import limits
from advisor.inputs.taxonomy import Taxonomy
from advisor.model import InputError
from advisor.parsers.kineto_columns import NO_GROUP
from advisor.parsers.kineto_events import KinetoEvents, extract_part, finish
from advisor.parsers.kineto_stream import _BOUNDARY, TAIL_BYTES, KinetoStream, events_span
from advisor.parsers.kineto_values import center_of
from advisor.parsers.trace_parallel import MAX_WORKERS, PARALLEL_MIN_BYTES, pool_context


def split_points(path: Path, begin: int, end: int, parts: int) -> list[int]:
    """Offsets of the `{` starting an event near equal fractions of [begin, end); begin first."""
    points = [begin]
    with path.open("rb") as handle:
        for k in range(1, parts):
            at = begin + (end - begin) * k // parts
            handle.seek(at)
            window = handle.read(min(TAIL_BYTES * 16, end - at))
            match = _BOUNDARY.search(window)
            if match is None:
                continue
            point = at + match.end() - 1  # the '{'
            if point > points[-1]:
                points.append(point)
    return points


def _read_range(job: tuple[Path, int, int, float, Taxonomy]) -> KinetoEvents | None:
    path, begin, end, center, taxonomy = job
    part = extract_part(KinetoStream(path).range_blocks(begin, end), taxonomy, path, center)
    return None if part.dropped or part.odd_correlations else part


def extract_in_parallel(
    path: Path, taxonomy: Taxonomy
) -> tuple[KinetoEvents, dict[str, Any]] | None:
    """The trace's events and top-level keys, decoded by worker processes; None when one
    process is the better choice or the file needs the sequential reader."""
    workers = min(MAX_WORKERS, os.cpu_count() or 1)
    try:
        size = path.stat().st_size
    except OSError:
        return None
    if workers < 2 or size < PARALLEL_MIN_BYTES or size > limits.trace_max_bytes():
        return None
    span = events_span(path)
    if span is None:
        return None
    begin, end, header = span
    # the events' centre as the sequential reader takes it: from its first block
    with contextlib.closing(KinetoStream(path).blocks()) as blocks:
        center = center_of(next(blocks, []))
    points = split_points(path, begin, end, workers)
    if len(points) < 2:
        return None
    bounds = [*points, end]
    jobs = [(path, bounds[i], bounds[i + 1], center, taxonomy) for i in range(len(points))]
    pool = ProcessPoolExecutor(max_workers=len(jobs), mp_context=pool_context())
    try:
        parts = list(pool.map(_read_range, jobs))
    except (InputError, OSError, BrokenProcessPool, RecursionError):
        return None
    finally:
        pool.shutdown(cancel_futures=True)
    if any(part is None for part in parts):
        return None
    whole = [p for p in parts if p is not None]
    del parts
    return finish(merge(whole)), header


def merge(parts: list[KinetoEvents]) -> KinetoEvents:
    """The parts' columns one after the other, string ids renumbered into the first's table;
    each part is let go once merged (the list is emptied)."""
    parts.reverse()
    out = parts.pop()
    ops = out.ops
    while parts:
        part = parts.pop()
        ids = array("i", (out.strings.id(text) for text in part.strings.values))
        theirs = part.ops
        ops.start.extend(theirs.start)
        ops.end.extend(theirs.end)
        ops.kind.extend(theirs.kind)
        ops.correlation.extend(theirs.correlation)
        ops.name.extend(ids[i] for i in theirs.name)
        ops.stream.extend(ids[i] for i in theirs.stream)
        ops.collective.extend(ids[i] for i in theirs.collective)
        ops.group.extend(NO_GROUP if i == NO_GROUP else ids[i] for i in theirs.group)
        out.launch_keys.extend(part.launch_keys)
        out.launch_ts.extend(part.launch_ts)
        out.steps.extend(part.steps)
        for mine, other in (
            (out.sync_start, part.sync_start),
            (out.sync_end, part.sync_end),
            (out.malloc_start, part.malloc_start),
            (out.malloc_end, part.malloc_end),
            (out.free, part.free),
            (out.loader_start, part.loader_start),
            (out.loader_end, part.loader_end),
        ):
            mine.extend(other)
        out.events += part.events
        for key, group in part.kernel_groups.items():
            out.kernel_groups.setdefault(key, group)
    return out
