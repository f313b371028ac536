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

from array import array
from bisect import bisect_right
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from advisor.inputs import progress
from advisor.inputs.taxonomy import Taxonomy
from advisor.model import InputError
from advisor.parsers.bounds import BadValues
from advisor.parsers.kineto_columns import MEMORY, NAN, NO_CORRELATION, LaunchIndex
from advisor.parsers.kineto_events import KinetoEvents, extract
from advisor.parsers.kineto_parallel import extract_in_parallel
from advisor.parsers.kineto_steps import NO_STEP, DeviceWindow, fill_rank
from advisor.parsers.kineto_stream import KinetoStream
from advisor.parsers.kineto_values import short_name
from advisor.parsers.profile_data import (
    ProcessGroup,
    RankProfile,
)

STEPLESS_NUMBER = 0
MIB = 1024 * 1024
__all__ = ["read_kineto", "short_name"]


def read_kineto(
    path: Path, taxonomy: Taxonomy, skip_bad: bool = False, split: bool = True
) -> RankProfile:
    """One rank's trace; `split` lets a large plain trace be decoded by worker processes (off
    inside a worker that reads one rank of many)."""
    bad = BadValues(skip=skip_bad)
    parallel = extract_in_parallel(path, taxonomy) if split else None
    if parallel is not None:
        events, header = parallel
    else:
        stream = KinetoStream(path)
        try:
            size = path.stat().st_size
        except OSError:
            size = 0  # the stream says why it cannot be read
        with progress.task(f"decoding {path.name}", round(size / MIB), "MiB") as bar:
            events = extract(stream.blocks(lambda n: bar.advance(n / MIB)), taxonomy, path, bad)
        header = stream.header
    rank = _rank_header(path, header)
    rank.warnings.extend(bad.warnings())
    rank.dropped.update(bad.by_name())
    for key, (name, ranks) in events.kernel_groups.items():
        rank.process_groups.setdefault(key, ProcessGroup(name, tuple(sorted(ranks))))
    ops = events.ops
    if not len(ops):
        raise InputError(str(path), "no device kernels: a CPU-only trace has no step-time model")
    launches = LaunchIndex(events.launch_keys, events.launch_ts)
    events.launch_keys, events.launch_ts = array("q"), array("d")
    launch_at, steps_of = _assign(events, launches)
    del launches
    _drop_empty_steps(events, steps_of, rank)
    if events.steps:
        windows = device_windows(events, steps_of)
    else:
        rank.stepless = True
        rank.warnings.append(
            f"{path}: no ProfilerStep#N markers: the trace is analysed as one window "
            f"({(ops.end[-1] - ops.start[0]) / 1000.0:.2f} ms of device activity); "
            "per-step facts are withheld (profile with torch.profiler.schedule and prof.step())"
        )
        windows = [DeviceWindow(STEPLESS_NUMBER, ops.start[0], max(ops.end))]
        steps_of = array("i", [0]) * len(ops)  # every operation in the one window
    fill_rank(rank, path, events, windows, steps_of, launch_at, taxonomy)
    return rank


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


