"""The MindSpeed-LLM FSDP2 config's schema: its sections and keys, and its problems explained
in the backend's terms (a key in the wrong section, a value of the wrong kind)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from advisor.core.resources import schemas_dir
from advisor.core.validation import schema_violations
from advisor.core.values import get_path
from advisor.core.yamlio import load_data
from advisor.dialects.base import ConfigProblem
from advisor.model import InputError


def load_config(path: Path) -> dict[str, Any]:
    data = load_data(path)
    if not isinstance(data, dict):
        kind = "empty" if data is None else type(data).__name__
        raise InputError(str(path), f"a training config must be a YAML mapping, got {kind}")
    return data


FSDP2_SCHEMA = "config/mindspeed-fsdp2.schema.json"


@cache
def fsdp2_keys() -> dict[str, dict[str, Any]]:
    """section -> key -> its schema (type description and default)."""
    schema = json.loads((schemas_dir() / FSDP2_SCHEMA).read_text(encoding="utf-8"))
    return {s: dict(body["properties"]) for s, body in schema["properties"].items()}


def _homes(key: str) -> list[str]:
    return [section for section, keys in fsdp2_keys().items() if key in keys]


def config_problems(data: Any) -> list[ConfigProblem]:
    """Schema problems of an FSDP2 config, explained in the backend's terms."""
    keys = fsdp2_keys()
    problems: list[ConfigProblem] = []
    for v in schema_violations(data, FSDP2_SCHEMA):
        where = ".".join(str(p) for p in v.path)
        if v.validator == "additionalProperties" and isinstance(v.instance, dict):
            section = str(v.path[0]) if v.path else None
            allowed = set(keys) if section is None else set(keys.get(section, {}))
            for key in sorted(k for k in v.instance if k not in allowed):
                if section is None:
                    problems.append(
                        ConfigProblem(
                            str(key),
                            f"unknown section (the backend reads only {', '.join(keys)})",
                        )
                    )
                    continue
                homes = _homes(str(key))
                if homes:
                    problems.append(
                        ConfigProblem(
                            f"{section}.{key}",
                            f"not a key of {section}, so the backend silently ignores it; it belongs in {homes[0]}",
                            f"{homes[0]}.{key}",
                        )
                    )
                else:
                    problems.append(
                        ConfigProblem(
                            f"{section}.{key}",
                            f"unknown key: {section} has no '{key}', the backend silently ignores it",
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
