"""PyTorch profiler (Kineto) traces from GPUs: `*.pt.trace.json[.gz]`, one file per rank.

The same step model as on Ascend is rebuilt from the device operations: computing
(non-collective kernels), communication (NCCL/RCCL kernels) and the part of it no compute hides,
memory operations (memcpy/memset) that neither hides, device idle time, and the host time before
the step's first device operation.

Steps are device-paced. The host runs ahead of the device, so a ProfilerStep window on the host
is not the time the device spent on that step: each device operation belongs to the step whose
host window launched it (runtime call and operation share a `correlation` id), and step k on the
device starts when the host has started it and the device has finished the earlier steps' work.
Without ProfilerStep markers the whole trace is one window (`stepless`): no per-step claims.
"""

from __future__ import annotations

import gc
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from advisor.inputs import progress
from advisor.inputs.taxonomy import Taxonomy
from advisor.parsers.bounds import BadValues
from advisor.parsers.kineto import step_model
from advisor.parsers.kineto.decoded import KinetoEvents
from advisor.parsers.kineto.extract import extract
from advisor.parsers.kineto.parallel import extract_in_parallel
from advisor.parsers.kineto.stream import KinetoStream
from advisor.parsers.kineto.values import short_name
from advisor.parsers.memory_summary import Sample, summarise
from advisor.parsers.profile_data import (
    ProcessGroup,
    RankProfile,
)

MIB = 1024 * 1024
# the memory facts read a summary under the Ascend export's file name, whatever recorded it
MEMORY_FILE = "memory_record.csv"
KINETO_ALLOCATOR = "device allocator ([memory] events)"
__all__ = ["read_kineto", "short_name"]


def read_kineto(
    path: Path, taxonomy: Taxonomy, skip_bad: bool = False, split: bool = True
) -> RankProfile:
    """One rank's trace; `split` lets a large plain trace be decoded by worker processes (off
    inside a worker that reads one rank of many)."""
    with _collector_paused():
        try:
            with tempfile.TemporaryDirectory(prefix="advisor-kineto-") as scratch:
                return _read(path, taxonomy, BadValues(skip=skip_bad), split, Path(scratch))
        except OSError:
            # no room for the scratch files (the trace's own read errors are InputErrors):
            # every row held in memory instead, as the torch_npu reader falls back
            return _read(path, taxonomy, BadValues(skip=skip_bad), False, None)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector off while a trace is read (and in the workers forked
    meanwhile, which inherit it): the reader keeps its rows in arrays and makes no cycles,
    but the millions of short-lived objects of decoding and the per-step tables' records
    would start a collection every 700 allocations, each full one walking every live object
    (60% of the per-step tables' time in a worker). Back on afterwards as it was."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _read(
    path: Path, taxonomy: Taxonomy, bad: BadValues, split: bool, scratch: Path | None
) -> RankProfile:
    parallel = extract_in_parallel(path, taxonomy, scratch) if split and scratch else None
    if parallel is not None:
        events, header = parallel
    else:
        stream = KinetoStream(path)
        try:
            size = path.stat().st_size
        except OSError:
            size = 0  # the stream says why it cannot be read
        with progress.task(f"decoding {path.name}", round(size / MIB), "MiB") as bar:
            events = extract(
                stream.blocks(lambda n: bar.advance(n / MIB)),
                taxonomy,
                path,
                bad,
                scratch / "rows" if scratch else None,
            )
        header = stream.header
    rank = _rank_header(path, header)
    rank.warnings.extend(bad.warnings())
    rank.dropped.update(bad.by_name())
    for key, (name, ranks) in events.kernel_groups.items():
        rank.process_groups.setdefault(key, ProcessGroup(name, tuple(sorted(ranks))))
    _memory(rank, path, events)
    step_model.reduce(rank, path, events, taxonomy, scratch)
    return rank


def _memory(rank: RankProfile, path: Path, events: KinetoEvents) -> None:
    """The device allocator's `[memory]` events (profile_memory=True) as the memory_record.csv
    of the Ascend export: the same summary, read in the ProfilerStep windows."""
    samples: list[Sample] = [
        (ts, allocated / MIB, reserved / MIB)
        for ts, allocated, reserved in zip(
            events.memory.ts, events.memory.allocated, events.memory.reserved, strict=True
        )
    ]
    windows = [(w.number, w.start, w.end) for w in sorted(events.steps, key=lambda w: w.start)]
    summary = summarise({KINETO_ALLOCATOR: samples}, windows) if samples else None
    rank.memory = replace(summary, recorded_in="bytes") if summary is not None else None
    rank.absent["operator_memory.csv"] = (
        "is an Ascend export file: a PyTorch trace does not name the operator of each allocation"
    )
    if rank.memory is None:
        rank.absent[MEMORY_FILE] = (
            "no [memory] events in the trace (record with profile_memory=True)"
        )
    else:
        rank.sources[MEMORY_FILE] = f"{path.name}:[memory]"


def _rank_header(path: Path, data: dict[str, Any]) -> RankProfile:
    dist = data.get("distributedInfo")
    dist = dist if isinstance(dist, dict) else {}
    rank = RankProfile(path=path, output_dir=None, framework="pytorch")
    rank.framework_source = "PyTorch profiler trace (traceEvents, Kineto schema)"
    number, world = dist.get("rank"), dist.get("world_size")
    rank.rank = number if isinstance(number, int) and number >= 0 else None
    rank.world_size = world if isinstance(world, int) and world >= 1 else None
    rank.process_groups = _process_groups(dist)
    devices = data.get("deviceProperties")
    first = devices[0] if isinstance(devices, list) and devices else None
    if isinstance(first, dict) and first.get("name"):
        rank.device = str(first["name"])
    rank.platform = _platform(data, rank.device)
    rank.origin = path.name
    rank.inputs.append(path)
    return rank


def _platform(data: dict[str, Any], device: str | None) -> str:
    """rocm when the trace says so (roctracer / HIP versions, an AMD device), else cuda."""
    if any(key in data for key in ("roctracer_version", "hip_runtime_version")):
        return "rocm"
    if device and any(word in device for word in ("AMD", "Instinct", "Radeon")):
        return "rocm"
    return "cuda"


def _process_groups(dist: dict[str, Any]) -> dict[str, ProcessGroup]:
    """distributedInfo.pg_config: [{pg_name, pg_desc, ranks}, ...] (PyTorch 2.3 and later)."""
    groups: dict[str, ProcessGroup] = {}
    configs = dist.get("pg_config")
    for pg in configs if isinstance(configs, list) else []:
        ranks = pg.get("ranks") if isinstance(pg, dict) else None
        if isinstance(ranks, list) and all(isinstance(r, int) for r in ranks):
            key = str(pg.get("pg_name"))
            groups[key] = ProcessGroup(str(pg.get("pg_desc") or key), tuple(sorted(ranks)))
    return groups
