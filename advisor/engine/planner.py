"""Diagnosis -> the ONE next change: walk the main bottleneck's features in the documented try
order and keep the first whose prerequisites hold, that conflicts with nothing, is not applied
yet and was not rejected before. After a 'revert' verdict the next change is the undo.

The planner returns the whole suggestion with an abstract patch (ops on a target); placing the
ops in files is the edit layer's job, wording it the renderer's.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from advisor.core.values import as_number
from advisor.engine import trust
from advisor.engine.changes import abstract_ops, ceiling_of, is_applied
from advisor.engine.conditions import Context, Outcome, Truth, evaluate
from advisor.engine.diagnose import Diagnosis, FactView, step_models_only
from advisor.engine.graph import RuleGraph
from advisor.engine.loop import History, awaiting, stale, undo
from advisor.engine.rule_model import BottleneckRule, FeatureRule
from advisor.engine.templates import render
from advisor.facts.catalogue import collect_hint, is_known, spec_for
from advisor.inputs.taxonomy import default_taxonomy
from advisor.model import (
    Applicability,
    Fact,
    Patch,
    PatchOp,
    PatchTarget,
    Recommendation,
    Rejected,
    Suggestion,
    VerifyCheck,
)


def _missing_names(outcome: Outcome) -> str:
    return ", ".join(m.partition(":")[2] or m for m in outcome.missing)


def _after_blocker(
    rule: FeatureRule, bottleneck: str, graph: RuleGraph, ctx: Context, history: History
) -> str | None:
    """A feature that must come first and could still be applied."""
    for first in rule.after:
        prior = graph.ruleset.feature(first)
        if first in history.rejected or prior is None or is_applied(prior, ctx):
            continue
        if not prior.runs_for(ctx.dialect) or not prior.runs_on(ctx.facts.get("profile.platform")):
            continue  # another backend's or platform's feature: never proposed for this job
        # a prior feature whose prerequisites or trigger are not known to hold will not be
        # proposed: it cannot hold this one back
        blocked = any(not evaluate(req.condition, ctx).is_true for req in prior.requires)
        blocked = blocked or any(
            item.when is not None and not evaluate(item.when, ctx).is_true
            for item in prior.addresses
            if item.bottleneck == bottleneck
        )
        blocked = blocked or _below_ceiling(prior, ctx)
        if not blocked:
            return first
    return None


def _judge(
    rule: FeatureRule, bottleneck: str, graph: RuleGraph, ctx: Context, history: History
) -> str | None:
    """None when the feature can be proposed now, else the reason it cannot."""
    if not rule.enabled:
        return "disabled in the settings file"
    if is_applied(rule, ctx):
        return "already applied in the current config/environment"
    unmet = _unmet_requirement(rule, ctx)
    if unmet is not None:
        return f"prerequisite not met: {unmet}"  # whatever the profile shows, it cannot apply
    for item in rule.addresses:
        if item.bottleneck == bottleneck and item.when is not None:
            gate = evaluate(item.when, ctx)
            if gate.truth is Truth.FALSE:
                return "not indicated by this profile (its trigger condition is false)"
            if gate.truth is Truth.UNKNOWN:
                return f"unknown whether it applies: needs {_missing_names(gate)}"
    if rule.id in history.rejected:
        return "tried before and rejected (ledger)"
    for req in rule.requires:  # none is false (checked first)
        outcome = evaluate(req.condition, ctx)
        if outcome.truth is Truth.UNKNOWN:
            return f"prerequisite unknown ({req.reason}): needs {_missing_names(outcome)}"
    for conflict in rule.conflicts:
        if conflict.condition is not None and evaluate(conflict.condition, ctx).is_true:
            return f"conflicts with the current settings: {conflict.reason}"
        other = graph.ruleset.feature(conflict.feature) if conflict.feature else None
        if other is not None and is_applied(other, ctx):
            return f"conflicts with {other.id}, which is applied: {conflict.reason}"
    blocker = _after_blocker(rule, bottleneck, graph, ctx, history)
    if blocker:
        return f"{blocker} must come first"
    if rule.change.applicability is not Applicability.display_only and not abstract_ops(rule, ctx):
        return "nothing left to change"
    ceiling = ceiling_of(rule, ctx)
    if ceiling is not None and _below_ceiling(rule, ctx):
        return (
            f"it can recover at most {ceiling[0]:.2f} ms ({ceiling[1]:.1%} of the step): "
            f"its target ({_ceiling_name(rule)}) is not what costs time here"
        )
    return None


def _unmet_requirement(rule: FeatureRule, ctx: Context) -> str | None:
    """The reason of a prerequisite known to be false (unknown ones are judged later)."""
    for req in rule.requires:
        if evaluate(req.condition, ctx).truth is Truth.FALSE:
            return req.reason
    return None


def _below_ceiling(rule: FeatureRule, ctx: Context) -> bool:
    """The most the feature can recover is negligible (its target costs no time here)."""
    ceiling = ceiling_of(rule, ctx)
    return ceiling is not None and ceiling[1] < default_taxonomy().min_ceiling_ratio


def _ceiling_name(rule: FeatureRule) -> str:
    if rule.ceiling is None:
        return ""
    name = f"{rule.ceiling.fact}[{rule.ceiling.key}]" if rule.ceiling.key else rule.ceiling.fact
    return f"{name}, at most {rule.ceiling.at_most}" if rule.ceiling.at_most else name


def _collector(
    graph: RuleGraph, missing: set[str], platform: object, dialect: str | None
) -> FeatureRule | None:
    best, covered = None, 0
    for rule in graph.ruleset.of_type(FeatureRule):
        if not rule.runs_on(platform) or not rule.runs_for(dialect):
            continue
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


def _gate(rule: FeatureRule, bottleneck: str, ctx: Context) -> Outcome:
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


def _collect_first(
    graph: RuleGraph,
    bottleneck: str,
    missing: set[str],
    ctx: Context,
    history: History,
    rejected: list[Rejected],
) -> _Choice | Suggestion:
    """The try order depends on facts the profile lacks: collect them before changing anything."""
    names = ", ".join(sorted(m.partition(":")[2] or m for m in missing))
    platform = ctx.facts.get("profile.platform")
    collector = _collector(graph, {m.partition(":")[2] for m in missing}, platform, ctx.dialect)
    shallow = step_models_only(ctx.facts)
    hows = {
        collect_hint(m.partition(":")[2], platform, shallow)
        for m in missing
        if is_known(m.partition(":")[2])
    }
    how = f" ({'; '.join(sorted(h for h in hows if h))})" if any(hows) else ""
    summary = (
        f"{bottleneck} leads, but which of its fixes applies depends on {names}, which the "
        f"profile lacks: collect them before changing anything{how}"
    )
    if collector is not None and collector.id not in history.rejected:
        ops = abstract_ops(collector, ctx)
        if ops and not is_applied(collector, ctx):
            return _Choice(collector, bottleneck, ops, "needs-data", summary, tuple(rejected))
        if is_applied(collector, ctx):
            summary += (
                f"; the config already asks for them ({collector.id} is applied), so this "
                "profile predates the config: profile again with it"
            )
    return Suggestion("needs-data", None, tuple(rejected), summary)


def _choose(
    graph: RuleGraph, diagnosis: Diagnosis, ctx: Context, history: History
) -> _Choice | Suggestion:
    if not diagnosis.bottlenecks:
        return Suggestion(
            "healthy", None, (), "No bottleneck above its threshold: keep the current settings."
        )
    rejected: list[Rejected] = []
    unknown_of = {u.rule: u for u in diagnosis.unknown}
    platform = ctx.facts.get("profile.platform")
    for bottleneck in diagnosis.bottlenecks:
        gap = unknown_of.get(bottleneck.id)
        if gap is not None and bottleneck is diagnosis.bottlenecks[0]:
            collector = _collector(graph, set(gap.missing), platform, ctx.dialect)
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
        candidates: list[tuple[int, FeatureRule]] = []
        undecided: set[str] = set()  # facts an earlier feature's trigger needs
        passed: list[tuple[int, Rejected]] = []
        for order, rule in graph.features_for(bottleneck.id):
            if not rule.runs_on(platform) or not rule.runs_for(ctx.dialect):
                # another platform's variable or kernel, another backend's config key
                continue
            reason = _judge(rule, bottleneck.id, graph, ctx, history)
            if reason is None and undecided:
                reason = "later in the try order than features the profile cannot decide"
                passed.append((order, Rejected(rule.id, reason)))
                continue
            if reason is None:
                candidates.append((order, rule))
                continue
            passed.append((order, Rejected(rule.id, reason)))
            gate = _gate(rule, bottleneck.id, ctx)
            if (
                not candidates
                and gate.truth is Truth.UNKNOWN
                and rule.enabled
                and rule.id not in history.rejected
                and _unmet_requirement(rule, ctx) is None
            ):
                undecided.update(gate.missing)
        chosen, ranked_after = _rank_by_ceiling(candidates, ctx) if candidates else (None, [])
        passed.extend(ranked_after)
        rejected.extend(r for _, r in sorted(passed, key=lambda pair: pair[0]))
        if chosen is not None:
            lead = (
                "main bottleneck" if bottleneck is diagnosis.bottlenecks[0] else "next bottleneck"
            )
            summary = f"{lead}: {bottleneck.id}"
            return _Choice(
                chosen, bottleneck.id, abstract_ops(chosen, ctx), "change", summary, tuple(rejected)
            )
        if undecided:
            return _collect_first(graph, bottleneck.id, undecided, ctx, history, rejected)
    main = diagnosis.bottlenecks[0]
    cost = f"{main.cost_ratio:.1%} of the step" if main.cost_ratio > 0 else "no measurable time"
    return Suggestion(
        "healthy",
        None,
        tuple(rejected),
        f"{main.id} leads ({cost}; {main.message}) but every documented feature for it is "
        "already applied, rejected or blocked — each candidate and why is listed below. The "
        "next step is outside the rules: profile at a deeper level or look at the operators "
        "and ranks it names.",
    )


def _rank_by_ceiling(
    candidates: list[tuple[int, FeatureRule]], ctx: Context
) -> tuple[FeatureRule, list[tuple[int, Rejected]]]:
    """The candidate that can recover the most step time; the try order decides ties and
    whenever a ceiling is unknown (hard orderings are `after` edges, already enforced)."""
    ceilings = {rule.id: ceiling_of(rule, ctx) for _, rule in candidates}
    best = candidates[0][1]
    if ceilings[best.id] is not None:
        for _, rule in candidates[1:]:
            mine, top = ceilings[rule.id], ceilings[best.id]
            # equal to the reported precision (0.1% of the step): the try order decides
            if mine is not None and top is not None and round(mine[1], 3) > round(top[1], 3):
                best = rule
    passed = []
    top = ceilings[best.id]
    for order, rule in candidates:
        if rule is best:
            continue
        mine = ceilings[rule.id]
        if mine is not None and top is not None and round(mine[1], 3) < round(top[1], 3):
            why = (
                f"can recover at most {mine[1]:.1%} of the step, less than {best.id} "
                f"({top[1]:.1%}): candidates are ranked by ceiling"
            )
        else:
            why = f"next in the try order ({order}) after {best.id}"
        passed.append((order, Rejected(rule.id, why)))
    return best, passed


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
    ceiling = ceiling_of(rule, ctx)
    effect = rule.effect
    expected = effect.gain + (f"; memory: {effect.memory}" if effect.memory else "")
    return Recommendation(
        feature=rule.id,
        bottleneck=choice.bottleneck,
        title=rule.title,
        why=why,
        evidence=evidence_facts(facts, diagnosis, choice.bottleneck),
        patch=patch,
        advice=render((change.advice or "").strip(), facts=FactView(ctx.facts)),
        expected=expected,
        risk=effect.risk,
        verify=verify_checks(rule, ctx),
        ceiling_ms=ceiling[0] if ceiling else None,
        ceiling_ratio=ceiling[1] if ceiling else None,
    )


def plan(
    graph: RuleGraph,
    diagnosis: Diagnosis,
    ctx: Context,
    history: History,
    facts: list[Fact],
) -> Suggestion:
    """The one next change as a whole suggestion (its patch not yet placed in files)."""
    needs = _level_needs(graph, diagnosis)
    for before in (undo(graph, ctx, history), awaiting(history), stale(graph, diagnosis, ctx)):
        if before is not None:
            return dataclasses.replace(before, warnings=trust.trust_warnings(ctx, needs))
    choice = _choose(graph, diagnosis, ctx, history)
    if isinstance(choice, Suggestion):
        suggestion = choice
    else:
        rec = _recommend(choice, diagnosis, ctx, facts)
        suggestion = Suggestion(choice.status, rec, choice.rejected, choice.summary)
    gated = trust.gate(suggestion, diagnosis, ctx, needs)
    return dataclasses.replace(gated, warnings=trust.trust_warnings(ctx, needs))


def _level_needs(graph: RuleGraph, diagnosis: Diagnosis) -> dict[str, str]:
    """The least profiler level of each bottleneck found (rules' needs_level)."""
    needs = {}
    for found in diagnosis.bottlenecks:
        rule = graph.ruleset.rules.get(found.id)
        if isinstance(rule, BottleneckRule) and rule.needs_level:
            needs[found.id] = rule.needs_level
    return needs
