"""Facts -> graded symptoms -> ranked bottlenecks, with what is unknown and how to collect it.

The rules' own message templates are filled here (they are the rules' words); why a bottleneck
leads is a code the renderers word."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

from advisor.core.values import as_number
from advisor.engine.conditions import Context, Truth, evaluate
from advisor.engine.graph import RuleGraph
from advisor.engine.rule_model import LEVELS, BottleneckRule, SymptomRule
from advisor.engine.templates import render
from advisor.facts.catalogue import ENV_PREFIX, collect_hint, is_known, spec_for
from advisor.facts.units import format_value
from advisor.model import Bottleneck, Lead

_RANK = {level: i for i, level in enumerate(LEVELS)}


@dataclass(frozen=True)
class Symptom:
    """A rule's measure that crossed one of its cut points."""

    id: str
    level: str
    fact: str
    value: float
    threshold: float
    fine: float
    cost_ratio: float
    message: str  # the rule's message template, filled with the values
    # the level of the step time it costs (its fine threshold plus its cost, graded on its own
    # cut points: what a bottleneck's grade beside its cost derives from); None when it costs none
    cost_level: str | None = None
    # the share of the step this symptom's measure claims once the parts other bottlenecks
    # explain are left out (None: the measure is not a share of the step it can claim)
    claimed_ratio: float | None = None


class CollectBy(Enum):
    """Where a missing value comes from, so the renderer can say how to get it."""

    profile = "profile"  # a profile fact: `hint` is the catalogue's way to collect it
    config = "config"  # a config key: give the config
    launch = "launch"  # a launch variable: give the launch script
    other = "other"


@dataclass(frozen=True)
class Collection:
    by: CollectBy
    name: str
    hint: str = ""


@dataclass(frozen=True)
class Unknown:
    """A rule that could not be evaluated: the facts it lacks and how to collect them."""

    rule: str
    missing: list[str]
    collect: tuple[Collection, ...]


@dataclass
class Diagnosis:
    symptoms: list[Symptom] = field(default_factory=list)
    bottlenecks: list[Bottleneck] = field(default_factory=list)
    unknown: list[Unknown] = field(default_factory=list)
    # the step's phases from the framework's annotations: phase.*_ratio fact -> its value
    # (empty when the profile has no phase ranges)
    phases: dict[str, float] = field(default_factory=dict)

    @property
    def main(self) -> Bottleneck | None:
        return self.bottlenecks[0] if self.bottlenecks else None


def step_models_only(facts: Mapping[str, object]) -> bool:
    """No rank was read in full (--deep 0): what a full read gives is missing, not absent."""
    return facts.get("profile.ranks_in_full") == 0


def _collections(
    missing: list[str],
    platform: object,
    shallow: bool = False,
    why: Mapping[str, str] | None = None,
) -> tuple[Collection, ...]:
    """How each missing value is collected (`source:name` references, in order, deduplicated;
    `why`: the missing facts' reasons, which may name what is actually absent)."""
    ways: list[Collection] = []
    for item in missing:
        source, _, name = item.partition(":")
        if source == "fact" and is_known(name):
            reason = (why or {}).get(name)
            way = Collection(CollectBy.profile, name, collect_hint(name, platform, shallow, reason))
        elif source == "config":
            way = Collection(CollectBy.config, name)
        elif source == "env":
            way = Collection(CollectBy.launch, name)
        else:
            way = Collection(CollectBy.other, item)
        if way not in ways:
            ways.append(way)
    return tuple(ways)


def _unknown(rule_id: str, missing: list[str], ctx: Context) -> Unknown:
    names = [m.partition(":")[2] or m for m in missing]
    facts = ctx.facts
    return Unknown(
        rule_id,
        names,
        _collections(missing, facts.get("profile.platform"), step_models_only(facts), ctx.missing),
    )


