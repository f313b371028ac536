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

import gzip
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.inputs.taxonomy import Taxonomy
from advisor.model import InputError
from advisor.parsers.bounds import BadValues
from advisor.parsers.kineto_events import (
    COMMUNICATION,
    COMPUTE,
    MEMORY,
    DeviceOp,
    HostWindow,
    KinetoEvents,
    extract,
    short_name,
)
from advisor.parsers.kineto_stream import KinetoStream
from advisor.parsers.profile_data import (
    CommStep,
    KernelGroup,
    KernelTable,
    ProcessGroup,
    RankProfile,
    StepRow,
)
from advisor.parsers.trace_steps import (
    TraceData,
    TraceStep,
    clipped_sum,
    exposed_by_kind,
    idle_gaps,
    merged_intervals,
    preparation,
)

SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz", ".json", ".json.gz")
STEPLESS_NUMBER = 0
__all__ = ["is_kineto_file", "kineto_files", "read_kineto", "short_name"]


def is_kineto_file(path: Path) -> bool:
    return (
        path.is_file() and path.name.endswith(SUFFIXES) and not path.name.startswith("trace_view")
    )


def kineto_files(folder: Path) -> list[Path]:
    """The traces of a folder: `*.pt.trace.json[.gz]`, else JSON files that begin like a
    PyTorch profiler trace (exported under another name)."""
    named = sorted(p for p in folder.glob("*.pt.trace.json*") if p.is_file())
    if named:
        return named
    return sorted(p for p in folder.glob("*.json*") if is_kineto_file(p) and _begins_like_kineto(p))


def _begins_like_kineto(path: Path) -> bool:
    try:
        opener = gzip.open if path.name.endswith(".gz") else open
        with opener(path, "rb") as handle:
            head = handle.read(65536)
    except (OSError, EOFError, gzip.BadGzipFile):
        return False
    # Kineto writes its header first: schemaVersion, deviceProperties, then traceEvents
    return b'"schemaVersion"' in head or (b'"traceEvents"' in head and b'"ph"' in head)


@dataclass(frozen=True)
class DeviceWindow:
    number: int
    start: float
    end: float


def read_kineto(path: Path, taxonomy: Taxonomy, skip_bad: bool = False) -> RankProfile:
    stream = KinetoStream(path)
    bad = BadValues(skip=skip_bad)
    events = extract(stream.blocks(), taxonomy, path, bad)
    rank = _rank_header(path, stream.header)
    rank.warnings.extend(bad.warnings())
    rank.dropped.update(bad.by_name())
    for key, (name, ranks) in events.kernel_groups.items():
        rank.process_groups.setdefault(key, ProcessGroup(name, tuple(sorted(ranks))))
    if not events.ops:
        raise InputError(str(path), "no device kernels: a CPU-only trace has no step-time model")
    steps_of = _assign(events)
    _drop_empty_steps(events, steps_of, rank)
    if events.steps:
        windows = device_windows(events, steps_of)
    else:
        rank.stepless = True
        rank.warnings.append(
            f"{path}: no ProfilerStep#N markers: the trace is analysed as one window "
            f"({(events.ops[-1].end - events.ops[0].start) / 1000.0:.2f} ms of device activity); "
            "per-step facts are withheld (profile with torch.profiler.schedule and prof.step())"
        )
        first, last = events.ops[0].start, max(op.end for op in events.ops)
        windows = [DeviceWindow(STEPLESS_NUMBER, first, last)]
        steps_of = [STEPLESS_NUMBER] * len(events.ops)
    _fill(rank, path, events, windows, steps_of, taxonomy)
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


def _host_step(windows: list[HostWindow], starts: list[float], at: float) -> int | None:
    """The step whose host window holds `at` (a gap between windows belongs to the earlier)."""
    i = bisect_right(starts, at) - 1
    if i < 0:
        return None
    if i == len(windows) - 1 and at > windows[i].end:
        return None
    return windows[i].number


