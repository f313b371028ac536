"""Pass 2 of a PyTorch trace's grouped reduction (grouped.py): the start-time groups read,
sorted and appended to the ordered file, each operation's step assigned, the window bounds and
the per-step kernel tables added up.

A large trace's groups are sorted by worker processes, a run of consecutive groups each, each
run from an empty state (no stream's last step, no bounds, no tables); the parent then merges
the runs in order, exactly as one pass would have left them:

- a stream's last step carries into the next run; a run that looked one up for an operation
  without a launch (and the stream had one before the run) is redone in order, all of it;
- bounds are maxima and minima, the same in any order;
- a step's kernel table sums durations in operation order: a step a run shares with the runs
  before it is summed again here from that run's rows (its steps are kept in a file beside
  its rows), continuing the earlier sums; the other steps are taken as the run summed them;
- signatures a run created (a collective renamed after its host range) are created again in
  run order, so they take the ids one pass gives them, and the run's rows are renumbered.
"""

from __future__ import annotations

import os
import shutil
from array import array
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from itertools import compress, pairwise
from pathlib import Path
from typing import Any

from advisor.inputs.thresholds import ReaderThresholds
from advisor.parsers.kineto.columns import COMMUNICATION, MEMORY, DeviceOps, Signatures
from advisor.parsers.kineto.device_steps import HostWindow, StepBounds, assign_steps
from advisor.parsers.kineto.kernel_tables import StepOps, add_step_ops
from advisor.parsers.traces import workers
from advisor.parsers.traces.ordered import COLUMNS, OrderedWriter, Rows

INF = float("inf")
ROW_BYTES = sum(array(code).itemsize for _, code in COLUMNS)  # a row of the ordered file
STEP_BYTES = array("i").itemsize
# the 5-tuple that makes a signature (Signatures.id's arguments)
SignatureKey = tuple[int, int, int, int, int]
# the reader of one start-time group: its operations sorted, with their launch times
ReadGroup = Callable[[float, float], "tuple[DeviceOps, array[float]]"]


class _Carry(dict[int, int]):
    """The last step of each stream; remembers the streams looked up before this run set
    them (whose answer the runs before may change)."""

    def __init__(self) -> None:
        super().__init__()
        self.missed: set[int] = set()

    def get(self, key: int, default: Any = None) -> Any:
        if key not in self:
            self.missed.add(key)
        return super().get(key, default)


@dataclass
class Sorted:
    """What sorting some start-time groups left: in the ordered file, and in these sums."""

    windows: list[HostWindow]
    bounds: StepBounds
    per_step: dict[int, StepOps] = field(default_factory=dict)
    carry: dict[int, int] = field(default_factory=dict)
    kernel_rows: int = 0
    has_comm: bool = False
    first: float = INF
    last_end: float = -INF  # the end of the last operation to start
    latest: float = -INF
    # the lowest and highest step index of each group written to a steps file
    step_spans: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class _Run:
    """One worker's run of groups, to be merged by the parent."""

    sums: Sorted
    missed: set[int]
    runs: list[int]  # row counts of its groups in its ordered piece
    created: list[SignatureKey]  # signatures it created, in order (ids from `base_signatures`)


