"""What decoding a PyTorch profiler trace keeps: the columns the step model needs (events.py
fills them, extract.py drives the decoding)."""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field

from advisor.parsers.kineto.collectives import Spans
from advisor.parsers.kineto.columns import DeviceOps, Strings
from advisor.parsers.kineto.device_steps import HostWindow
from advisor.parsers.kineto.memory_events import MemorySamples
from advisor.parsers.kineto.spill import SpilledRows
from advisor.parsers.traces.blocking import BlockingEvents
from advisor.parsers.traces.host_calls import HostCallColumns
from advisor.parsers.traces.phases import HostRanges


@dataclass
class KinetoEvents:
    ops: DeviceOps = field(default_factory=DeviceOps)
    strings: Strings = field(default_factory=Strings)
    # host launches: correlation key, host time and thread (Strings id), in trace order
    launch_keys: array[int] = field(default_factory=lambda: array("q"))
    launch_ts: array[float] = field(default_factory=lambda: array("d"))
    launch_thread: array[int] = field(default_factory=lambda: array("i"))
    steps: list[HostWindow] = field(default_factory=list)
    host: HostCallColumns = field(default_factory=HostCallColumns)
    blocking: BlockingEvents = field(default_factory=BlockingEvents)
    # a device allocator's `[memory]` instant events (profile_memory=True)
    memory: MemorySamples = field(default_factory=MemorySamples)
    # the ranges naming a phase of the step, and the garbage collections
    host_ranges: HostRanges = field(default_factory=HostRanges)
    events: int = 0
    dropped: int = 0
    # group key -> (description, ranks) learnt from collective kernels' arguments
    kernel_groups: dict[str, tuple[str, list[int]]] = field(default_factory=dict)
    # the host ranges naming a collective, by thread; the correlation ids of collective
    # kernels; once all is read, the collective each such kernel's launch was made under
    collective_spans: dict[int, Spans] = field(default_factory=dict)
    comm_keys: array[int] = field(default_factory=lambda: array("q"))
    launch_collectives: dict[int, int] = field(default_factory=dict)
    # correlation ids that are not plain non-negative integers, by their typed text
    odd_correlations: dict[str, int] = field(default_factory=dict)
    # operation and launch rows written out while decoding (then none are held in `ops`)
    spilled: list[SpilledRows] = field(default_factory=list)
