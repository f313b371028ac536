"""The MindSpeed-LLM FSDP2 config's schema: its sections and keys, and its problems explained
in the backend's terms (a key in the wrong section, a value of the wrong kind)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from advisor.core.validation import schema_violations
from advisor.core.values import get_path
from advisor.core.yamlio import load_data
from advisor.dialects.base import ConfigProblem
from advisor.dialects.fsdp2.repository_schema import (
    BUNDLED,
    KeySchema,
    bundled_schema,
)
from advisor.model import InputError


def load_config(path: Path) -> dict[str, Any]:
    data = load_data(path)
    if not isinstance(data, dict):
        kind = "empty" if data is None else type(data).__name__
        raise InputError(str(path), f"a training config must be a YAML mapping, got {kind}")
    return data


FSDP2_SCHEMA = BUNDLED


def fsdp2_keys(schema: KeySchema | None = None) -> dict[str, dict[str, Any]]:
    """section -> key -> its schema (type description and default): the given schema's (a
    repository's own), else the bundled one."""
    return (schema or bundled_schema()).keys


def _homes(key: str, keys: Mapping[str, Mapping[str, Any]]) -> list[str]:
    return [section for section, body in keys.items() if key in body]


def _unknown_section(
    section: str, body: object, keys: Mapping[str, Mapping[str, Any]], per: str
) -> list[ConfigProblem]:
    """A section the backend does not read: each of its keys that another section holds is
    misplaced (a config written for a release whose sections differ, say `optimization` before
    it existed), the section itself unknown when anything else is left in it."""
    problems: list[ConfigProblem] = []
    rest = not isinstance(body, dict) or not body
    for key in sorted(body) if isinstance(body, dict) else []:
        homes = _homes(str(key), keys)
        if not homes:
            rest = True
            continue
        problems.append(
            ConfigProblem(
                f"{section}.{key}",
                f"{section} is not a section of the backend, so it silently ignores the key; "
                f"it belongs in {homes[0]}{per}",
                f"{homes[0]}.{key}",
            )
        )
    if rest:
        reads = ", ".join(keys)
        problems.append(
            ConfigProblem(section, f"unknown section (the backend reads only {reads}){per}")
        )
    return problems


def config_problems(data: Any, schema: KeySchema | None = None) -> list[ConfigProblem]:
    """Schema problems of an FSDP2 config, explained in the backend's terms; judged by
    `schema` (a repository's own argument dataclasses) when given, else the bundled one."""
    keys = fsdp2_keys(schema)
    text = schema.text if schema is not None else None
    per = f" (per the repository's {schema.source})" if schema is not None else ""
    problems: list[ConfigProblem] = []
    for v in schema_violations(data, FSDP2_SCHEMA, text):
        where = ".".join(str(p) for p in v.path)
        if v.validator == "additionalProperties" and isinstance(v.instance, dict):
            section = str(v.path[0]) if v.path else None
            allowed = set(keys) if section is None else set(keys.get(section, {}))
            for key in sorted(k for k in v.instance if k not in allowed):
                if section is None:
                    problems.extend(_unknown_section(str(key), v.instance[key], keys, per))
                    continue
                homes = _homes(str(key), keys)
                if homes:
                    problems.append(
                        ConfigProblem(
                            f"{section}.{key}",
                            f"not a key of {section}, so the backend silently ignores it; it belongs in {homes[0]}{per}",
                            f"{homes[0]}.{key}",
                        )
                    )
                else:
                    problems.append(
                        ConfigProblem(
                            f"{section}.{key}",
                            f"unknown key: {section} has no '{key}', the backend silently ignores it{per}",
                        )
                    )
        elif len(v.path) == 2 and str(v.path[0]) in keys and str(v.path[1]) in keys[str(v.path[0])]:
            spec = keys[str(v.path[0])][str(v.path[1])]
            problems.append(
                ConfigProblem(
                    where, f"{v.instance!r} is not a valid {spec.get('description', 'value')}"
                )
            )
        else:
            problems.append(ConfigProblem(where or "(top level)", v.message))
    return problems


def fsdp_size(config: Mapping[str, object] | None) -> int | None:
    """`parallel.fsdp_size` when it is a whole number, else None (unset or not a number)."""
    value = get_path(config, "parallel.fsdp_size")
    return value if isinstance(value, int) and not isinstance(value, bool) else None