def evaluate_symptom(rule: SymptomRule, ctx: Context) -> Symptom | Unknown | None:
    gate = evaluate(rule.when, ctx)
    if gate.truth is Truth.FALSE:
        return None
    if gate.truth is Truth.UNKNOWN:
        return _unknown(rule.id, list(gate.missing), ctx)
    fact = rule.measure
    # an environment variable's value is text: "1" is a number, "" (recorded unset) is not
    value = as_number(ctx.facts.get(fact), strings=fact.startswith(ENV_PREFIX))
    if value is None:
        return _unknown(rule.id, [f"fact:{fact}"], ctx) if fact not in ctx.facts else None
    level, threshold = _grade(rule, value)
    if level is None:
        return None
    fine = rule.fine
    cost = 0.0
    cost_level = None
    claimed = None
    if not rule.cost.none:
        # the parts other bottlenecks explain (unknown: nothing is excluded)
        excluded = sum(as_number(ctx.facts.get(part)) or 0.0 for part in rule.cost.excluding)
        costed = value - excluded if rule.compare.upward else value + excluded
        excess = costed - fine if rule.compare.upward else fine - costed
        scale = 1.0
        if rule.cost.scale:
            scale_value = as_number(ctx.facts.get(rule.cost.scale))
            scale = scale_value if scale_value is not None else 1.0
        cost = max(0.0, excess * scale)
        claimed = max(0.0, costed * scale) if rule.compare.upward else None
        if cost > 0:
            # graded on the cost itself, a share of the step, as if the measure were that far
            # past its fine threshold: the part another bottleneck explains, and the part the
            # scale takes off (a share of compute is less of the step), are not graded
            shown = fine + cost if rule.compare.upward else fine - cost
            cost_level = _grade(rule, shown)[0] or LEVELS[0]
    unit = spec_for(fact).unit
    message = render(
        rule.message,
        value=format_value(value, unit, compact=True),
        threshold=format_value(threshold, unit, compact=True),
        fine=format_value(fine, unit, compact=True),
        level=level,
        facts=FactView(ctx.facts),
    )
    return Symptom(rule.id, level, fact, value, threshold, fine, cost, message, cost_level, claimed)


def _grade(rule: SymptomRule, value: float) -> tuple[str | None, float]:
    """The highest level whose cut point the value crosses, and that cut point."""
    level = None
    threshold = 0.0
    for name, cut in rule.levels.items():
        if rule.compare.crossed(value, cut):
            level, threshold = name, cut
    return level, threshold


class FactView(dict[str, str]):
    """Lets rule messages quote facts, formatted by unit: `{facts[comm.time_ms_by_op]}`, and a
    field of a record fact by its name: `{facts[comm.slowest_link.link]}`."""

    def __init__(self, facts: Mapping[str, object]) -> None:
        super().__init__(
            {
                k: format_value(v, spec_for(k).unit) if is_known(k) else str(v)
                for k, v in facts.items()
            }
        )
        for k, v in facts.items():
            if isinstance(v, Mapping):
                self.update({f"{k}.{field}": _field(item) for field, item in v.items()})

    def __missing__(self, key: str) -> str:
        return "unknown (this profile does not measure it)"


