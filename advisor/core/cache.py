"""The tool's cache: what was worked out once for exact bytes (a data file found valid, the
verdict on a config, the derivers' order), kept as JSON under a digest of those bytes, the
schema's and the tool's version. The cache lives in ADVISOR_CACHE_DIR, else
$XDG_CACHE_HOME/advisor, else ~/.cache/advisor; a cache that cannot be written is not an error
(the work is done again on every run instead).
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import cache
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


def cache_entry(kind: str, schema_name: str | bytes, content: bytes) -> Path | None:
    """The cache file of `kind` for these bytes checked against these bytes of the schema (a
    shipped schema's name, or a schema's own bytes) by this version of the tool (None: the
    schema is unreadable, or there is no cache folder)."""
    prefix = _prefix(schema_name) if isinstance(schema_name, bytes) else _shipped(schema_name)
    folder = cache_dir()
    if prefix is None or folder is None:
        return None
    digest = prefix.copy()
    _add(digest, content)
    return folder / kind / f"{digest.hexdigest()}.json"


@cache
def _shipped(schema_name: str) -> hashlib._Hash | None:
    """The digest so far of a shipped schema, read and hashed once per process: a check keys
    each of its ~75 data files by the same rule schema (23 kB)."""
    try:
        return _prefix((schemas_dir() / schema_name).read_bytes())
    except OSError:
        return None


def _prefix(schema: bytes) -> hashlib._Hash:
    from advisor import __version__

    digest = hashlib.sha256()
    for part in (CACHE_FORMAT.encode(), __version__.encode(), schema):
        _add(digest, part)
    return digest


def _add(digest: hashlib._Hash, part: bytes) -> None:
    digest.update(len(part).to_bytes(8, "little"))
    digest.update(part)


def read_cached(entry: Path) -> Any:
    """What `write_cached` kept in `entry`, or None (absent, unreadable)."""
    try:
        with entry.open("rb") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def write_cached(entry: Path, data: Any) -> None:
    """Keep plain JSON data in `entry`; anything JSON would change is not kept."""
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
