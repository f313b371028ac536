"""Tolerant, column-selective reading of profiler CSV files."""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator
from pathlib import Path

from advisor.model import InputError
from advisor.parsers.bounds import NOT_AVAILABLE


def clean(cell: str) -> str:
    """Strip the quirks of real files: trailing TABs, literal quotes around shapes, spaces."""
    return cell.strip().strip('"').strip()


def number(cell: str) -> float | None:
    """A finite number, or None (blank, N/A, not a number, NaN or an infinity)."""
    text = clean(cell)
    if text in NOT_AVAILABLE:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def integer(cell: str) -> int | None:
    value = number(cell)
    return None if value is None or abs(value) > 2**62 else int(value)


class CsvTable:
    """A CSV file read row by row, with columns found by name (aliases allowed)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._handle = path.open(newline="", encoding="utf-8-sig")
        except OSError as exc:
            raise InputError(str(path), f"cannot read: {exc.strerror}") from None
        self._reader = csv.reader(self._handle)
        try:
            header = next(self._reader)
        except StopIteration:
            self._handle.close()
            raise InputError(str(path), "empty file (no header row)") from None
        except (csv.Error, UnicodeDecodeError) as exc:
            self._handle.close()
            raise InputError(str(path), f"not a readable CSV file: {exc}") from None
        self.header = [clean(h) for h in header]
        self._index = {name: i for i, name in enumerate(self.header)}
        # a column named twice: which one holds the values is a guess, so reading it is refused
        self._twice = {name for name in self.header if self.header.count(name) > 1 and name}

    def column(self, *names: str) -> int | None:
        """Index of the first of `names` present in the header, or None."""
        for name in names:
            if name in self._index:
                self._refuse_twice(name)
                return self._index[name]
        return None

    def _refuse_twice(self, name: str) -> None:
        if name in self._twice:
            self._handle.close()
            raise InputError(str(self.path), f"column {name} appears twice in the header")

    def require(self, *names: str) -> list[int]:
        """Indexes of the named columns; one clear error listing every missing one."""
        missing = [n for n in names if n not in self._index]
        if missing:
            self._handle.close()
            raise InputError(str(self.path), f"missing column(s) {', '.join(missing)}")
        for name in names:
            self._refuse_twice(name)
        return [self._index[n] for n in names]

    @property
    def line(self) -> int:
        """The file line of the row last read, for errors that name it."""
        return self._reader.line_num

    def rows(self) -> Iterator[list[str]]:
        width = len(self.header)
        short = max(width, 2)  # a row of one cell may be a blank line
        try:
            with self._handle:
                for row in self._reader:
                    # a full row costs one comparison; a short one is a blank line or padded
                    if len(row) < short:
                        if not row or (len(row) == 1 and not row[0].strip()):
                            continue
                        if len(row) < width:
                            row = row + [""] * (width - len(row))
                    yield row
        except (csv.Error, UnicodeDecodeError) as exc:
            raise InputError(str(self.path), f"unreadable CSV content: {exc}") from None