def _field(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _gap(rule: BottleneckRule, unknown: Mapping[str, Unknown]) -> Unknown | None:
    """The facts the bottleneck's evidence lacks, and how to collect them."""
    ids = [sid for sid in rule.evidence.ids if sid in unknown]
    missing = sorted({m for sid in ids for m in unknown[sid].missing})
    if not missing:
        return None
    collect = tuple(dict.fromkeys(way for s in ids for way in unknown[s].collect))
    return Unknown(rule.id, missing, collect)


def _evidence_holds(rule: BottleneckRule, fired: Mapping[str, Symptom]) -> bool:
    any_ids, all_ids = rule.evidence.any, rule.evidence.all
    return (not any_ids or any(s in fired for s in any_ids)) and all(s in fired for s in all_ids)


def _evaluate_bottleneck(
    rule: BottleneckRule,
    fired: Mapping[str, Symptom],
    unknown: Mapping[str, Unknown],
    facts: Mapping[str, object],
    timeless: frozenset[str] = frozenset(),
) -> tuple[Bottleneck | None, Unknown | None]:
    hits = [sid for sid in rule.evidence.ids if sid in fired]
    gap = _gap(rule, unknown)
    if not hits or not _evidence_holds(rule, fired):
        return None, gap
    symptoms = [fired[s] for s in hits]
    evidence_level = max((s.level for s in symptoms), key=_RANK.__getitem__)
    cost = max(s.cost_ratio for s in symptoms)
    # the grade shown beside the cost comes from the evidence that costs the time; evidence
    # that claims none (or whose time another bottleneck explains) grades it no higher than a note
    costed = [s.cost_level for s in symptoms if s.cost_level is not None]
    severity = max(costed, key=_RANK.__getitem__) if costed else LEVELS[0]
    detail = "; ".join(s.message for s in symptoms)
    # evidence not measured that could claim step time (risk-only evidence claims none)
    unmeasured = tuple(s for s in rule.evidence.ids if s in unknown and s not in timeless)
    if cost <= 0:
        # no time to template: the evidence speaks, and the rule's notes say what it risks
        notes = render(rule.docs.notes, facts=FactView(facts)) if rule.docs.notes else ""
        found = Bottleneck(rule.id, severity, cost, hits, detail, rule.title, notes)
    else:
        # evidence not measured could only raise the cost: the largest of the evidence's
        shown = f"at least {cost:.1%}" if unmeasured else f"{cost:.1%}"
        message = render(rule.message, cost=shown, evidence=detail, facts=FactView(facts))
        found = Bottleneck(rule.id, severity, cost, hits, message, rule.title)
    return dataclasses.replace(found, evidence_level=evidence_level, unmeasured=unmeasured), gap


def timeless_symptoms(graph: RuleGraph) -> frozenset[str]:
    """The symptoms that claim no step time (evidence of a risk only)."""
    return frozenset(r.id for r in graph.ruleset.of_type(SymptomRule) if r.cost.none)


def _with_lead(ranked: list[Bottleneck]) -> list[Bottleneck]:
    """The first bottleneck, marked with why it leads."""
    if not ranked:
        return ranked
    first = ranked[0]
    if len(ranked) == 1:
        lead = dataclasses.replace(first, lead=Lead.only)
    elif first.cost_ratio > ranked[1].cost_ratio:
        second = ranked[1]
        lead = dataclasses.replace(
            first,
            lead=Lead.costs_more,
            runner_up=(second.id, second.cost_ratio),
            runner_up_unmeasured=bool(second.unmeasured),
        )
    else:
        lead = dataclasses.replace(first, lead=Lead.more_severe)
    return [lead, *ranked[1:]]


def diagnose(graph: RuleGraph, ctx: Context) -> Diagnosis:
    result = Diagnosis()
    fired: dict[str, Symptom] = {}
    unknown: dict[str, Unknown] = {}
    platform = ctx.facts.get("profile.platform")
    for rule in sorted(graph.ruleset.of_type(SymptomRule), key=lambda r: r.id):
        if not rule.runs_on(platform):
            continue  # measured only where its data exists (e.g. Ascend PMU pipe ratios)
        outcome = evaluate_symptom(rule, ctx)
        if isinstance(outcome, Symptom):
            fired[rule.id] = outcome
        elif isinstance(outcome, Unknown):
            unknown[rule.id] = outcome
    result.symptoms = sorted(fired.values(), key=lambda s: (-_RANK[s.level], -s.cost_ratio, s.id))
    bottlenecks = []
    gaps = list(unknown.values())
    timeless = timeless_symptoms(graph)
    for bottleneck in sorted(graph.ruleset.of_type(BottleneckRule), key=lambda r: r.id):
        found, gap = _evaluate_bottleneck(bottleneck, fired, unknown, ctx.facts, timeless)
        if found:
            bottlenecks.append(found)
        if gap:
            gaps.append(gap)
    ranked = sorted(bottlenecks, key=lambda b: (-b.cost_ratio, -_RANK[b.evidence_level], b.id))
    result.bottlenecks = _with_lead(ranked)
    result.unknown = gaps
    result.phases = {
        k: float(v)
        for k, v in sorted(ctx.facts.items())
        if k.startswith("phase.") and k.endswith("_ratio") and isinstance(v, int | float)
    }
    return result
