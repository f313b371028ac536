"""The collective a kernel runs, from the host range that launched it.

NCCL runs all-to-all, send and recv all as ncclKernel_SendRecv: the kernel's name cannot tell
them apart, the host range around its launch can (nccl:all_to_all, c10d::alltoall_base_,
record_param_comms with its "Collective name"; the patterns are taxonomy collective_launchers).
A launch inside such a range on the same thread gives the kernel carrying its correlation id
the range's name.

Where the three lie in the file does not matter: PyTorch writes the host operations first,
kernels and launches later, so a large trace's byte ranges put a range and the launch under it
in different worker processes. Decoding keeps the collective ranges of each thread (a few per
step), each launch's thread beside its correlation id and time, and the correlation ids of the
collective kernels; once every part is read (and merged), the launches of collective kernels
are looked up in the ranges of their thread (`join_launches`, `join_spilled`) and the kernels
renamed.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from itertools import compress
from typing import Any

from advisor.inputs.taxonomy import Taxonomy
from advisor.parsers.kineto.columns import COMMUNICATION, DeviceOps, Signatures, Strings
from advisor.parsers.kineto.spill import SpilledRows, read_launch_threads, segments
from advisor.parsers.kineto.stream import KinetoEvent

# an annotation that names no collective (else the Strings id of the collective's name)
NOT_LAUNCHER = -1
# a launch is looked for in this many of its thread's collective ranges before it (the latest
# first): they nest a few deep only (c10d::alltoall_base_ > record_param_comms > nccl:all_to_all)
_NESTING = 4


class Launchers:
    """The collective ranges of each thread into `spans` (thread's Strings id -> its ranges,
    each naming a collective by its Strings id)."""

    def __init__(
        self,
        taxonomy: Taxonomy,
        strings: Strings,
        spans: dict[int, Spans],
        thread_of: Callable[[Any, Any], int],
    ) -> None:
        self.taxonomy = taxonomy
        self.strings = strings
        self.spans = spans
        self.thread_of = thread_of
        # annotation name -> the collective it names (Strings id) or NOT_LAUNCHER
        self.by_name: dict[str, int] = {}
        # ranges named by their "Collective name" argument (patterns without a group)
        self.by_argument: set[str] = set()

    def range(self, event: KinetoEvent, name: str, start: float, end: float) -> None:
        """A host range: kept when it names a collective."""
        collective = self.by_name.get(name)
        if collective is None:
            collective = self.by_name[name] = self._by_pattern(name)
        if collective == NOT_LAUNCHER and name in self.by_argument:
            named: Any = None if event.args is None else event.args.collective
            collective = self._known(named) if isinstance(named, str) else NOT_LAUNCHER
        if collective == NOT_LAUNCHER:
            return
        thread = self.thread_of(event.pid, event.tid)
        spans = self.spans.get(thread)
        if spans is None:
            spans = self.spans[thread] = Spans()
        spans.add(start, end, collective)

    def _by_pattern(self, name: str) -> int:
        for pattern in self.taxonomy.collective_launchers:
            m = pattern.fullmatch(name)
            if m is None:
                continue
            if pattern.groups < 1:
                self.by_argument.add(name)
                return NOT_LAUNCHER
            return self._known(m.group(1))
        return NOT_LAUNCHER

    def _known(self, name: str) -> int:
        """A collective name whose kind is known (a barrier's is not: the kernel's name then
        decides)."""
        if not name or self.taxonomy.comm_kind(name) == "other":
            return NOT_LAUNCHER
        return self.strings.id(name)


class Spans:
    """One thread's collective ranges, by start (ranges arrive mostly in start order)."""

    __slots__ = ("ends", "names", "starts")

    def __init__(self) -> None:
        self.starts: list[float] = []
        self.ends: list[float] = []
        self.names: list[int] = []

    def add(self, start: float, end: float, name: int) -> None:
        if not self.starts or start >= self.starts[-1]:
            self.starts.append(start)
            self.ends.append(end)
            self.names.append(name)
            return
        at = bisect_right(self.starts, start)
        self.starts.insert(at, start)
        self.ends.insert(at, end)
        self.names.insert(at, name)

    def innermost(self, at: float) -> int:
        """The name of the latest-starting range holding `at`, or NOT_LAUNCHER."""
        i = bisect_right(self.starts, at) - 1
        for j in range(i, max(-1, i - _NESTING), -1):
            if self.ends[j] >= at:
                return self.names[j]
        return NOT_LAUNCHER

    def renumbered(self, ids: Sequence[int]) -> Spans:
        """The same ranges, their names in another Strings table (`ids`: ours -> theirs)."""
        out = Spans()
        out.starts, out.ends = list(self.starts), list(self.ends)
        out.names = [ids[n] for n in self.names]
        return out

    def extend(self, other: Spans) -> None:
        """Another part's ranges of the same thread, added in their order."""
        for start, end, name in zip(other.starts, other.ends, other.names, strict=True):
            self.add(start, end, name)


def join_launches(
    spans: dict[int, Spans],
    wanted: Iterable[int],
    launches: Iterable[tuple[int, float, int]],
    named: dict[int, int],
) -> None:
    """Into `named` (correlation key -> collective's Strings id): each launch of a `wanted`
    key (a collective kernel's) made inside a collective range of its thread. `launches`:
    (key, time, thread) in file order; a key launched twice keeps its last launch that a range
    holds."""
    keys = set(wanted)
    if not spans or not keys:  # most traces: no collective range, nothing to look up
        return
    for key, at, thread in launches:
        if key in keys:
            found = spans.get(thread)
            if found is not None:
                collective = found.innermost(at)
                if collective != NOT_LAUNCHER:
                    named[key] = collective


def join_spilled(
    spans: dict[int, Spans], wanted: Iterable[int], parts: list[SpilledRows], named: dict[int, int]
) -> None:
    """join_launches over the launches of the spill files, their threads in the merged
    numbering."""
    if not spans:
        return
    keys = set(wanted)
    for rows, segment, handle in segments(parts):
        if not segment.launches:
            continue
        launch_keys, times, threads = read_launch_threads(segment, handle)
        ids = rows.string_ids
        if ids is not None:
            threads = array("i", (ids[t] for t in threads))
        join_launches(spans, keys, zip(launch_keys, times, threads, strict=True), named)


def name_collectives(ops: DeviceOps, named: dict[int, int], sigs: Signatures | None = None) -> None:
    """Give each collective kernel launched under a collective's host range that range's
    collective name (the kernel comes before its launch in a trace file, so this is done once
    both are read). `sigs`: the signature table when `ops` does not carry it (spilled rows)."""
    if not named:
        return
    sigs = ops.signatures if sigs is None else sigs
    comm = {s for s in range(len(sigs)) if sigs.kind[s] == COMMUNICATION}
    if not comm:
        return
    signature, correlation = ops.signature, ops.correlation
    # the collective rows, picked at C speed (most rows are not)
    for i in list(compress(range(len(signature)), map(comm.__contains__, signature))):
        sig = signature[i]
        collective = named.get(correlation[i])
        if collective is not None and collective != sigs.collective[sig]:
            signature[i] = sigs.id(
                sigs.name[sig], COMMUNICATION, sigs.stream[sig], sigs.group[sig], collective
            )


def collective_kinds(sigs: Signatures, strings: list[str], taxonomy: Taxonomy) -> dict[int, str]:
    """The collective kind of each collective name the signatures use."""
    return {
        c: taxonomy.comm_kind(strings[c])
        for c in {sigs.collective[s] for s in range(len(sigs)) if sigs.kind[s] == COMMUNICATION}
    }
