"""Decode a PyTorch profiler (Kineto) trace into the few columns the step model needs.

Every generation since PyTorch 1.8 is read: event categories are mapped to their role by the
taxonomy (`kineto_categories`), so the legacy Operator / Runtime / Kernel / Memcpy / Memset
names and the current cpu_op / cuda_runtime / kernel / gpu_memcpy / gpu_memset ones give the
same columns. An event whose timestamp or duration is not a finite non-negative number is
dropped and counted; the caller reports how many.

A trace holds millions of kernels and launches: each is kept as one row of flat arrays (28
bytes a kernel, 20 a launch; see columns.py), strings by their index, never as an object.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from advisor.inputs.taxonomy import Taxonomy
from advisor.parsers.bounds import MAX_DURATION_US, BadValues
from advisor.parsers.kineto.collectives import (
    Launchers,
)
from advisor.parsers.kineto.columns import (
    COMMUNICATION,
    COMPUTE,
    MEMORY,
    NO_CORRELATION,
    NO_GROUP,
)
from advisor.parsers.kineto.decoded import KinetoEvents
from advisor.parsers.kineto.device_steps import HostWindow
from advisor.parsers.kineto.stream import UNSET, KinetoArgs, KinetoEvent
from advisor.parsers.kineto.values import (
    INTERNED_CORRELATION,
    MAX_SPAN_US,
    collective_name,
    interned_correlation,
    process_group,
    short_name,
    timeline_span,
    typed_event,
)
from advisor.parsers.traces.phases import RangeReader

# runtime calls the host-side measures count, as stored per call name
_LAUNCH_ONLY, _SYNC, _MALLOC, _FREE, _COPY = 0, 1, 2, 3, 4
_COLLECTIVE = -1  # an operation whose signature its arguments decide (a collective's)


class Extractor:
    """Reduces events into KinetoEvents; per-name decisions are made once and remembered."""

    def __init__(self, taxonomy: Taxonomy, path: Path, bad: BadValues) -> None:
        self.out = KinetoEvents()
        self.taxonomy = taxonomy
        self.path = path
        self.bad = bad
        self.roles = taxonomy.kineto_roles
        self.comm_re = taxonomy.operator_classes["communication"]
        # by role, raw kernel name -> (short name id, kind, collective id from the name)
        self.kernels: dict[str, dict[str, tuple[int, int, int]]] = {"kernel": {}, "memory": {}}
        self.runtime_calls: dict[str, int] = {}
        self.streams: dict[tuple[Any, Any], int] = {}
        # (name, pid, tid, role) -> the operation's signature, or _COLLECTIVE
        self.op_signatures: dict[tuple[str, Any, Any, str], int] = {}
        # (name, category, ph, pid, tid) of the events `block` appends itself -> an operation's
        # signature (>= 0) or a launch's thread as ~thread (< 0): kernels and memory operations
        # that are no collective and no blocking copy, runtime calls that only launch
        self.plain: dict[tuple[Any, Any, Any, Any, Any], int] = {}
        self.launchers = Launchers(
            taxonomy, self.out.strings, self.out.collective_spans, self._thread
        )
        self.ranges = RangeReader(taxonomy.phase_ranges, taxonomy.gc_ranges)
        # the columns' append methods, bound once (spilling empties the arrays in place)
        o, out = self.out.ops, self.out
        self.op_rows = (o.start.append, o.end.append, o.signature.append, o.correlation.append)
        self.launch_rows = (out.launch_keys.append, out.launch_ts.append, out.launch_thread.append)

    def block(self, events: list[Any], center: float, index: int) -> int:
        """The events of one decoded block into the columns; the index of its last event.

        Nearly every event is a launch or a kernel of a shape seen before: the same name,
        category, process and thread, a plain correlation id, a time well inside the trace.
        Those are appended here, with no call; the rest (and each shape's first event, which
        decides whether its shape is plain) go through `_event`."""
        plain = self.plain
        add_start, add_end, add_signature, add_key = self.op_rows
        add_launch, add_launch_at, add_thread = self.launch_rows
        general = self._event
        # well inside the span the trace's events may lie in (abs(ts - center) <= MAX_SPAN_US):
        # a timestamp outside is judged exactly by timeline_span
        near_low, near_high = center - MAX_SPAN_US / 2, center + MAX_SPAN_US / 2
        counted = 0
        for event in events:
            index += 1
            # a host operator (most events of a real trace) has no correlation id: it leaves
            # at the first test after its arguments
            if (
                event.__class__ is KinetoEvent
                and (args := event.args) is not None
                and (corr := args.correlation).__class__ is int
            ):
                ts, dur = event.ts, event.dur
                if (
                    ts.__class__ is float
                    and dur.__class__ is float
                    and 0.0 <= dur <= MAX_DURATION_US
                    and near_low <= ts <= near_high
                    and 0 <= corr < INTERNED_CORRELATION
                ):
                    try:
                        shape = plain[(event.name, event.cat, event.ph, event.pid, event.tid)]
                    except (KeyError, TypeError):
                        pass
                    else:
                        if shape >= 0:  # an operation's signature
                            add_start(ts)
                            add_end(ts + dur)
                            add_signature(shape)
                            add_key(corr)
                        else:  # a launch's thread, as ~thread
                            add_launch(corr)
                            add_launch_at(ts)
                            add_thread(~shape)
                        counted += 1
                        continue
            counted += general(event, center, index)
        self.out.events += counted
        return index

    def _event(self, event: Any, center: float, index: int) -> int:
        """One event into the columns, by its role; 1 when it is a complete event ("X")."""
        if event.__class__ is not KinetoEvent:
            if not isinstance(event, dict):
                return 0
            event = typed_event(event)
        if event.ph != "X":
            self.out.memory.read(event)  # of the other events, only memory samples count
            return 0
        cat = event.cat
        role = self.roles.get(cat if cat.__class__ is str else str(cat))
        if role is None:
            return 1
        ts, dur = event.ts, event.dur
        if (
            ts.__class__ is float
            and dur.__class__ is float
            and 0.0 <= dur <= MAX_DURATION_US
            and abs(ts - center) <= MAX_SPAN_US / 2
        ):
            start, end = ts, ts + dur
        else:
            times = timeline_span(ts, dur, center)
            if times is None:
                self._reject(event, index)
                return 1
            start, end = times
        name = event.name
        if name.__class__ is not str:
            name = "" if name is UNSET else str(name)
        if role == "kernel" or role == "memory":
            self._device_op(event, role, name, start, end)
        elif role == "runtime":
            self._runtime(event, name, start, end)
        else:
            self._host_event(event, role, name, start, end)
        return 1

    def _host_event(
        self, event: KinetoEvent, role: str, name: str, start: float, end: float
    ) -> None:
        """An annotation, a Python function's range or a synchronisation."""
        if role == "annotation":
            self._annotation(event, name, start, end)
        elif role == "python":
            self.ranges.add(self.out.host_ranges, name, start, end)
        elif role == "sync":
            self.out.host.sync_start.append(start)
            self.out.host.sync_end.append(end)

    def _key(self, args: KinetoArgs | None) -> int:
        """The id pairing a launch with its device operation (NO_CORRELATION: none)."""
        if args is None:
            return NO_CORRELATION
        corr = args.correlation
        if corr.__class__ is int and 0 <= corr < INTERNED_CORRELATION:
            return int(corr)
        return interned_correlation(corr, self.out.odd_correlations)

    def _device_op(
        self, event: KinetoEvent, role: str, name: str, start: float, end: float
    ) -> None:
        """A kernel or memory operation: a row of the operation columns, or a collective."""
        args = event.args
        corr = NO_CORRELATION if args is None else args.correlation
        key = (
            corr if corr.__class__ is int and 0 <= corr < INTERNED_CORRELATION else self._key(args)
        )
        try:  # most operations: a (kernel, stream) seen before
            sig = self.op_signatures[(name, event.pid, event.tid, role)]
        except (KeyError, TypeError):
            sig = self._signature(event, role, name)
        if sig == _COLLECTIVE:
            name_id, _, collective = self.kernels[role][name]
            self._collective(event, name_id, collective, key, start, end)
            return
        add_start, add_end, add_signature, add_key = self.op_rows
        add_start(start)
        add_end(end)
        add_signature(sig)
        add_key(key)
        if role == "memory" and self.taxonomy.blocking_copies.fullmatch(name):
            self.out.blocking.device_copy(key, name, None if args is None else args.bytes)
        else:
            self._plain(event, sig)

    def _signature(self, event: KinetoEvent, role: str, name: str) -> int:
        """An operation's signature (or _COLLECTIVE: its arguments decide), remembered."""
        info = self.kernels[role].get(name)
        if info is None:
            info = self.kernels[role][name] = self._kernel(name, role)
        name_id, kind, collective = info
        if kind == COMMUNICATION:
            sig = _COLLECTIVE
        else:
            stream = self._thread(event.pid, event.tid)
            sig = self.out.ops.signatures.id(name_id, kind, stream, NO_GROUP, collective)
        with contextlib.suppress(TypeError):  # unhashable pid or tid: looked up each time
            self.op_signatures[(name, event.pid, event.tid, role)] = sig
        return sig

    def _runtime(self, event: KinetoEvent, name: str, start: float, end: float) -> None:
        """A runtime call: a launch by its correlation id, and the host calls the step model
        counts (synchronisations, allocations, frees)."""
        args = event.args
        corr = NO_CORRELATION if args is None else args.correlation
        key = (
            corr if corr.__class__ is int and 0 <= corr < INTERNED_CORRELATION else self._key(args)
        )
        if key != NO_CORRELATION:
            add_key, add_at, add_thread = self.launch_rows
            add_key(key)
            add_at(start)
            try:
                thread = self.streams[(event.pid, event.tid)]
            except (KeyError, TypeError):
                thread = self._thread(event.pid, event.tid)
            add_thread(thread)
        call = self.runtime_calls.get(name)
        if call is None:
            call = self.runtime_calls[name] = self._runtime_call(name)
        if call != _LAUNCH_ONLY:
            self._host_call(call, key, name, start, end)
        elif key != NO_CORRELATION:
            self._plain(event, ~thread)

    def _plain(self, event: KinetoEvent, row: int) -> None:
        """Remember that events of this one's shape are appended by `block` as `row` says (an
        operation's signature, or ~ a launch's thread). A name or category that is no string
        is left to `_event`, which reads it as text (1 and True would share a key)."""
        if event.name.__class__ is str and event.cat.__class__ is str:
            with contextlib.suppress(TypeError):  # an unhashable pid or tid
                self.plain[(event.name, event.cat, event.ph, event.pid, event.tid)] = row

    def _host_call(self, call: int, key: int, name: str, start: float, end: float) -> None:
        """A runtime call the host-side measures count."""
        out = self.out
        if call == _SYNC:
            out.host.sync_start.append(start)
            out.host.sync_end.append(end)
            out.blocking.waits.append((start, end, name))
        elif call == _COPY and key != NO_CORRELATION:
            out.blocking.copies[key] = (start, end, name)
        elif call == _MALLOC:
            out.host.malloc_start.append(start)
            out.host.malloc_end.append(end)
        elif call == _FREE:
            out.host.free.append(start)

    def _annotation(self, event: KinetoEvent, name: str, start: float, end: float) -> None:
        """A host annotation: a ProfilerStep window, data loading, or a collective's range."""
        m = self.taxonomy.step.fullmatch(name)
        if m:
            self.out.steps.append(HostWindow(int(m.group(1)), start, end))
        elif self.taxonomy.dataloader.fullmatch(name):
            self.out.host.loader_start.append(start)
            self.out.host.loader_end.append(end)
        else:
            self.out.blocking.annotation(event.cat, name, start, end, self.taxonomy.blocking_ops)
            self.launchers.range(event, name, start, end)
            self.ranges.add(self.out.host_ranges, name, start, end)

    def _reject(self, event: KinetoEvent, index: int) -> None:
        ts = None if event.ts is UNSET else event.ts
        dur = None if event.dur is UNSET else event.dur
        name = None if event.name is UNSET else event.name
        self.bad.reject(
            self.path,
            f"event #{index} ({str(name)[:60]!r})",
            f"ts={ts!r}, dur={dur!r}",
            "not a place on the timeline (finite, non-negative, within a day of the trace)",
        )
        self.out.dropped += 1

    def _runtime_call(self, name: str) -> int:
        tax = self.taxonomy
        if tax.sync_calls.fullmatch(name):
            return _SYNC
        if tax.malloc_calls.fullmatch(name):
            return _MALLOC
        if tax.free_calls.fullmatch(name):
            return _FREE
        if tax.copy_calls.fullmatch(name):
            return _COPY
        return _LAUNCH_ONLY

    def _kernel(self, name: str, role: str) -> tuple[int, int, int]:
        strings = self.out.strings
        if role == "memory":
            return strings.id(name), MEMORY, strings.id("")
        kernel = short_name(name)
        if self.comm_re.fullmatch(kernel) is None:
            return strings.id(kernel), COMPUTE, strings.id("")
        return strings.id(kernel), COMMUNICATION, strings.id(collective_name(kernel))

    def _thread(self, pid: Any, tid: Any) -> int:
        """The Strings id of "pid:tid" (a device stream, or a host thread)."""
        try:
            stream = self.streams.get((pid, tid))
        except TypeError:  # a list as pid or tid: by its text, in _stream
            stream = None
        return self._stream(pid, tid) if stream is None else stream

    def _stream(self, pid: Any, tid: Any) -> int:
        label = f"{None if pid is UNSET else pid}:{None if tid is UNSET else tid}"
        stream = self.out.strings.id(label)
        with contextlib.suppress(TypeError):  # unhashable: looked up by its text each time
            self.streams[(pid, tid)] = stream
        return stream

    def _collective(
        self,
        event: KinetoEvent,
        name_id: int,
        collective: int,
        key: int,
        start: float,
        end: float,
    ) -> None:
        """A collective kernel: its kind and process group from its arguments when given."""
        out = self.out
        ops = out.ops
        args = event.args
        group = NO_GROUP
        if args is not None:
            named = args.collective
            if isinstance(named, str) and named:
                collective = out.strings.id(named)
            if args.group is not UNSET and args.group is not None:
                group = self._group(args)
        stream = self._stream(event.pid, event.tid)
        if key != NO_CORRELATION:
            out.comm_keys.append(key)
        ops.start.append(start)
        ops.end.append(end)
        ops.signature.append(ops.signatures.id(name_id, COMMUNICATION, stream, group, collective))
        ops.correlation.append(key)

    def _group(self, args: KinetoArgs) -> int:
        key = str(args.group)
        if key not in self.out.kernel_groups and (found := process_group(args, key)):
            self.out.kernel_groups[key] = found
        return self.out.strings.id(key)
