"""The one place where JSON Schema validation happens."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for

from advisor.core.resources import schemas_dir


@cache
def _validator(schema_name: str) -> Validator:
    """A validator of the draft the schema declares (the SARIF schema is draft-04)."""
    path = schemas_dir() / schema_name
    schema = json.loads(path.read_text(encoding="utf-8"))
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


def schema_violations(instance: Any, schema_name: str) -> list[SchemaViolation]:
    validator = _validator(schema_name)
    return [
        SchemaViolation(tuple(e.absolute_path), str(e.validator), e.message, e.instance)
        for e in sorted(
            validator.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path))
        )
    ]
