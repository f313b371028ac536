"""The step model of a PyTorch profiler trace from its device-operation columns: per device
window, compute, exposed and overlapped communication, memory operations, idle time by cause,
the host preparation before the first kernel, and the kernels and collectives of each step.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from advisor.inputs.taxonomy import Taxonomy
from advisor.parsers.intervals import (
    Intervals,
    clipped_sum,
    exposed_by_kind,
    merge_unsorted,
    merged_intervals,
)
from advisor.parsers.kineto_columns import COMMUNICATION, COMPUTE, MEMORY, NO_GROUP, DeviceOps
from advisor.parsers.kineto_events import KinetoEvents
from advisor.parsers.profile_data import CommStep, KernelGroup, KernelTable, RankProfile, StepRow
from advisor.parsers.trace_steps import TraceData, TraceStep, idle_gaps, preparation

NO_STEP = -1  # a device operation no profiled step launched (else its window's index)


@dataclass(frozen=True)
class DeviceWindow:
    number: int
    start: float
    end: float


def _unions(ops: DeviceOps) -> tuple[Intervals, Intervals, Intervals, Intervals]:
    """The merged intervals of compute, communication, both, and every operation, in one pass
    over the operations (in start order)."""
    lanes = (Intervals(), Intervals(), Intervals(), Intervals())
    compute, comm, kernels, every = lanes
    for start, end, kind in zip(ops.start, ops.end, ops.kinds(), strict=True):
        targets = (
            (compute, kernels, every)
            if kind == COMPUTE
            else (comm, kernels, every)
            if kind == COMMUNICATION
            else (every,)
        )
        for lane in targets:
            ends = lane.ends
            if ends and start <= ends[-1]:
                if end > ends[-1]:
                    ends[-1] = end
            else:
                lane.starts.append(start)
                ends.append(end)
    return lanes


def fill_rank(
    rank: RankProfile,
    path: Path,
    events: KinetoEvents,
    windows: list[DeviceWindow],
    steps_of: array[int],
    launch_at: Sequence[float],
    taxonomy: Taxonomy,
) -> None:
    ops = events.ops
    strings = events.strings.values
    compute_iv, comm_iv, ck_iv, all_iv = _unions(ops)
    linked = any(t == t for t in launch_at)
    sync_iv = merge_unsorted(events.sync_start, events.sync_end)
    malloc_iv = merge_unsorted(events.malloc_start, events.malloc_end)
    loader_iv = merge_unsorted(events.loader_start, events.loader_end)
    sync_starts = sorted(events.sync_start)
    malloc_starts = sorted(events.malloc_start)
    free_starts = sorted(events.free)
    kind_of = _collective_kinds(ops, strings, taxonomy)
    kinds: dict[str, tuple[array[float], array[float]]] = {}
    sigs = ops.signatures
    for i, sig in enumerate(ops.signature):
        if sigs.kind[sig] == COMMUNICATION:
            lane = kinds.setdefault(kind_of[sigs.collective[sig]], (array("d"), array("d")))
            lane[0].append(ops.start[i])
            lane[1].append(ops.end[i])
    collectives = {kind: merged_intervals(a, b) for kind, (a, b) in kinds.items()}
    del kinds
    per_step = _per_step(ops, strings, steps_of, [w.number for w in windows], kind_of, taxonomy)
    rows: list[StepRow] = []
    steps: list[TraceStep] = []
    comm_steps: list[CommStep] = []
    all_starts, all_ends = all_iv.starts, all_iv.ends
    for w in windows:
        lo, hi = w.start, w.end
        busy = clipped_sum(all_iv, lo, hi)
        computing = clipped_sum(compute_iv, lo, hi)
        communication = clipped_sum(comm_iv, lo, hi)
        compute_or_comm = clipped_sum(ck_iv, lo, hi)
        i = bisect_left(all_starts, lo)
        if i > 0 and all_ends[i - 1] > lo:
            i -= 1
        first = max(lo, all_starts[i]) if i < len(all_starts) and all_starts[i] < hi else hi
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
        gaps = idle_gaps(ops.start, ops.end, lo, hi, launch_at) if linked else None
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
        groups, has_pmu=False, has_step_ids=True, rows=sum(1 for k in ops.kinds() if k != MEMORY)
    )
    rank.comm = comm_steps if len(comm_iv) else None
    rank.trace = TraceData(
        path,
        events.events,
        steps,
        [],
        "correlation" if linked else None,
        True,
        ["GPU"],
    )


def _collective_kinds(ops: DeviceOps, strings: list[str], taxonomy: Taxonomy) -> dict[int, str]:
    """The collective kind of each collective name the operations use."""
    return {
        c: taxonomy.comm_kind(strings[c])
        for c in {
            ops.signatures.collective[s]
            for s in range(len(ops.signatures))
            if ops.signatures.kind[s] == COMMUNICATION
        }
    }


def _count(times: list[float], lo: float, hi: float) -> int:
    return bisect_left(times, hi) - bisect_left(times, lo)


@dataclass
class _StepOps:
    comm: CommStep
    groups: dict[tuple[str, str], KernelGroup]
    count: int = 0


def _per_step(
    ops: DeviceOps,
    strings: list[str],
    steps_of: array[int],
    numbers: list[int],
    kind_of: dict[int, str],
    taxonomy: Taxonomy,
) -> dict[int, _StepOps]:
    """Kernels and collectives of each step, by the step that launched them (memory operations
    are not kernels: they are the step model's memory part)."""
    out: dict[int, _StepOps] = {}
    small = taxonomy.small_op_max_us
    sigs = ops.signatures
    op_sigs = ops.signature
    for i, window in enumerate(steps_of):
        sig = op_sigs[i]
        kind = sigs.kind[sig]
        if window == NO_STEP or kind == MEMORY:
            continue
        step = numbers[window]
        mine = out.get(step)
        if mine is None:
            mine = out[step] = _StepOps(CommStep(step=step, has_wait=False), {})
        mine.count += 1
        name = strings[sigs.name[sig]]
        core = "NCCL" if kind == COMMUNICATION else "GPU"
        group = mine.groups.get((name, core))
        if group is None:
            group = mine.groups[(name, core)] = KernelGroup(step, name, core, name)
        duration = ops.end[i] - ops.start[i]
        group.count += 1
        group.total_us += duration
        if duration < small:
            group.small_count += 1
            group.small_us += duration
        if kind == COMMUNICATION:
            pg = sigs.group[sig]
            mine.comm.add(
                kind_of[sigs.collective[sig]],
                duration / 1000.0,
                None if pg == NO_GROUP else strings[pg],
            )
    return out
