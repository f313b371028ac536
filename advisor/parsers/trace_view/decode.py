"""Streaming reader for torch_npu / MindSpore trace_view.json (Chrome trace event format).

The file can be gigabytes: it is read in blocks, each block is decoded with a typed msgspec
decoder that materialises only the fields the facts need, and every event is immediately reduced
into compact arrays. Nothing else of the trace is kept.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import msgspec

from advisor.inputs import progress
from advisor.inputs.taxonomy import Taxonomy
from advisor.model import InputError
from advisor.parsers.trace_view.timestamps import TimestampParser
from advisor.parsers.traces.blocks import check_event_size, decode_error, find_cut
from advisor.parsers.traces.steps import (
    DEVICE_LANE,
    FLOW_PREFERENCE,
    FlowTable,
    StepWindow,
    TraceData,
    flow_key,
    reduce_steps,
)

MIB = 1024 * 1024

# 8 MiB: as fast as 32 MiB blocks (a decode call's overhead is nothing beside 8 MiB of JSON),
# and each worker holds a quarter of the bytes and of the decoded events at a time
BLOCK_BYTES = 8 * 1024 * 1024
# A block boundary must fall between two top-level events; retrying a few blocks covers an event
# whose args happen to contain "}, {" (a list of objects).
MAX_CARRY_BLOCKS = 4

OVERLAP_LANES = ("Computing", "Communication", "Communication(Not Overlapped)", "Free")
FLOW_CATEGORIES = FLOW_PREFERENCE
# flow ids remembered to find the best category's first start/finish pair (see _probe)
PROBE_MAX = 1 << 16


class _Readable(Protocol):
    def readinto(self, buffer: memoryview, /) -> int: ...


class _Event(msgspec.Struct, gc=False):
    # gc=False: millions of short-lived events, no reference cycles; skipping the cyclic GC
    # bookkeeping makes decoding ~35% faster
    ph: str = ""
    name: str = ""
    pid: int | str = 0
    ts: str | float = 0.0
    dur: float | str = 0.0
    cat: str = ""
    id: int | str = 0
    args: msgspec.Raw = msgspec.Raw(b"null")


class _ObjectTrace(msgspec.Struct):
    traceEvents: list[_Event] = []


_ARRAY_DECODER = msgspec.json.Decoder(list[_Event])
_OBJECT_DECODER = msgspec.json.Decoder(_ObjectTrace)
_ARGS_DECODER = msgspec.json.Decoder(dict[str, object])


@dataclass
class _Accumulator:
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
    sync: array[float] = field(default_factory=lambda: array("d"))
    sync_end: array[float] = field(default_factory=lambda: array("d"))
    malloc: array[float] = field(default_factory=lambda: array("d"))
    malloc_end: array[float] = field(default_factory=lambda: array("d"))
    free: array[float] = field(default_factory=lambda: array("d"))
    loader_start: array[float] = field(default_factory=lambda: array("d"))
    loader_end: array[float] = field(default_factory=lambda: array("d"))
    # launch flows by category: ids and parsed times in flat arrays (16 bytes a flow end; a
    # dict of the raw strings held ~0.2 bytes for every byte of trace)
    flows: dict[str, FlowTable] = field(default_factory=dict)
    # HCCL collective tasks (hcom_allGather__...) by kind: starts and ends
    collectives: dict[str, list[array[float]]] = field(default_factory=dict)
    launch_pairs: dict[float, float] = field(default_factory=dict)  # flows are paired later
    # The best flow category is used whenever one of its flows has both ends: once such a pair
    # is seen, the other categories (as many flows again) are dropped and no longer recorded
    best_paired: bool = False
    probe_starts: set[int] = field(default_factory=set)
    probe_finishes: set[int] = field(default_factory=set)

    def merge(self, other: _Accumulator) -> None:
        """Append another accumulator's data (a later byte range of the same file)."""
        self.events += other.events
        self.process_names.update(other.process_names)
        for pid in other.process_names:
            self._drop_unused(pid)
        self.steps.extend(other.steps)
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
        for mine, theirs in (
            (self.sync, other.sync),
            (self.sync_end, other.sync_end),
            (self.malloc, other.malloc),
            (self.malloc_end, other.malloc_end),
            (self.free, other.free),
            (self.loader_start, other.loader_start),
            (self.loader_end, other.loader_end),
        ):
            mine.extend(theirs)
        if other.best_paired and not self.best_paired:
            self._best_paired()
        for cat, flows in other.flows.items():
            if self.best_paired and cat != FLOW_PREFERENCE[0]:
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
        out["sync",], out["sync_end",] = self.sync, self.sync_end
        out["malloc",], out["malloc_end",], out["free",] = self.malloc, self.malloc_end, self.free
        out["loader_start",], out["loader_end",] = self.loader_start, self.loader_end
        for cat, flows in self.flows.items():
            ids_start, ts_start, ids_finish, ts_finish = flows.__getstate__()
            out["flows", cat, 0], out["flows", cat, 1] = ids_start, ts_start
            out["flows", cat, 2], out["flows", cat, 3] = ids_finish, ts_finish
        return out

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
        for cat in FLOW_PREFERENCE[1:]:
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

    def add(self, batch: list[_Event]) -> None:
        self.events += len(batch)
        for e in batch:
            ph = e.ph
            if ph == "X":
                name = e.name
                if e.cat:
                    self._host_event(e, name)
                elif name.startswith("AscendCL@"):
                    self._runtime_call(e, name)
                else:
                    self._device_event(e, name)
            elif ph == "s" or ph == "f":
                self._flow(e, ph == "s")
            elif ph == "M" and e.name == "process_name":
                args = _ARGS_DECODER.decode(e.args) if bytes(e.args) != b"null" else {}
                self.process_names[e.pid] = str(args.get("name", ""))
                self._drop_unused(e.pid)
        del self.scratch_starts[:], self.scratch_ends[:]

    def _host_event(self, e: _Event, name: str) -> None:
        """A host-side event: only step markers and data loading are needed."""
        if name.startswith("ProfilerStep#"):
            m = self.taxonomy.step.fullmatch(name)
            if m:
                start = self.ts(e.ts)
                self.steps.append(StepWindow(int(m.group(1)), start, start + _dur(e.dur)))
        elif ("DataLoader" in name or "dataset" in name) and self.taxonomy.dataloader.fullmatch(
            name
        ):
            start = self.ts(e.ts)
            self.loader_start.append(start)
            self.loader_end.append(start + _dur(e.dur))

    def _runtime_call(self, e: _Event, name: str) -> None:
        """An AscendCL call: synchronisations, allocations and frees are kept."""
        tax = self.taxonomy
        # cheap substring tests first: most runtime calls are kernel launches
        if "Synchron" in name and tax.sync_calls.fullmatch(name):
            at = self.ts(e.ts)
            self.sync.append(at)
            self.sync_end.append(at + _dur(e.dur))
        elif "Malloc" in name and tax.malloc_calls.fullmatch(name):
            at = self.ts(e.ts)
            self.malloc.append(at)
            self.malloc_end.append(at + _dur(e.dur))
        elif "Free" in name and tax.free_calls.fullmatch(name):
            self.free.append(self.ts(e.ts))

    def _device_event(self, e: _Event, name: str) -> None:
        """A step marker without its category, an overlap lane's interval, or a kernel (a
        collective's also in its kind's lane)."""
        start = self.ts(e.ts)
        end = start + _dur(e.dur)
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
        pid = e.pid
        starts = self.starts.get(pid)
        if starts is None:
            starts = self.starts[pid] = array("d")
            self.ends[pid] = array("d")
        starts.append(start)
        self.ends[pid].append(end)

    def _flow(self, e: _Event, start: bool) -> None:
        """One end of a launch flow, in the categories that link host and device."""
        cat = e.cat
        if cat not in FLOW_CATEGORIES:
            return
        best = cat == FLOW_PREFERENCE[0]
        if self.best_paired and not best:
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


