"""Three-valued conditions over facts, config paths and environment variables, compiled once.

A rule's condition is compiled when the rule is loaded: its `{param: NAME}` references are bound
to the rule's effective params, so evaluating it needs only the facts, the config and the
environment. A leaf whose fact or key is missing evaluates to UNKNOWN (never silently FALSE);
`all`/`any`/`not` follow Kleene logic, and every UNKNOWN remembers which inputs were missing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

from advisor.core.values import as_number, values_equal
from advisor.model import DataError

Scalar = str | int | float | bool | None


class Truth(Enum):
    TRUE = "true"
    FALSE = "false"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Outcome:
    """A condition's truth, and what was missing when it is unknown."""

    truth: Truth
    missing: tuple[str, ...] = ()  # "fact:ops.top", "config:parallel.ep_size", "env:X"

    @property
    def is_true(self) -> bool:
        return self.truth is Truth.TRUE


TRUE = Outcome(Truth.TRUE)
FALSE = Outcome(Truth.FALSE)


class _Absent:
    """The source is known but does not set the key (distinct from None: unknowable)."""


ABSENT = _Absent()
SOURCES = ("fact", "config", "env")


@dataclass(frozen=True)
class Context:
    """What conditions can look at. `None` for config/env means that source is unknown."""

    facts: Mapping[str, object] = field(default_factory=dict)
    config: Mapping[str, object] | None = None
    env: Mapping[str, str] | None = None  # the environment now (what the next run will use)
    env_ran: Mapping[str, str] | None = None  # what the profiled run recorded, when it did
    dialect: str | None = None  # how the job is configured (FSDP2 YAML, Megatron script, ...)
    # why each missing fact is missing (its reason names what is actually absent)
    missing: Mapping[str, str] = field(default_factory=dict)

    def lookup(self, source: str, path: str) -> object:
        """The value, `ABSENT` when the source is known but lacks it, None when unknowable."""
        if source == "fact":
            return self.facts.get(path, None)
        if source == "env":
            if self.env is None:
                return None
            return self.env.get(path, ABSENT)
        if self.config is None:
            return None
        node: object = self.config
        for part in path.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return ABSENT
            node = node[part]
        return node


class Condition(Protocol):
    """A compiled condition; `raw` is the rule file's text of it, kept for documentation."""

    @property
    def raw(self) -> Mapping[str, object]: ...

    def evaluate(self, ctx: Context) -> Outcome: ...

    def names(self, source: str) -> list[str]:
        """Every path of `source` ("fact", "config", "env") the condition reads."""
        ...