@dataclass
class GroupSorter:
    """Sorts start-time groups into an ordered file and adds up the sums pass 3 needs."""

    read: ReadGroup
    sigs: Signatures
    strings: list[str]
    numbers: list[int]
    kind_of: dict[int, str]
    limits: ReaderThresholds

    def sort(
        self,
        ranges: list[tuple[float, float]],
        out: Sorted,
        writer: OrderedWriter,
        steps_file: Any = None,
    ) -> None:
        """The groups `ranges` in order into `out` and `writer` (each operation's step also to
        `steps_file` when given)."""
        sigs, windows = self.sigs, out.windows
        for lo, hi in ranges:
            ops, launch_at = self.read(lo, hi)
            if not len(ops):
                continue
            writer.append(Rows(ops.start, ops.end, ops.signature, launch_at))
            kinds = ops.kinds()
            if windows:
                steps_of = assign_steps(
                    ops.start, ops.signature, sigs.stream, launch_at, windows, out.carry
                )
                out.bounds.add(ops.start, ops.end, kinds, steps_of)
            else:
                steps_of = array("i", [0]) * len(ops)
            if steps_file is not None:
                steps_of.tofile(steps_file)
                out.step_spans.append((min(steps_of), max(steps_of)))
            add_step_ops(
                out.per_step,
                ops,
                self.strings,
                steps_of,
                self.numbers,
                self.kind_of,
                self.limits,
            )
            out.kernel_rows += len(kinds) - kinds.count(MEMORY)
            out.has_comm = out.has_comm or COMMUNICATION in kinds
            out.first = min(out.first, ops.start[0])
            out.last_end, out.latest = ops.end[-1], max(out.latest, max(ops.end))

    def sort_all(
        self,
        ranges: list[tuple[float, float]],
        windows: list[HostWindow],
        writer: OrderedWriter,
        scratch: Path,
        spilled_bytes: int,
    ) -> Sorted:
        """Every group, by worker processes when there are several groups and the trace is
        large enough; else (or when the platform cannot fork) in order here. A trace without
        steps is one step every run shares, which the parent would sum again: in order here."""
        runs = _runs(len(ranges), spilled_bytes)
        if len(runs) > 1 and windows:
            merged = self._in_workers(ranges, runs, windows, writer, scratch)
            if merged is not None:
                return merged
        out = Sorted(windows, StepBounds.of(windows))
        self.sort(ranges, out, writer)
        return out

    def _in_workers(
        self,
        ranges: list[tuple[float, float]],
        runs: list[tuple[int, int]],
        windows: list[HostWindow],
        writer: OrderedWriter,
        scratch: Path,
    ) -> Sorted | None:
        base = len(self.sigs)

        def sort_run(run: tuple[int, int]) -> _Run:
            first, stop = run
            piece = OrderedWriter(scratch / f"sorted-{first}")
            out = Sorted(windows, StepBounds.of(windows), carry=_Carry())
            with (scratch / f"steps-{first}").open("wb") as steps_file:
                self.sort(ranges[first:stop], out, piece, steps_file)
            piece.close()
            carry = out.carry
            missed = carry.missed if isinstance(carry, _Carry) else set()
            out.carry = dict(carry)
            created = [_signature_key(self.sigs, s) for s in range(base, len(self.sigs))]
            return _Run(out, missed, piece.runs, created)

        try:
            done = workers.in_forked_workers("sorting operations", sort_run, runs)
        except (OSError, BrokenProcessPool):  # no fork, no room, a worker killed: in order
            _remove_pieces(scratch, runs)
            return None
        if done is None:
            return None
        # a run that looked up a stream's last step a run before it set: redo all in order
        carried: set[int] = set()
        for part in done:
            if part.missed & carried:
                _remove_pieces(scratch, runs)
                return None
            carried.update(part.sums.carry)
        merged = Sorted(windows, StepBounds.of(windows))
        for (first, _), part in zip(runs, done, strict=True):
            ids = self._renumbering(base, part.created)
            self._merge(merged, part, scratch / f"steps-{first}", scratch / f"sorted-{first}", ids)
            _append_piece(writer, scratch / f"sorted-{first}", part.runs, ids)
        _remove_pieces(scratch, runs)
        return merged

    def _renumbering(self, base: int, created: list[SignatureKey]) -> array[int] | None:
        """The run's signature ids in the merged table (None: the same ids)."""
        if not created:
            return None
        ids = array("i", range(base))
        ids.extend(self.sigs.id(*key) for key in created)
        return None if all(i == s for i, s in enumerate(ids)) else ids

    def _merge(
        self, merged: Sorted, part: _Run, steps_path: Path, piece: Path, ids: array[int] | None
    ) -> None:
        sums = part.sums
        _merge_bounds(merged.bounds, sums.bounds)
        merged.carry.update(sums.carry)
        merged.kernel_rows += sums.kernel_rows
        merged.has_comm = merged.has_comm or sums.has_comm
        if sums.first != INF:
            merged.first = min(merged.first, sums.first)
            merged.last_end, merged.latest = sums.last_end, max(merged.latest, sums.latest)
        shared = [number for number in sums.per_step if number in merged.per_step]
        for number, ops in sums.per_step.items():
            if number not in merged.per_step:
                merged.per_step[number] = ops
        if shared:
            self._resum(merged, shared, steps_path, piece, part, ids)

    def _resum(
        self,
        merged: Sorted,
        shared: list[int],
        steps_path: Path,
        piece: Path,
        part: _Run,
        ids: array[int] | None,
    ) -> None:
        """The steps a run shares with the runs before it, summed on from the run's rows (of
        the groups whose steps span one of them)."""
        index = {number: k for k, number in enumerate(self.numbers)}
        wanted = {index[number] for number in shared}
        low, high = min(wanted), max(wanted)
        with steps_path.open("rb") as steps_file, piece.open("rb") as rows_file:
            for count, (first, last) in zip(part.runs, part.sums.step_spans, strict=True):
                if last < low or first > high:
                    rows_file.seek(count * ROW_BYTES, os.SEEK_CUR)
                    steps_file.seek(count * STEP_BYTES, os.SEEK_CUR)
                    continue
                rows = _read_rows(rows_file, count)
                steps_of: array[int] = array("i")
                steps_of.fromfile(steps_file, count)
                picked = bytes(map(wanted.__contains__, steps_of))
                if not any(picked):
                    continue
                ops = DeviceOps()
                ops.signatures = self.sigs
                ops.start = array("d", compress(rows.start, picked))
                ops.end = array("d", compress(rows.end, picked))
                tags = compress(rows.tag, picked)
                ops.signature = array("i", map(ids.__getitem__, tags) if ids else tags)
                add_step_ops(
                    merged.per_step,
                    ops,
                    self.strings,
                    array("i", compress(steps_of, picked)),
                    self.numbers,
                    self.kind_of,
                    self.limits,
                )


