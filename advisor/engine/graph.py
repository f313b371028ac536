"""The rule graph (the only networkx importer): build it, check its integrity, query it.

Edges: symptom -indicates-> bottleneck, feature -addresses-> bottleneck (with the try order),
feature -after-> feature (the first must come before the second), feature -conflicts- feature.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import networkx as nx

from advisor.engine.conditions import referenced
from advisor.engine.rules import Rule, RuleSet
from advisor.facts.catalogue import is_known
from advisor.model import DataError


@dataclass
class RuleGraph:
    ruleset: RuleSet
    graph: Any  # nx.MultiDiGraph

    def features_for(self, bottleneck_id: str) -> list[tuple[int, str]]:
        """(order, feature id) of the features addressing a bottleneck, in try order."""
        out = []
        for u, _, k, data in self.graph.in_edges(bottleneck_id, keys=True, data=True):
            if k == "addresses":
                out.append((int(data["order"]), u))
        return sorted(out)

    def edges(self) -> Iterator[tuple[str, str, str, Mapping[str, Any]]]:
        yield from self.graph.edges(keys=True, data=True)


def _condition_blocks(rule: Rule) -> Iterator[Mapping[str, Any]]:
    data = rule.data
    for key in ("when", "applied_when"):
        if data.get(key):
            yield data[key]
    for item in data.get("requires", []) or []:
        yield item["condition"]
    for item in data.get("conflicts", []) or []:
        if "condition" in item:
            yield item["condition"]
    for item in data.get("addresses", []) or []:
        if "when" in item:
            yield item["when"]


def _facts_named(rule: Rule) -> list[str]:
    names = [fact for block in _condition_blocks(rule) for fact in referenced(block, "fact")]
    if rule.kind == "symptom":
        names.append(str(rule.data["measure"]))
        scale = (rule.data.get("cost") or {}).get("scale")
        if scale:
            names.append(str(scale))
    names.extend(str(v["fact"]) for v in rule.data.get("verify", []) or [])
    names.extend(str(f) for f in rule.data.get("collects", []) or [])
    for op in (rule.data.get("change") or {}).get("ops", []) or []:
        names.extend(referenced(op.get("unless"), "fact"))
    return names


def _params_named(node: Any) -> Iterator[str]:
    if isinstance(node, Mapping):
        if set(node) == {"param"}:
            yield str(node["param"])
        for value in node.values():
            yield from _params_named(value)
    elif isinstance(node, list):
        for value in node:
            yield from _params_named(value)


def _add_edges(g: Any, rules: RuleSet, errors: list[str]) -> None:
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
        data = rule.data
        if rule.kind == "bottleneck":
            evidence = data["evidence"]
            for mode in ("any", "all"):
                for sid in evidence.get(mode, []) or []:
                    if ref(rule, sid, "symptom", "evidence"):
                        g.add_edge(sid, rule.id, key="indicates", mode=mode)
        if rule.kind == "feature":
            for item in data.get("addresses", []) or []:
                if ref(rule, item["bottleneck"], "bottleneck", "addresses"):
                    g.add_edge(rule.id, item["bottleneck"], key="addresses", order=item["order"])
            for first in data.get("after", []) or []:
                if ref(rule, first, "feature", "after"):
                    g.add_edge(first, rule.id, key="after")
            for item in data.get("conflicts", []) or []:
                if "feature" in item and ref(rule, item["feature"], "feature", "conflicts"):
                    g.add_edge(rule.id, item["feature"], key="conflicts", reason=item["reason"])


def _check(g: Any, rules: RuleSet, errors: list[str]) -> None:
    after = nx.DiGraph([(u, v) for u, v, k in g.edges(keys=True) if k == "after"])
    for cycle in nx.simple_cycles(after):
        errors.append("cycle in 'after': " + " -> ".join([*cycle, cycle[0]]))
    for u, v, k in g.edges(keys=True):
        if k == "conflicts" and (after.has_edge(u, v) or after.has_edge(v, u)):
            errors.append(f"{rules[u].path}: {u} both comes after and conflicts with {v}")
    orders: dict[tuple[str, int], str] = {}
    for u, v, k, data in g.edges(keys=True, data=True):
        if k == "addresses":
            key = (v, int(data["order"]))
            if key in orders:
                errors.append(
                    f"{rules[u].path}: {u} and {orders[key]} share order {key[1]} for {v}"
                )
            orders[key] = u
    for rule in rules.rules.values():
        if rule.kind == "bottleneck":
            kinds = {k for _, _, k in g.in_edges(rule.id, keys=True)}
            if "indicates" not in kinds:
                errors.append(f"{rule.path}: {rule.id} is unreachable: no symptom indicates it")
            if "addresses" not in kinds:
                errors.append(f"{rule.path}: {rule.id} has no feature addressing it")
        if (
            rule.kind == "feature"
            and not rule.data.get("addresses")
            and not rule.data.get("collects")
        ):
            errors.append(f"{rule.path}: {rule.id} addresses no bottleneck and collects no fact")
        for fact in _facts_named(rule):
            if not is_known(fact):
                errors.append(
                    f"{rule.path}: names fact {fact}, which is not in the facts catalogue"
                )
        declared = set((rule.data.get("params") or {}).keys())
        for name in _params_named({k: v for k, v in rule.data.items() if k != "params"}):
            if name not in declared:
                errors.append(f"{rule.path}: uses param '{name}' that it does not declare")


def integrity_errors(rules: RuleSet) -> tuple[Any, list[str]]:
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


def to_dot(graph: RuleGraph) -> str:
    shapes = {"symptom": "ellipse", "bottleneck": "box", "feature": "component", "policy": "note"}
    lines = ["digraph advisor {", "  rankdir=LR;"]
    for node, data in sorted(graph.graph.nodes(data=True)):
        lines.append(f'  "{node}" [shape={shapes[data["kind"]]}];')
    styles = {"indicates": "solid", "addresses": "bold", "after": "dashed", "conflicts": "dotted"}
    for u, v, k, data in sorted(graph.edges(), key=lambda e: (e[2], e[0], e[1])):
        label = f"{k} {data['order']}" if k == "addresses" else k
        lines.append(f'  "{u}" -> "{v}" [label="{label}", style={styles[k]}];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_mermaid(graph: RuleGraph) -> str:
    def nid(rule_id: str) -> str:
        return rule_id.replace(".", "_").replace("-", "_")

    shapes = {
        "symptom": ("([", "])"),
        "bottleneck": ("[", "]"),
        "feature": ("[[", "]]"),
        "policy": ("[/", "/]"),
    }
    lines = ["flowchart LR"]
    for node, data in sorted(graph.graph.nodes(data=True)):
        a, b = shapes[data["kind"]]
        lines.append(f'  {nid(node)}{a}"{node}"{b}')
    arrows = {"indicates": "-->", "addresses": "==>", "after": "-.->", "conflicts": "x--x"}
    for u, v, k, data in sorted(graph.edges(), key=lambda e: (e[2], e[0], e[1])):
        label = f"{k} {data['order']}" if k == "addresses" else k
        lines.append(f"  {nid(u)} {arrows[k]}|{label}| {nid(v)}")
    return "\n".join(lines) + "\n"