def _dur(value: float | str) -> float:
    return value if value.__class__ is float else float(value)


def _stream_array(
    path: Path,
    acc: _Accumulator,
    head: bytes,
    handle: _Readable,
    tick: Callable[[int], None] | None = None,
    block: int = BLOCK_BYTES,
    after_block: Callable[[], None] | None = None,
) -> None:
    """Decode the array block by block; each block is cut after the last complete event.

    One buffer is reused for every block: allocating a fresh 8 MiB buffer per block costs more
    in page faults than the copy itself.
    """
    carry = bytes(head)  # starts right after the opening '['
    offset = 0  # file offset of carry[0], for messages
    pending_blocks = 0
    buf = bytearray(1 + block + len(carry))
    while True:
        need = 1 + len(carry) + block
        if len(buf) < need:
            buf = bytearray(need)  # only when an event larger than a block is carried over
        buf[0] = ord("[")
        buf[1 : 1 + len(carry)] = carry
        with memoryview(buf) as view:
            got = handle.readinto(view[1 + len(carry) : need])
        if not got:
            _finish(path, acc, carry, offset)
            return
        if tick is not None:
            tick(got)
        size = 1 + len(carry) + got
        cut = find_cut(buf, size)
        if cut <= 0:
            carry = bytes(buf[1:size])
            check_event_size(path, carry, offset)
            continue
        buf[cut] = ord("]")  # the ',' between two events closes this batch
        try:
            with memoryview(buf) as view:
                batch = _ARRAY_DECODER.decode(view[: cut + 1])
        except RecursionError:
            raise InputError(
                str(path), f"JSON nested too deeply for the decoder after byte {offset}"
            ) from None
        except msgspec.DecodeError as exc:
            pending_blocks += 1
            if pending_blocks > MAX_CARRY_BLOCKS:
                raise decode_error(path, exc, offset, acc.events) from None
            buf[cut] = ord(",")
            carry = bytes(buf[1:size])
            check_event_size(path, carry, offset)
            continue
        pending_blocks = 0
        acc.add(batch)
        del batch
        if after_block is not None:
            after_block()
        rest = bytes(buf[cut + 1 : size]).lstrip()
        offset += cut - (size - cut - 1 - len(rest))
        carry = rest


