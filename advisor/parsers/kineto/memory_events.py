"""`[memory]` instant events of a trace recorded with profile_memory=True: after each
allocation or free, the allocator's totals (bytes) on the device it serves."""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field

from advisor.parsers.kineto.stream import KinetoEvent

MEMORY_EVENT = "[memory]"
HOST_DEVICE_TYPE = 0  # c10's DeviceType CPU: the host's allocator, not device memory


@dataclass
class MemorySamples:
    """A device allocator's totals after each event, in trace order."""

    ts: array[float] = field(default_factory=lambda: array("d"))
    allocated: array[float] = field(default_factory=lambda: array("d"))
    reserved: array[float] = field(default_factory=lambda: array("d"))

    def read(self, event: KinetoEvent) -> None:
        """An event that is not a range: a `[memory]` sample of a device allocator is kept
        (any other event, and values that are not sizes, left out)."""
        if event.ph != "i" or event.name != MEMORY_EVENT:
            return
        args = event.args
        if args is None or args.get("Device Type") in (None, HOST_DEVICE_TYPE):
            return
        ts = event.ts
        allocated, reserved = args.get("Total Allocated"), args.get("Total Reserved")
        if not isinstance(ts, int | float) or not _size(allocated) or not _size(reserved):
            return
        self.ts.append(float(ts))
        self.allocated.append(float(allocated))
        self.reserved.append(float(reserved))

    def extend(self, other: MemorySamples) -> None:
        self.ts.extend(other.ts)
        self.allocated.extend(other.allocated)
        self.reserved.extend(other.reserved)


def _size(value: object) -> bool:
    return isinstance(value, int | float) and math.isfinite(value) and value >= 0
