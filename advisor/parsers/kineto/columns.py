"""The columns a PyTorch profiler trace is reduced to: device operations, interned strings,
and launches by correlation id. One row of flat arrays per kernel (28 bytes: times, signature,
correlation) and per launch (16 bytes), never an object: a trace holds millions of each.
"""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_left

from advisor.parsers.traces.columns import (
    Permutation,
    in_order,
    last_per_key,
    nearly_sorted_order,
)

# a device operation's kind, as stored in Signatures.kind
COMPUTE, COMMUNICATION, MEMORY = 0, 1, 2
NO_CORRELATION = -1
NAN = float("nan")
# a direct table is used while the correlation ids span at most this many ids per launch
DENSE_KEYS_PER_LAUNCH = 4
NO_GROUP = -1


class Strings:
    """Each distinct string once; columns hold their index."""

    __slots__ = ("ids", "values")

    def __init__(self) -> None:
        self.values: list[str] = []
        self.ids: dict[str, int] = {}

    def id(self, text: str) -> int:
        known = self.ids.get(text)
        if known is None:
            known = self.ids[text] = len(self.values)
            self.values.append(text)
        return known


class Signatures:
    """What kernels share: name, kind, stream, process group and collective. Each distinct
    combination once; an operation holds its index (4 bytes, not 17 in five columns)."""

    __slots__ = ("collective", "group", "ids", "kind", "name", "stream")

    def __init__(self) -> None:
        self.name: array[int] = array("i")  # the kernel's short name (Strings id)
        self.kind: bytearray = bytearray()  # COMPUTE | COMMUNICATION | MEMORY
        self.stream: array[int] = array("i")  # "pid:tid" (Strings id)
        self.group: array[int] = array("i")  # a collective's process group, or NO_GROUP
        # what a collective does, for its kind: the trace's "Collective name" argument (PyTorch
        # 2.x; ROCm's RCCL kernels are all ncclDevKernel_Generic) or the kernel name
        self.collective: array[int] = array("i")
        self.ids: dict[tuple[int, int, int, int, int], int] = {}

    def id(self, name: int, kind: int, stream: int, group: int, collective: int) -> int:
        key = (name, kind, stream, group, collective)
        known = self.ids.get(key)
        if known is None:
            known = self.ids[key] = len(self.kind)
            self.name.append(name)
            self.kind.append(kind)
            self.stream.append(stream)
            self.group.append(group)
            self.collective.append(collective)
        return known

    def __len__(self) -> int:
        return len(self.kind)


class DeviceOps:
    """Kernels, memcpys and memsets as columns (times in microseconds)."""

    __slots__ = ("correlation", "end", "signature", "signatures", "start")

    def __init__(self) -> None:
        self.start: array[float] = array("d")
        self.end: array[float] = array("d")
        self.signature: array[int] = array("i")  # index into `signatures`
        self.correlation: array[int] = array("q")  # correlation key or NO_CORRELATION
        self.signatures = Signatures()

    def __len__(self) -> int:
        return len(self.start)

    def kinds(self) -> bytearray:
        """Each operation's kind (a byte each)."""
        kind = self.signatures.kind
        if len(kind) <= 256 and sys.byteorder == "little":
            # every signature id fits its 4-byte row's first byte: looked up at C speed
            table = bytes(kind) + bytes(256 - len(kind))
            return bytearray(self.signature.tobytes()[:: self.signature.itemsize].translate(table))
        return bytearray(map(kind.__getitem__, self.signature))

    def sort(self) -> None:
        """Order every column by (start, end), stable."""
        order = nearly_sorted_order(self.start, self.end)
        if order is None:
            return
        rows = Permutation(order)
        for column in ("start", "end", "signature", "correlation"):
            setattr(self, column, rows.apply(getattr(self, column)))


def consecutive(keys: array[int]) -> bool:
    """Whether the keys are k, k + 1, k + 2, ... (a launch per id, in id order, as a trace of
    launches and kernels alone holds them): the last minus the first first, then all of them,
    at C speed."""
    n = len(keys)
    if not n or keys[-1] - keys[0] != n - 1:
        return False
    return keys == array(keys.typecode, range(keys[0], keys[0] + n))


class LaunchIndex:
    """Correlation key -> host launch time. Correlation ids are mostly consecutive integers:
    then a table indexed by key (8 bytes per id in the range); otherwise two arrays sorted by
    key. A dict of millions of entries would cost six to ten times the memory. A key launched
    twice keeps its last launch, as a dict would."""

    __slots__ = ("base", "cursor", "keys", "table", "times")

    def __init__(self, keys: array[int], times: array[float]) -> None:
        self.base = 0
        self.cursor = -1  # the last key found: lookups come mostly in key order
        self.table: array[float] | None = None
        self.keys: array[int] = array("q")
        self.times: array[float] = array("d")
        if not keys:
            return
        if consecutive(keys):  # each id once, in order: the times are the table as they are
            self.base, self.table = keys[0], array("d", times)
            return
        # in order (as launches mostly are): the ends are the lowest and highest, no search
        low, high = (keys[0], keys[-1]) if in_order(keys) else (min(keys), max(keys))
        if high - low < DENSE_KEYS_PER_LAUNCH * len(keys) + 1024:
            self.base = low
            table = array("d", [NAN]) * (high - low + 1)
            for key, at in zip(keys, times, strict=True):
                table[key - low] = at
            self.table = table
            return
        self.keys, self.times = last_per_key(keys, times)

    def get(self, key: int) -> float | None:
        """The launch time, or None for a key never launched."""
        table = self.table
        if table is not None:
            offset = key - self.base
            if 0 <= offset < len(table):
                at = table[offset]
                return None if at != at else at
            return None
        keys = self.keys
        i = self.cursor + 1
        if not (i < len(keys) and keys[i] == key):
            i = bisect_left(keys, key)
            if i >= len(keys) or keys[i] != key:
                return None
        self.cursor = i
        return self.times[i]
