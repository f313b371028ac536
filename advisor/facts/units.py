"""How a fact's value is written for people, by unit: the one value formatter."""

from __future__ import annotations

GIB = 1024**3


def format_value(value: object, unit: str, compact: bool = False) -> str:
    """`12.5%`, `3.20 ms`, `1.50 GiB`, `24.5 M`...; `compact` writes other numbers as `%g`
    (inside rule messages, where thousands separators would read as lists)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "-"
    number = value if isinstance(value, int | float) else None
    if unit == "ratio" and number is not None:
        return f"{number:.1%}"
    if unit == "bytes" and number is not None:
        return f"{number / GIB:.2f} GiB"
    if unit in ("ms", "GB/s") and isinstance(value, dict):
        return ", ".join(f"{k} {v:g}" for k, v in value.items()) + f" ({unit})"
    if unit == "ms" and number is not None:
        return f"{number:.2f} ms"
    if compact and number is not None:
        return f"{number:g}"
    if unit == "count" and isinstance(value, int) and value >= 10**6:
        return f"{value / 1e9:.3f} B" if value >= 10**9 else f"{value / 1e6:.1f} M"
    if unit == "FLOP" and number is not None:
        return f"{number / 1e9:.2f} GFLOP"
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) >= 1000 else f"{value:.4g}"
    if isinstance(value, dict) and all(isinstance(v, int | float | str) for v in value.values()):
        return ", ".join(
            f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}" for k, v in value.items()
        )
    if isinstance(value, list):
        if all(not isinstance(item, dict) for item in value) and len(str(value)) <= 60:
            return str(value)
        return f"{len(value)} entr{'y' if len(value) == 1 else 'ies'}"
    return str(value)
