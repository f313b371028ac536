"""Three-valued conditions over facts, config paths and environment variables.

A leaf whose fact or key is missing evaluates to UNKNOWN (never silently FALSE); `all`/`any`/
`not` follow Kleene logic, and every UNKNOWN remembers which inputs were missing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class Truth(Enum):
    TRUE = "true"
    FALSE = "false"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Outcome:
    truth: Truth
    missing: tuple[str, ...] = ()  # "fact:ops.top", "config:parallel.ep_size", "env:X"

    @property
    def is_true(self) -> bool:
        return self.truth is Truth.TRUE


TRUE = Outcome(Truth.TRUE)
FALSE = Outcome(Truth.FALSE)
_ABSENT = object()


@dataclass
class Context:
    """What conditions can look at. `None` for config/env means that source is unknown."""

    facts: Mapping[str, Any] = field(default_factory=dict)
    config: Mapping[str, Any] | None = None
    env: Mapping[str, str] | None = None
    params: Mapping[str, Any] = field(default_factory=dict)

    def lookup(self, source: str, path: str) -> Any:
        """The value, `_ABSENT` when the source is known but lacks it, None when unknowable."""
        if source == "fact":
            return self.facts.get(path, None)
        if source == "env":
            if self.env is None:
                return None
            return self.env.get(path, _ABSENT)
        if self.config is None:
            return None
        node: Any = self.config
        for part in path.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return _ABSENT
            node = node[part]
        return node


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _truthy(value: Any) -> Any:
    """YAML 1.1 / argparse style booleans compare equal to true/false."""
    if isinstance(value, str) and value.lower() in ("true", "yes", "on", "t", "y"):
        return True
    if isinstance(value, str) and value.lower() in ("false", "no", "off", "f", "n"):
        return False
    return value


def _equal(a: Any, b: Any) -> bool:
    a, b = _truthy(a), _truthy(b)
    if isinstance(a, bool) and isinstance(b, bool):
        return a == b
    na, nb = _number(a), _number(b)
    if na is not None and nb is not None:
        return na == nb
    return str(a) == str(b)


def _compare(op: str, actual: Any, expected: Any) -> bool:
    if op == "eq":
        return _equal(actual, expected)
    if op == "ne":
        return not _equal(actual, expected)
    if op in ("in", "not_in"):
        options = expected if isinstance(expected, list) else [expected]
        found = any(_equal(actual, option) for option in options)
        return found if op == "in" else not found
    if op == "contains":
        if isinstance(actual, list):
            return any(_equal(item, expected) for item in actual)
        return str(expected) in str(actual)
    if op == "matches":
        return re.search(str(expected), str(actual)) is not None
    a, b = _number(actual), _number(expected)
    if a is None or b is None:
        return False
    return {"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[op]


def resolve(value: Any, params: Mapping[str, Any]) -> Any:
    if isinstance(value, Mapping) and set(value) == {"param"}:
        return params[str(value["param"])]
    return value


def _leaf(cond: Mapping[str, Any], ctx: Context) -> Outcome:
    source = next(s for s in ("fact", "config", "env") if s in cond)
    path = str(cond[source])
    op = str(cond["op"])
    actual = ctx.lookup(source, path)
    if actual is _ABSENT and "default" in cond:
        actual = cond["default"]
    if actual is None:
        return Outcome(Truth.UNKNOWN, (f"{source}:{path}",))
    if op == "exists":
        return TRUE if actual is not _ABSENT else FALSE
    if op == "absent":
        return TRUE if actual is _ABSENT else FALSE
    if actual is _ABSENT:
        # a key the source does not set: compare against nothing, i.e. the condition is false
        # unless it asks for inequality
        return TRUE if op in ("ne", "not_in") else FALSE
    value = cond.get("value")
    if isinstance(value, Mapping) and set(value) == {"config"}:
        # compare two keys of the same config (e.g. micro_batch_num < pipeline_stage)
        expected = ctx.lookup("config", str(value["config"]))
        if expected is None or expected is _ABSENT:
            return Outcome(Truth.UNKNOWN, (f"config:{value['config']}",))
    else:
        expected = resolve(value, ctx.params)
    return TRUE if _compare(op, actual, expected) else FALSE


def evaluate(cond: Mapping[str, Any] | None, ctx: Context) -> Outcome:
    if cond is None:
        return TRUE
    if "all" in cond:
        return _combine([evaluate(c, ctx) for c in cond["all"]], all_of=True)
    if "any" in cond:
        return _combine([evaluate(c, ctx) for c in cond["any"]], all_of=False)
    if "not" in cond:
        inner = evaluate(cond["not"], ctx)
        if inner.truth is Truth.UNKNOWN:
            return inner
        return FALSE if inner.is_true else TRUE
    return _leaf(cond, ctx)


def _combine(outcomes: list[Outcome], all_of: bool) -> Outcome:
    decisive = Truth.FALSE if all_of else Truth.TRUE
    if any(o.truth is decisive for o in outcomes):
        return Outcome(decisive)
    unknown = [m for o in outcomes if o.truth is Truth.UNKNOWN for m in o.missing]
    if unknown:
        return Outcome(Truth.UNKNOWN, tuple(dict.fromkeys(unknown)))
    return Outcome(Truth.FALSE if decisive is Truth.TRUE else Truth.TRUE)


def referenced(cond: Mapping[str, Any] | None, source: str) -> list[str]:
    """Every path of `source` ("fact", "config", "env") a condition names."""
    if cond is None:
        return []
    out: list[str] = []

    def visit(node: Any) -> None:
        if isinstance(node, Mapping):
            if source in node and "op" in node:
                out.append(str(node[source]))
            for key in ("all", "any"):
                for child in node.get(key, []) or []:
                    visit(child)
            if "not" in node:
                visit(node["not"])

    visit(cond)
    return out
