"""Render the rule catalogue: one line per rule, or one rule's documentation."""

from __future__ import annotations

from typing import Any

from advisor.engine.graph import RuleGraph
from advisor.engine.rules import Rule
from advisor.inputs.yamlio import dump_data


def rules_list_text(rules: list[Rule]) -> str:
    lines = [f"{r.id:<44} {r.title}" + ("" if r.enabled else "   [disabled]") for r in rules]
    lines.append(f"{len(rules)} rules")
    return "\n".join(lines) + "\n"


def _edges(rule: Rule, graph: RuleGraph) -> list[str]:
    out = []
    for u, v, k, data in graph.edges():
        if rule.id not in (u, v):
            continue
        if k == "addresses":
            text = f"{u} addresses {v} (try order {data['order']})"
        elif k == "after":
            text = f"{u} comes before {v}"
        elif k == "conflicts":
            text = f"{u} conflicts with {v}: {data.get('reason', '')}"
        else:
            text = f"{u} indicates {v}"
        out.append(text)
    return sorted(out)


def _section(title: str, body: Any) -> list[str]:
    if body in (None, "", [], {}):
        return []
    text = body if isinstance(body, str) else dump_data(body)
    return ["", f"{title}:"] + [f"  {line}" for line in text.rstrip().splitlines()]


def rule_show_text(rule: Rule, graph: RuleGraph) -> str:
    data = rule.data
    lines = [
        f"{rule.id}  ({rule.kind}, {data['status']})",
        f"  {rule.title}",
        f"  file: {rule.path}",
    ]
    if rule.tags:
        lines.append(f"  tags: {', '.join(rule.tags)}")
    lines += _section("why", data["docs"]["why"])
    if rule.kind == "symptom":
        lines += _section(
            "measure",
            {
                "fact": data["measure"],
                "compare": data["compare"],
                "fine": data["fine"],
                "levels": data["levels"],
            },
        )
    params = data.get("params") or {}
    if params:
        lines += ["", "params (current value; default; unit):"]
        for name, spec in params.items():
            lines.append(
                f"  {name} = {rule.params[name]!r}  (default {spec['default']!r}; {spec['unit']}) {spec['doc']}"
            )
    for key in (
        "when",
        "evidence",
        "requires",
        "conflicts",
        "after",
        "applied_when",
        "change",
        "effect",
        "verify",
    ):
        lines += _section(key, data.get(key))
    lines += _section("edges", "\n".join(_edges(rule, graph)))
    example = data["docs"]["example"]
    lines += ["", "example:", f"  before: {example['before']}", f"  after:  {example['after']}"]
    lines += ["", "references:"] + [f"  {r['source']}: {r['section']}" for r in data["references"]]
    return "\n".join(lines) + "\n"
