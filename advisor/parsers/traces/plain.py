"""A RawTrace as plain arrays, for readers that fill it themselves rather than decoding
trace_view.json events."""

from __future__ import annotations

from array import array
from collections.abc import Callable
from dataclasses import dataclass, field

from advisor.parsers.traces.blocking import BlockingEvents
from advisor.parsers.traces.flows import FlowTable
from advisor.parsers.traces.host_calls import HostCallColumns
from advisor.parsers.traces.phases import HostRanges
from advisor.parsers.traces.steps import StepWindow


@dataclass
class PlainTrace:
    """The compact arrays the step reduction needs (a RawTrace), filled by hand: from a
    database export's tables, or from one group's time range of the spill files."""

    events: int = 0
    process_names: dict[int | str, str] = field(default_factory=dict)
    steps: list[StepWindow] = field(default_factory=list)
    starts: dict[int | str, array[float]] = field(default_factory=dict)
    ends: dict[int | str, array[float]] = field(default_factory=dict)
    overlap: dict[str, list[array[float]]] = field(default_factory=dict)
    blocking: BlockingEvents | None = None  # None: the reader found no blocking calls to read
    host: HostCallColumns = field(default_factory=HostCallColumns)
    flows: dict[str, FlowTable] = field(default_factory=dict)  # the database pairs launches itself
    collectives: dict[str, list[array[float]]] = field(default_factory=dict)
    launch_pairs: dict[float, float] = field(default_factory=dict)
    operator_pairs: dict[float, float] = field(default_factory=dict)
    host_ranges: HostRanges = field(default_factory=HostRanges)

    @property
    def ts(self) -> Callable[[str | float], float]:
        return float
