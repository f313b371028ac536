"""The tool's own data files (rules, taxonomy, devices...) loaded and checked against their
schemas, with a cache of the files already found valid.

Every command reads these YAML files; parsing them and loading a JSON Schema validator cost
more than a small profile's whole analysis. A file whose exact bytes were validated before
against the exact bytes of the same schema, by the same version of the tool, is read back from
the cache as JSON: any edit to the file, the schema or the tool misses the cache and validates
again. The cache lives in ADVISOR_CACHE_DIR, else $XDG_CACHE_HOME/advisor, else
~/.cache/advisor; a cache that cannot be written is not an error (the file is validated on
every run instead).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from advisor.core.cache import CACHE_ENV, cache_dir, cache_entry, read_cached, write_cached
from advisor.model import DataError

__all__ = ["CACHE_ENV", "cache_dir", "load_checked"]


def load_checked(path: Path, schema_name: str) -> tuple[Any, list[str]]:
    """The file's data and its schema errors ([] when valid; then cached)."""
    entry = _entry(path, schema_name)
    cached = read_cached(entry) if entry is not None else None
    if cached is not None:
        return cached, []
    # imported on a miss only: together they take longer to import than a cached read
    from advisor.core.validation import schema_errors
    from advisor.core.yamlio import load_data

    data = load_data(path)
    errors = schema_errors(data, schema_name)
    if not errors and entry is not None:
        write_cached(entry, data)
    return data, errors


def load_valid(path: Path, schema_name: str) -> Any:
    """The file's data; a DataError naming the file and its first schema error otherwise."""
    data, errors = load_checked(path, schema_name)
    if errors:
        raise DataError(f"{path}: {errors[0]}")
    return data


def _entry(path: Path, schema_name: str) -> Path | None:
    """The cache file of these bytes of the file and of its schema (None: unreadable, and the
    loader will say why; or no cache folder)."""
    try:
        text = path.read_bytes()
    except OSError:
        return None
    return cache_entry("validated", schema_name, text)
