"""The kernels and collectives of each step of a PyTorch trace (by the step that launched
them), and the rank's tables filled from them and from the windows' measures."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from advisor.inputs.thresholds import ReaderThresholds
from advisor.parsers.kineto.columns import (
    COMMUNICATION,
    MEMORY,
    NO_GROUP,
    DeviceOps,
)
from advisor.parsers.kineto.device_steps import NO_STEP
from advisor.parsers.kineto.window import Measured, Whole
from advisor.parsers.profile_data import CommStep, KernelGroup, KernelTable, RankProfile
from advisor.parsers.traces.steps import TraceData


def finish_rank(
    rank: RankProfile,
    path: Path,
    event_count: int,
    measured: Measured,
    per_step: dict[int, StepOps],
    kernel_rows: int,
    has_comm: bool,
    whole: Whole,
) -> None:
    rank.step_rows = measured.rows
    groups = [g for s in per_step.values() for g in s.groups.values()]
    rank.kernels = KernelTable(groups, has_pmu=False, has_step_ids=True, rows=kernel_rows)
    rank.comm = measured.comm if has_comm else None
    rank.trace = TraceData(
        path,
        event_count,
        measured.steps,
        [],
        "correlation" if whole.linked else None,
        True,
        ["GPU"],
    )


@dataclass
class StepOps:
    comm: CommStep
    groups: dict[tuple[str, str], KernelGroup]

    @property
    def count(self) -> int:
        """The step's kernels (each is counted in exactly one of its groups)."""
        return sum(group.count for group in self.groups.values())


def add_step_ops(
    out: dict[int, StepOps],
    ops: DeviceOps,
    strings: list[str],
    steps_of: Sequence[int],
    numbers: list[int],
    kind_of: dict[int, str],
    limits: ReaderThresholds,
) -> None:
    """Add the kernels and collectives of each step, by the step that launched them (memory
    operations are not kernels: they are the step model's memory part), in operation order."""
    small = limits.small_op_max_us
    op_sigs, starts, ends = ops.signature, ops.start, ops.end
    width = len(ops.signatures) + 1
    # (window, signature) -> where its operations are added: a step has few signatures, met
    # again and again, so each pair is looked up once (None: not a kernel of a step)
    targets: dict[int, _Target | None] = {}
    last_key: int | None = None  # operations of one pair often come in a run
    target: _Target | None = None
    for window, sig, start, end in zip(steps_of, op_sigs, starts, ends, strict=True):
        key = window * width + sig
        if key != last_key:
            last_key = key
            try:
                target = targets[key]
            except KeyError:
                target = targets[key] = _target(out, ops, strings, window, sig, numbers, kind_of)
        if target is None:
            continue
        mine, group, collective = target
        duration = end - start
        group.count += 1
        group.total_us += duration
        if duration < small:
            group.small_count += 1
            group.small_us += duration
        if collective is not None:
            mine.comm.add(collective[0], duration / 1000.0, collective[1])


# a step's record, its kernel group and, for a collective, its kind and process group
_Target = tuple[StepOps, KernelGroup, tuple[str, str | None] | None]


def _target(
    out: dict[int, StepOps],
    ops: DeviceOps,
    strings: list[str],
    window: int,
    sig: int,
    numbers: list[int],
    kind_of: dict[int, str],
) -> _Target | None:
    sigs = ops.signatures
    kind = sigs.kind[sig]
    if window == NO_STEP or kind == MEMORY:
        return None
    step = numbers[window]
    mine = out.get(step)
    if mine is None:
        mine = out[step] = StepOps(CommStep(step=step, has_wait=False), {})
    name = strings[sigs.name[sig]]
    core = "NCCL" if kind == COMMUNICATION else "GPU"
    group = mine.groups.get((name, core))
    if group is None:
        group = mine.groups[(name, core)] = KernelGroup(step, name, core, name)
    if kind != COMMUNICATION:
        return mine, group, None
    pg = sigs.group[sig]
    return mine, group, (kind_of[sigs.collective[sig]], None if pg == NO_GROUP else strings[pg])
