"""Render the rule catalogue: one line per rule, or one rule's documentation."""

from __future__ import annotations

from advisor.core.yamlio import dump_data
from advisor.engine.conditions import Condition
from advisor.engine.graph import RuleGraph
from advisor.engine.rule_model import (
    BottleneckRule,
    Change,
    FeatureRule,
    PolicyRule,
    Rule,
    SymptomRule,
)


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


def _section(title: str, body: object) -> list[str]:
    if body in (None, "", [], {}, ()):
        return []
    text = body if isinstance(body, str) else dump_data(body)
    return ["", f"{title}:"] + [f"  {line}" for line in text.rstrip().splitlines()]


def _raw(condition: Condition | None) -> object:
    return None if condition is None else dict(condition.raw)


def _present(data: dict[str, object]) -> dict[str, object]:
    """A rule part as the file writes it: keys without a value are left out."""
    return {
        k: v
        for k, v in data.items()
        if v is not None and not (isinstance(v, tuple | list) and not v)
    }


def _change(change: Change | None) -> object:
    if change is None:
        return None
    ops = [
        _present(
            {
                "op": op.op,
                "path": op.path,
                "value": op.value,
                "default": op.default,
                "by": op.by,
                "max": op.max,
                "unless": _raw(op.unless),
            }
        )
        for op in change.ops
    ]
    return _present(
        {
            "target": str(change.target),
            "applicability": str(change.applicability),
            "ops": ops or None,
            "advice": change.advice,
        }
    )


def _sections(rule: Rule) -> list[tuple[str, object]]:
    """The rule's logic, part by part, in the order the rule files write it."""
    if isinstance(rule, SymptomRule):
        levels = dict(rule.levels.items())
        measure = {"fact": rule.measure, "compare": str(rule.compare), "fine": rule.fine}
        cost = _present(
            {
                "none": True if rule.cost.none else None,
                "scale": rule.cost.scale,
                "excluding": list(rule.cost.excluding) or None,
            }
        )
        return [
            ("measure", {**measure, "levels": levels}),
            ("cost", cost or None),
            ("when", _raw(rule.when)),
        ]
    if isinstance(rule, BottleneckRule):
        evidence = _present({"any": list(rule.evidence.any), "all": list(rule.evidence.all)})
        return [("evidence", evidence), ("needs_level", rule.needs_level)]
    if isinstance(rule, PolicyRule):
        return [("when", _raw(rule.when)), ("change", _change(rule.change))]
    if isinstance(rule, FeatureRule):
        requires = [{"condition": _raw(r.condition), "reason": r.reason} for r in rule.requires]
        conflicts = [
            _present({"feature": c.feature, "condition": _raw(c.condition), "reason": c.reason})
            for c in rule.conflicts
        ]
        effect = _present(
            {
                "gain": rule.effect.gain,
                "memory": rule.effect.memory,
                "risk": rule.effect.risk,
                "changes_numerics": rule.effect.changes_numerics or None,
                "changes_work": rule.effect.changes_work or None,
            }
        )
        verify = [{"fact": v.fact, "direction": str(v.direction)} for v in rule.verify]
        return [
            ("requires", requires),
            ("conflicts", conflicts),
            ("after", list(rule.after)),
            ("applied_when", _raw(rule.applied_when)),
            (
                "ceiling",
                _present(
                    {
                        "fact": rule.ceiling.fact,
                        "key": ", ".join(rule.ceiling.key) or None,
                        "at_most": ", ".join(rule.ceiling.at_most) or None,
                        "mechanism": rule.ceiling.mechanism,
                        "share": rule.ceiling.share if rule.ceiling.share < 1 else None,
                        "hides_under": rule.ceiling.hides_under,
                        "source": rule.ceiling.source,
                        "efficacy": (
                            f"{rule.ceiling.efficacy.low:.0%}-{rule.ceiling.efficacy.high:.0%}"
                            if rule.ceiling.efficacy
                            else None
                        ),
                    }
                )
                if rule.ceiling
                else None,
            ),
            ("change", _change(rule.change)),
            ("effect", effect),
            ("verify", verify),
        ]
    return []


def rule_show_text(rule: Rule, graph: RuleGraph) -> str:
    lines = [
        f"{rule.id}  ({rule.kind}, {rule.status})",
        f"  {rule.title}",
        f"  file: {rule.path}",
    ]
    if rule.tags:
        lines.append(f"  tags: {', '.join(rule.tags)}")
    if rule.platforms:
        lines.append(f"  platforms: {', '.join(rule.platforms)}")
    dialects = getattr(rule, "applies_to", ())
    if dialects:
        lines.append(f"  applies to: {', '.join(dialects)}")
    lines += _section("why", rule.docs.why)
    sections = _sections(rule)
    lines += _section(*sections[0]) if sections and sections[0][0] == "measure" else []
    if rule.params:
        lines += ["", "params (current value; default; unit):"]
        for name, param in rule.params.items():
            lines.append(
                f"  {name} = {param.value!r}  (default {param.default!r}; {param.unit}) {param.doc}"
            )
    for title, body in sections:
        if title != "measure":
            lines += _section(title, body)
    lines += _section("edges", "\n".join(_edges(rule, graph)))
    example = rule.docs.example
    lines += ["", "example:", f"  before: {example.before}", f"  after:  {example.after}"]
    lines += ["", "references:"] + [f"  {r.source}: {r.section}" for r in rule.references]
    return "\n".join(lines) + "\n"
