"""Diagnosis -> the ONE next change: walk the main bottleneck's features in the documented try
order and keep the first whose prerequisites hold, that conflicts with nothing, is not applied
yet and was not rejected before (a change reverted for no measurable effect may be judged again
once the job has changed: engine/retry.py). After a 'revert' verdict the next change is the undo.

The planner returns the whole suggestion with an abstract patch (ops on a target); placing the
ops in files is the edit layer's job, wording it the renderer's.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from advisor.core.values import as_number
from advisor.engine import trust
from advisor.engine.candidates import judge, trigger, unmet_requirement
from advisor.engine.changes import abstract_ops, ceiling_of, is_applied, reach_of
from advisor.engine.conditions import Context, Truth
from advisor.engine.diagnose import Diagnosis, FactView, step_models_only
from advisor.engine.graph import RuleGraph
from advisor.engine.loop import History, awaiting, stale, undo
from advisor.engine.memory_room import out_of_room, room_made
from advisor.engine.retry import retries
from advisor.engine.rule_model import BottleneckRule, FeatureRule
from advisor.engine.templates import render
from advisor.facts.catalogue import collect_hint, is_known, spec_for
from advisor.model import (
    Fact,
    Grounds,
    Patch,
    PatchOp,
    PatchTarget,
    Reason,
    Recommendation,
    RejectCode,
    Rejected,
    Status,
    Suggestion,
    Value,
    VerifyCheck,
)


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
    status: Status
    reason: Reason
    rejected: tuple[Rejected, ...]


@dataclass
class _Walk:
    """One bottleneck's features judged in try order."""

    chosen: FeatureRule | None = None
    rejected: list[Rejected] = field(default_factory=list)  # in try order
    undecided: set[str] = field(default_factory=set)  # facts an earlier feature's trigger needs


def _collect_first(
    graph: RuleGraph,
    bottleneck: str,
    missing: set[str],
    ctx: Context,
    history: History,
    rejected: list[Rejected],
) -> _Choice | Suggestion:
    """The try order depends on facts the profile lacks: collect them before changing anything."""
    platform = ctx.facts.get("profile.platform")
    collector = _collector(graph, {m.partition(":")[2] for m in missing}, platform, ctx.dialect)
    shallow = step_models_only(ctx.facts)
    hints = {
        collect_hint(m.partition(":")[2], platform, shallow, ctx.missing.get(m.partition(":")[2]))
        for m in missing
        if is_known(m.partition(":")[2])
    }
    values: dict[str, Value] = {
        "bottleneck": bottleneck,
        "missing": tuple(sorted(m.partition(":")[2] or m for m in missing)),
        "hints": tuple(sorted(h for h in hints if h)),
        "applied_collector": None,
    }
    if collector is not None and collector.id not in history.rejected:
        ops = abstract_ops(collector, ctx)
        if ops and not is_applied(collector, ctx):
            reason = Reason(Grounds.fixes_undecided, values)
            return _Choice(collector, bottleneck, ops, Status.needs_data, reason, tuple(rejected))
        if is_applied(collector, ctx):
            # the config already asks for them: this profile predates the config
            values["applied_collector"] = collector.id
    return Suggestion(
        Status.needs_data, None, tuple(rejected), Reason(Grounds.fixes_undecided, values)
    )


def _collect_evidence(
    graph: RuleGraph, diagnosis: Diagnosis, ctx: Context, history: History
) -> _Choice | None:
    """The main bottleneck is suspected but its evidence lacks facts a feature collects."""
    main = diagnosis.bottlenecks[0]
    gap = next((u for u in diagnosis.unknown if u.rule == main.id), None)
    if gap is None:
        return None
    platform = ctx.facts.get("profile.platform")
    collector = _collector(graph, set(gap.missing), platform, ctx.dialect)
    if collector is None or collector.id in history.rejected:
        return None
    ops = abstract_ops(collector, ctx)
    if not ops or is_applied(collector, ctx):
        return None
    values: dict[str, Value] = {"bottleneck": main.id, "missing": tuple(gap.missing)}
    reason = Reason(Grounds.evidence_missing, values)
    return _Choice(collector, main.id, ops, Status.needs_data, reason, ())


def _undecided_needs(
    rule: FeatureRule, bottleneck: str, ctx: Context, history: History
) -> tuple[str, ...]:
    """The facts a feature's trigger lacks, when only they keep it from being proposed."""
    if not rule.enabled or rule.id in history.rejected:
        return ()
    if unmet_requirement(rule, ctx) is not None:
        return ()
    gate = trigger(rule, bottleneck, ctx)
    return gate.missing if gate.truth is Truth.UNKNOWN else ()


def _walk(graph: RuleGraph, bottleneck: str, ctx: Context, history: History) -> _Walk:
    candidates: list[tuple[int, FeatureRule]] = []
    walk = _Walk()
    passed: list[tuple[int, Rejected]] = []
    platform = ctx.facts.get("profile.platform")
    for order, rule in graph.features_for(bottleneck):
        if not rule.runs_on(platform) or not rule.runs_for(ctx.dialect):
            continue  # another platform's variable or kernel, another backend's config key
        rejected = judge(rule, bottleneck, graph, ctx, history)
        if rejected is None and walk.undecided:
            needs = tuple(sorted(m.partition(":")[2] or m for m in walk.undecided))
            rejected = Rejected(rule.id, RejectCode.behind_undecided, {"needs": needs})
        elif rejected is None:
            candidates.append((order, rule))
            continue
        passed.append((order, rejected))
        if not candidates:
            walk.undecided.update(_undecided_needs(rule, bottleneck, ctx, history))
    if candidates:
        walk.chosen, ranked_after = _rank_by_ceiling(candidates, ctx)
        passed.extend(ranked_after)
    walk.rejected = [r for _, r in sorted(passed, key=lambda pair: pair[0])]
    return walk


