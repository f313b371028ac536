"""Facts -> graded symptoms -> ranked bottlenecks, with what is unknown and how to collect it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from advisor.engine.conditions import Context, Truth, evaluate, resolve
from advisor.engine.graph import RuleGraph
from advisor.engine.rules import LEVELS, Rule
from advisor.facts.catalogue import is_known, spec_for

_RANK = {level: i for i, level in enumerate(LEVELS)}


@dataclass(frozen=True)
class Symptom:
    id: str
    level: str
    fact: str
    value: float
    threshold: float
    fine: float
    cost_ratio: float
    message: str

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "level": self.level,
            "fact": self.fact,
            "value": self.value,
            "threshold": self.threshold,
            "cost_ratio": self.cost_ratio,
            "message": self.message,
        }


@dataclass(frozen=True)
class Bottleneck:
    id: str
    severity: str
    cost_ratio: float
    evidence: list[str]
    message: str

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "severity": self.severity,
            "cost_ratio": self.cost_ratio,
            "evidence": self.evidence,
            "message": self.message,
        }


@dataclass(frozen=True)
class Unknown:
    rule: str
    missing: list[str]
    how_to_collect: str

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "missing": self.missing, "how_to_collect": self.how_to_collect}


@dataclass
class Diagnosis:
    symptoms: list[Symptom] = field(default_factory=list)
    bottlenecks: list[Bottleneck] = field(default_factory=list)
    unknown: list[Unknown] = field(default_factory=list)

    @property
    def main(self) -> Bottleneck | None:
        return self.bottlenecks[0] if self.bottlenecks else None


def format_value(value: float, unit: str) -> str:
    if unit == "ratio":
        return f"{value:.1%}"
    if unit == "ms":
        return f"{value:.2f} ms"
    if unit == "bytes":
        return f"{value / 1024**3:.2f} GiB"
    return f"{value:g}"


def _crossed(compare: str, value: float, cut: float) -> bool:
    return {
        "above": value > cut,
        "at_or_above": value >= cut,
        "below": value < cut,
        "at_or_below": value <= cut,
    }[compare]


def _how_to_collect(missing: list[str]) -> str:
    hints = []
    for item in missing:
        source, _, name = item.partition(":")
        if source == "fact" and is_known(name):
            hint = spec_for(name).collect or f"a profile that yields {name}"
        elif source == "config":
            hint = f"pass --config with {name} set"
        elif source == "env":
            hint = f"pass --launch (or profile with torch_npu >= 2.1 to record {name})"
        else:
            hint = item
        if hint not in hints:
            hints.append(hint)
    return "; ".join(hints)


def _unknown(rule_id: str, missing: list[str]) -> Unknown:
    names = [m.partition(":")[2] or m for m in missing]
    return Unknown(rule_id, names, _how_to_collect(missing))


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def evaluate_symptom(rule: Rule, ctx: Context) -> Symptom | Unknown | None:
    data = rule.data
    params = rule.params
    local = Context(ctx.facts, ctx.config, ctx.env, params)
    gate = evaluate(data.get("when"), local)
    if gate.truth is Truth.FALSE:
        return None
    if gate.truth is Truth.UNKNOWN:
        return _unknown(rule.id, list(gate.missing))
    fact = str(data["measure"])
    value = _as_number(ctx.facts.get(fact))
    if value is None:
        return _unknown(rule.id, [f"fact:{fact}"]) if fact not in ctx.facts else None
    compare = str(data["compare"])
    level = None
    threshold = 0.0
    for name in LEVELS:
        if name in data["levels"]:
            cut = float(resolve(data["levels"][name], params))
            if _crossed(compare, value, cut):
                level, threshold = name, cut
    if level is None:
        return None
    fine = float(resolve(data["fine"], params))
    cost = 0.0
    cost_spec = data.get("cost") or {}
    if not cost_spec.get("none"):
        excess = value - fine if compare.startswith(("above", "at_or_above")) else fine - value
        scale = 1.0
        if cost_spec.get("scale"):
            scale_value = _as_number(ctx.facts.get(str(cost_spec["scale"])))
            scale = scale_value if scale_value is not None else 1.0
        cost = max(0.0, excess * scale)
    unit = spec_for(fact).unit
    message = str(data["message"]).format(
        value=format_value(value, unit),
        threshold=format_value(threshold, unit),
        fine=format_value(fine, unit),
        level=level,
    )
    return Symptom(rule.id, level, fact, value, threshold, fine, cost, message)


class _FactView(dict[str, str]):
    """Lets rule messages quote facts: `{facts[memory.estimate.dominant]}`."""

    def __init__(self, facts: Mapping[str, Any]) -> None:
        super().__init__({k: str(v) for k, v in facts.items()})

    def __missing__(self, key: str) -> str:
        return f"unknown ({key} not measured)"


def _evaluate_bottleneck(
    rule: Rule,
    graph: RuleGraph,
    fired: Mapping[str, Symptom],
    unknown: Mapping[str, Unknown],
    facts: Mapping[str, Any],
) -> tuple[Bottleneck | None, Unknown | None]:
    evidence = rule.data["evidence"]
    any_ids = list(evidence.get("any", []) or [])
    all_ids = list(evidence.get("all", []) or [])
    hits = [sid for sid in any_ids + all_ids if sid in fired]
    ok = (not any_ids or any(s in fired for s in any_ids)) and all(s in fired for s in all_ids)
    missing = sorted(
        {m for sid in any_ids + all_ids if sid in unknown for m in unknown[sid].missing}
    )
    gap = None
    if missing:
        collect = "; ".join(
            dict.fromkeys(unknown[s].how_to_collect for s in any_ids + all_ids if s in unknown)
        )
        gap = Unknown(rule.id, missing, collect)
    if not ok or not hits:
        return None, gap
    symptoms = [fired[s] for s in hits]
    severity = max((s.level for s in symptoms), key=_RANK.__getitem__)
    cost = max(s.cost_ratio for s in symptoms)
    detail = "; ".join(s.message for s in symptoms)
    if cost > 0:
        message = str(rule.data["message"]).format(
            cost=f"{cost:.1%}", evidence=detail, facts=_FactView(facts)
        )
    else:
        message = (
            f"{rule.title}: {detail}. It claims no measurable step time, so it ranks after "
            "bottlenecks that do."
        )
        extra = rule.data.get("docs", {}).get("notes")
        if extra:
            message += " " + str(extra).format(facts=_FactView(facts))
    return Bottleneck(rule.id, severity, cost, hits, message), gap


def _lead_sentence(ranked: list[Bottleneck]) -> list[Bottleneck]:
    if not ranked:
        return ranked
    first = ranked[0]
    if len(ranked) == 1:
        why = "the only bottleneck found"
    elif first.cost_ratio > ranked[1].cost_ratio:
        why = (
            f"it costs {first.cost_ratio:.1%} of the step beyond its fine threshold, more than "
            f"{ranked[1].id} ({ranked[1].cost_ratio:.1%})"
        )
    else:
        why = f"its evidence is the most severe ({first.severity}) at equal cost"
    lead = Bottleneck(
        first.id, first.severity, first.cost_ratio, first.evidence, f"{first.message} Leads: {why}."
    )
    return [lead, *ranked[1:]]


def diagnose(graph: RuleGraph, ctx: Context) -> Diagnosis:
    result = Diagnosis()
    fired: dict[str, Symptom] = {}
    unknown: dict[str, Unknown] = {}
    for rule in sorted(graph.ruleset.of_kind("symptom"), key=lambda r: r.id):
        outcome = evaluate_symptom(rule, ctx)
        if isinstance(outcome, Symptom):
            fired[rule.id] = outcome
        elif isinstance(outcome, Unknown):
            unknown[rule.id] = outcome
    result.symptoms = sorted(fired.values(), key=lambda s: (-_RANK[s.level], -s.cost_ratio, s.id))
    bottlenecks = []
    gaps = list(unknown.values())
    for rule in sorted(graph.ruleset.of_kind("bottleneck"), key=lambda r: r.id):
        found, gap = _evaluate_bottleneck(rule, graph, fired, unknown, ctx.facts)
        if found:
            bottlenecks.append(found)
        if gap:
            gaps.append(gap)
    ranked = sorted(bottlenecks, key=lambda b: (-b.cost_ratio, -_RANK[b.severity], b.id))
    result.bottlenecks = _lead_sentence(ranked)
    result.unknown = gaps
    return result
