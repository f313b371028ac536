"""What a diagnosis could not evaluate, said short: the unknown rules grouped by the action that
would make them known, and the bottlenecks that could still lead once measured.

The engine gives each missing fact its way to be collected as a sentence (the catalogue's hint,
chosen by why the fact is missing); a group is one exact collection text, so two rules share a
line only when the same action collects them. Every unknown rule and every missing fact stays
named: the text, markdown and HTML renderers shorten the list, the JSON contract keeps it whole.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from advisor.engine.diagnose import Diagnosis, Unknown, timeless_symptoms
from advisor.engine.graph import RuleGraph
from advisor.engine.rule_model import BottleneckRule
from advisor.render.words import collection_text

# a rule whose missing values name no way to collect them (none in today's catalogue)
NO_RECORDED_WAY = "no recorded way to collect"


@dataclass(frozen=True)
class UnknownGroup:
    """One action and what it would make known: the rules (in the diagnosis's order) and the
    facts it collects for them."""

    action: str
    rules: tuple[str, ...]
    facts: tuple[str, ...]


def group_unknown(unknown: Sequence[Unknown]) -> list[UnknownGroup]:
    """The unknown rules by collection action, the action that makes most rules known first.

    A rule that lacks facts collected in different ways is listed under each of them, with the
    facts that way collects."""
    rules: dict[str, dict[str, None]] = {}
    facts: dict[str, dict[str, None]] = {}
    for u in unknown:
        ways = [(collection_text(way), way.name) for way in u.collect]
        for action, fact in ways or [(NO_RECORDED_WAY, name) for name in u.missing]:
            rules.setdefault(action, {})[u.rule] = None
            facts.setdefault(action, {})[fact] = None
    order = list(rules)
    groups = [UnknownGroup(a, tuple(rules[a]), tuple(facts[a])) for a in order]
    return sorted(groups, key=lambda g: (-len(g.rules), order.index(g.action)))


# bottleneck id -> its evidence symptoms that can cost step time (a rule's `cost.none` symptom
# is evidence of a risk, never of lost time)
CostingEvidence = Mapping[str, frozenset[str]]


def costing_evidence(graph: RuleGraph) -> CostingEvidence:
    """Which evidence of each bottleneck can claim step time, from the rules."""
    timeless = timeless_symptoms(graph)
    return {
        b.id: frozenset(s for s in b.evidence.ids if s not in timeless)
        for b in graph.ruleset.of_type(BottleneckRule)
    }


def could_lead(diagnosis: Diagnosis, costing: CostingEvidence | None = None) -> list[Unknown]:
    """The bottlenecks whose evidence is in part unknown and which could lead once it is known.

    Never the main bottleneck: more evidence only raises its cost, and it leads already. When the
    main one costs step time, only a bottleneck with unknown evidence that can cost time could
    overtake it (risk-only evidence ranks after time); without `costing` every other one is
    listed. Whether one would lead is not guessed: its cost is unknown until it is measured."""
    main = diagnosis.main
    gaps = [u for u in diagnosis.unknown if u.rule.startswith("bottleneck.")]
    gaps = [u for u in gaps if main is None or u.rule != main.id]
    if costing is None or main is None or main.cost_ratio <= 0:
        return gaps
    unknown_symptoms = {u.rule for u in diagnosis.unknown}
    return [u for u in gaps if costing.get(u.rule, frozenset()) & unknown_symptoms]


def unknown_count(diagnosis: Diagnosis) -> str:
    n = len({u.rule for u in diagnosis.unknown})
    return f"{n} check{'s' if n != 1 else ''} need{'s' if n == 1 else ''} data this profile lacks"


def partly_measured(diagnosis: Diagnosis, bottleneck: str) -> bool:
    """The bottleneck is listed on the evidence that was measured; the rest is unknown."""
    return any(b.id == bottleneck for b in diagnosis.bottlenecks)