def _assign(events: KinetoEvents, launches: LaunchIndex) -> tuple[Sequence[float], array[int]]:
    """Each device operation's host launch time (NaN: none in the trace) and step, as the
    index of its window (NO_STEP: none): the host step whose window holds its launch (a gap between windows belongs to the
    earlier); an operation without a launch follows the one before it on its stream.

    One pass with the lookups written out: it runs once per kernel of traces with millions.
    The launch times take the correlation column's place (both 8 bytes a row, each id read
    before its row is written): the ids are not needed once the launches are found.
    """
    ops = events.ops
    n = len(ops)
    corr = ops.correlation
    launch_at = memoryview(corr).cast("B").cast("d")
    ops.correlation = array("q")
    steps_of = array("i", [0]) * n  # one allocation (from bytes: two)
    windows = events.steps
    starts = [w.start for w in windows]
    last = len(windows) - 1
    last_end = windows[-1].end if windows else 0.0
    table, base, get = launches.table, launches.base, launches.get
    size = len(table) if table is not None else 0
    op_starts = ops.start
    sig_stream, op_sigs = ops.signatures.stream, ops.signature
    last_on_stream: dict[int, int] = {}
    cur = -1  # the window found last: launches come mostly in time order
    for i in range(n):
        key = corr[i]
        launch = NAN
        if key != NO_CORRELATION:
            if table is not None:
                offset = key - base
                if 0 <= offset < size:
                    launch = table[offset]
            else:
                found = get(key)
                if found is not None:
                    launch = found
        launch_at[i] = launch
        stream = sig_stream[op_sigs[i]]
        if launch == launch:  # not NaN: launched from the host
            at = launch
        else:
            known = last_on_stream.get(stream)
            if known is not None:
                steps_of[i] = known
                continue
            at = op_starts[i]
        if not (cur >= 0 and starts[cur] <= at and (cur == last or at < starts[cur + 1])):
            cur = bisect_right(starts, at) - 1
        step = NO_STEP if cur < 0 or (cur == last and at > last_end) else cur
        last_on_stream[stream] = step
        steps_of[i] = step
    return launch_at, steps_of


def _drop_empty_steps(events: KinetoEvents, steps_of: array[int], rank: RankProfile) -> None:
    """Steps that launched no device work: at the end, the profiler stopped during them;
    elsewhere the trace lost their launches. Neither is a step the device ran. The operations'
    window indexes are renumbered to the windows kept."""
    launched = set(steps_of)
    launched.discard(NO_STEP)
    kept = [i for i in range(len(events.steps)) if i in launched]
    if len(kept) == len(events.steps):
        return
    empty = [w.number for i, w in enumerate(events.steps) if i not in launched]
    events.steps = [events.steps[i] for i in kept]
    renumbered = {old: new for new, old in enumerate(kept)}
    for i, old in enumerate(steps_of):
        if old != NO_STEP:
            steps_of[i] = renumbered[old]
    numbers = ", ".join(str(n) for n in empty)
    rank.warnings.append(
        f"{rank.path}: step(s) {numbers} launched no device work (the profiler stopped during "
        "them, or their launches are missing) and are left out"
    )
    if not events.steps:
        raise InputError(str(rank.path), "no ProfilerStep#N step launched any device work")


def device_windows(events: KinetoEvents, steps_of: array[int]) -> list[DeviceWindow]:
    """Step k on the device: from when the host started it and the device finished the work of
    the steps before (at the latest, its own first kernel), to the start of step k+1 (the last
    step: to its last operation)."""
    first_host = events.steps[0].start
    last_end = [float("-inf")] * len(events.steps)
    first_kernel = [float("inf")] * len(events.steps)
    earlier = float("-inf")  # work launched before the first profiled step
    ops = events.ops
    for start, end, kind, step in zip(ops.start, ops.end, ops.kinds(), steps_of, strict=True):
        if step == NO_STEP:
            if start < first_host:
                earlier = max(earlier, end)
            continue
        if end > last_end[step]:
            last_end[step] = end
        if kind != MEMORY and start < first_kernel[step]:
            first_kernel[step] = start
    starts: list[float] = []
    done = earlier
    for i, w in enumerate(events.steps):
        # never after the step's own first kernel: an earlier step's straggler on another
        # stream does not hold the step back (a prefetched batch's copies may run early)
        starts.append(max(w.start, min(done, first_kernel[i])))
        done = max(done, last_end[i])
    windows = []
    for i, w in enumerate(events.steps):
        # the last step runs to its last operation (or its host window, if later)
        end = starts[i + 1] if i + 1 < len(events.steps) else max(w.end, last_end[i])
        windows.append(DeviceWindow(w.number, starts[i], max(starts[i], end)))
    return windows
