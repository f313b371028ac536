"""The host calls of a PyTorch trace during which the host waits for the device.

Three kinds block the launching thread: synchronisations (cudaStreamSynchronize and the like),
copies whose device side goes to or from pageable host memory (the runtime stages them through
a pinned buffer and returns only when the copy is done; the device copy's name says so, joined by
correlation id), and operators that read a device value on the host (`aten::item`,
`aten::_local_scalar_dense`). A call inside another is the same wait: only the outermost is
kept, with the copy kind found inside it. Each is named with its size when recorded and the innermost user
annotation range it sits in, so the remedy can point at the code.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field

from advisor.parsers.traces.host_calls import BlockingCall

# how many earlier-starting annotations are searched for the innermost enclosing one
_ENCLOSING_SCAN = 256


@dataclass
class BlockingEvents:
    """What the decoder keeps to find the blocking calls once every event is read."""

    # (start, end, call name) of synchronisations and of operators that wait for a value
    waits: list[tuple[float, float, str]] = field(default_factory=list)
    # correlation key -> (start, end, call name) of runtime copy calls
    copies: dict[int, tuple[float, float, str]] = field(default_factory=dict)
    # correlation key -> (device copy name, bytes or None) of copies to/from pageable memory
    pageable: dict[int, tuple[str, int | None]] = field(default_factory=dict)
    # (start, end, name) of user annotation ranges (not steps)
    ranges: list[tuple[float, float, str]] = field(default_factory=list)

    def device_copy(self, key: int, name: str, size: object) -> None:
        """A device copy to or from pageable memory, by its launch's correlation key."""
        self.pageable[key] = (name, size if isinstance(size, int) else None)

    def annotation(
        self, category: object, name: str, start: float, end: float, waits: re.Pattern[str]
    ) -> None:
        """A host range: an operator that waits for a device value, or a user range (legacy
        traces file both as Operator: there, one not named like an operator, ns::op)."""
        if waits.fullmatch(name):
            self.waits.append((start, end, name))
        elif category == "user_annotation" or (category == "Operator" and "::" not in name):
            self.ranges.append((start, end, name))

    def extend(self, other: BlockingEvents) -> None:
        self.waits.extend(other.waits)
        self.copies.update(other.copies)
        self.pageable.update(other.pageable)
        self.ranges.extend(other.ranges)


def blocking_calls(events: BlockingEvents) -> list[BlockingCall]:
    """Every blocking call, in start order, with its memory kind, size and enclosing range."""
    ranges = sorted(events.ranges)
    starts = [r[0] for r in ranges]
    calls: list[_Call] = [(start, end, name, "", None) for start, end, name in events.waits]
    for key, (kind, size) in events.pageable.items():
        copy = events.copies.get(key)
        if copy is not None:
            calls.append((copy[0], copy[1], copy[2], kind, size))
    return [
        BlockingCall(start, end, name, kind, size, _enclosing(ranges, starts, start))
        for start, end, name, kind, size in _outermost(calls)
    ]


_Call = tuple[float, float, str, str, int | None]


def _outermost(calls: list[_Call]) -> list[_Call]:
    """The calls not inside another one, in start order, each with the copy kind and size of
    the first copy inside it: aten::item holds _local_scalar_dense holds the pageable copy,
    one wait counted once under the name the code used."""
    out: list[_Call] = []
    for call in sorted(calls, key=lambda c: (c[0], -c[1], c[2])):
        if out and call[1] <= out[-1][1]:
            outer = out[-1]
            if not outer[3] and call[3]:
                out[-1] = (outer[0], outer[1], outer[2], call[3], call[4])
            continue
        out.append(call)
    return out


def _enclosing(ranges: list[tuple[float, float, str]], starts: list[float], lo: float) -> str:
    """The innermost range the call starts in ("" when none): the latest-starting one open at
    `lo` (a wait may outlast the range that issued it)."""
    i = bisect_right(starts, lo)
    for j in range(i - 1, max(-1, i - 1 - _ENCLOSING_SCAN), -1):
        start, end, name = ranges[j]
        if start <= lo < end:
            return name
    return ""
