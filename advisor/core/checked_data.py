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

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from advisor.core.resources import schemas_dir

CACHE_ENV = "ADVISOR_CACHE_DIR"
# bump when the cached form changes meaning
CACHE_FORMAT = "1"


def cache_dir() -> Path | None:
    """None when there is nowhere to keep it (no home directory, as in some containers)."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg) / "advisor"
    try:
        return Path.home() / ".cache" / "advisor"
    except (RuntimeError, KeyError):
        return None


def load_checked(path: Path, schema_name: str) -> tuple[Any, list[str]]:
    """The file's data and its schema errors ([] when valid; then cached)."""
    entry = _entry(path, schema_name)
    cached = _read(entry) if entry is not None else None
    if cached is not None:
        return cached, []
    # imported on a miss only: together they take longer to import than a cached read
    from advisor.core.validation import schema_errors
    from advisor.core.yamlio import load_data

    data = load_data(path)
    errors = schema_errors(data, schema_name)
    if not errors and entry is not None:
        _write(entry, data)
    return data, errors


def _entry(path: Path, schema_name: str) -> Path | None:
    """The cache file of these bytes of the file and of its schema (None: unreadable, and the
    loader will say why; or no cache folder)."""
    from advisor import __version__

    try:
        text = path.read_bytes()
        schema = (schemas_dir() / schema_name).read_bytes()
    except OSError:
        return None
    folder = cache_dir()
    if folder is None:
        return None
    digest = hashlib.sha256()
    for part in (CACHE_FORMAT.encode(), __version__.encode(), schema, text):
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    return folder / "validated" / f"{digest.hexdigest()}.json"


def _read(entry: Path) -> Any:
    try:
        with entry.open("rb") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def _write(entry: Path, data: Any) -> None:
    try:
        text = json.dumps(data, allow_nan=False)
    except (TypeError, ValueError):
        return  # not plain JSON data: validated on every run
    # JSON would turn integer keys into strings or tuples into lists: such data is not cached
    if json.loads(text) != data:
        return
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        scratch = entry.with_suffix(f".{os.getpid()}.tmp")
        scratch.write_text(text, encoding="utf-8")
        os.replace(scratch, entry)
    except OSError:
        return