def _finish(path: Path, acc: _Accumulator, carry: bytes, offset: int) -> None:
    tail = carry.rstrip()
    if not tail.endswith(b"]"):
        raise InputError(
            str(path),
            f"the file ends without closing ']' (truncated after byte {offset + len(tail)}); "
            f"{acc.events} events were read before it",
        )
    piece = tail[:-1].rstrip().rstrip(b",")
    if piece.strip():
        try:
            acc.add(_ARRAY_DECODER.decode(b"[" + piece + b"]"))
        except msgspec.DecodeError as exc:
            raise decode_error(path, exc, offset, acc.events) from None


def read_trace(path: Path, taxonomy: Taxonomy) -> TraceData:
    acc = _Accumulator(taxonomy)
    try:
        with path.open("rb") as handle:
            head = handle.read(65536)
            stripped = head.lstrip()
            if not stripped:
                raise InputError(str(path), "empty file")
            if stripped.startswith(b"["):
                handle.seek(len(head) - len(stripped) + 1)
                size = path.stat().st_size
                # a small trace gets a buffer of its own size: zeroing 8 MiB for a 1 MB rank
                # of a large cluster costs more than decoding it
                block = max(65536, min(BLOCK_BYTES, size + 1))
                with progress.task(f"decoding {path.name}", round(size / MIB), "MiB") as bar:
                    _stream_array(
                        path, acc, b"", handle, lambda n: bar.advance(n / MIB), block=block
                    )
            elif stripped.startswith(b"{"):
                data = head + handle.read()
                try:
                    acc.add(_OBJECT_DECODER.decode(data).traceEvents)
                except msgspec.DecodeError as exc:
                    raise decode_error(path, exc, 0, 0) from None
            else:
                raise InputError(str(path), "not a Chrome trace (expected a JSON array or object)")
    except RecursionError:  # an args value nested thousands deep: not a profiler's trace
        raise InputError(str(path), "JSON nested too deeply for the decoder") from None
    except OSError as exc:
        raise InputError(str(path), f"cannot read: {exc.strerror}") from None
    return reduce_steps(path, acc)