def _choose(
    graph: RuleGraph, diagnosis: Diagnosis, ctx: Context, history: History
) -> _Choice | Suggestion:
    if not diagnosis.bottlenecks:
        return Suggestion(Status.healthy, None, (), Reason(Grounds.no_bottleneck))
    early = _collect_evidence(graph, diagnosis, ctx, history)
    if early is not None:
        return early
    freeing = _free_memory_first(graph, diagnosis, ctx, history)
    if freeing is not None:
        return freeing
    rejected: list[Rejected] = []
    main = diagnosis.bottlenecks[0]
    for bottleneck in diagnosis.bottlenecks:
        walk = _walk(graph, bottleneck.id, ctx, history)
        rejected.extend(walk.rejected)
        if walk.chosen is not None:
            code = Grounds.main_bottleneck if bottleneck is main else Grounds.next_bottleneck
            reason = Reason(code, {"bottleneck": bottleneck.id})
            ops = abstract_ops(walk.chosen, ctx)
            return _Choice(walk.chosen, bottleneck.id, ops, Status.change, reason, tuple(rejected))
        if walk.undecided:
            return _collect_first(graph, bottleneck.id, walk.undecided, ctx, history, rejected)
    values: dict[str, Value] = {
        "bottleneck": main.id,
        "cost_ratio": main.cost_ratio,
        "message": main.message,
    }
    return Suggestion(
        Status.healthy, None, tuple(rejected), Reason(Grounds.features_exhausted, values)
    )


def _free_memory_first(
    graph: RuleGraph, diagnosis: Diagnosis, ctx: Context, history: History
) -> _Choice | None:
    """After a run that ran out of memory, the first change (bottlenecks in order, each in its
    try order) that lowers the memory peak and can be proposed now (engine/memory_room.py)."""
    failed = out_of_room(graph.ruleset, history)
    if failed is None:
        return None
    platform = ctx.facts.get("profile.platform")
    for bottleneck in diagnosis.bottlenecks:
        for _, rule in graph.features_for(bottleneck.id):
            if rule.effect.device_memory != "less":
                continue
            if not rule.runs_on(platform) or not rule.runs_for(ctx.dialect):
                continue
            if judge(rule, bottleneck.id, graph, ctx, history) is not None:
                continue
            values: dict[str, Value] = {"bottleneck": bottleneck.id, "other": failed}
            reason = Reason(Grounds.frees_memory, values)
            ops = abstract_ops(rule, ctx)
            return _Choice(rule, bottleneck.id, ops, Status.change, reason, ())
    return None


def _rank_by_ceiling(
    candidates: list[tuple[int, FeatureRule]], ctx: Context
) -> tuple[FeatureRule, list[tuple[int, Rejected]]]:
    """The candidate that can recover the most step time; the try order decides ties and
    whenever a ceiling is unknown (hard orderings are `after` edges, already enforced). A change
    that alters the numerics (a lower-precision reduction) comes after every one that does not,
    as the seeds try it: last."""
    exact = [pair for pair in candidates if not pair[1].effect.changes_numerics]
    pool = exact or candidates
    ceilings = {rule.id: ceiling_of(rule, ctx) for _, rule in candidates}
    best = pool[0][1]
    if ceilings[best.id] is not None:
        for _, rule in pool[1:]:
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
        values: dict[str, Value]
        if rule.effect.changes_numerics and not best.effect.changes_numerics:
            values = {"other": best.id, "ceiling_ratio": None if mine is None else mine[1]}
            passed.append((order, Rejected(rule.id, RejectCode.numerics_last, values)))
        elif mine is not None and top is not None and round(mine[1], 3) < round(top[1], 3):
            values = {"ceiling_ratio": mine[1], "other": best.id, "other_ratio": top[1]}
            passed.append((order, Rejected(rule.id, RejectCode.lower_ceiling, values)))
        else:
            values = {"order": order, "other": best.id}
            passed.append((order, Rejected(rule.id, RejectCode.try_order, values)))
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
    cause = next((b for b in diagnosis.bottlenecks if b.id == choice.bottleneck), None)
    reach = reach_of(rule, ctx)
    return Recommendation(
        feature=rule.id,
        bottleneck=choice.bottleneck,
        title=rule.title,
        cause=cause,
        evidence=evidence_facts(facts, diagnosis, choice.bottleneck),
        patch=patch,
        advice=render((change.advice or "").strip(), facts=FactView(ctx.facts)),
        expected=rule.effect.gain,
        risk=rule.effect.risk,
        memory=rule.effect.memory or "",
        verify=verify_checks(rule, ctx),
        ceiling_ms=reach.ms if reach else None,
        ceiling_ratio=reach.ratio if reach else None,
        reach=reach,
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
    # a change reverted for no measurable effect, judged again once the job has changed
    again = retries(graph, diagnosis, ctx, history)
    again.update(room_made(graph.ruleset, history))
    if again:
        history = dataclasses.replace(history, rejected=history.rejected - again.keys())
    choice = _choose(graph, diagnosis, ctx, history)
    if isinstance(choice, Suggestion):
        suggestion = choice
    else:
        rec = _recommend(choice, diagnosis, ctx, facts)
        rec = dataclasses.replace(rec, retry=again.get(rec.feature))
        suggestion = Suggestion(choice.status, rec, choice.rejected, choice.reason)
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
