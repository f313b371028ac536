"""Large plain PyTorch traces: the events array split in byte ranges decoded by worker
processes, each into its own columns; the parent merges them in file order, so the result is
the sequential reader's. Anything unusual (a rejected event, a correlation id that is not a
plain integer, a range that does not decode) sends the trace back to the sequential reader,
which reports it exactly.
"""

from __future__ import annotations

import contextlib
from array import array
from collections.abc import Iterable
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from advisor.core import limits
from advisor.inputs.taxonomy import Taxonomy
from advisor.model import InputError
from advisor.parsers.bounds import BadValues
from advisor.parsers.kineto.collectives import join_spilled
from advisor.parsers.kineto.columns import NO_GROUP
from advisor.parsers.kineto.decoded import KinetoEvents
from advisor.parsers.kineto.device_steps import distinct_steps
from advisor.parsers.kineto.events import Extractor
from advisor.parsers.kineto.spill import spilling
from advisor.parsers.kineto.stream import KinetoStream, events_span
from advisor.parsers.kineto.values import center_of
from advisor.parsers.traces.workers import split_points, start_parts, worker_count


def extract_part(
    blocks: Iterable[list[Any]], taxonomy: Taxonomy, path: Path, center: float, spill: Path
) -> KinetoEvents:
    """One byte range's events (a worker's share), its rows written to `spill`; rejected
    events are only counted (the caller reads the trace again in order when there are any, for
    the exact message)."""
    extractor = Extractor(taxonomy, path, BadValues(skip=True))
    out, index = extractor.out, -1
    launches = (out.launch_keys, out.launch_ts, out.launch_thread)
    with spilling(out.ops, launches, out.spilled, spill, always=True) as writer:
        for block in blocks:
            index = extractor.block(block, center, index)
            if writer is not None:
                writer.flush_if_large()
    return out


def _read_range(job: tuple[Path, int, int, float, Taxonomy, Path]) -> KinetoEvents | None:
    """One byte range's events: the small parts returned, the rows written to the spill file
    as they grow (a pickled result would hold every column twice in the worker and again in
    the parent while it arrives); None: read the trace in order."""
    path, begin, end, center, taxonomy, spill = job
    part = extract_part(KinetoStream(path).range_blocks(begin, end), taxonomy, path, center, spill)
    if part.dropped or part.odd_correlations:
        return None
    return part


def extract_in_parallel(
    path: Path, taxonomy: Taxonomy, scratch: Path
) -> tuple[KinetoEvents, dict[str, Any]] | None:
    """The trace's events and top-level keys, decoded by worker processes, the rows left in
    spill files under `scratch`; None when one process is the better choice or the file needs
    the sequential reader."""
    try:
        size = path.stat().st_size
    except OSError:
        return None
    workers = worker_count(size)
    if workers < 2 or size > limits.trace_max_bytes():
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
    jobs = [
        (path, bounds[i], bounds[i + 1], center, taxonomy, scratch / f"part-{i}")
        for i in range(len(points))
    ]
    try:
        parts = start_parts(f"decoding {path.name}", _read_range, jobs)()
    except (InputError, OSError, BrokenProcessPool, RecursionError):
        return None
    if any(part is None for part in parts):
        return None
    out = KinetoEvents()
    for part in parts:
        if part is not None:
            _merge(out, part)
    join_spilled(out.collective_spans, out.comm_keys, out.spilled, out.launch_collectives)
    out.steps = distinct_steps(out.steps)
    return out, header


def _merge(out: KinetoEvents, part: KinetoEvents) -> None:
    """Append a part: its small data, and its spilled rows with how its signature ids map
    to `out`'s (string ids renumbered into `out`'s table)."""
    ids = array("i", (out.strings.id(text) for text in part.strings.values))
    theirs = part.ops.signatures
    signature = array(
        "i",
        (
            out.ops.signatures.id(
                ids[theirs.name[s]],
                theirs.kind[s],
                ids[theirs.stream[s]],
                NO_GROUP if theirs.group[s] == NO_GROUP else ids[theirs.group[s]],
                ids[theirs.collective[s]],
            )
            for s in range(len(theirs))
        ),
    )
    for rows in part.spilled:
        rows.signature_ids = signature
        rows.string_ids = ids
    # the launches are joined to the ranges once every part is merged (a range and the
    # launch under it are often read by different workers)
    for thread, spans in part.collective_spans.items():
        mine = out.collective_spans.get(ids[thread])
        if mine is None:
            out.collective_spans[ids[thread]] = spans.renumbered(ids)
        else:
            mine.extend(spans.renumbered(ids))
    out.comm_keys.extend(part.comm_keys)
    out.spilled.extend(part.spilled)
    out.steps.extend(part.steps)
    out.host.extend(part.host)
    out.memory.extend(part.memory)
    out.blocking.extend(part.blocking)
    out.host_ranges.extend(part.host_ranges)
    out.events += part.events
    for key, group in part.kernel_groups.items():
        out.kernel_groups.setdefault(key, group)
