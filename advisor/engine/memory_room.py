"""After a run that ran out of device memory, a change that holds more device memory waits until
a change that lowers the peak has been kept (advisor's own policy, rules/tune.yaml memory_room).

The failed run proved there is no room for the memory it added; another change that adds memory
on the same peak (the other direction's prefetch step, say) would die the same way, and two
failed runs in a row end a tuning loop. What each change does to the peak is rule data
(effect.device_memory)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from advisor.core.checked_data import load_valid
from advisor.core.resources import rules_dir
from advisor.engine.loop import History
from advisor.engine.rule_model import FeatureRule
from advisor.engine.rules import RuleSet


@dataclass(frozen=True)
class MemoryRoom:
    failures: frozenset[str]  # failure causes that say the job has no memory to spare


@cache
def memory_room() -> MemoryRoom:
    data = load_valid(rules_dir() / "tune.yaml", "tune-rules.schema.json")["memory_room"]
    return MemoryRoom(frozenset(str(cause) for cause in data["failures"]))


def out_of_room(ruleset: RuleSet, history: History) -> str | None:
    """The feature whose run last ran out of memory, when no change that lowers the peak has
    been kept since (None: there may be room)."""
    failures = memory_room().failures
    failed: str | None = None
    for event in history.events:
        if event.event == "failed" and event.failure in failures:
            failed = event.feature
        elif event.event == "kept" and failed is not None:
            rule = ruleset.feature(event.feature)
            if rule is not None and rule.effect.device_memory == "less":
                failed = None
    return failed


def waits_for_room(rule: FeatureRule, ruleset: RuleSet, history: History) -> str | None:
    """The feature that ran out of memory, when `rule` adds memory and must wait for room."""
    if rule.effect.device_memory != "more":
        return None
    return out_of_room(ruleset, history)
