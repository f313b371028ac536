"""Streaming reader for torch_npu / MindSpore trace_view.json (Chrome trace event format).

The file can be gigabytes: it is read in blocks, each block is decoded with a typed msgspec
decoder that materialises only the fields the facts need, and every event is immediately reduced
into compact arrays. Nothing else of the trace is kept.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import msgspec

from advisor.inputs import progress
from advisor.inputs.taxonomy import Taxonomy
from advisor.model import InputError
from advisor.parsers.trace_view.accumulator import Accumulator, BadEvent
from advisor.parsers.trace_view.events import ARRAY_DECODER, OBJECT_DECODER
from advisor.parsers.trace_view.schema import TRACE_VIEW
from advisor.parsers.traces.blocks import check_event_size, decode_error, find_cut
from advisor.parsers.traces.steps import TraceData
from advisor.parsers.traces.whole import reduce_steps

MIB = 1024 * 1024

# 2 MiB: each process holds a quarter of the bytes and of the decoded events of 8 MiB blocks
# (a 1 GiB trace's peak ~200 -> ~155 MiB over the process and its workers), for as many
# instructions (a decode call's overhead is nothing beside 2 MiB of JSON) and no more CPU time
# (~5% less on a quiet machine: the decoded events are still in the caches when read)
BLOCK_BYTES = 2 * 1024 * 1024
# A block boundary must fall between two top-level events; retrying a few blocks covers an event
# whose args happen to contain "}, {" (a list of objects).
MAX_CARRY_BLOCKS = 4


class _Readable(Protocol):
    def readinto(self, buffer: memoryview, /) -> int: ...


def _stream_array(
    path: Path,
    acc: Accumulator,
    head: bytes,
    handle: _Readable,
    tick: Callable[[int], None] | None = None,
    block: int = BLOCK_BYTES,
    after_block: Callable[[], None] | None = None,
) -> None:
    """Decode the array block by block; each block is cut after the last complete event.

    One buffer is reused for every block: allocating a fresh buffer per block costs more
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
                batch = ARRAY_DECODER.decode(view[: cut + 1])
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


def _finish(path: Path, acc: Accumulator, carry: bytes, offset: int) -> None:
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
            acc.add(ARRAY_DECODER.decode(b"[" + piece + b"]"))
        except msgspec.DecodeError as exc:
            raise decode_error(path, exc, offset, acc.events) from None


def read_trace(path: Path, taxonomy: Taxonomy) -> TraceData:
    acc = Accumulator(taxonomy)
    try:
        with path.open("rb") as handle:
            head = handle.read(65536)
            stripped = head.lstrip()
            if not stripped:
                raise InputError(str(path), "empty file")
            if stripped.startswith(b"["):
                handle.seek(len(head) - len(stripped) + 1)
                size = path.stat().st_size
                # a small trace gets a buffer of its own size: zeroing a whole block for a small
                # rank of a large cluster costs more than decoding it
                block = max(65536, min(BLOCK_BYTES, size + 1))
                with progress.task(f"decoding {path.name}", round(size / MIB), "MiB") as bar:
                    _stream_array(
                        path, acc, b"", handle, lambda n: bar.advance(n / MIB), block=block
                    )
            elif stripped.startswith(b"{"):
                data = head + handle.read()
                try:
                    acc.add(OBJECT_DECODER.decode(data).traceEvents)
                except msgspec.DecodeError as exc:
                    raise decode_error(path, exc, 0, 0) from None
            else:
                raise InputError(str(path), "not a Chrome trace (expected a JSON array or object)")
    except RecursionError:  # an args value nested thousands deep: not a profiler's trace
        raise InputError(str(path), "JSON nested too deeply for the decoder") from None
    except BadEvent as exc:
        raise InputError(str(path), f"an event cannot be placed on the timeline: {exc}") from None
    except OSError as exc:
        raise InputError(str(path), f"cannot read: {exc.strerror}") from None
    trace = reduce_steps(path, acc, TRACE_VIEW)
    trace.collective_sizes = acc.collective_sizes
    return trace
