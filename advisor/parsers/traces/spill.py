"""Spill files: the columns a decoding process has filled, written out a segment at a time.

A process decoding a trace (a worker with its byte range, or the one process) writes its
columns whenever they pass budget.FLUSH_BYTES and empties them, so it holds the same memory at
any trace size. A format names its columns with any picklable key (the engine never looks
inside one). The file is a sequence of segments; each starts with its layout (which columns,
their array type codes and row counts), so it can be read back in file order, wholly or a few
columns at a time, by the process that wrote it or by another one.
"""

from __future__ import annotations

import os
import pickle
from array import array
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

_LENGTH_BYTES = 8
Key = TypeVar("Key", bound=Hashable)


@dataclass(frozen=True)
class Layout:
    """Where one segment's columns lie in its file: they follow one another from `offset`."""

    offset: int
    columns: tuple[tuple[Hashable, str, int], ...]  # key, array type code, rows

    def rows(self, key: Hashable) -> int:
        return next((size for k, _, size in self.columns if k == key), 0)

    def read(self, handle: BinaryIO, key: Hashable) -> array[Any]:
        """One column of the segment (an empty one when the segment has none of `key`)."""
        at = self.offset
        for k, typecode, size in self.columns:
            width = array(typecode).itemsize
            if k == key:
                handle.seek(at)
                column: array[Any] = array(typecode)
                column.fromfile(handle, size)
                return column
            at += size * width
        raise KeyError(key)


class SpillWriter:
    """Appends segments to a spill file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.handle = path.open("wb")

    def __enter__(self) -> SpillWriter:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self.handle.close()

    def write(self, columns: Iterable[tuple[Hashable, array[Any]]]) -> Layout:
        """A segment of `columns` (in this order), which are emptied."""
        named = list(columns)
        header = pickle.dumps([(key, c.typecode, len(c)) for key, c in named])
        self.handle.write(len(header).to_bytes(_LENGTH_BYTES, "little"))
        self.handle.write(header)
        layout = Layout(self.handle.tell(), tuple((k, c.typecode, len(c)) for k, c in named))
        for _, column in named:
            column.tofile(self.handle)
            del column[:]
        self.handle.flush()
        return layout


def layouts(path: Path) -> Iterator[Layout]:
    """Each segment's layout, in file order (the headers alone are read)."""
    with path.open("rb") as handle:
        while head := handle.read(_LENGTH_BYTES):
            columns = pickle.loads(handle.read(int.from_bytes(head, "little")))
            layout = Layout(handle.tell(), tuple(columns))
            yield layout
            handle.seek(
                sum(size * array(typecode).itemsize for _, typecode, size in columns),
                os.SEEK_CUR,
            )


def segments(path: Path, wanted: Callable[[Key], bool]) -> Iterator[dict[Key, Any]]:
    """Each segment's wanted columns, in file order; the others are skipped unread."""
    with path.open("rb") as handle:
        while head := handle.read(_LENGTH_BYTES):
            found: dict[Key, Any] = {}
            for key, typecode, size in pickle.loads(handle.read(int.from_bytes(head, "little"))):
                if wanted(key):
                    column: array[Any] = array(typecode)
                    column.fromfile(handle, size)
                    found[key] = column
                else:
                    handle.seek(size * array(typecode).itemsize, os.SEEK_CUR)
            yield found
