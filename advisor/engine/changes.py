"""A feature's change template against the current config and environment: whether it is
already applied, and the concrete ops it would make."""

from __future__ import annotations

from collections.abc import Mapping

from advisor.core.values import as_number, get_path, values_equal
from advisor.engine.conditions import Context, evaluate
from advisor.engine.rule_model import FeatureRule
from advisor.facts.catalogue import is_known, spec_for
from advisor.model import PatchOp, PatchTarget, Reach


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


def _target_ms(rule: FeatureRule, ctx: Context, step: float) -> float | None:
    """The time the feature targets, in ms per step (a ratio fact times the step)."""
    assert rule.ceiling is not None
    ceiling = rule.ceiling
    value = ctx.facts.get(ceiling.fact)
    if ceiling.key:
        # a per-kind fact that lacks a kind: the job has none of it, nothing to recover there;
        # unless the fact lists only what the profile could find (missing_key: unknown)
        if isinstance(value, Mapping) and ceiling.missing_key == "unknown":
            value = value if all(key in value for key in ceiling.key) else None
        value = (
            sum(as_number(value.get(key, 0.0)) or 0.0 for key in ceiling.key)
            if isinstance(value, Mapping)
            else None
        )
    number = as_number(value)
    bounds = [as_number(ctx.facts.get(name)) for name in ceiling.at_most]
    known = [bound for bound in bounds if bound is not None]
    if known:
        number = min(known) if number is None else min(number, *known)
    if number is None:
        return None
    ratio = is_known(ceiling.fact) and spec_for(ceiling.fact).unit == "ratio"
    return number * step if ratio else number


def reach_of(rule: FeatureRule, ctx: Context) -> Reach | None:
    """The most step time the feature can recover, bounded by its mechanism; None when
    unknown. An overlap whose compute is unknown is bounded by its target alone."""
    if rule.ceiling is None:
        return None
    step = as_number(ctx.facts.get("attrib.step_ms")) or as_number(ctx.facts.get("step.time_ms"))
    if not step:
        return None
    target = _target_ms(rule, ctx, step)
    if target is None:
        return None
    ceiling = rule.ceiling
    reach, limit = target, None
    if ceiling.share < 1.0:
        reach, limit = target * ceiling.share, "share"
    hides_under = as_number(ctx.facts.get(ceiling.hides_under)) if ceiling.hides_under else None
    if hides_under is not None and hides_under < reach:
        reach, limit = hides_under, "hides-under"
    under = (ceiling.hides_under, hides_under) if ceiling.hides_under and hides_under else None
    return Reach(reach, reach / step, target, ceiling.mechanism, limit, under)


def ceiling_of(rule: FeatureRule, ctx: Context) -> tuple[float, float] | None:
    """(ms, share of the step) the feature can recover at most; None when unknown."""
    reach = reach_of(rule, ctx)
    return None if reach is None else (reach.ms, reach.ratio)
