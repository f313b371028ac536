"""The collective a kernel runs, from the host range that launched it.

NCCL runs all-to-all, send and recv all as ncclKernel_SendRecv: the kernel's name cannot tell
them apart, the host range around its launch can (nccl:all_to_all, c10d::alltoall_base_,
record_param_comms with its "Collective name"; the patterns are taxonomy collective_launchers).
A launch inside such a range on the same thread gives the kernel carrying its correlation id
the range's name. Ranges come before launches in a trace file (PyTorch writes the host
operations first, or all events by time), kernels before their launches: the ranges are kept
while decoding, each launch looks its range up, and the kernels are renamed once all is read.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

from advisor.inputs.taxonomy import Taxonomy
from advisor.parsers.kineto.columns import COMMUNICATION, DeviceOps, Signatures, Strings
from advisor.parsers.kineto.stream import KinetoEvent

# an annotation that names no collective (else the Strings id of the collective's name)
NOT_LAUNCHER = -1
# a launch is looked for in this many of its thread's collective ranges before it (the latest
# first): they nest a few deep only (c10d::alltoall_base_ > record_param_comms > nccl:all_to_all)
_NESTING = 4


class Launchers:
    """The collective ranges of each thread, and the launches made inside them, into `named`
    (correlation key -> the collective's name, a Strings id)."""

    def __init__(self, taxonomy: Taxonomy, strings: Strings, named: dict[int, int]) -> None:
        self.taxonomy = taxonomy
        self.strings = strings
        self.named = named
        # annotation name -> the collective it names (Strings id) or NOT_LAUNCHER
        self.by_name: dict[str, int] = {}
        # ranges named by their "Collective name" argument (patterns without a group)
        self.by_argument: set[str] = set()
        # launching thread (pid, tid) -> its collective ranges by start
        self.spans: dict[tuple[Any, Any], _Spans] = {}

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
        thread = (event.pid, event.tid)
        try:
            spans = self.spans.get(thread)
        except TypeError:  # a list as pid or tid: no thread to match launches on
            return
        if spans is None:
            spans = self.spans[thread] = _Spans()
        spans.add(start, end, collective)

    def launch(self, event: KinetoEvent, key: int, at: float) -> None:
        """Remember the collective whose range, on the launching thread, holds the launch."""
        if not self.spans:  # most traces: no collective, nothing to look up
            return
        try:
            spans = self.spans.get((event.pid, event.tid))
        except TypeError:
            return
        if spans is not None:
            collective = spans.innermost(at)
            if collective != NOT_LAUNCHER:
                self.named[key] = collective

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


class _Spans:
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
    for i, sig in enumerate(signature):
        if sig in comm:
            collective = named.get(correlation[i])
            if collective is not None and collective != sigs.collective[sig]:
                signature[i] = sigs.id(
                    sigs.name[sig], COMMUNICATION, sigs.stream[sig], sigs.group[sig], collective
                )