def _signature_key(sigs: Signatures, s: int) -> SignatureKey:
    return (sigs.name[s], sigs.kind[s], sigs.stream[s], sigs.group[s], sigs.collective[s])


def _merge_bounds(mine: StepBounds, theirs: StepBounds) -> None:
    """Maxima and minima: the same whichever order the operations came in."""
    mine.last_end[:] = map(max, mine.last_end, theirs.last_end)
    mine.first_kernel[:] = map(min, mine.first_kernel, theirs.first_kernel)
    mine.before[:] = map(max, mine.before, theirs.before)


def _read_rows(handle: Any, count: int) -> Rows:
    rows = Rows()
    for name, _ in COLUMNS:
        getattr(rows, name).fromfile(handle, count)
    return rows


def _append_piece(
    writer: OrderedWriter, piece: Path, runs: list[int], ids: array[int] | None
) -> None:
    """A run's ordered piece onto the ordered file (its tags renumbered when `ids`)."""
    if ids is None:
        with piece.open("rb") as source:
            shutil.copyfileobj(source, writer.handle)
        writer.runs.extend(runs)
        return
    with piece.open("rb") as source:
        for count in runs:
            rows = _read_rows(source, count)
            rows.tag = array("i", map(ids.__getitem__, rows.tag))
            writer.append(rows)


def _remove_pieces(scratch: Path, runs: list[tuple[int, int]]) -> None:
    for first, _ in runs:
        (scratch / f"sorted-{first}").unlink(missing_ok=True)
        (scratch / f"steps-{first}").unlink(missing_ok=True)


def _runs(count: int, spilled_bytes: int) -> list[tuple[int, int]]:
    """Consecutive runs of the groups, one per worker process ([one run]: sorted here)."""
    parts = min(count, workers.worker_count(spilled_bytes))
    if parts < 2:
        return [(0, count)]
    return list(pairwise([count * k // parts for k in range(parts + 1)]))
