"""Diagnosis -> the ONE next change: walk the main bottleneck's features in the documented try
order and keep the first whose prerequisites hold, that conflicts with nothing, is not applied
yet and was not rejected before. After a 'revert' verdict the next change is the undo.

The planner returns the whole suggestion with an abstract patch (ops on a target); placing the
ops in files is the edit layer's job, wording it the renderer's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from advisor.engine.conditions import Context, Outcome, Truth, evaluate
from advisor.engine.diagnose import Diagnosis
from advisor.engine.graph import RuleGraph
from advisor.engine.rule_model import FeatureRule
from advisor.facts.catalogue import is_known, spec_for
from advisor.inputs.ledger import LedgerEvent
from advisor.inputs.values import as_number, get_path
from advisor.model import (
    Applicability,
    Direction,
    Fact,
    Patch,
    PatchOp,
    PatchTarget,
    Recommendation,
    Rejected,
    Suggestion,
    VerifyCheck,
)


@dataclass(frozen=True)
class History:
    """What the ledger says: features rejected or reverted, and every event in order."""

    rejected: frozenset[str] = frozenset()
    events: tuple[LedgerEvent, ...] = ()
    statuses: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, events: list[LedgerEvent]) -> History:
        statuses: dict[str, str] = {}
        for event in events:
            statuses[event.feature] = event.event
        rejected = frozenset(f for f, s in statuses.items() if s in ("reverted", "rejected"))
        return cls(rejected, tuple(events), statuses)


def _missing_names(outcome: Outcome) -> str:
    return ", ".join(m.partition(":")[2] or m for m in outcome.missing)


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
        elif op.op == "set":
            ops.append(PatchOp("set", op.path, op.value, current))
        else:
            ops.append(PatchOp("remove", op.path, None, current))
    return tuple(ops)


def _whole(value: float) -> int | float:
    """Counts stay integers in the config (2, not 2.0)."""
    return int(value) if value.is_integer() else value


def _after_blocker(
    rule: FeatureRule, graph: RuleGraph, ctx: Context, history: History
) -> str | None:
    """A feature that must come first and could still be applied."""
    for first in rule.after:
        prior = graph.ruleset.feature(first)
        if first in history.rejected or prior is None or is_applied(prior, ctx):
            continue
        # a prior feature whose prerequisites are not known to hold will not be proposed: it
        # cannot hold this one back
        blocked = any(not evaluate(req.condition, ctx).is_true for req in prior.requires)
        if not blocked:
            return first
    return None


def _judge(
    rule: FeatureRule, bottleneck: str, graph: RuleGraph, ctx: Context, history: History
) -> str | None:
    """None when the feature can be proposed now, else the reason it cannot."""
    if not rule.enabled:
        return "disabled in the settings file"
    for item in rule.addresses:
        if item.bottleneck == bottleneck and item.when is not None:
            gate = evaluate(item.when, ctx)
            if gate.truth is Truth.FALSE:
                return "not indicated by this profile (its trigger condition is false)"
            if gate.truth is Truth.UNKNOWN:
                return f"unknown whether it applies: needs {_missing_names(gate)}"
    if rule.id in history.rejected:
        return "tried before and rejected (ledger)"
    if is_applied(rule, ctx):
        return "already applied in the current config/environment"
    for req in rule.requires:
        outcome = evaluate(req.condition, ctx)
        if outcome.truth is Truth.FALSE:
            return f"prerequisite not met: {req.reason}"
        if outcome.truth is Truth.UNKNOWN:
            return f"prerequisite unknown ({req.reason}): needs {_missing_names(outcome)}"
    for conflict in rule.conflicts:
        if conflict.condition is not None and evaluate(conflict.condition, ctx).is_true:
            return f"conflicts with the current settings: {conflict.reason}"
        other = graph.ruleset.feature(conflict.feature) if conflict.feature else None
        if other is not None and is_applied(other, ctx):
            return f"conflicts with {other.id}, which is applied: {conflict.reason}"
    blocker = _after_blocker(rule, graph, ctx, history)
    if blocker:
        return f"{blocker} must come first"
    if rule.change.applicability is not Applicability.display_only and not abstract_ops(rule, ctx):
        return "nothing left to change"
    return None


def _collector(graph: RuleGraph, missing: set[str]) -> FeatureRule | None:
    best, covered = None, 0
    for rule in graph.ruleset.of_type(FeatureRule):
        overlap = len(set(rule.collects) & missing)
        if overlap > covered:
            best, covered = rule, overlap
    return best


@dataclass(frozen=True)
class _Choice:
    rule: FeatureRule
    bottleneck: str
    ops: tuple[PatchOp, ...]
    status: str
    summary: str
    rejected: tuple[Rejected, ...]


def _choose(
    graph: RuleGraph, diagnosis: Diagnosis, ctx: Context, history: History
) -> _Choice | Suggestion:
    if not diagnosis.bottlenecks:
        return Suggestion(
            "healthy", None, (), "No bottleneck above its threshold: keep the current settings."
        )
    rejected: list[Rejected] = []
    unknown_of = {u.rule: u for u in diagnosis.unknown}
    for bottleneck in diagnosis.bottlenecks:
        gap = unknown_of.get(bottleneck.id)
        if gap is not None and bottleneck is diagnosis.bottlenecks[0]:
            collector = _collector(graph, set(gap.missing))
            if collector is not None and collector.id not in history.rejected:
                ops = abstract_ops(collector, ctx)
                if ops and not is_applied(collector, ctx):
                    summary = (
                        f"{bottleneck.id} is suspected but the profile lacks {', '.join(gap.missing)}: "
                        "collect them before changing anything"
                    )
                    return _Choice(
                        collector, bottleneck.id, ops, "needs-data", summary, tuple(rejected)
                    )
        chosen: tuple[FeatureRule, tuple[PatchOp, ...]] | None = None
        for order, rule in graph.features_for(bottleneck.id):
            if chosen is not None:
                rejected.append(
                    Rejected(rule.id, f"next in the try order ({order}) after {chosen[0].id}")
                )
                continue
            reason = _judge(rule, bottleneck.id, graph, ctx, history)
            if reason is None:
                chosen = (rule, abstract_ops(rule, ctx))
            else:
                rejected.append(Rejected(rule.id, reason))
        if chosen is not None:
            lead = (
                "main bottleneck" if bottleneck is diagnosis.bottlenecks[0] else "next bottleneck"
            )
            summary = f"{lead}: {bottleneck.id}"
            return _Choice(chosen[0], bottleneck.id, chosen[1], "change", summary, tuple(rejected))
    return Suggestion(
        "healthy",
        None,
        tuple(rejected),
        "Bottlenecks were found but every documented feature for them is applied, rejected or "
        "blocked: see the rejected list.",
    )


def evidence_facts(facts: list[Fact], diagnosis: Diagnosis, bottleneck: str) -> tuple[Fact, ...]:
    main = next((b for b in diagnosis.bottlenecks if b.id == bottleneck), None)
    wanted = {s.fact for s in diagnosis.symptoms if main and s.id in main.evidence}
    return tuple(f for f in facts if f.id in wanted and f.scope == "job")


def verify_checks(rule: FeatureRule, ctx: Context) -> tuple[VerifyCheck, ...]:
    checks = []
    for item in rule.verify:
        current = as_number(ctx.facts.get(item.fact))
        unit = spec_for(item.fact).unit if is_known(item.fact) else None
        checks.append(VerifyCheck(item.fact, item.direction, current, unit))
    return tuple(checks)


def _recommend(
    choice: _Choice, diagnosis: Diagnosis, ctx: Context, facts: list[Fact]
) -> Recommendation:
    rule = choice.rule
    change = rule.change
    patch = None
    if change.target is not PatchTarget.none and choice.ops:
        patch = Patch(rule.id, change.target, choice.ops, change.applicability, rule.title)
    bottleneck = next((b for b in diagnosis.bottlenecks if b.id == choice.bottleneck), None)
    why = bottleneck.message if bottleneck else choice.summary
    if choice.status == "needs-data":
        why = f"{choice.summary}. {why}"
    effect = rule.effect
    expected = effect.gain + (f"; memory: {effect.memory}" if effect.memory else "")
    return Recommendation(
        feature=rule.id,
        bottleneck=choice.bottleneck,
        title=rule.title,
        why=why,
        evidence=evidence_facts(facts, diagnosis, choice.bottleneck),
        patch=patch,
        advice=(change.advice or "").strip(),
        expected=expected,
        risk=effect.risk,
        verify=verify_checks(rule, ctx),
    )


def _undo(graph: RuleGraph, ctx: Context, history: History) -> Suggestion | None:
    """After a 'revert' verdict, undo the reverted change (if it is still in place)."""
    reverted = [e for e in history.events if e.event == "reverted"]
    if not reverted:
        return None
    last = reverted[-1]
    rule = graph.ruleset.feature(last.feature)
    if history.statuses.get(last.feature) != "reverted" or rule is None:
        return None
    proposal = next(
        (e for e in reversed(history.events) if e.event == "proposed" and e.feature == rule.id),
        None,
    )
    if proposal is None or proposal.patch_target is None:
        return None
    target = PatchTarget.env if proposal.patch_target == "env" else PatchTarget.config
    ops = []
    for op in proposal.patch_ops:
        if op.op == "set":
            current = current_value(ctx, target, op.path)
            if str(current) != str(op.value):
                continue  # already undone
            ops.append(
                PatchOp("remove", op.path, None, current)
                if op.expect is None
                else PatchOp("set", op.path, op.expect, current)
            )
        elif op.expect is not None:
            ops.append(PatchOp("set", op.path, op.expect, None))
    if not ops:
        return None
    title = f"Undo: {rule.title}"
    rec = Recommendation(
        feature=rule.id,
        bottleneck=last.bottleneck or "",
        title=title,
        why=f"compare said revert: {last.note or 'the change did not help'}",
        evidence=(),
        patch=Patch(rule.id, target, tuple(ops), Applicability.safe, title),
        advice="",
        expected="back to the baseline's behaviour",
        risk="none: restores the measured baseline",
        verify=(VerifyCheck("step.time_ms", Direction.back_to_baseline),),
        undo=True,
    )
    return Suggestion("change", rec, (), f"undo {rule.id}; it will not be proposed again")


def plan(
    graph: RuleGraph,
    diagnosis: Diagnosis,
    ctx: Context,
    history: History,
    facts: list[Fact],
) -> Suggestion:
    """The one next change as a whole suggestion (its patch not yet placed in files)."""
    undo = _undo(graph, ctx, history)
    if undo is not None:
        return undo
    choice = _choose(graph, diagnosis, ctx, history)
    if isinstance(choice, Suggestion):
        return choice
    rec = _recommend(choice, diagnosis, ctx, facts)
    return Suggestion(choice.status, rec, choice.rejected, choice.summary)
