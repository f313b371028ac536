"""Diagnosis -> the ONE next change: walk the main bottleneck's features in the documented try
order and keep the first whose prerequisites hold, that conflicts with nothing, is not applied
yet and was not rejected before."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from advisor.engine.conditions import Context, Outcome, Truth, evaluate, resolve
from advisor.engine.diagnose import Diagnosis, format_value
from advisor.engine.graph import RuleGraph
from advisor.engine.rules import Rule
from advisor.facts.catalogue import is_known, spec_for
from advisor.model import Fact, FactSet, PatchOp, Rejected


@dataclass(frozen=True)
class Choice:
    """The chosen feature and the abstract ops (before they are placed in files)."""

    rule: Rule
    bottleneck: str
    ops: tuple[PatchOp, ...]
    needs_data: bool = False


@dataclass(frozen=True)
class Plan:
    status: str  # "change" | "healthy" | "needs-data"
    choice: Choice | None
    rejected: tuple[Rejected, ...]
    summary: str


def _missing_names(outcome: Outcome) -> str:
    return ", ".join(m.partition(":")[2] or m for m in outcome.missing)


def _local(ctx: Context, rule: Rule) -> Context:
    return Context(ctx.facts, ctx.config, ctx.env, rule.params)


def is_applied(rule: Rule, ctx: Context) -> bool:
    """True only when the feature says how to recognise it and the config/env shows it."""
    condition = rule.data.get("applied_when")
    return condition is not None and evaluate(condition, _local(ctx, rule)).is_true


def config_value(ctx: Context, dotted: str) -> Any:
    node: Any = ctx.config or {}
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def abstract_ops(rule: Rule, ctx: Context) -> tuple[PatchOp, ...]:
    """The feature's change template resolved against the current config and environment."""
    change = rule.data["change"]
    local = _local(ctx, rule)
    ops = []
    for op in change.get("ops", []) or []:
        if op.get("unless") and evaluate(op["unless"], local).is_true:
            continue
        path = str(op["path"])
        current = (
            (ctx.env or {}).get(path) if change["target"] == "env" else config_value(ctx, path)
        )
        if op["op"] == "increment":
            base = (
                current
                if isinstance(current, int | float) and not isinstance(current, bool)
                else op.get("default", 0)
            )
            limit = resolve(op.get("max"), rule.params)
            value = base + op.get("by", 1)
            if limit is not None:
                value = min(value, limit)
            ops.append(PatchOp("set", path, value, current))
        elif op["op"] == "set":
            ops.append(PatchOp("set", path, op["value"], current))
        else:
            ops.append(PatchOp("remove", path, None, current))
    return tuple(ops)


def _after_blocker(
    rule: Rule, graph: RuleGraph, ctx: Context, rejected_before: set[str]
) -> str | None:
    """A feature that must come first and could still be applied."""
    for first in rule.data.get("after", []) or []:
        if first in rejected_before or first not in graph.ruleset:
            continue
        prior = graph.ruleset[first]
        local = _local(ctx, prior)
        if is_applied(prior, ctx):
            continue
        # a prior feature whose prerequisites are not known to hold will not be proposed: it
        # cannot hold this one back
        blocked = any(
            not evaluate(req["condition"], local).is_true
            for req in prior.data.get("requires", []) or []
        )
        if not blocked:
            return str(first)
    return None


def _judge(
    rule: Rule, bottleneck: str, graph: RuleGraph, ctx: Context, rejected_before: set[str]
) -> str | None:
    """None when the feature can be proposed now, else the reason it cannot."""
    local = _local(ctx, rule)
    if not rule.enabled:
        return "disabled in the settings file"
    for item in rule.data.get("addresses", []) or []:
        if item["bottleneck"] == bottleneck and item.get("when"):
            gate = evaluate(item["when"], local)
            if gate.truth is Truth.FALSE:
                return "not indicated by this profile (its trigger condition is false)"
            if gate.truth is Truth.UNKNOWN:
                return f"unknown whether it applies: needs {_missing_names(gate)}"
    if rule.id in rejected_before:
        return "tried before and rejected (ledger)"
    if is_applied(rule, ctx):
        return "already applied in the current config/environment"
    for req in rule.data.get("requires", []) or []:
        outcome = evaluate(req["condition"], local)
        if outcome.truth is Truth.FALSE:
            return f"prerequisite not met: {req['reason']}"
        if outcome.truth is Truth.UNKNOWN:
            return f"prerequisite unknown ({req['reason']}): needs {_missing_names(outcome)}"
    for conflict in rule.data.get("conflicts", []) or []:
        if "condition" in conflict and evaluate(conflict["condition"], local).is_true:
            return f"conflicts with the current settings: {conflict['reason']}"
        other = conflict.get("feature")
        if other and other in graph.ruleset:
            prior = graph.ruleset[other]
            if is_applied(prior, ctx):
                return f"conflicts with {other}, which is applied: {conflict['reason']}"
    blocker = _after_blocker(rule, graph, ctx, rejected_before)
    if blocker:
        return f"{blocker} must come first"
    if rule.data["change"]["applicability"] != "display-only" and not abstract_ops(rule, ctx):
        return "nothing left to change"
    return None


