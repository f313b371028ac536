"""torch_npu's trace timestamps: strings of epoch microseconds, turned into exact relative
microseconds."""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter

# Integer digits kept after removing a shared epoch prefix: 1e10 us is ~2.8 hours of trace, and
# 13 significant digits stay exact in float64 (absolute epoch microseconds would not).
KEPT_INTEGER_DIGITS = 10
# Farther than any timestamp (epoch microseconds are ~1.7e15, and numeric timestamps are not
# made relative): NaN, infinities and corrupt values are refused with a ValueError like any other
# unparsable timestamp.
MAX_RELATIVE_US = 1e17
# what is left of a time once its digits and point are taken out (nothing, for a plain time)
_DIGITS_AND_POINT = str.maketrans("", "", "0123456789.")
# digits and a point, at most this long, are a time within MAX_RELATIVE_US (or not a number)
_TAIL_DIGITS_MAX = 17


class TimestampParser:
    """Turn torch_npu's string timestamps into exact relative microseconds.

    Absolute epoch microseconds ("1704161511420306.491") lose precision as float64; the shared
    leading digits are cut off first, so the remaining 13 significant digits stay exact.
    """

    def __init__(self) -> None:
        self.prefix: str | None = None
        self.cut = 0
        self.length = 0
        self.origin = 0
        self._head = itemgetter(slice(0, 0))
        self._tail = itemgetter(slice(0, None))

    def seed(self, text: str) -> None:
        """Fix the prefix from a sample timestamp, so that parallel readers agree on the origin."""
        if self.prefix is None:
            self._init(text)

    def _init(self, text: str) -> None:
        integer = text.split(".", 1)[0]
        self.cut = max(0, len(integer) - KEPT_INTEGER_DIGITS)
        self.prefix = text[: self.cut]
        self.length = len(text)
        self.origin = int(self.prefix or "0") * 10**KEPT_INTEGER_DIGITS
        self._head = itemgetter(slice(0, self.cut))
        self._tail = itemgetter(slice(self.cut, None))

    def many(self, values: Sequence[str | float]) -> list[float]:
        """The times of many events at once, as __call__ reads each: where every value is a
        string of the sample's length and prefix, of digits and a point, sliced and parsed by
        C loops (a batch's kernels and flows: ~40% of a trace's events); otherwise value by
        value (which names the first bad one)."""
        prefix = self.prefix
        if prefix is not None and values and self.length - self.cut <= _TAIL_DIGITS_MAX:
            try:
                if set(map(len, values)) == {self.length}:  # type: ignore[arg-type]
                    # the values side by side: column k of the prefix is every length-th
                    # character from k
                    joined = "".join(values)  # type: ignore[arg-type]
                    count, length = len(values), self.length
                    if not joined.translate(_DIGITS_AND_POINT) and all(
                        joined[k::length] == digit * count for k, digit in enumerate(prefix)
                    ):
                        return list(map(float, map(self._tail, values)))  # type: ignore[arg-type]
            except (TypeError, ValueError):
                pass  # a number, or two points: value by value
        return list(map(self, values))

    def __call__(self, value: str | float) -> float:
        # the common case first, in this one call: the reader calls it for millions of events
        if (
            isinstance(value, str)
            and len(value) == self.length
            and value.startswith(self.prefix or "")
        ):
            number = float(value[self.cut :])
        else:
            number = self._parse(value)
        if not -MAX_RELATIVE_US <= number <= MAX_RELATIVE_US:  # false for NaN too
            raise ValueError(f"ts {value!r} is not a timestamp of this trace")
        return number

    def _parse(self, value: str | float) -> float:
        if value.__class__ is not str:
            return float(value)
        text: str = value
        if len(text) == self.length and text.startswith(self.prefix or ""):
            return float(text[self.cut :])
        if self.prefix is None:
            self._init(text)
            return self._parse(text)
        integer, _, fraction = text.partition(".")
        if not integer.removeprefix("-").isdigit() or (fraction and not fraction.isdigit()):
            raise ValueError(f"ts {value!r} is not a decimal timestamp")
        return float(int(integer) - self.origin) + (float("0." + fraction) if fraction else 0.0)
