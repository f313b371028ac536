"""Rule message templates, formatted by a restricted formatter.

A template may name the fields its rule kind provides (`{value}`, `{cost}`...) with a format
spec, and quote a fact as `{facts[comm.time_ms_by_op]}`. Nothing else: no attribute access
(`{value.__class__}` would reach object internals), no index on other fields, no positional
fields. `template_errors` is what `rules lint` and the loader check; `render` refuses anything
the check would have refused.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Mapping
from typing import Any

from advisor.model import DataError

_FACT_KEY = re.compile(r"[a-z][a-z0-9_]*(\.[A-Za-z0-9_-]+)+")


def _fields(template: str) -> list[tuple[str, str | None]]:
    """(field, fact key or None) of every replacement field; ValueError on broken braces."""
    out = []
    for _, name, spec, _ in string.Formatter().parse(template):
        if name is None:
            continue
        for nested in (spec or "", name):
            if "{" in nested:
                raise ValueError(f"nested field in {{{name}}}")
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[([^\[\]]+)\])?", name)
        if m is None:
            raise ValueError(f"{{{name}}} is not a plain field (no attributes, no positions)")
        out.append((m.group(1), m.group(2)))
    return out


def _names_fact(key: str, is_fact: Callable[[str], bool] | None) -> bool:
    """A fact id, or a field of a record fact (`comm.slowest_link.link`)."""
    return is_fact is None or is_fact(key) or is_fact(key.rpartition(".")[0])


def template_errors(
    template: str, allowed: set[str], is_fact: Callable[[str], bool] | None = None
) -> list[str]:
    """What is wrong with a template for a rule kind offering `allowed` fields."""
    try:
        fields = _fields(template)
    except ValueError as exc:
        return [f"template {template[:60]!r}: {exc}"]
    errors = []
    for name, key in fields:
        if name not in allowed:
            errors.append(f"template field {{{name}}} is not one of {', '.join(sorted(allowed))}")
        elif key is not None and name != "facts":
            errors.append(f"template field {{{name}[{key}]}}: only facts[...] may be indexed")
        elif key is not None and (not _FACT_KEY.fullmatch(key) or not _names_fact(key, is_fact)):
            errors.append(f"template field {{facts[{key}]}}: no such fact")
        elif name == "facts" and key is None:
            errors.append("template field {facts} must name a fact: {facts[fact.id]}")
    return errors


class _Restricted(string.Formatter):
    def get_field(self, field_name: str, args: Any, kwargs: Any) -> tuple[Any, str]:
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[([^\[\]]+)\])?", field_name)
        if m is None or m.group(1) not in kwargs:
            raise DataError(f"template field {{{field_name}}} is not allowed")
        value = kwargs[m.group(1)]
        if m.group(2) is not None:
            if not isinstance(value, Mapping):
                raise DataError(f"template field {{{field_name}}}: only facts[...] may be indexed")
            return value[m.group(2)], field_name
        return value, field_name


def render(template: str, **fields: Any) -> str:
    try:
        return _Restricted().format(template, **fields)
    except (ValueError, KeyError, IndexError) as exc:
        raise DataError(f"rule template {template[:60]!r}: {exc}") from None
