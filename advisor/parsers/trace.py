"""Streaming reader for torch_npu / MindSpore trace_view.json (Chrome trace event format).

The file can be gigabytes: it is read in blocks, each block is decoded with a typed msgspec
decoder that materialises only the fields the facts need, and every event is immediately reduced
into compact arrays. Nothing else of the trace is kept.
"""

from __future__ import annotations

import re
from array import array
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from advisor.model import InputError
from advisor.parsers.trace_steps import StepWindow, TraceData, reduce_steps
from advisor.taxonomy import Taxonomy

BLOCK_BYTES = 32 * 1024 * 1024
# A block boundary must fall between two top-level events; retrying a few blocks covers an event
# whose args happen to contain "}, {" (a list of objects).
MAX_CARRY_BLOCKS = 4
# Integer digits kept after removing a shared epoch prefix: 1e10 us is ~2.8 hours of trace, and
# 13 significant digits stay exact in float64 (absolute epoch microseconds would not).
KEPT_INTEGER_DIGITS = 10

OVERLAP_LANES = ("Computing", "Communication", "Communication(Not Overlapped)", "Free")
FLOW_CATEGORIES = ("HostToDevice", "async_npu")


class _Event(msgspec.Struct):
    ph: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: str | float = 0.0
    dur: float | str = 0.0
    cat: str = ""
    id: int | str = 0
    args: msgspec.Raw = msgspec.Raw(b"null")


class _ObjectTrace(msgspec.Struct):
    traceEvents: list[_Event] = []  # noqa: N815 - the Chrome trace key


_ARRAY_DECODER = msgspec.json.Decoder(list[_Event])
_OBJECT_DECODER = msgspec.json.Decoder(_ObjectTrace)
_ARGS_DECODER = msgspec.json.Decoder(dict[str, object])
_SEPARATORS = (b"}, {", b"},{", b"},\n{", b"},\r\n{", b"}, \n{")


class _TimestampParser:
    """Turn torch_npu's string timestamps into exact relative microseconds."""

    def __init__(self) -> None:
        self.prefix: str | None = None
        self.cut = 0
        self.origin = 0

    def _init(self, text: str) -> None:
        integer = text.split(".", 1)[0]
        self.cut = max(0, len(integer) - KEPT_INTEGER_DIGITS)
        self.prefix = text[: self.cut]
        self.origin = int(self.prefix or "0") * 10**KEPT_INTEGER_DIGITS

    def __call__(self, value: str | float) -> float:
        if value.__class__ is not str:
            return float(value)
        text = str(value)
        if self.prefix is None:
            self._init(text)
        if text[: self.cut] == self.prefix and len(text.split(".", 1)[0]) == self.cut + 10:
            return float(text[self.cut :])
        integer, _, fraction = text.partition(".")
        return float(int(integer) - self.origin) + (float("0." + fraction) if fraction else 0.0)


@dataclass
class _Accumulator:
    taxonomy: Taxonomy
    ts: _TimestampParser = field(default_factory=_TimestampParser)
    events: int = 0
    process_names: dict[int | str, str] = field(default_factory=dict)
    steps: list[StepWindow] = field(default_factory=list)
    # generic complete events per process: starts and ends
    starts: dict[int | str, array[float]] = field(default_factory=dict)
    ends: dict[int | str, array[float]] = field(default_factory=dict)
    overlap: dict[str, list[array[float]]] = field(default_factory=dict)
    sync: array[float] = field(default_factory=lambda: array("d"))
    malloc: array[float] = field(default_factory=lambda: array("d"))
    free: array[float] = field(default_factory=lambda: array("d"))
    loader_start: array[float] = field(default_factory=lambda: array("d"))
    loader_end: array[float] = field(default_factory=lambda: array("d"))
    flow_start: dict[str, dict[int | str, float]] = field(default_factory=dict)
    flow_finish: dict[str, dict[int | str, float]] = field(default_factory=dict)

    def add(self, batch: list[_Event]) -> None:
        tax = self.taxonomy
        ts_of = self.ts
        step_re = tax.step
        loader_re = tax.dataloader
        self.events += len(batch)
        for e in batch:
            ph = e.ph
            if ph == "X":
                name = e.name
                start = ts_of(e.ts)
                dur = e.dur if e.dur.__class__ is float else float(e.dur)
                if name.startswith("AscendCL@"):
                    if tax.sync_calls.fullmatch(name):
                        self.sync.append(start)
                    elif tax.malloc_calls.fullmatch(name):
                        self.malloc.append(start)
                    elif tax.free_calls.fullmatch(name):
                        self.free.append(start)
                    continue
                if name in OVERLAP_LANES and not e.cat:
                    lane = self.overlap.get(name)
                    if lane is None:
                        lane = self.overlap[name] = [array("d"), array("d")]
                    lane[0].append(start)
                    lane[1].append(start + dur)
                    continue
                if name.startswith("ProfilerStep#"):
                    m = step_re.fullmatch(name)
                    if m:
                        self.steps.append(StepWindow(int(m.group(1)), start, start + dur))
                    continue
                if "DataLoader" in name or "dataset" in name:
                    if loader_re.fullmatch(name):
                        self.loader_start.append(start)
                        self.loader_end.append(start + dur)
                    continue
                if e.cat:
                    continue  # host-side operators: not needed by any fact
                pid = e.pid
                starts = self.starts.get(pid)
                if starts is None:
                    starts = self.starts[pid] = array("d")
                    self.ends[pid] = array("d")
                starts.append(start)
                self.ends[pid].append(start + dur)
            elif ph == "s" or ph == "f":
                cat = e.cat
                if cat in FLOW_CATEGORIES:
                    table = self.flow_start if ph == "s" else self.flow_finish
                    bucket = table.get(cat)
                    if bucket is None:
                        bucket = table[cat] = {}
                    bucket[e.id] = ts_of(e.ts)
            elif ph == "M" and e.name == "process_name":
                args = _ARGS_DECODER.decode(e.args) if bytes(e.args) != b"null" else {}
                self.process_names[e.pid] = str(args.get("name", ""))


