"""Which files are PyTorch profiler traces: cheap tests on names and first bytes, kept apart
from the reader so that finding the traces does not load it."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz", ".json", ".json.gz")


def is_kineto_file(path: Path) -> bool:
    return (
        path.is_file() and path.name.endswith(SUFFIXES) and not path.name.startswith("trace_view")
    )


SEARCH_DEPTH = 3  # folder levels below the given one


def kineto_files(folder: Path) -> list[Path]:
    """The traces of a folder: `*.pt.trace.json[.gz]`, else JSON files that begin like a
    PyTorch profiler trace (exported under another name)."""
    named = sorted(p for p in folder.glob("*.pt.trace.json*") if p.is_file())
    if named:
        return named
    sniffed = sorted(
        p for p in folder.glob("*.json*") if is_kineto_file(p) and _begins_like_kineto(p)
    )
    if sniffed:
        return sniffed
    # a job's folder often holds one folder per node or rank (prof/node0/rank3/...): searched
    # as deep as the Ascend rank folders, by the profiler's own file name only
    for level in range(1, SEARCH_DEPTH + 1):
        pattern = "/".join(["*"] * level) + "/*.pt.trace.json*"
        nested = sorted(p for p in folder.glob(pattern) if p.is_file())
        if nested:
            return nested
    return []


def _begins_like_kineto(path: Path) -> bool:
    try:
        opener = gzip.open if path.name.endswith(".gz") else open
        with opener(path, "rb") as handle:
            head = handle.read(65536)
    except (OSError, EOFError, zlib.error):
        return False
    # Kineto writes its header first: schemaVersion, deviceProperties, then traceEvents
    return b'"schemaVersion"' in head or (b'"traceEvents"' in head and b'"ph"' in head)
