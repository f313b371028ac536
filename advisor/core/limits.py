"""Limits on what the tool reads, so that no input can hang it or exhaust memory.

Each limit has a default generous for every real file and can be raised through an environment
variable (documented in the README, section "Limits").
"""

from __future__ import annotations

import os

from advisor.model import InputError


def _limit(name: str, default: int) -> int:
    text = os.environ.get(name)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise InputError(name, f"must be a whole number, got {text!r}") from None
    if value <= 0:
        raise InputError(name, f"must be positive, got {value}")
    return value


def yaml_max_depth() -> int:
    """Nesting depth of a YAML document (upstream configs nest 4 deep)."""
    return _limit("ADVISOR_YAML_MAX_DEPTH", 64)


def yaml_max_nodes() -> int:
    """Values in a YAML document once its aliases are expanded (an alias bomb expands to
    billions)."""
    return _limit("ADVISOR_YAML_MAX_NODES", 200_000)


def text_max_line() -> int:
    """Characters on one line of a config or script."""
    return _limit("ADVISOR_MAX_LINE_CHARS", 100_000)


def text_max_bytes() -> int:
    """Size of a config, script or log read whole."""
    return _limit("ADVISOR_MAX_TEXT_BYTES", 64 * 1024 * 1024)


def trace_max_bytes() -> int:
    """Decoded size of a PyTorch profiler trace (a gzip bomb expands without end). Memory is
    bounded at any size; this bounds the time (~5-20 ms per MiB) and the scratch files."""
    return _limit("ADVISOR_MAX_TRACE_BYTES", 64 * 1024**3)


def gzip_max_ratio() -> int:
    """Decompressed / compressed size of a gzipped trace past its first 64 MB (real traces
    compress 5-30x; a bomb, thousands)."""
    return _limit("ADVISOR_MAX_GZIP_RATIO", 200)


def trace_max_event_bytes() -> int:
    """One event of trace_view.json (real events are a few KB, with call stacks)."""
    return _limit("ADVISOR_MAX_EVENT_BYTES", 16 * 1024**2)