def _find_cut(data: bytes) -> int:
    """Index just after the last top-level '}' that is followed by ', {' (or -1)."""
    best = -1
    for sep in _SEPARATORS:
        pos = data.rfind(sep)
        if pos > best:
            best = pos
    return best + 1 if best >= 0 else -1


_BYTE_RE = re.compile(r"byte (\d+)")


def _decode_error(path: Path, exc: Exception, offset: int, complete: int) -> InputError:
    text = str(exc)
    m = _BYTE_RE.search(text)
    if "truncated" in text.lower():
        where = "the file ends in the middle of an event (truncated)"
    elif m:
        where = f"invalid JSON near byte {offset + int(m.group(1)) - 1}"
    else:
        where = f"invalid JSON after byte {offset}"
    return InputError(str(path), f"{where}; {complete} events were read before it ({text})")


def _stream_array(path: Path, acc: _Accumulator, head: bytes, handle: object) -> None:
    read = handle.read  # type: ignore[attr-defined]
    # `head` starts right after the opening '['
    carry = head
    offset = 0  # file offset of carry[0], approximately (only used in messages)
    pending_blocks = 0
    while True:
        block = read(BLOCK_BYTES)
        data = carry + block if block else carry
        if not block:
            tail = data.rstrip()
            if not tail.endswith(b"]"):
                if tail.strip() == b"":
                    raise InputError(str(path), "the file ends without closing ']' (truncated)")
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
                    raise _decode_error(path, exc, offset, acc.events) from None
            return
        cut = _find_cut(data)
        if cut <= 0:
            carry = data
            continue
        piece = data[:cut]
        try:
            batch = _ARRAY_DECODER.decode(b"[" + piece + b"]")
        except msgspec.DecodeError as exc:
            pending_blocks += 1
            if pending_blocks > MAX_CARRY_BLOCKS:
                raise _decode_error(path, exc, offset, acc.events) from None
            carry = data
            continue
        pending_blocks = 0
        acc.add(batch)
        rest = data[cut:].lstrip()
        if rest.startswith(b","):
            rest = rest[1:]
        offset += len(data) - len(rest)
        carry = rest


def read_trace(path: Path, taxonomy: Taxonomy) -> TraceData:
    acc = _Accumulator(taxonomy)
    try:
        with path.open("rb") as handle:
            head = handle.read(64).lstrip()
            if not head:
                raise InputError(str(path), "empty file")
            if head.startswith(b"["):
                _stream_array(path, acc, head[1:], handle)
            elif head.startswith(b"{"):
                data = head + handle.read()
                try:
                    acc.add(_OBJECT_DECODER.decode(data).traceEvents)
                except msgspec.DecodeError as exc:
                    raise _decode_error(path, exc, 0, 0) from None
            else:
                raise InputError(str(path), "not a Chrome trace (expected a JSON array or object)")
    except OSError as exc:
        raise InputError(str(path), f"cannot read: {exc.strerror}") from None
    return reduce_steps(path, acc)
