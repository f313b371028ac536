"""How a fact's value is written for people, by unit: the one value formatter."""

from __future__ import annotations

from collections.abc import Callable

GIB = 1024**3

# units whose numbers always read the same way
_NUMBER_BY_UNIT: dict[str, Callable[[float], str]] = {
    "ratio": lambda n: f"{n:.1%}",
    "bytes": lambda n: f"{n / GIB:.2f} GiB",
    "ms": lambda n: f"{n:.2f} ms",
    # MB of 1024 x 1024 bytes, the unit HCCL_BUFFSIZE is set in
    "MB": lambda n: f"{n:.1f} MB",
}


# decimals of the per-key numbers of a mapping: milliseconds to the hundredth, bandwidth to the
# tenth of a GB/s
_MAPPING_DIGITS = {"ms": 2, "GB/s": 1}


def format_value(value: object, unit: str, compact: bool = False) -> str:
    """`12.5%`, `3.20 ms`, `1.50 GiB`, `24.5 M`...; `compact` writes other numbers as `%g`
    (inside rule messages, where thousands separators would read as lists)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "-"
    if isinstance(value, int | float):
        return _number(value, unit, compact)
    if isinstance(value, dict):
        return _mapping(value, unit)
    if isinstance(value, list):
        return _listing(value)
    return str(value)


def _number(number: int | float, unit: str, compact: bool) -> str:
    by_unit = _NUMBER_BY_UNIT.get(unit)
    if by_unit is not None:
        return by_unit(number)
    if compact:
        return f"{number:g}"
    if unit == "count" and isinstance(number, int) and number >= 10**6:
        return f"{number / 1e9:.3f} B" if number >= 10**9 else f"{number / 1e6:.1f} M"
    if unit == "FLOP":
        return f"{number / 1e9:.2f} GFLOP"
    if isinstance(number, float):
        return f"{number:,.1f}" if abs(number) >= 1000 else f"{number:.4g}"
    return str(number)


def _mapping(value: dict[object, object], unit: str) -> str:
    if not value:
        return "none"
    if unit == "ratio" and all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in value.values()
    ):
        return ", ".join(f"{k} {v:.1%}" for k, v in value.items())
    if unit in _MAPPING_DIGITS:
        # a few significant digits: 15.6464 ms of all-reduce reads as noise next to 15.65
        digits = _MAPPING_DIGITS[unit]
        return ", ".join(f"{k} {v:.{digits}f}" for k, v in value.items()) + f" ({unit})"
    if unit == "bytes" and all(isinstance(v, int | float) for v in value.values()):
        return ", ".join(f"{k} {_number(v, unit, False)}" for k, v in value.items())  # type: ignore[arg-type]
    if all(isinstance(v, int | float | str) for v in value.values()):
        return ", ".join(
            f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}" for k, v in value.items()
        )
    return str(value)


def _listing(value: list[object]) -> str:
    if all(not isinstance(item, dict) for item in value) and len(str(value)) <= 60:
        return str(value)
    return f"{len(value)} entr{'y' if len(value) == 1 else 'ies'}"
