"""After a run that ran out of device memory, a change that lowers the peak comes first, a change
that holds more device memory waits until one that lowers the peak has been kept, and, where
rules/tune.yaml memory_room allows it (retry_failed), the change that ran out is proposed once
more after that (advisor's own policy).

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
from advisor.model import Grounds, Reason


@dataclass(frozen=True)
class MemoryRoom:
    failures: frozenset[str]  # failure causes that say the job has no memory to spare
    retry_failed: bool  # the change that ran out gets one more run once room was made


@cache
def memory_room() -> MemoryRoom:
    data = load_valid(rules_dir() / "tune.yaml", "tune-rules.schema.json")["memory_room"]
    return MemoryRoom(
        frozenset(str(cause) for cause in data["failures"]), bool(data["retry_failed"])
    )


def out_of_room(ruleset: RuleSet, history: History) -> str | None:
    """The feature whose run last ran out of memory, when no change that lowers the peak has
    been kept since (None: there may be room)."""
    failures = memory_room().failures
    failed: str | None = None
    for event in history.events:
        if event.event == "failed" and event.failure in failures:
            failed = event.feature
        elif event.event == "kept" and failed is not None and _lowers_peak(ruleset, event.feature):
            failed = None
    return failed


def waits_for_room(rule: FeatureRule, ruleset: RuleSet, history: History) -> str | None:
    """The feature that ran out of memory, when `rule` adds memory and must wait for room."""
    if rule.effect.device_memory != "more":
        return None
    return out_of_room(ruleset, history)


def room_made(ruleset: RuleSet, history: History) -> dict[str, Reason]:
    """The changes whose run ran out of memory that may be proposed once more: a change that
    lowers the peak has been kept since, and they were not proposed again after it yet."""
    room = memory_room()
    if not room.retry_failed:
        return {}
    failures = room.failures
    events = history.events
    found: dict[str, Reason] = {}
    for feature, status in history.statuses.items():
        if status != "failed":
            continue
        at = max(i for i, e in enumerate(events) if e.feature == feature and e.event == "failed")
        if events[at].failure not in failures:
            continue
        if any(e.feature == feature and e.retry for e in events):
            continue  # once
        freed = next(
            (
                e.feature
                for e in events[at + 1 :]
                if e.event == "kept" and _lowers_peak(ruleset, e.feature)
            ),
            None,
        )
        if freed is not None:
            found[feature] = Reason(Grounds.memory_freed, {"freed_by": freed})
    return found


def _lowers_peak(ruleset: RuleSet, feature: str) -> bool:
    rule = ruleset.feature(feature)
    return rule is not None and rule.effect.device_memory == "less"