def _assign(events: KinetoEvents) -> list[int | None]:
    """The step each device operation belongs to: the host step that launched it; an
    operation without a launch follows the one before it on its stream."""
    windows = events.steps
    starts = [w.start for w in windows]
    last_on_stream: dict[str, int | None] = {}
    out: list[int | None] = []
    for op in events.ops:
        launch = events.launches.get(op.correlation) if op.correlation is not None else None
        if launch is not None:
            step = _host_step(windows, starts, launch)
        elif op.stream in last_on_stream:
            step = last_on_stream[op.stream]
        else:
            step = _host_step(windows, starts, op.start)
        last_on_stream[op.stream] = step
        out.append(step)
    return out


def _drop_empty_steps(events: KinetoEvents, steps_of: list[int | None], rank: RankProfile) -> None:
    """Steps that launched no device work: at the end, the profiler stopped during them;
    elsewhere the trace lost their launches. Neither is a step the device ran."""
    launched = {s for s in steps_of if s is not None}
    empty = [w.number for w in events.steps if w.number not in launched]
    if not empty:
        return
    events.steps = [w for w in events.steps if w.number in launched]
    numbers = ", ".join(str(n) for n in empty)
    rank.warnings.append(
        f"{rank.path}: step(s) {numbers} launched no device work (the profiler stopped during "
        "them, or their launches are missing) and are left out"
    )
    if not events.steps:
        raise InputError(str(rank.path), "no ProfilerStep#N step launched any device work")


def device_windows(events: KinetoEvents, steps_of: list[int | None]) -> list[DeviceWindow]:
    """Step k on the device: from when the host started it and the device finished the work of
    the steps before (at the latest, its own first kernel), to the start of step k+1 (the last
    step: to its last operation)."""
    order = {w.number: i for i, w in enumerate(events.steps)}
    first_host = events.steps[0].start
    last_end = [float("-inf")] * len(events.steps)
    first_kernel = [float("inf")] * len(events.steps)
    earlier = float("-inf")  # work launched before the first profiled step
    for op, step in zip(events.ops, steps_of, strict=True):
        if step is None:
            if op.start < first_host:
                earlier = max(earlier, op.end)
            continue
        i = order[step]
        last_end[i] = max(last_end[i], op.end)
        if op.kind != MEMORY:
            first_kernel[i] = min(first_kernel[i], op.start)
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


