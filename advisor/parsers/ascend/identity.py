"""Whether a trace file is torch_npu's timeline, whatever it is called.

A PyTorch profiler trace and torch_npu's trace_view.json are both Chrome trace-event JSON, so a
file is routed by its name; a trace_view.json renamed to `*.pt.trace.json` (or passed under
another name) would be read as a GPU trace and found to have no device kernels. Its content
says what it is: the device lane of the Ascend timeline is a process named "Ascend Hardware".
This is only asked after such a read failed, so it may read the whole file.
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path
from typing import BinaryIO

from advisor.parsers.trace_view.schema import DEVICE_LANE

_MARKER = f'"{DEVICE_LANE}"'.encode()
_CHUNK = 8 * 1024 * 1024


def is_ascend_timeline(path: Path) -> bool:
    """True when the file names the Ascend device lane; False when it does not or cannot be read."""
    try:
        with _open(path) as handle:
            tail = b""
            while chunk := handle.read(_CHUNK):
                if _MARKER in tail + chunk:
                    return True
                # a marker split between two chunks is found in the next round
                tail = chunk[-len(_MARKER) :]
    except (OSError, EOFError, zlib.error):  # gzip.BadGzipFile is an OSError
        return False
    return False


def _open(path: Path) -> BinaryIO:
    if path.suffix == ".gz":
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return path.open("rb")
