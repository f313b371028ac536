"""Whether one feature can be proposed now for a bottleneck, and if not, why: a reject code and
the values that decided it (its requirement, the facts it needs, the feature in its way, its
ceiling). The checks run in a fixed order; the first that fails is the reason."""

from __future__ import annotations

from collections.abc import Callable

from advisor.engine.changes import abstract_ops, ceiling_of, is_applied, reach_of
from advisor.engine.conditions import Context, Outcome, Truth, evaluate
from advisor.engine.graph import RuleGraph
from advisor.engine.loop import History
from advisor.engine.memory_room import waits_for_room
from advisor.engine.rule_model import FeatureRule
from advisor.inputs.thresholds import planner_thresholds
from advisor.model import Applicability, RejectCode, Rejected, Value


def missing_names(outcome: Outcome) -> tuple[str, ...]:
    """The facts (config keys, variables) an unknown outcome lacks, without their source."""
    return tuple(m.partition(":")[2] or m for m in outcome.missing)


def unmet_requirement(rule: FeatureRule, ctx: Context) -> str | None:
    """The reason of a prerequisite known to be false (unknown ones are judged later)."""
    for req in rule.requires:
        if evaluate(req.condition, ctx).truth is Truth.FALSE:
            return req.reason
    return None


def below_ceiling(rule: FeatureRule, ctx: Context) -> bool:
    """The most the feature can recover is negligible (its target costs no time here)."""
    ceiling = ceiling_of(rule, ctx)
    return ceiling is not None and ceiling[1] < planner_thresholds().min_ceiling_ratio


def trigger(rule: FeatureRule, bottleneck: str, ctx: Context) -> Outcome:
    """Whether the profile indicates the feature for this bottleneck (TRUE without a trigger)."""
    outcomes = [
        evaluate(item.when, ctx)
        for item in rule.addresses
        if item.bottleneck == bottleneck and item.when is not None
    ]
    unknown = [o for o in outcomes if o.truth is Truth.UNKNOWN]
    if any(o.truth is Truth.FALSE for o in outcomes):
        return Outcome(Truth.FALSE)
    if unknown:
        return Outcome(Truth.UNKNOWN, tuple(m for o in unknown for m in o.missing))
    return Outcome(Truth.TRUE)


def _could_come_first(prior: FeatureRule, bottleneck: str, ctx: Context) -> bool:
    """A prior feature whose prerequisites or trigger are not known to hold will not be
    proposed: it cannot hold a later one back."""
    if any(not evaluate(req.condition, ctx).is_true for req in prior.requires):
        return False
    if any(
        item.when is not None and not evaluate(item.when, ctx).is_true
        for item in prior.addresses
        if item.bottleneck == bottleneck
    ):
        return False
    return not below_ceiling(prior, ctx)


def after_blocker(
    rule: FeatureRule, bottleneck: str, graph: RuleGraph, ctx: Context, history: History
) -> str | None:
    """A feature that must come first and could still be applied."""
    for first in rule.after:
        prior = graph.ruleset.feature(first)
        if first in history.rejected or prior is None or is_applied(prior, ctx):
            continue
        if not prior.runs_for(ctx.dialect) or not prior.runs_on(ctx.facts.get("profile.platform")):
            continue  # another backend's or platform's feature: never proposed for this job
        if _could_come_first(prior, bottleneck, ctx):
            return first
    return None


# (rule, bottleneck, graph, ctx, history) -> the rejection, or None when the check passes
_Judgement = Callable[[FeatureRule, str, RuleGraph, Context, History], Rejected | None]


def _settled(
    rule: FeatureRule, bottleneck: str, graph: RuleGraph, ctx: Context, history: History
) -> Rejected | None:
    """Switched off or already there."""
    if not rule.enabled:
        return Rejected(rule.id, RejectCode.disabled)
    if is_applied(rule, ctx):
        return Rejected(rule.id, RejectCode.applied)
    return None


def _indicated(
    rule: FeatureRule, bottleneck: str, graph: RuleGraph, ctx: Context, history: History
) -> Rejected | None:
    """The profile shows none of what the feature acts on: the truest reason, before any
    prerequisite of the config (prefetch on a job without all-gathers is pointless whatever
    the config says)."""
    for item in rule.addresses:
        if item.bottleneck != bottleneck or item.when is None:
            continue
        if evaluate(item.when, ctx).truth is Truth.FALSE:
            values: dict[str, Value] = {"lacks": item.otherwise} if item.otherwise else {}
            return Rejected(rule.id, RejectCode.not_indicated, values)
    return None


