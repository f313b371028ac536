"""The step model of one PyTorch trace from its decoded columns: reduced from every operation
at once, or, when decoding spilled more operations than GROUP_ROWS, in groups (grouped.py).

Steps are device-paced: each operation belongs to the step whose host window launched it
(device_steps.py); each device window's time is split by what ran in it (window.py); each
step's kernels and collectives are tabled (kernel_tables.py).
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from pathlib import Path

from advisor.inputs.taxonomy import Taxonomy
from advisor.inputs.thresholds import reader_thresholds
from advisor.model import InputError
from advisor.parsers.kineto import grouped
from advisor.parsers.kineto.collectives import collective_kinds
from advisor.parsers.kineto.columns import COMMUNICATION, MEMORY, LaunchIndex
from advisor.parsers.kineto.decoded import KinetoEvents
from advisor.parsers.kineto.device_steps import (
    STEPLESS_NUMBER,
    DeviceWindow,
    StepBounds,
    assign_steps,
    kept_steps,
    launch_times_in_place,
    stepless,
)
from advisor.parsers.kineto.kernel_tables import StepOps, add_step_ops, finish_rank
from advisor.parsers.kineto.window import (
    Measured,
    Whole,
    host_calls,
    lanes_of,
    measure_windows,
)
from advisor.parsers.profile_data import RankProfile
from advisor.parsers.traces import budget
from advisor.parsers.traces.phases import NO_PHASE_RANGES, grouped_table, phase_table
from advisor.parsers.traces.phases import DeviceOps as PhaseOps


def reduce(
    rank: RankProfile, path: Path, events: KinetoEvents, taxonomy: Taxonomy, scratch: Path | None
) -> None:
    """The rank's steps, tables and trace measures from the decoded events."""
    spilled = sum(rows.ops for rows in events.spilled)
    if spilled > budget.GROUP_ROWS and scratch:
        grouped.reduce_in_groups(rank, path, events, taxonomy, scratch)
        if rank.trace is not None:
            rank.trace.phases = grouped_table(events.host_ranges)
        return
    if events.spilled:
        grouped.read_back(events)
    _reduce_whole(rank, path, events, taxonomy)


def _reduce_whole(rank: RankProfile, path: Path, events: KinetoEvents, taxonomy: Taxonomy) -> None:
    """The step model from every operation at once."""
    ops = events.ops
    if not len(ops):
        raise InputError(str(path), "no device kernels: a CPU-only trace has no step-time model")
    launches = LaunchIndex(events.launch_keys, events.launch_ts)
    events.launch_keys, events.launch_ts = array("q"), array("d")
    launch_at = launch_times_in_place(ops.correlation, launches)
    ops.correlation = array("q")
    del launches
    if events.steps:
        steps_of = assign_steps(
            ops.start, ops.signature, ops.signatures.stream, launch_at, events.steps, {}
        )
        numbers = [w.number for w in events.steps]
        bounds = StepBounds.of(events.steps)
        bounds.add(ops.start, ops.end, ops.kinds(), steps_of)
        kept = kept_steps(rank, events.steps, bounds.launched())
        windows = bounds.device_windows(events.steps, kept)
    else:
        windows = stepless(rank, path, ops.start[0], ops.end[-1], max(ops.end))
        steps_of, numbers = array("i", [0]) * len(ops), [STEPLESS_NUMBER]
    fill_rank(rank, path, events, windows, steps_of, numbers, launch_at, taxonomy)


def fill_rank(
    rank: RankProfile,
    path: Path,
    events: KinetoEvents,
    windows: list[DeviceWindow],
    steps_of: array[int],
    numbers: list[int],
    launch_at: Sequence[float],
    taxonomy: Taxonomy,
) -> None:
    """The rank's steps from all its operations at once (`numbers`: the step number of each
    index `steps_of` holds)."""
    ops = events.ops
    kind_of = collective_kinds(ops.signatures, events.strings.values, taxonomy)
    lanes = lanes_of(ops, kind_of)
    whole = Whole(any(t == t for t in launch_at), bool(lanes.collectives))
    per_step: dict[int, StepOps] = {}
    add_step_ops(
        per_step, ops, events.strings.values, steps_of, numbers, kind_of, reader_thresholds()
    )
    measured = Measured([], [], [])
    measure_windows(windows, ops, launch_at, lanes, host_calls(events), per_step, whole, measured)
    kinds = ops.kinds()
    kernel_rows = len(kinds) - kinds.count(MEMORY)
    finish_rank(
        rank, path, events.events, measured, per_step, kernel_rows, len(lanes.comm) > 0, whole
    )
    if rank.trace is not None:
        rank.trace.phases = phase_table(
            [(w.number, w.start, w.end) for w in windows],
            PhaseOps(ops.start, ops.end, launch_at, [k == COMMUNICATION for k in kinds]),
            events.host_ranges,
            (events.host.loader_start, events.host.loader_end),
            NO_PHASE_RANGES,
        )
