"""Cutting a JSON array of trace events into blocks at event boundaries, and saying where a
block went wrong: shared by the torch_npu and PyTorch trace readers."""

from __future__ import annotations

import re
from pathlib import Path

from advisor.core import limits
from advisor.model import InputError

# what separates two top-level events, in the styles profilers write
SEPARATORS = (b"}, {", b"},{", b"},\n{", b"},\r\n{", b"}, \n{")

# the same, any blank between: where a cut point of the file is looked for
EVENT_BOUNDARY = re.compile(rb"\}\s*,\s*\{")

TAIL_WINDOW = 1 << 20
# the tail searched first: events are far smaller, and each separator style the file does not
# use is scanned over the whole window (1 MiB four times per block cost ~4% of decoding)
FIRST_WINDOW = 1 << 16


def find_cut(data: bytes | bytearray, size: int | None = None) -> int:
    """Index of the ',' after the last top-level '}' that is followed by '{' (or -1).

    Only the tail of the block is searched first, then wider tails: scanning 8 MiB for each
    separator style that the file does not use would cost more than decoding it. The last
    separator of a tail is the last of the block.
    """
    end = len(data) if size is None else size
    lo = max(0, end - FIRST_WINDOW)
    while True:
        best = -1
        for sep in SEPARATORS:
            pos = data.rfind(sep, lo, end)
            if pos > best:
                best = pos
        if best >= 0 or lo == 0:
            return best + 1 if best >= 0 else -1
        lo = max(0, end - TAIL_WINDOW) if end - lo < TAIL_WINDOW else max(0, lo - 8 * TAIL_WINDOW)


BYTE_RE = re.compile(r"byte (\d+)")


def decode_error(path: Path, exc: Exception, offset: int, complete: int) -> InputError:
    text = str(exc)
    m = BYTE_RE.search(text)
    if "truncated" in text.lower():
        where = "the file ends in the middle of an event (truncated)"
    elif m:
        where = f"invalid JSON near byte {offset + int(m.group(1)) - 1}"
    else:
        where = f"invalid JSON after byte {offset}"
    return InputError(str(path), f"{where}; {complete} events were read before it ({text})")


def check_event_size(path: Path, carry: bytes, offset: int) -> None:
    """No event boundary for longer than any real event: refuse (scanning on would be
    quadratic in the event's size)."""
    limit = limits.trace_max_event_bytes()
    if len(carry) > limit:
        raise InputError(
            str(path),
            f"no event ends within {limit:,} bytes of byte {offset} (ADVISOR_MAX_EVENT_BYTES): "
            "not a trace, or an event larger than any profiler writes",
        )
