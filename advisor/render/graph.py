"""The rule graph as Graphviz dot or Mermaid, for docs and review."""

from __future__ import annotations

from collections.abc import Callable

from advisor.engine.graph import RuleGraph


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


FORMATS: dict[str, Callable[[RuleGraph], str]] = {"dot": to_dot, "mermaid": to_mermaid}
