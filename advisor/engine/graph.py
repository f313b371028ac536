"""The rule graph (the only networkx importer): build it, check its integrity, query it.

Edges: symptom -indicates-> bottleneck, feature -addresses-> bottleneck (with the try order),
feature -after-> feature (the first must come before the second), feature -conflicts- feature.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import networkx as nx

from advisor.engine.conditions import Condition
from advisor.engine.rule_model import BottleneckRule, FeatureRule, PolicyRule, Rule, SymptomRule
from advisor.engine.rules import RuleSet
from advisor.facts.catalogue import is_known
from advisor.model import DataError

# what an edge carries: the try order of `addresses`, the reason of `conflicts`, the mode of
# `indicates`
EdgeData = Mapping[str, object]


@dataclass
class RuleGraph:
    ruleset: RuleSet
    graph: nx.MultiDiGraph

    def features_for(self, bottleneck_id: str) -> list[tuple[int, FeatureRule]]:
        """(order, feature) of the features addressing a bottleneck, in try order."""
        out = []
        for u, _, k, data in self.graph.in_edges(bottleneck_id, keys=True, data=True):
            feature = self.ruleset.feature(str(u))
            if k == "addresses" and feature is not None:
                out.append((int(data["order"]), feature))
        return sorted(out, key=lambda pair: (pair[0], pair[1].id))

    def edges(self) -> Iterator[tuple[str, str, str, EdgeData]]:
        yield from self.graph.edges(keys=True, data=True)

    def kind_of(self, node: str) -> str:
        return str(self.graph.nodes[node]["kind"])


def _conditions(rule: Rule) -> Iterator[Condition]:
    blocks: list[Condition | None] = []
    if isinstance(rule, SymptomRule | PolicyRule):
        blocks.append(rule.when)
    if isinstance(rule, FeatureRule):
        blocks.append(rule.applied_when)
        blocks.extend(req.condition for req in rule.requires)
        blocks.extend(conflict.condition for conflict in rule.conflicts)
        blocks.extend(item.when for item in rule.addresses)
        blocks.extend(op.unless for op in rule.change.ops)
    yield from (block for block in blocks if block is not None)


def _facts_named(rule: Rule) -> list[str]:
    names = [fact for block in _conditions(rule) for fact in block.names("fact")]
    if isinstance(rule, SymptomRule):
        names.append(rule.measure)
        names.extend(name for name in (rule.cost.scale, *rule.cost.excluding) if name)
    if isinstance(rule, FeatureRule):
        names.extend(item.fact for item in rule.verify)
        names.extend(rule.collects)
        if rule.ceiling is not None:
            names.append(rule.ceiling.fact)
            names.extend(rule.ceiling.at_most)
            names.extend(name for name in (rule.ceiling.hides_under,) if name)
    return names


def _add_edges(g: nx.MultiDiGraph, rules: RuleSet, errors: list[str]) -> None:
    def ref(rule: Rule, target: str, kind: str, what: str) -> bool:
        if target not in rules:
            errors.append(f"{rule.path}: {what} names unknown rule {target}")
            return False
        if rules[target].kind != kind:
            errors.append(
                f"{rule.path}: {what} must name a {kind}, {target} is a {rules[target].kind}"
            )
            return False
        return True

    for rule in rules.rules.values():
        if isinstance(rule, BottleneckRule):
            for mode, ids in (("any", rule.evidence.any), ("all", rule.evidence.all)):
                for sid in ids:
                    if ref(rule, sid, "symptom", "evidence"):
                        g.add_edge(sid, rule.id, key="indicates", mode=mode)
        if isinstance(rule, FeatureRule):
            for item in rule.addresses:
                if ref(rule, item.bottleneck, "bottleneck", "addresses"):
                    g.add_edge(rule.id, item.bottleneck, key="addresses", order=item.order)
            for first in rule.after:
                if ref(rule, first, "feature", "after"):
                    g.add_edge(first, rule.id, key="after")
            for conflict in rule.conflicts:
                if conflict.feature and ref(rule, conflict.feature, "feature", "conflicts"):
                    g.add_edge(rule.id, conflict.feature, key="conflicts", reason=conflict.reason)


def _platforms_meet(a: Rule, b: Rule) -> bool:
    """Whether two rules can apply to the same job: the same platform (no platforms listed:
    every one) and, for features, the same config dialect (none listed: every one)."""

    def meet(x: tuple[str, ...], y: tuple[str, ...]) -> bool:
        return not x or not y or bool(set(x) & set(y))

    dialects = (
        meet(a.applies_to, b.applies_to)
        if isinstance(a, FeatureRule) and isinstance(b, FeatureRule)
        else True
    )
    return meet(a.platforms, b.platforms) and dialects


def _after_errors(g: nx.MultiDiGraph, rules: RuleSet) -> list[str]:
    """`after` must be acyclic, and a feature cannot both follow and conflict with another."""
    after = nx.DiGraph([(u, v) for u, v, k in g.edges(keys=True) if k == "after"])
    errors = ["cycle in 'after': " + " -> ".join([*c, c[0]]) for c in nx.simple_cycles(after)]
    for u, v, k in g.edges(keys=True):
        if k == "conflicts" and (after.has_edge(u, v) or after.has_edge(v, u)):
            errors.append(f"{rules[u].path}: {u} both comes after and conflicts with {v}")
    return errors


def _order_errors(g: nx.MultiDiGraph, rules: RuleSet) -> list[str]:
    """One try order per bottleneck, platform and dialect: disjoint features may share a slot."""
    errors = []
    orders: dict[tuple[str, int], list[str]] = {}
    for u, v, k, data in g.edges(keys=True, data=True):
        if k != "addresses":
            continue
        key = (v, int(data["order"]))
        for other in orders.get(key, []):
            if _platforms_meet(rules[u], rules[other]):
                errors.append(f"{rules[u].path}: {u} and {other} share order {key[1]} for {v}")
        orders.setdefault(key, []).append(u)
    return errors


def _rule_errors(g: nx.MultiDiGraph, rule: Rule) -> list[str]:
    """A bottleneck reachable and addressed, a feature with a purpose, only catalogue facts."""
    errors = []
    if isinstance(rule, BottleneckRule):
        kinds = {k for _, _, k in g.in_edges(rule.id, keys=True)}
        if "indicates" not in kinds:
            errors.append(f"{rule.path}: {rule.id} is unreachable: no symptom indicates it")
        if "addresses" not in kinds:
            errors.append(f"{rule.path}: {rule.id} has no feature addressing it")
    if isinstance(rule, FeatureRule) and not rule.addresses and not rule.collects:
        errors.append(f"{rule.path}: {rule.id} addresses no bottleneck and collects no fact")
    errors.extend(
        f"{rule.path}: names fact {fact}, which is not in the facts catalogue"
        for fact in _facts_named(rule)
        if not is_known(fact)
    )
    return errors


def _check(g: nx.MultiDiGraph, rules: RuleSet, errors: list[str]) -> None:
    errors.extend(_after_errors(g, rules))
    errors.extend(_order_errors(g, rules))
    for rule in rules.rules.values():
        errors.extend(_rule_errors(g, rule))


def integrity_errors(rules: RuleSet) -> tuple[nx.MultiDiGraph, list[str]]:
    g = nx.MultiDiGraph()
    for rule in rules.rules.values():
        g.add_node(rule.id, kind=rule.kind)
    errors: list[str] = []
    _add_edges(g, rules, errors)
    _check(g, rules, errors)
    return g, errors


def build_graph(rules: RuleSet) -> RuleGraph:
    """The rule graph; integrity errors are fatal (all of them are listed)."""
    g, errors = integrity_errors(rules)
    if errors:
        raise DataError("; ".join(errors))
    return RuleGraph(rules, g)