def _collector(graph: RuleGraph, missing: set[str]) -> Rule | None:
    best, covered = None, 0
    for rule in graph.ruleset.of_kind("feature"):
        collects = set(rule.data.get("collects", []) or [])
        overlap = len(collects & missing)
        if overlap > covered:
            best, covered = rule, overlap
    return best


def plan(graph: RuleGraph, diagnosis: Diagnosis, ctx: Context, rejected_before: set[str]) -> Plan:
    if not diagnosis.bottlenecks:
        return Plan(
            "healthy", None, (), "No bottleneck above its threshold: keep the current settings."
        )
    rejected: list[Rejected] = []
    unknown_of = {u.rule: u for u in diagnosis.unknown}
    for bottleneck in diagnosis.bottlenecks:
        gap = unknown_of.get(bottleneck.id)
        if gap is not None and bottleneck is diagnosis.bottlenecks[0]:
            collector = _collector(graph, set(gap.missing))
            if collector is not None and collector.id not in rejected_before:
                ops = abstract_ops(collector, ctx)
                if ops and not is_applied(collector, ctx):
                    summary = (
                        f"{bottleneck.id} is suspected but the profile lacks {', '.join(gap.missing)}: "
                        "collect them before changing anything"
                    )
                    return Plan(
                        "needs-data",
                        Choice(collector, bottleneck.id, ops, True),
                        tuple(rejected),
                        summary,
                    )
        chosen: Choice | None = None
        for order, feature_id in graph.features_for(bottleneck.id):
            rule = graph.ruleset[feature_id]
            if chosen is not None:
                rejected.append(
                    Rejected(feature_id, f"next in the try order ({order}) after {chosen.rule.id}")
                )
                continue
            reason = _judge(rule, bottleneck.id, graph, ctx, rejected_before)
            if reason is None:
                chosen = Choice(rule, bottleneck.id, abstract_ops(rule, ctx))
            else:
                rejected.append(Rejected(feature_id, reason))
        if chosen is not None:
            lead = (
                "main bottleneck" if bottleneck is diagnosis.bottlenecks[0] else "next bottleneck"
            )
            return Plan("change", chosen, tuple(rejected), f"{lead}: {bottleneck.id}")
    return Plan(
        "healthy",
        None,
        tuple(rejected),
        "Bottlenecks were found but every documented feature for them is applied, rejected or "
        "blocked: see the rejected list.",
    )


def evidence_facts(facts: FactSet, diagnosis: Diagnosis, bottleneck: str) -> list[Fact]:
    main = next((b for b in diagnosis.bottlenecks if b.id == bottleneck), None)
    wanted = {s.fact for s in diagnosis.symptoms if main and s.id in main.evidence}
    return [f for f in facts.facts if f.id in wanted and f.scope == "job"]


def verify_lines(rule: Rule, facts: FactSet) -> list[str]:
    lines = []
    for item in rule.data.get("verify", []) or []:
        fact_id = str(item["fact"])
        direction = item["direction"]
        current = facts.get(fact_id)
        now = ""
        if (
            current is not None
            and is_known(fact_id)
            and isinstance(current.value, int | float)
            and not isinstance(current.value, bool)
        ):
            now = f" (now {format_value(float(current.value), spec_for(fact_id).unit)})"
        verb = {
            "decrease": "should decrease",
            "increase": "should increase",
            "unchanged": "should not change",
            "watch": "watch it",
        }[direction]
        lines.append(f"{fact_id} {verb}{now}")
    return lines