def _compare(op: str, actual: object, expected: object) -> bool:
    if op == "eq":
        return values_equal(actual, expected)
    if op == "ne":
        return not values_equal(actual, expected)
    if op in ("in", "not_in"):
        options = expected if isinstance(expected, list) else [expected]
        found = any(values_equal(actual, option) for option in options)
        return found if op == "in" else not found
    if op == "contains":
        if isinstance(actual, list):
            return any(values_equal(item, expected) for item in actual)
        return str(expected) in str(actual)
    if op == "matches":
        return re.search(str(expected), str(actual)) is not None
    if op in ("version_lt", "version_ge"):
        mine, theirs = version_key(str(actual)), version_key(str(expected))
        if mine is None or theirs is None:
            return False  # an unreadable version decides nothing
        return mine < theirs if op == "version_lt" else mine >= theirs
    a, b = as_number(actual, strings=True), as_number(expected, strings=True)
    if a is None or b is None:
        return False
    return {"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[op]


_VERSION_PART = re.compile(r"(\d+)|(rc|alpha|beta|a|b|t)(\d*)", re.IGNORECASE)


def version_key(text: str) -> tuple[tuple[int, int], ...] | None:
    """A release string as comparable parts: CANN's `8.3.RC1` sorts before `8.3.0`, torch_npu's
    `2.7.1.post2` after `2.7.1`. None when no leading number is found."""
    parts: list[tuple[int, int]] = []
    for piece in re.split(r"[.\-+_]", text.strip()):
        if piece.lower().startswith("post") and piece[4:].isdigit():
            parts.append((2, int(piece[4:])))
            continue
        m = _VERSION_PART.fullmatch(piece)
        if m is None:
            break  # a build tag or commit hash: the parts before it decide
        if m.group(1) is not None:
            parts.append((1, int(m.group(1))))
        else:
            parts.append((0, int(m.group(3) or 0)))  # a pre-release: before the release
    if not parts or parts[0][0] != 1:
        return None
    # pad so that 8.3 == 8.3.0 and 8.3.RC1 < 8.3
    return tuple(parts + [(1, 0)] * (4 - len(parts)))


@dataclass(frozen=True)
class Leaf:
    """One comparison of a fact, config key or environment variable."""

    raw: Mapping[str, object]
    source: str
    path: str
    op: str
    value: object = None  # a literal, with params already bound
    other_key: str | None = None  # compare with another key of the same config
    default: Scalar = None
    has_default: bool = False
    # compare with an environment variable (and its value when the launch leaves it unset)
    other_env: tuple[str, Scalar] | None = None

    def _actual(self, ctx: Context) -> object:
        actual = ctx.lookup(self.source, self.path)
        if actual is ABSENT and self.has_default:
            return self.default
        if actual is None and self.has_default and self.source == "fact":
            # the rule states what an unmeasured fact counts as for this condition: used where
            # an unknown must not silence the rule (never to turn unknown into "no")
            return self.default
        return actual

    def _expected(self, ctx: Context) -> tuple[object, str | None]:
        """The value compared against (the literal, another key, or a variable) and, when that
        value is unknown, the name of what is missing."""
        if self.other_key is not None:
            # compare two keys of the same config (e.g. micro_batch_num < pipeline_stage)
            expected = ctx.lookup("config", self.other_key)
            if expected is None or expected is ABSENT:
                return None, f"config:{self.other_key}"
            return expected, None
        if self.other_env is not None:
            # a fact against a variable (the largest collective against HCCL_BUFFSIZE)
            name, unset = self.other_env
            expected = ctx.lookup("env", name)
            if expected is ABSENT and ctx.env == ctx.env_ran:
                # only the profile's recorded variables, no launch script on top: a variable
                # the profiler does not record is unknown, not unset
                expected = None
            elif expected is ABSENT:
                expected = unset
            return expected, None if expected is not None else f"env:{name}"
        return self.value, None

    def evaluate(self, ctx: Context) -> Outcome:
        actual = self._actual(ctx)
        if actual is None:
            return Outcome(Truth.UNKNOWN, (f"{self.source}:{self.path}",))
        if self.op == "exists":
            return TRUE if actual is not ABSENT else FALSE
        if self.op == "absent":
            return TRUE if actual is ABSENT else FALSE
        if actual is ABSENT:
            # a key the source does not set: compare against nothing, i.e. the condition is
            # false unless it asks for inequality
            return TRUE if self.op in ("ne", "not_in") else FALSE
        expected, missing = self._expected(ctx)
        if missing is not None:
            return Outcome(Truth.UNKNOWN, (missing,))
        return TRUE if _compare(self.op, actual, expected) else FALSE

    def names(self, source: str) -> list[str]:
        mine = [self.path] if source == self.source else []
        if source == "env" and self.other_env is not None:
            mine.append(self.other_env[0])
        return mine


def _combine(outcomes: list[Outcome], all_of: bool) -> Outcome:
    decisive = Truth.FALSE if all_of else Truth.TRUE
    if any(o.truth is decisive for o in outcomes):
        return Outcome(decisive)
    unknown = [m for o in outcomes if o.truth is Truth.UNKNOWN for m in o.missing]
    if unknown:
        return Outcome(Truth.UNKNOWN, tuple(dict.fromkeys(unknown)))
    return Outcome(Truth.FALSE if decisive is Truth.TRUE else Truth.TRUE)


@dataclass(frozen=True)
class AllOf:
    """True when every condition is true; unknown when one is unknown and none is false."""

    raw: Mapping[str, object]
    items: tuple[Condition, ...]

    def evaluate(self, ctx: Context) -> Outcome:
        return _combine([c.evaluate(ctx) for c in self.items], all_of=True)

    def names(self, source: str) -> list[str]:
        return [name for c in self.items for name in c.names(source)]


@dataclass(frozen=True)
class AnyOf:
    """True when one condition is true; unknown when one is unknown and none is true."""

    raw: Mapping[str, object]
    items: tuple[Condition, ...]

    def evaluate(self, ctx: Context) -> Outcome:
        return _combine([c.evaluate(ctx) for c in self.items], all_of=False)

    def names(self, source: str) -> list[str]:
        return [name for c in self.items for name in c.names(source)]


@dataclass(frozen=True)
class Not:
    """The opposite of a condition (unknown stays unknown)."""

    raw: Mapping[str, object]
    inner: Condition

    def evaluate(self, ctx: Context) -> Outcome:
        outcome = self.inner.evaluate(ctx)
        if outcome.truth is Truth.UNKNOWN:
            return outcome
        return FALSE if outcome.is_true else TRUE

    def names(self, source: str) -> list[str]:
        return self.inner.names(source)


def evaluate(condition: Condition | None, ctx: Context) -> Outcome:
    """TRUE for a rule part without a condition."""
    return TRUE if condition is None else condition.evaluate(ctx)


def names(condition: Condition | None, source: str) -> list[str]:
    return [] if condition is None else condition.names(source)


ParamLookup = Callable[[str], object]


def param_name(node: object) -> str | None:
    """NAME of a `{param: NAME}` reference, None for anything else."""
    if isinstance(node, Mapping) and set(node) == {"param"}:
        return str(node["param"])
    return None


def compile_condition(raw: object, param: ParamLookup) -> Condition:
    """Compile a schema-valid condition; `param` resolves `{param: NAME}` (raises DataError)."""
    if not isinstance(raw, Mapping):
        raise DataError(f"a condition must be a mapping, got {raw!r}")
    if "all" in raw or "any" in raw:
        key = "all" if "all" in raw else "any"
        children = raw[key]
        if not isinstance(children, Sequence) or isinstance(children, str):
            raise DataError(f"'{key}' must list conditions")
        items = tuple(compile_condition(c, param) for c in children)
        return AllOf(raw, items) if key == "all" else AnyOf(raw, items)
    if "not" in raw:
        return Not(raw, compile_condition(raw["not"], param))
    source = next(s for s in SOURCES if s in raw)
    value = raw.get("value")
    other_key = None
    name = param_name(value)
    if name is not None:
        value = param(name)
    elif isinstance(value, Mapping) and set(value) == {"config"}:
        other_key, value = str(value["config"]), None
    other_env = None
    if isinstance(value, Mapping) and "env" in value:
        unset = value.get("default")
        other_env = (str(value["env"]), unset if isinstance(unset, str | int | float) else None)
        value = None
    default = raw.get("default")
    return Leaf(
        raw=raw,
        source=source,
        path=str(raw[source]),
        op=str(raw["op"]),
        value=value,
        other_key=other_key,
        default=default if isinstance(default, str | int | float | bool) else None,
        has_default="default" in raw,
        other_env=other_env,
    )
