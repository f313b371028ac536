"""Byte sources for the PyTorch trace reader: a whole (possibly gzipped) file under the size
and expansion limits, or a window of a plain file (a worker's byte range)."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from advisor.core import limits
from advisor.model import InputError


class _Source(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class Window:
    """At most `left` bytes of an open file, from where it stands."""

    def __init__(self, handle: _Source, left: int) -> None:
        self.handle, self.left = handle, left

    def read(self, size: int = -1, /) -> bytes:
        if self.left <= 0:
            return b""
        data = self.handle.read(min(size, self.left) if size >= 0 else self.left)
        self.left -= len(data)
        return data


class Limited:
    """A binary stream counting what it yields: refused beyond the trace size limit, and a
    gzip stream beyond its expansion ratio (a bomb is stopped as it inflates)."""

    def __init__(self, path: Path, handle: _Source, gzipped: bool) -> None:
        self.path, self.handle = path, handle
        self.limit = limits.trace_max_bytes()
        self.ratio_cap = (
            max(64 * 1024**2, limits.gzip_max_ratio() * path.stat().st_size) if gzipped else None
        )
        self.total = 0

    def read(self, size: int) -> bytes:
        data = self.handle.read(size)
        self.total += len(data)
        if self.total > self.limit:
            raise InputError(
                str(self.path),
                f"decodes to more than {self.limit:,} bytes (ADVISOR_MAX_TRACE_BYTES): a gzip "
                "bomb, or a trace to cut with a shorter profiler schedule",
            )
        if self.ratio_cap is not None and self.total > self.ratio_cap:
            raise InputError(
                str(self.path),
                f"expands more than {limits.gzip_max_ratio()}x (ADVISOR_MAX_GZIP_RATIO): "
                "a gzip bomb?",
            )
        return data
