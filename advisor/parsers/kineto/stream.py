"""PyTorch profiler traces read in blocks, never whole: the keys before `traceEvents`, then the
events a block at a time (cut at event boundaries, decoded into light structs that hold only
the fields the facts read, `args` left undecoded until asked for), then the keys after them.

Memory is the block and what the reader keeps of each event, whatever the trace's size; a
gzipped trace is decompressed as it is read, under the same size and expansion limits as a
whole read. A block the typed decoder cannot take (an event that is not an object...) is
decoded as plain JSON values, so odd events are judged one by one as before.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any, Protocol

import msgspec

from advisor.model import InputError
from advisor.parsers.kineto.sources import Limited, Window
from advisor.parsers.traces.blocks import EVENT_BOUNDARY, check_event_size

BLOCK_BYTES = 2 * 1024 * 1024
TAIL_BYTES = 1 << 16  # where the last event boundary of a block is looked for first
MAX_CARRIED_BLOCKS = 16  # a cut inside an event (nested objects) is retried with more data
# between two events: '}' ',' '{' with any white space (PyTorch writes "},\n  {")
HEAD_BYTES = 4 * 1024 * 1024  # the keys before traceEvents must lie within this
TAIL_SPAN_BYTES = 1 << 20  # the keys after traceEvents, when the events are split in ranges
_KEY = b'"traceEvents"'


class KinetoArgs(msgspec.Struct, gc=False):
    """The few `args` the facts read; the decoder skips every other key."""

    correlation: Any = msgspec.UNSET
    collective: Any = msgspec.field(default=msgspec.UNSET, name="Collective name")
    group: Any = msgspec.field(default=msgspec.UNSET, name="Process Group Name")
    group_ranks: Any = msgspec.field(default=msgspec.UNSET, name="Process Group Ranks")
    group_description: Any = msgspec.field(default=msgspec.UNSET, name="Process Group Description")
    bytes: Any = msgspec.UNSET
    # a `[memory]` instant event's allocator totals (profile_memory=True), in bytes
    total_allocated: Any = msgspec.field(default=msgspec.UNSET, name="Total Allocated")
    total_reserved: Any = msgspec.field(default=msgspec.UNSET, name="Total Reserved")
    device_type: Any = msgspec.field(default=msgspec.UNSET, name="Device Type")

    def get(self, key: str, default: Any = None) -> Any:
        value = getattr(self, ARG_FIELDS.get(key, "-"), msgspec.UNSET)
        return default if value is msgspec.UNSET else value


# the trace's argument key -> KinetoArgs' field
ARG_FIELDS = {
    "correlation": "correlation",
    "bytes": "bytes",
    "Collective name": "collective",
    "Process Group Name": "group",
    "Process Group Ranks": "group_ranks",
    "Process Group Description": "group_description",
    "Total Allocated": "total_allocated",
    "Total Reserved": "total_reserved",
    "Device Type": "device_type",
}


class KinetoEvent(msgspec.Struct, gc=False):
    """One trace event; a key the trace leaves out is UNSET (not null)."""

    ph: Any = msgspec.UNSET
    cat: Any = msgspec.UNSET
    name: Any = msgspec.UNSET
    pid: Any = msgspec.UNSET
    tid: Any = msgspec.UNSET
    ts: Any = msgspec.UNSET
    dur: Any = msgspec.UNSET
    # args that are not an object (a list...) fail the typed decoder: that block is read as
    # plain JSON and the event judged as before
    args: KinetoArgs | None = None

    def get(self, key: str, default: Any = None) -> Any:
        """dict.get for the fields the extractor reads."""
        value = getattr(self, key, msgspec.UNSET)
        return default if value is msgspec.UNSET else value


UNSET = msgspec.UNSET  # a key the event leaves out
_ANY = msgspec.json.Decoder()
_EVENTS = msgspec.json.Decoder(list[KinetoEvent])


class _Source(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


def _decode_error(path: Path, exc: Exception, offset: int) -> InputError:
    return InputError(str(path), f"invalid JSON after byte {offset}: {exc}")


def _find_boundary(data: bytes) -> int:
    """Index of the ',' of the last event boundary in `data` (the tail first), or -1."""
    lo = max(0, len(data) - TAIL_BYTES)
    while True:
        last = -1
        for match in EVENT_BOUNDARY.finditer(data, lo):
            last = match.start()
        if last >= 0:
            return data.index(b",", last)
        if lo == 0:
            return -1
        lo = max(0, lo - TAIL_BYTES * 4)


def _decode_block(path: Path, data: bytes, offset: int) -> list[Any]:
    """The events of one piece. Typed first; an event that is not an object sends the piece to
    the plain decoder, and NaN or Infinity literals (Python's json writes them) to Python's json.
    msgspec.DecodeError propagates when none can read it (the caller may carry on with more)."""
    try:
        try:
            return _EVENTS.decode(data)
        except msgspec.ValidationError:
            values = _ANY.decode(data)
        except msgspec.DecodeError:
            try:
                values = json.loads(data)
            except (ValueError, UnicodeDecodeError):
                raise msgspec.DecodeError("invalid JSON") from None
    except RecursionError:
        raise InputError(str(path), f"JSON nested too deeply after byte {offset}") from None
    return values if isinstance(values, list) else []


def _header(path: Path, before: bytes) -> dict[str, Any]:
    """The top-level keys before traceEvents, as an object."""
    text = before.rstrip()
    text = text[:-1] if text.endswith(b",") else text
    try:
        value = _ANY.decode(text + b"}")
    except (msgspec.DecodeError, RecursionError) as exc:
        raise _decode_error(path, exc, 0) from None
    return value if isinstance(value, dict) else {}


MAX_TAIL_CANDIDATES = 64  # ']' tried from the end of the file for the close of the events


def _tail_ok(tail: bytes, bare: bool) -> bool:
    """What follows the events array: nothing (a bare list) or the rest of the object."""
    tail = tail.strip()
    if bare:
        return not tail
    if tail == b"}":
        return True
    if not tail.startswith(b","):
        return False
    try:
        return isinstance(_ANY.decode(b"{" + tail[1:]), dict)
    except (msgspec.DecodeError, RecursionError):
        return False


def _array_end(path: Path, carry: bytes, offset: int, bare: bool) -> tuple[int, list[Any]]:
    """The ']' closing the events array in the file's last piece, and the events before it.

    Tried from the end: the keys after the events are few, so a ']' whose tail is not the
    rest of the object is passed over cheaply, and only a plausible one decodes the events.
    Returns (-1, []) when none fits (a truncated or damaged file)."""
    at = len(carry)
    for _ in range(MAX_TAIL_CANDIDATES):
        at = carry.rfind(b"]", 0, at)
        if at < 0:
            return -1, []
        if not _tail_ok(carry[at + 1 :], bare):
            continue
        before = carry[:at].rstrip().rstrip(b",")
        if not before.strip():
            return at, []
        try:
            return at, _decode_block(path, b"[" + before + b"]", offset)
        except msgspec.DecodeError:
            continue
    return -1, []


class _Counted:
    """A source that reports how far into the file each read has got."""

    def __init__(self, source: Limited, file: Any, on_bytes: Callable[[int], None]) -> None:
        self.source, self.file, self.on_bytes = source, file, on_bytes
        self.done = 0

    def read(self, size: int) -> bytes:
        data = self.source.read(size)
        at = self.file.tell()
        if at > self.done:
            self.on_bytes(at - self.done)
            self.done = at
        return data


class KinetoStream:
    """Iterate the event blocks; `header` holds every top-level key but traceEvents once the
    events are consumed (the keys after the events are read last)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.header: dict[str, Any] = {}
        self.events = 0

    def blocks(
        self, on_bytes: Callable[[int], None] | None = None
    ) -> Generator[list[Any], None, None]:
        """The event blocks; `on_bytes` is told how many bytes of the file each read took
        (of the compressed file, for a .gz)."""
        gzipped = self.path.name.endswith(".gz")
        try:
            with self.path.open("rb") as file:
                raw: Any = gzip.GzipFile(fileobj=file, mode="rb") if gzipped else file
                with raw:
                    limited = Limited(self.path, raw, gzipped)
                    source = limited if on_bytes is None else _Counted(limited, file, on_bytes)
                    yield from self._blocks(source)
        except OSError as exc:
            if isinstance(exc, gzip.BadGzipFile):
                raise InputError(
                    str(self.path), f"truncated or damaged gzip file ({exc})"
                ) from None
            raise InputError(
                str(self.path), f"cannot read: {getattr(exc, 'strerror', None) or exc}"
            ) from None
        except (EOFError, zlib.error) as exc:
            # zlib.error (a damaged deflate stream) is no OSError: it would escape unnamed
            raise InputError(str(self.path), f"truncated or damaged gzip file ({exc})") from None

    def _blocks(self, stream: Limited | _Counted) -> Iterator[list[Any]]:
        head = stream.read(HEAD_BYTES)
        stripped = head.lstrip()
        if stripped.startswith(b"["):
            rest, bare = stripped[1:], True
        elif stripped.startswith(b"{"):
            key = stripped.find(_KEY)
            colon = stripped.find(b":", key + len(_KEY)) if key >= 0 else -1
            bracket = stripped.find(b"[", colon) if colon >= 0 else -1
            if key < 0 or bracket < 0 or stripped[colon + 1 : bracket].strip():
                raise InputError(
                    str(self.path),
                    "expected a profile directory or a PyTorch profiler trace (this JSON has no "
                    "traceEvents)",
                )
            self.header = _header(self.path, stripped[:key])
            rest, bare = stripped[bracket + 1 :], False
        elif not stripped:
            raise InputError(str(self.path), "empty file")
        else:
            raise InputError(str(self.path), "invalid JSON at line 1, column 1")
        yield from self._events(stream, bytes(rest), len(head) - len(rest), bare)

    def _events(
        self, stream: Limited | Window | _Counted, carry: bytes, offset: int, bare: bool | None
    ) -> Iterator[list[Any]]:
        """Blocks of events cut at boundaries; the last piece closes the array (`bare`: a
        bare list, else an object) or, for a byte range (`bare` None), ends the range."""
        carried = 0
        while True:
            data = stream.read(BLOCK_BYTES)
            if not data:
                if bare is None:
                    yield from self._range_end(carry, offset)
                else:
                    yield from self._last(carry, offset, bare)
                return
            carry += data
            if carry.isspace():  # white space between events is no event: nothing to carry
                offset += len(carry)
                carry = b""
                continue
            cut = _find_boundary(carry)
            if cut <= 0:
                check_event_size(self.path, carry, offset)
                continue
            try:
                batch = _decode_block(self.path, b"[" + carry[:cut] + b"]", offset)
            except msgspec.DecodeError as exc:
                carried += 1  # the boundary was inside an event: read on
                if carried > MAX_CARRIED_BLOCKS:
                    raise _decode_error(self.path, exc, offset) from None
                check_event_size(self.path, carry, offset)
                continue
            carried = 0
            self.events += len(batch)
            yield batch
            rest = carry[cut + 1 :].lstrip()
            offset += len(carry) - len(rest)
            carry = rest

    def _range_end(self, carry: bytes, offset: int) -> Iterator[list[Any]]:
        piece = carry.strip().rstrip(b",").rstrip()
        if piece:
            try:
                batch = _decode_block(self.path, b"[" + piece + b"]", offset)
            except msgspec.DecodeError as exc:
                raise _decode_error(self.path, exc, offset) from None
            self.events += len(batch)
            yield batch

    def range_blocks(self, begin: int, end: int) -> Iterator[list[Any]]:
        """The event blocks of bytes [begin, end) of a plain trace: whole events separated by
        commas (see `events_span` and `split_points`)."""
        try:
            with self.path.open("rb") as handle:
                handle.seek(begin)
                yield from self._events(Window(handle, end - begin), b"", begin, None)
        except OSError as exc:
            raise InputError(str(self.path), f"cannot read: {exc.strerror or exc}") from None

    def _last(self, carry: bytes, offset: int, bare: bool) -> Iterator[list[Any]]:
        end, batch = _array_end(self.path, carry, offset, bare)
        if end < 0:
            try:  # say where the JSON breaks, as a whole read would
                json.loads(b"[" + carry)
            except json.JSONDecodeError as exc:
                raise InputError(
                    str(self.path), f"invalid JSON after byte {offset}: {exc.msg}"
                ) from None
            except (ValueError, RecursionError):
                pass
            raise InputError(
                str(self.path),
                f"the file ends without closing the events array (truncated after byte "
                f"{offset + len(carry)})",
            )
        if batch:
            self.events += len(batch)
            yield batch
        tail = carry[end + 1 :].strip()
        if bare:
            if tail:
                raise _decode_error(self.path, ValueError("data after the events"), offset + end)
            return
        # `, "key": value ... }` after the events: the rest of the top-level object
        body = tail[1:] if tail.startswith(b",") else tail
        try:
            after = _ANY.decode(b"{" + body) if body.strip() != b"}" else {}
        except (msgspec.DecodeError, RecursionError) as exc:
            raise _decode_error(self.path, exc, offset + end) from None
        if isinstance(after, dict):
            self.header.update(after)


def events_span(path: Path) -> tuple[int, int, dict[str, Any]] | None:
    """Where the events of a plain (not gzipped) trace object lie: the byte after the
    `[` of traceEvents, the `]` closing it, and the top-level keys before and after them.
    None when the file does not look like that (read it as a stream)."""
    if path.name.endswith(".gz"):
        return None
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            head = handle.read(HEAD_BYTES)
            handle.seek(max(0, size - TAIL_SPAN_BYTES))
            tail = handle.read()
    except OSError:
        return None
    stripped = head.lstrip()
    key = stripped.find(_KEY)
    colon = stripped.find(b":", key + len(_KEY)) if key >= 0 else -1
    bracket = stripped.find(b"[", colon) if colon >= 0 else -1
    if not stripped.startswith(b"{") or key < 0 or bracket < 0:
        return None
    if stripped[colon + 1 : bracket].strip():
        return None
    begin = len(head) - len(stripped) + bracket + 1
    tail_start = max(0, size - TAIL_SPAN_BYTES)
    # from an event boundary in the last bytes, the sequential reader's search for the
    # ']' closing the events (a ']' in the keys after them is passed over)
    first = EVENT_BOUNDARY.search(tail)
    if first is None:
        return None
    piece = tail[first.end() - 1 :]
    piece_start = tail_start + first.end() - 1
    try:
        at, _ = _array_end(path, piece, piece_start, False)
    except InputError:
        return None
    if at < 0:
        return None
    after = piece[at + 1 :].strip()
    try:
        header = _header(path, stripped[:key])
        body = after[1:] if after.startswith(b",") else after
        if body.strip() != b"}":
            extra = _ANY.decode(b"{" + body)
            if isinstance(extra, dict):
                header.update(extra)
    except (InputError, msgspec.DecodeError, RecursionError):
        return None
    end = piece_start + at
    return (begin, end, header) if end > begin else None
