"""A PyTorch profiler trace's event blocks decoded into its columns by one process (the byte-range
workers of parallel.py use the same Extractor), the rows spilled or held, collectives named."""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from advisor.inputs.taxonomy import Taxonomy
from advisor.parsers.bounds import BadValues
from advisor.parsers.kineto.collectives import join_launches, join_spilled, name_collectives
from advisor.parsers.kineto.decoded import KinetoEvents
from advisor.parsers.kineto.device_steps import distinct_steps
from advisor.parsers.kineto.events import Extractor
from advisor.parsers.kineto.spill import spilling
from advisor.parsers.kineto.values import center_of


def extract(
    blocks: Iterable[list[Any]],
    taxonomy: Taxonomy,
    path: Path,
    bad: BadValues | None = None,
    spill: Path | None = None,
) -> KinetoEvents:
    """The events the facts need, from the trace's event blocks (stream.py). With `spill`,
    the operation and launch rows go to that file once they pass FLUSH_BYTES (then all of
    them: `spilled`), and the operations are left for the reduction to order."""
    extractor = Extractor(taxonomy, path, bad or BadValues())
    center: float | None = None
    index = -1
    out = extractor.out
    launches = (out.launch_keys, out.launch_ts, out.launch_thread)
    with spilling(out.ops, launches, out.spilled, spill) as writer:
        for block in blocks:
            if center is None:
                center = center_of(block)
            index = extractor.block(block, center, index)
            if writer is not None:
                writer.flush_if_large()
    if out.spilled:
        join_spilled(out.collective_spans, out.comm_keys, out.spilled, out.launch_collectives)
        out.steps = distinct_steps(out.steps)
        return out
    return finish(out)


def finish(out: KinetoEvents) -> KinetoEvents:
    """Collectives by their host range's name, operations in time order, one window per step."""
    launches = zip(out.launch_keys, out.launch_ts, out.launch_thread, strict=True)
    join_launches(out.collective_spans, out.comm_keys, launches, out.launch_collectives)
    out.launch_thread = array("i")
    name_collectives(out.ops, out.launch_collectives)
    out.ops.sort()
    out.steps = distinct_steps(out.steps)
    return out
