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
    # single values left out while their row is kept (a PMU ratio outside [0, 1]: the kernel
    # still counts, without pipe data)
    ignored: dict[str, int] = field(default_factory=dict)
    first_ignored: dict[str, str] = field(default_factory=dict)

    def reject(self, path: Path, where: str, value: object, why: str = "", count: int = 1) -> None:
        """Raise the input error, or (skipping) count the rows the caller then drops."""
        what = why or "not a finite non-negative number"
        text = f"{where}: {value!r} is {what}"
        if not self.skip:
            raise InputError(str(path), text)
        key = str(path)
        self.dropped[key] = self.dropped.get(key, 0) + count
        self.first.setdefault(key, text)

    def drop(self, path: Path, where: str, value: object, why: str) -> None:
        """Count a row whose values contradict each other: it is left out with a warning, not
        refused, because each value alone is a plausible time and the rest of the file holds."""
        text = f"{where}: {value!r} is {why}"
        key = str(path)
        self.dropped[key] = self.dropped.get(key, 0) + 1
        self.first.setdefault(key, text)

    def ignore(
        self, path: Path, where: str, value: object, why: str, then: str, count: int = 1
    ) -> None:
        """Count values left out of rows that are otherwise used (`then`: what such a row
        counts as without its value)."""
        key = str(path)
        self.ignored[key] = self.ignored.get(key, 0) + count
        self.first_ignored.setdefault(key, f"{where}: {value!r} is {why}; {then}")

    def by_name(self) -> dict[str, int]:
        """Dropped rows per file name (the name a fact's source quotes)."""
        return {Path(path).name: count for path, count in self.dropped.items()}

    def warnings(self) -> list[str]:
        dropped = [
            f"{path}: {count} row(s) or event(s) with values that cannot be right were dropped "
            f"(first: {self.first[path]})"
            for path, count in sorted(self.dropped.items())
        ]
        return dropped + [
            f"{path}: {count} value(s) outside their range were left out "
            f"(first: {self.first_ignored[path]})"
            for path, count in sorted(self.ignored.items())
        ]

    def measure(self, path: Path, where: str, value: object) -> float | Invalid | None:
        """parse_measure, rejecting (or counting) an INVALID value."""
        parsed = parse_measure(value)
        if isinstance(parsed, Invalid):
            self.reject(path, where, value)
        return parsed


# The step model's columns are sums of the same timeline, rounded separately: a relative slack
# of 1% (and 1 us for tiny steps) absorbs the rounding, not a column off by a factor.
STEP_SLACK_RATIO = 0.01
STEP_SLACK_US = 1.0


def _differs(value: float, expected: float) -> bool:
    return abs(value - expected) > max(STEP_SLACK_US, STEP_SLACK_RATIO * max(value, expected))


def step_model_breach(
    values: dict[str, float | None],
) -> tuple[str, str] | None:
    """(column, why) when a step row's columns contradict each other, else None.

    The identities of msprof's step model: communication is its exposed part plus its overlapped
    part; the overlapped part runs under computing, so it cannot exceed it; and the device's
    stage time is computing + exposed communication + free (with the bubble, when the stage
    leaves it out). A row that breaks them gives ratios above 1 or below 0 downstream.
    """
    computing = values.get("Computing") or 0.0
    exposed = values.get("Communication(Not Overlapped)") or 0.0
    overlapped = values.get("Overlapped") or 0.0
    communication = values.get("Communication") or 0.0
    free = values.get("Free") or 0.0
    if _differs(exposed + overlapped, communication):
        return (
            "Communication",
            f"not Communication(Not Overlapped) {exposed:g} + Overlapped {overlapped:g}",
        )
    if overlapped > computing and _differs(overlapped, computing):
        return "Overlapped", f"more than Computing {computing:g} (overlap runs under computing)"
    stage = values.get("Stage")
    if stage:
        busy = computing + exposed + free
        bubble = values.get("Bubble") or 0.0
        if _differs(busy, stage) and _differs(busy - bubble, stage):
            return (
                "Stage",
                f"not Computing + Communication(Not Overlapped) + Free ({busy:g})",
            )
    return None
