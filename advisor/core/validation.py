"""The one place where JSON Schema validation happens.

jsonschema is imported only when something is validated: it takes longer to import than
`advisor check` takes to check one config. The verdict on a user's config (its violations, or
none) is kept in the tool's cache under the digest of the exact data, the schema's bytes and the
tool's version, so checking the same config again reads the verdict back instead of importing
the validator; any change to the config, the schema or the tool validates again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.core.cache import cache_entry, read_cached, write_cached
from advisor.core.resources import schemas_dir

if TYPE_CHECKING:
    from jsonschema.protocols import Validator


@cache
def _validator(schema_name: str) -> Validator:
    """A validator of the draft the schema declares (the SARIF schema is draft-04)."""
    path = schemas_dir() / schema_name
    return _validator_of(path.read_text(encoding="utf-8"))


@cache
def _validator_of(schema_text: str) -> Validator:
    from jsonschema import Draft202012Validator
    from jsonschema.validators import validator_for

    schema = json.loads(schema_text)
    # the shipped schemas are checked against their meta-schemas by the tests, not at every run
    cls = validator_for(schema, default=Draft202012Validator)
    validator: Validator = cls(schema)
    return validator


def schema_errors(instance: Any, schema_name: str) -> list[str]:
    """Return readable errors (`$.json.path: message`), the most relevant first; [] when valid."""
    validator = _validator(schema_name)
    errors = list(validator.iter_errors(instance))
    if not errors:
        return []
    from jsonschema.exceptions import best_match

    first = best_match(errors)
    ordered = [first] + [e for e in errors if e is not first]
    return [f"{e.json_path}: {e.message}" for e in ordered]


@dataclass(frozen=True)
class SchemaViolation:
    """One validation error with its location as path parts (for callers that explain it)."""

    path: tuple[str | int, ...]
    validator: str
    message: str
    instance: Any


def schema_violations(
    instance: Any, schema_name: str, schema_text: str | None = None
) -> list[SchemaViolation]:
    """The instance's violations sorted by path; the verdict on the same data, schema and tool
    version is read from the cache when it was kept there. `schema_text`: a schema built at
    run time (a repository's own), used instead of the shipped file `schema_name`."""
    entry = _verdict_entry(instance, schema_name, schema_text)
    cached = read_cached(entry) if entry is not None else None
    if isinstance(cached, list):
        return [
            SchemaViolation(tuple(path), kind, text, value) for path, kind, text, value in cached
        ]
    validator = _validator(schema_name) if schema_text is None else _validator_of(schema_text)
    found = [
        SchemaViolation(tuple(e.absolute_path), str(e.validator), e.message, e.instance)
        for e in sorted(
            validator.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path))
        )
    ]
    if entry is not None:
        write_cached(entry, [[list(v.path), v.validator, v.message, v.instance] for v in found])
    return found


def _verdict_entry(instance: Any, schema_name: str, schema_text: str | None) -> Path | None:
    """Where the verdict on this exact data is kept; None for data JSON cannot say exactly
    (integer keys, tuples, dates...: validated every time)."""
    try:
        text = json.dumps(instance, allow_nan=False)
    except (TypeError, ValueError):
        return None
    if json.loads(text) != instance:
        return None
    schema = schema_name if schema_text is None else schema_text.encode()
    return cache_entry("verdicts", schema, text.encode())