def _possible(
    rule: FeatureRule, bottleneck: str, graph: RuleGraph, ctx: Context, history: History
) -> Rejected | None:
    """Impossible whatever the profile shows: a prerequisite known to be false."""
    unmet = unmet_requirement(rule, ctx)
    if unmet is not None:
        return Rejected(rule.id, RejectCode.prerequisite_false, {"requirement": unmet})
    return None


def _trigger_known(
    rule: FeatureRule, bottleneck: str, graph: RuleGraph, ctx: Context, history: History
) -> Rejected | None:
    for item in rule.addresses:
        if item.bottleneck != bottleneck or item.when is None:
            continue
        gate = evaluate(item.when, ctx)
        if gate.truth is Truth.UNKNOWN:
            return Rejected(rule.id, RejectCode.trigger_unknown, {"needs": missing_names(gate)})
    return None


def _not_rejected_before(
    rule: FeatureRule, bottleneck: str, graph: RuleGraph, ctx: Context, history: History
) -> Rejected | None:
    return Rejected(rule.id, RejectCode.rejected_before) if rule.id in history.rejected else None


def _memory_room(
    rule: FeatureRule, bottleneck: str, graph: RuleGraph, ctx: Context, history: History
) -> Rejected | None:
    """A change that adds device memory after a run that ran out of it (engine/memory_room.py)."""
    failed = waits_for_room(rule, graph.ruleset, history)
    return (
        None if failed is None else Rejected(rule.id, RejectCode.no_memory_room, {"other": failed})
    )


def _prerequisites_known(
    rule: FeatureRule, bottleneck: str, graph: RuleGraph, ctx: Context, history: History
) -> Rejected | None:
    for req in rule.requires:  # none is false (checked first)
        outcome = evaluate(req.condition, ctx)
        if outcome.truth is Truth.UNKNOWN:
            values: dict[str, Value] = {"requirement": req.reason, "needs": missing_names(outcome)}
            return Rejected(rule.id, RejectCode.prerequisite_unknown, values)
    return None


def _no_conflict(
    rule: FeatureRule, bottleneck: str, graph: RuleGraph, ctx: Context, history: History
) -> Rejected | None:
    for conflict in rule.conflicts:
        if conflict.condition is not None and evaluate(conflict.condition, ctx).is_true:
            return Rejected(rule.id, RejectCode.conflicts_setting, {"conflict": conflict.reason})
        other = graph.ruleset.feature(conflict.feature) if conflict.feature else None
        if other is not None and is_applied(other, ctx):
            values = {"other": other.id, "conflict": conflict.reason}
            return Rejected(rule.id, RejectCode.conflicts_feature, values)
    return None


def _nothing_before(
    rule: FeatureRule, bottleneck: str, graph: RuleGraph, ctx: Context, history: History
) -> Rejected | None:
    blocker = after_blocker(rule, bottleneck, graph, ctx, history)
    return Rejected(rule.id, RejectCode.after, {"other": blocker}) if blocker else None


def _something_to_change(
    rule: FeatureRule, bottleneck: str, graph: RuleGraph, ctx: Context, history: History
) -> Rejected | None:
    if rule.change.applicability is not Applicability.display_only and not abstract_ops(rule, ctx):
        return Rejected(rule.id, RejectCode.nothing_to_change)
    return None


def _worth_it(
    rule: FeatureRule, bottleneck: str, graph: RuleGraph, ctx: Context, history: History
) -> Rejected | None:
    reach = reach_of(rule, ctx)
    if reach is None or rule.ceiling is None or not below_ceiling(rule, ctx):
        return None
    values: dict[str, Value] = {
        "ceiling_ms": reach.ms,
        "ceiling_ratio": reach.ratio,
        "target": rule.ceiling.fact,
        "target_key": ", ".join(rule.ceiling.key) or None,
        "at_most": ", ".join(rule.ceiling.at_most) or None,
        "target_ms": reach.target_ms,
        "mechanism": reach.mechanism,
        "limit": reach.limit,
    }
    return Rejected(rule.id, RejectCode.below_ceiling, values)


_JUDGEMENTS: tuple[_Judgement, ...] = (
    _settled,
    _indicated,
    _possible,
    _trigger_known,
    _not_rejected_before,
    _memory_room,
    _prerequisites_known,
    _no_conflict,
    _nothing_before,
    _something_to_change,
    _worth_it,
)


def judge(
    rule: FeatureRule, bottleneck: str, graph: RuleGraph, ctx: Context, history: History
) -> Rejected | None:
    """None when the feature can be proposed now, else why it cannot."""
    for judgement in _JUDGEMENTS:
        rejected = judgement(rule, bottleneck, graph, ctx, history)
        if rejected is not None:
            return rejected
    return None