def _fill(
    rank: RankProfile,
    path: Path,
    events: KinetoEvents,
    windows: list[DeviceWindow],
    steps_of: list[int | None],
    taxonomy: Taxonomy,
) -> None:
    ops = events.ops
    by_kind: dict[str, list[tuple[float, float]]] = {COMPUTE: [], COMMUNICATION: [], MEMORY: []}
    for op in ops:
        by_kind[op.kind].append((op.start, op.end))
    compute_iv = merged_intervals(by_kind[COMPUTE])
    comm_iv = merged_intervals(by_kind[COMMUNICATION])
    ck_iv = merged_intervals(sorted(compute_iv + comm_iv))
    all_iv = merged_intervals([(op.start, op.end) for op in ops])
    op_starts = [op.start for op in ops]  # ops are sorted by start
    op_ends = [op.end for op in ops]
    launch_of = {
        op.start: events.launches[op.correlation]
        for op in ops
        if op.correlation is not None and op.correlation in events.launches
    }
    sync_iv = merged_intervals(sorted(events.sync))
    malloc_iv = merged_intervals(sorted(events.malloc))
    loader_iv = merged_intervals(sorted(events.loader))
    sync_starts = sorted(a for a, _ in events.sync)
    malloc_starts = sorted(a for a, _ in events.malloc)
    free_starts = sorted(events.free)
    kinds: dict[str, list[tuple[float, float]]] = {}
    for op in ops:
        if op.kind == COMMUNICATION:
            kind = taxonomy.comm_kind(op.collective)
            kinds.setdefault(kind, []).append((op.start, op.end))
    collectives = {kind: merged_intervals(iv) for kind, iv in kinds.items()}
    per_step = _per_step(ops, steps_of, taxonomy)
    rows: list[StepRow] = []
    steps: list[TraceStep] = []
    comm_steps: list[CommStep] = []
    for w in windows:
        lo, hi = w.start, w.end
        busy = clipped_sum(all_iv, lo, hi)
        computing = clipped_sum(compute_iv, lo, hi)
        communication = clipped_sum(comm_iv, lo, hi)
        compute_or_comm = clipped_sum(ck_iv, lo, hi)
        i = bisect_left(all_iv, (lo, lo))
        if i > 0 and all_iv[i - 1][1] > lo:
            i -= 1
        first = max(lo, all_iv[i][0]) if i < len(all_iv) and all_iv[i][0] < hi else hi
        exposed = compute_or_comm - computing
        rows.append(
            StepRow(
                w.number,
                computing,
                exposed,
                communication - exposed,
                communication,
                max(0.0, (hi - first) - busy),
                first - lo,
                None,
                memory=busy - compute_or_comm,
            )
        )
        gaps = idle_gaps(op_starts, op_ends, lo, hi, launch_of) if launch_of else None
        prep = preparation(lo, first, loader_iv, malloc_iv, sync_iv)
        step_ops = per_step.get(w.number)
        steps.append(
            TraceStep(
                number=w.number,
                duration_us=hi - lo,
                overlap_us={},
                kernel_count=step_ops.count if step_ops else 0,
                launch_gap_us=gaps.host if gaps else None,
                sync_calls=_count(sync_starts, lo, hi),
                malloc_calls=_count(malloc_starts, lo, hi),
                free_calls=_count(free_starts, lo, hi),
                dataloader_us=clipped_sum(loader_iv, lo, hi),
                idle_dependency_us=gaps.dependency if gaps else None,
                idle_unlinked_us=gaps.unlinked if gaps else None,
                first_task_us=first - lo,
                preparing_loader_us=prep[0],
                preparing_allocator_us=prep[1],
                preparing_sync_us=prep[2],
                comm_exposed_by_kind_us=exposed_by_kind(collectives, compute_iv, lo, hi)
                if collectives
                else None,
            )
        )
        comm_steps.append(step_ops.comm if step_ops else CommStep(step=w.number, has_wait=False))
    rank.step_rows = rows
    groups = [g for s in per_step.values() for g in s.groups.values()]
    rank.kernels = KernelTable(
        groups, has_pmu=False, has_step_ids=True, rows=sum(1 for op in ops if op.kind != MEMORY)
    )
    rank.comm = comm_steps if comm_iv else None
    rank.trace = TraceData(
        path,
        events.events,
        steps,
        [],
        "correlation" if launch_of else None,
        True,
        ["GPU"],
    )


def _count(times: list[float], lo: float, hi: float) -> int:
    return bisect_left(times, hi) - bisect_left(times, lo)


@dataclass
class _StepOps:
    comm: CommStep
    groups: dict[tuple[str, str], KernelGroup]
    count: int = 0


def _per_step(
    ops: list[DeviceOp], steps_of: list[int | None], taxonomy: Taxonomy
) -> dict[int, _StepOps]:
    """Kernels and collectives of each step, by the step that launched them (memory operations
    are not kernels: they are the step model's memory part)."""
    out: dict[int, _StepOps] = {}
    for op, step in zip(ops, steps_of, strict=True):
        if step is None or op.kind == MEMORY:
            continue
        mine = out.get(step)
        if mine is None:
            mine = out[step] = _StepOps(CommStep(step=step, has_wait=False), {})
        mine.count += 1
        core = "NCCL" if op.kind == COMMUNICATION else "GPU"
        group = mine.groups.get((op.name, core))
        if group is None:
            group = mine.groups[(op.name, core)] = KernelGroup(step, op.name, core, op.name)
        duration = op.end - op.start
        group.count += 1
        group.total_us += duration
        if duration < taxonomy.small_op_max_us:
            group.small_count += 1
            group.small_us += duration
        if op.kind == COMMUNICATION:
            kind = taxonomy.comm_kind(op.collective)
            mine.comm.add(kind, duration / 1000.0, op.group)
    return out
