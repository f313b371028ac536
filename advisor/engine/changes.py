"""A feature's change template against the current config and environment: whether it is
already applied, and the concrete ops it would make."""

from __future__ import annotations

from collections.abc import Mapping

from advisor.core.values import as_number, get_path, values_equal
from advisor.engine.conditions import Context, evaluate
from advisor.engine.rule_model import FeatureRule
from advisor.facts.catalogue import is_known, spec_for
from advisor.model import PatchOp, PatchTarget


def is_applied(rule: FeatureRule, ctx: Context) -> bool:
    """True only when the feature says how to recognise it and the config/env shows it."""
    return rule.applied_when is not None and evaluate(rule.applied_when, ctx).is_true


def current_value(ctx: Context, target: PatchTarget, path: str) -> object:
    """The value a change would replace: the environment's or the effective config's."""
    if target is PatchTarget.env:
        return (ctx.env or {}).get(path)
    return get_path(ctx.config, path)


def abstract_ops(rule: FeatureRule, ctx: Context) -> tuple[PatchOp, ...]:
    """The feature's change template resolved against the current config and environment."""
    ops = []
    for op in rule.change.ops:
        if op.unless is not None and evaluate(op.unless, ctx).is_true:
            continue
        current = current_value(ctx, rule.change.target, op.path)
        if op.op == "increment":
            number = as_number(current)
            base = number if number is not None else (op.default or 0.0)
            value = base + (op.by if op.by is not None else 1)
            if op.max is not None:
                value = min(value, op.max)
            ops.append(PatchOp("set", op.path, _whole(value), current))
        elif op.op == "scale":
            number = as_number(current)
            start = number if number is not None else op.default
            if start is None:
                continue  # nothing to scale: the template does not apply
            value = float(int(start * (op.by if op.by is not None else 1)))
            if op.min is not None:
                value = max(value, op.min)
            if op.max is not None:
                value = min(value, op.max)
            if value != start:
                ops.append(PatchOp("set", op.path, _whole(value), current, op.near))
        elif op.op == "set":
            if values_equal(current, op.value):
                continue  # already so: not part of the change
            ops.append(PatchOp("set", op.path, op.value, current, op.near))
        else:
            ops.append(PatchOp("remove", op.path, None, current))
    return tuple(ops)


def _whole(value: float) -> int | float:
    """Counts stay integers in the config (2, not 2.0)."""
    return int(value) if value.is_integer() else value


def ceiling_of(rule: FeatureRule, ctx: Context) -> tuple[float, float] | None:
    """(ms, share of the step) the feature can recover at most; None when unknown."""
    if rule.ceiling is None:
        return None
    value = ctx.facts.get(rule.ceiling.fact)
    if rule.ceiling.key is not None:
        # a per-kind fact that lacks the kind: the job has none of it, nothing to recover
        value = value.get(rule.ceiling.key, 0.0) if isinstance(value, Mapping) else None
    number = as_number(value)
    if rule.ceiling.at_most is not None:
        bound = as_number(ctx.facts.get(rule.ceiling.at_most))
        number = bound if number is None else number if bound is None else min(number, bound)
    step = as_number(ctx.facts.get("attrib.step_ms")) or as_number(ctx.facts.get("step.time_ms"))
    if number is None or not step:
        return None
    if is_known(rule.ceiling.fact) and spec_for(rule.ceiling.fact).unit == "ratio":
        return number * step, number
    return number, number / step
