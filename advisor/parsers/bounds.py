"""Values at the boundary: what a reader may use, and what to do with what it may not.

Every duration, size and count a reader takes from a file must be a finite, non-negative number
(a NaN, an infinity, 1e308 microseconds or a negative time is never averaged into a fact). A
violation refuses the file with one line naming the file, the row and the value; with
`--skip-bad-files` the row is dropped instead and counted, and the reader's warnings say how
many rows of which file were dropped, with the first one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from advisor.model import InputError

NOT_AVAILABLE = {"", "N/A", "NA", "n/a", "-", "None", "null"}
# Larger than any profiler duration (a year in microseconds): such values are corruption.
MAX_DURATION_US = 3.2e13


class Invalid:
    """A value that is present but unusable (the row must be dropped)."""

    __slots__ = ()


INVALID = Invalid()


def parse_measure(value: object, limit: float = MAX_DURATION_US) -> float | Invalid | None:
    """A finite number in [0, limit]; None when absent (blank, N/A, null); INVALID otherwise."""
    if value is None:
        return None
    if isinstance(value, bool):
        return INVALID
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        text = value.strip().strip('"').strip()
        if text in NOT_AVAILABLE:
            return None
        try:
            number = float(text)
        except ValueError:
            return INVALID
    else:
        return INVALID
    if not math.isfinite(number) or number < 0 or number > limit:
        return INVALID
    return number


@dataclass
class BadValues:
    """Refuse (the default) or drop-and-count the rows whose values cannot be right."""

    skip: bool = False
    dropped: dict[str, int] = field(default_factory=dict)
    first: dict[str, str] = field(default_factory=dict)

    def reject(self, path: Path, where: str, value: object, why: str = "", count: int = 1) -> None:
        """Raise the input error, or (skipping) count the rows the caller then drops."""
        what = why or "not a finite non-negative number"
        text = f"{where}: {value!r} is {what}"
        if not self.skip:
            raise InputError(str(path), text)
        key = str(path)
        self.dropped[key] = self.dropped.get(key, 0) + count
        self.first.setdefault(key, text)

    def by_name(self) -> dict[str, int]:
        """Dropped rows per file name (the name a fact's source quotes)."""
        return {Path(path).name: count for path, count in self.dropped.items()}

    def warnings(self) -> list[str]:
        return [
            f"{path}: {count} row(s) or event(s) with values that cannot be right were dropped "
            f"(first: {self.first[path]})"
            for path, count in sorted(self.dropped.items())
        ]

    def measure(self, path: Path, where: str, value: object) -> float | Invalid | None:
        """parse_measure, rejecting (or counting) an INVALID value."""
        parsed = parse_measure(value)
        if isinstance(parsed, Invalid):
            self.reject(path, where, value)
        return parsed
