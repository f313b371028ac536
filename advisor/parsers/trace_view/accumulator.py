"""What is kept of a trace_view.json's events: a few numbers each, in flat arrays.

The device lane's kernel intervals (other processes' rows go to scratch arrays emptied after
each block), the overlap lanes and collectives, the host calls the step model counts, step
markers, data loading, the launch flows of the best category known to pair, and the flows
from each task's enqueueing operator (which place it in a step phase).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Any

from advisor.inputs.taxonomy import Taxonomy
from advisor.parsers.trace_view.deferred import PendingRows, duration
from advisor.parsers.trace_view.events import ARGS_DECODER, TraceEvent
from advisor.parsers.trace_view.names import (
    CALL_DROPPED,
    CALL_KEPT,
    NOTHING_SEEN,
    PLAIN_KERNEL,
    EventNames,
)
from advisor.parsers.trace_view.schema import (
    DEVICE_LANE,
    FLOW_PREFERENCE,
    OPERATOR_FLOW,
    OVERLAP_LANES,
)
from advisor.parsers.trace_view.timestamps import TimestampParser
from advisor.parsers.traces.blocking import BlockingEvents
from advisor.parsers.traces.flows import FlowTable, flow_key
from advisor.parsers.traces.host_calls import HostCallColumns
from advisor.parsers.traces.phases import NEITHER, HostRanges, RangeReader
from advisor.parsers.traces.steps import StepWindow

FLOW_CATEGORIES = FLOW_PREFERENCE
HOST = "host"  # the first part of the host-call columns' keys
BEST = FLOW_PREFERENCE[0]
# the categories read once the best pairs: it, and the operator flows the phases place by
KEPT_ORDER = (BEST, OPERATOR_FLOW)
KEPT_FLOWS = frozenset(KEPT_ORDER)
# flow ids remembered to find the best category's first start/finish pair (see _probe)
PROBE_MAX = 1 << 16


class BadEvent(ValueError):
    """An event whose ts or dur is not a usable time: the reader names the file and refuses it."""


@dataclass
class Accumulator:
    taxonomy: Taxonomy
    ts: TimestampParser = field(default_factory=TimestampParser)
    events: int = 0
    process_names: dict[int | str, str] = field(default_factory=dict)
    steps: list[StepWindow] = field(default_factory=list)
    # generic complete events per process: starts and ends. Only the device lane's are used: a
    # process named otherwise (CANN, HCCL tasks: half the rows of a real trace) writes into
    # the two scratch arrays, emptied after each batch
    starts: dict[int | str, array[float]] = field(default_factory=dict)
    ends: dict[int | str, array[float]] = field(default_factory=dict)
    scratch_starts: array[float] = field(default_factory=lambda: array("d"))
    scratch_ends: array[float] = field(default_factory=lambda: array("d"))
    overlap: dict[str, list[array[float]]] = field(default_factory=dict)
    host: HostCallColumns = field(default_factory=HostCallColumns)
    # the calls the host waits in for the device (synchronisations, synchronous copies, value
    # reads) and the user ranges that name where they are: few, kept as they are
    blocking: BlockingEvents = field(default_factory=BlockingEvents)
    # the host ranges naming a phase of the step, and the garbage collections
    host_ranges: HostRanges = field(default_factory=HostRanges)
    range_reader: RangeReader | None = None
    # launch flows by category: ids and parsed times in flat arrays (16 bytes a flow end; a
    # dict of the raw strings held ~0.2 bytes for every byte of trace)
    flows: dict[str, FlowTable] = field(default_factory=dict)
    # HCCL collective tasks (hcom_allGather__...) by kind: starts and ends
    collectives: dict[str, list[array[float]]] = field(default_factory=dict)
    # each HCCL collective task's (name, element count, data type) from its args, where
    # torch_npu writes them (count, data_type): one per collective, what HCCL_BUFFSIZE is
    # compared with
    collective_sizes: list[tuple[str, int, str]] = field(default_factory=list)
    launch_pairs: dict[float, float] = field(default_factory=dict)  # flows are paired later
    operator_pairs: dict[float, float] = field(default_factory=dict)  # likewise
    # The best flow category is used whenever one of its flows has both ends: once such a pair
    # is seen, the other categories (as many flows again) are dropped and no longer recorded,
    # but for the operator flows (OPERATOR_FLOW), which place each task in a step phase
    best_paired: bool = False
    probe_starts: set[int] = field(default_factory=set)
    probe_finishes: set[int] = field(default_factory=set)
    # what each event name asks for, looked up once per name
    names: EventNames | None = None
    # a batch's kernels and kept flow ends, as raw values until the end of the batch
    pending: PendingRows = field(default_factory=lambda: PendingRows(KEPT_ORDER))

    def merge(self, other: Accumulator) -> None:
        """Append another accumulator's data (a later byte range of the same file)."""
        self.events += other.events
        self.process_names.update(other.process_names)
        for pid in other.process_names:
            self._drop_unused(pid)
        self.steps.extend(other.steps)
        self.blocking.extend(other.blocking)
        self.collective_sizes.extend(other.collective_sizes)
        for pid, starts in other.starts.items():
            if self._unused(pid):
                continue
            self.starts.setdefault(pid, array("d")).extend(starts)
            self.ends.setdefault(pid, array("d")).extend(other.ends[pid])
        for table_mine, table_theirs in (
            (self.overlap, other.overlap),
            (self.collectives, other.collectives),
        ):
            for name, (lo, hi) in table_theirs.items():
                lane = table_mine.setdefault(name, [array("d"), array("d")])
                lane[0].extend(lo)
                lane[1].extend(hi)
        self.host.extend(other.host)
        self.host_ranges.extend(other.host_ranges)
        if other.best_paired and not self.best_paired:
            self._best_paired()
        for cat, flows in other.flows.items():
            if self.best_paired and cat not in KEPT_FLOWS:
                continue
            self.flows.setdefault(cat, FlowTable()).extend(flows)

    def columns(self) -> dict[tuple[object, ...], array[Any]]:
        """Every array of the accumulator that holds rows, by a key that survives pickling
        (a worker writes them to a file and the parent reads them back by key)."""
        out: dict[tuple[object, ...], array[Any]] = {}
        for pid, starts in self.starts.items():
            if not self._unused(pid):
                out["starts", pid], out["ends", pid] = starts, self.ends[pid]
        for table_name, table in (("overlap", self.overlap), ("collective", self.collectives)):
            for name, (lo, hi) in table.items():
                out[table_name, name, 0], out[table_name, name, 1] = lo, hi
        for name, column in self.host.columns().items():
            out[HOST, name] = column
        ranges = self.host_ranges
        out["phase_start",], out["phase_end",] = ranges.starts, ranges.ends
        out["phase_kind",] = ranges.phases
        out["gc_start",], out["gc_end",] = ranges.gc_starts, ranges.gc_ends
        out["fsdp_start",], out["fsdp_end",] = ranges.fsdp_starts, ranges.fsdp_ends
        out["fsdp_kind",] = ranges.fsdp_kinds
        for cat, flows in self.flows.items():
            ids_start, ts_start, ids_finish, ts_finish = flows.__getstate__()
            out["flows", cat, 0], out["flows", cat, 1] = ids_start, ts_start
            out["flows", cat, 2], out["flows", cat, 3] = ids_finish, ts_finish
        return out

    def _start_names(self) -> EventNames:
        self.names = EventNames(self.taxonomy)
        return self.names

    def forget_names(self) -> None:
        """Let go of what names were found to ask for (a decoded part needs none of it)."""
        self.names = None

    def _probe(self, start: bool, key: int) -> None:
        """Look for the best category's first flow with both ends among the ids seen (up to
        PROBE_MAX of each end: the pairs of a trace lie close together)."""
        mine, theirs = (
            (self.probe_starts, self.probe_finishes)
            if start
            else (self.probe_finishes, self.probe_starts)
        )
        if key in theirs:
            self._best_paired()
        elif len(mine) < PROBE_MAX:
            mine.add(key)

    def _best_paired(self) -> None:
        self.best_paired = True
        for cat in FLOW_PREFERENCE:
            if cat not in KEPT_FLOWS:
                self.flows.pop(cat, None)
        self.probe_starts.clear()
        self.probe_finishes.clear()

    def _unused(self, pid: int | str) -> bool:
        name = self.process_names.get(pid)
        return name is not None and name != DEVICE_LANE

    def _drop_unused(self, pid: int | str) -> None:
        """A process found not to be the device lane: its rows are dropped, and later ones
        go to the scratch arrays."""
        if self._unused(pid):
            self.starts[pid] = self.scratch_starts
            self.ends[pid] = self.scratch_ends

    def add(self, batch: list[TraceEvent]) -> None:
        """Keep what the step model reads of a batch; BadEvent names the first event whose ts or
        dur is not a time (one try around the loop: free until an event raises)."""
        self.events += len(batch)
        try:
            self._add(batch, self.names or self._start_names())
        except (ValueError, OverflowError) as exc:
            raise BadEvent(str(exc)) from None

    def _add(self, batch: list[TraceEvent], names: EventNames) -> None:
        # the hot loop of the reader: millions of events, most of them host operators and
        # launches no measure reads, so what a name asks for is looked up once per name; a
        # kernel of a process already seen, and a launch flow once the best category pairs,
        # leave their raw values in lists, turned into numbers together after the loop
        host_kinds, uncategorised = names.host, names.uncategorised
        starts_by_pid = self.starts
        pending = self.pending
        kernel_ts, kernel_dur, kernel_pid = pending.kernel_ts, pending.kernel_dur, pending.pid
        flow_lists = pending.flows
        host_cat, by_name = "", NOTHING_SEEN
        for e in batch:
            ph = e.ph
            if ph == "X":
                cat = e.cat
                if cat:
                    if cat != host_cat:  # host events come in runs of one category
                        host_cat, by_name = cat, host_kinds.get(cat, NOTHING_SEEN)
                    name = e.name
                    kept = by_name.get(name)
                    if kept is None:
                        kept = names.learn_host(cat, name)
                        by_name = host_kinds[cat]
                    if kept:
                        self._host_side(e, name)
                    continue
                kind = uncategorised.get(e.name)
                if kind == PLAIN_KERNEL and e.pid in starts_by_pid:
                    kernel_ts.append(e.ts)
                    kernel_dur.append(e.dur)
                    kernel_pid.append(e.pid)
                elif kind != CALL_DROPPED:
                    self._uncategorised(e, kind)
            elif ph == "s" or ph == "f":
                if not self.best_paired:
                    self._flow(e, ph == "s")
                    continue
                lists = flow_lists.get(e.cat)  # once the best pairs, the others are not read
                if lists is not None:
                    end = 0 if ph == "s" else 2
                    lists[end].append(e.id)
                    lists[end + 1].append(e.ts)
            elif ph == "M" and e.name == "process_name":
                self._process_name(e)
        pending.settle(self.ts, self.starts, self.ends, self.scratch_starts, self.flows)
        del self.scratch_starts[:], self.scratch_ends[:]

    def _uncategorised(self, e: TraceEvent, kind: int | None) -> None:
        """An event without a category that is not a plain kernel of a process seen: an
        AscendCL call kept or not looked at yet, or any other device event."""
        name = e.name
        if kind == CALL_KEPT:
            self._runtime_call(e, name)
        elif kind is None and name.startswith("AscendCL@"):
            assert self.names is not None
            if self.names.learn_runtime(name):
                self._runtime_call(e, name)
        else:
            self._device_event(e, name)

    def _process_name(self, e: TraceEvent) -> None:
        args = ARGS_DECODER.decode(e.args) if bytes(e.args) != b"null" else {}
        self.process_names[e.pid] = str(args.get("name", ""))
        self._drop_unused(e.pid)

    def _host_side(self, e: TraceEvent, name: str) -> None:
        """A host-side event: most are operators, which no measure reads (cheap substring
        tests first); step markers, data loading, value reads, the ranges around them and the
        ranges naming a phase of the step (or a garbage collection) are kept."""
        if name.startswith("ProfilerStep#") or "DataLoader" in name or "dataset" in name:
            self._host_event(e, name)
            return
        if "item" in name or "_scalar" in name or e.cat == "user_annotation":
            start = self.ts(e.ts)
            self.blocking.annotation(
                e.cat, name, start, start + duration(e.dur), self.taxonomy.blocking_ops
            )
        elif e.cat == "cpu_op" and ("#" in name or " " in name or "." in name):
            self._user_range(e, name)
        # the same range may also name a phase of the step, or be a garbage collection
        self._host_range(e, name)

    def _host_event(self, e: TraceEvent, name: str) -> None:
        """A host-side event: only step markers and data loading are needed."""
        if name.startswith("ProfilerStep#"):
            m = self.taxonomy.step.fullmatch(name)
            if m:
                start = self.ts(e.ts)
                self.steps.append(StepWindow(int(m.group(1)), start, start + duration(e.dur)))
        elif ("DataLoader" in name or "dataset" in name) and self.taxonomy.dataloader.fullmatch(
            name
        ):
            start = self.ts(e.ts)
            self.host.loader_start.append(start)
            self.host.loader_end.append(start + duration(e.dur))

    def _user_range(self, e: TraceEvent, name: str) -> None:
        """A host range named by the user or a module (torch_npu files them as cpu_op): where
        a blocking call sits."""
        if self.taxonomy.user_ranges.fullmatch(name):
            start = self.ts(e.ts)
            self.blocking.ranges.append((start, start + duration(e.dur), name))

    def _host_range(self, e: TraceEvent, name: str) -> None:
        """A range naming a phase of the step (nn.Module, autograd, Optimizer.step...), or a
        garbage collection (torch_npu's "GC" ranges, with gc_detect_threshold set)."""
        if self.range_reader is None:
            tax = self.taxonomy
            self.range_reader = RangeReader(tax.phase_ranges, tax.gc_ranges, tax.fsdp_ranges)
        if self.range_reader.kind(name) != NEITHER:
            start = self.ts(e.ts)
            self.range_reader.add(self.host_ranges, name, start, start + duration(e.dur))

    def _runtime_call(self, e: TraceEvent, name: str) -> None:
        """An AscendCL call: synchronisations, allocations and frees are kept."""
        tax = self.taxonomy
        # cheap substring tests first: most runtime calls are kernel launches
        if "Synchron" in name and tax.sync_calls.fullmatch(name):
            at = self.ts(e.ts)
            end = at + duration(e.dur)
            self.host.sync_start.append(at)
            self.host.sync_end.append(end)
            self.blocking.waits.append((at, end, name))
        elif "Memcpy" in name and tax.blocking_calls.fullmatch(name):
            at = self.ts(e.ts)
            self.blocking.waits.append((at, at + duration(e.dur), name))
        elif "Malloc" in name and tax.malloc_calls.fullmatch(name):
            at = self.ts(e.ts)
            self.host.malloc_start.append(at)
            self.host.malloc_end.append(at + duration(e.dur))
        elif "Free" in name and tax.free_calls.fullmatch(name):
            self.host.free.append(self.ts(e.ts))

    def _device_event(self, e: TraceEvent, name: str) -> None:
        """A step marker without its category, an overlap lane's interval, or a kernel (a
        collective's also in its kind's lane)."""
        start = self.ts(e.ts)
        end = start + duration(e.dur)
        if name.startswith("ProfilerStep#"):  # some exporters omit the cpu_op category
            m = self.taxonomy.step.fullmatch(name)
            if m:
                self.steps.append(StepWindow(int(m.group(1)), start, end))
            return
        if name in OVERLAP_LANES:
            _append_interval(self.overlap, name, start, end)
            return
        if name.startswith("hcom_"):
            _append_interval(self.collectives, self.taxonomy.comm_kind(name), start, end)
            self._collective_size(e, name)
        elif self.names is not None:
            self.names.learn_plain(name)  # next time straight to the arrays
        pid = e.pid
        if pid not in self.starts:
            self.starts[pid] = array("d")
            self.ends[pid] = array("d")
        # in its process's arrays with the batch's other kernels
        self.pending.kernel(e.ts, e.dur, pid)

    def _collective_size(self, e: TraceEvent, name: str) -> None:
        """The collective task's element count and data type, where its args hold them."""
        if bytes(e.args) == b"null":
            return
        args = ARGS_DECODER.decode(e.args)
        count, dtype = args.get("count"), args.get("data_type")
        if isinstance(count, int) and not isinstance(count, bool) and count > 0 and dtype:
            self.collective_sizes.append((name, count, str(dtype)))

    def _flow(self, e: TraceEvent, start: bool) -> None:
        """One end of a launch flow, in the categories that link host and device."""
        cat = e.cat
        if cat not in FLOW_CATEGORIES:
            return
        best = cat == BEST
        if self.best_paired and cat not in KEPT_FLOWS:
            return
        table = self.flows.get(cat)
        if table is None:
            table = self.flows[cat] = FlowTable()
        key = flow_key(e.id)
        table.add(start, key, self.ts(e.ts))
        if best and not self.best_paired:
            self._probe(start, key)


def _append_interval(
    lanes: dict[str, list[array[float]]], name: str, start: float, end: float
) -> None:
    lane = lanes.get(name)
    if lane is None:
        lane = lanes[name] = [array("d"), array("d")]
    lane[0].append(start)
    lane[1].append(end)
