"""When a change reverted for showing no measurable effect may be proposed once more.

A change shows nothing either because its mechanism does not act on this job, or because the time
it freed was taken by another bottleneck on the same critical path (prefetched all-gathers hide
under compute only if the host launches that compute in time). The ledger keeps the run each
proposal was made on and, for a change reverted without effect, the bottleneck that grew in its
own run; once a change has been kept since and the job has changed (that bottleneck addressed,
another bottleneck leading, or more of the step spent where the feature acts) the feature is a
candidate again, once. A failed run or a measurably worse step is a verdict on the change itself
and is never retried. The policy is rule data: rules/tune.yaml `retry` (which reverts, how many
times), rules/thresholds.yaml (planner.retry_share_growth; compare.min_effect, the noise)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from advisor.core.checked_data import load_valid
from advisor.core.resources import rules_dir
from advisor.core.values import as_number
from advisor.engine.changes import reach_of
from advisor.engine.conditions import Context
from advisor.engine.diagnose import Diagnosis
from advisor.engine.graph import RuleGraph
from advisor.engine.loop import History
from advisor.inputs.ledger import LedgerEvent
from advisor.inputs.thresholds import compare_thresholds, planner_thresholds
from advisor.model import Grounds, Reason, Recommendation, Value

COLLECTION_NOTE = "collection"  # a kept collection change (profile level) changes no speed
# the grounds of a retry (a recommendation's `retry` Reason)
RETRY_GROUNDS = (
    Grounds.masking_relieved,
    Grounds.leading_changed,
    Grounds.share_grown,
    Grounds.memory_freed,
)


@dataclass(frozen=True)
class RetryPolicy:
    no_effect: frozenset[str]  # compare's reasons that mean "no measurable effect"
    per_feature: int
    share_growth: float  # rules/thresholds.yaml planner.retry_share_growth
    masking_min_growth: float  # compare's min_effect: a smaller rise is within noise


@cache
def retry_policy() -> RetryPolicy:
    data = load_valid(rules_dir() / "tune.yaml", "tune-rules.schema.json")["retry"]
    return RetryPolicy(
        frozenset(str(code) for code in data["no_effect"]),
        int(data["per_feature"]),
        planner_thresholds().retry_share_growth,
        compare_thresholds().min_effect,
    )


# --- what the ledger keeps -----------------------------------------------------------------------


def _leading(diagnosis: Diagnosis) -> str | None:
    return diagnosis.bottlenecks[0].id if diagnosis.bottlenecks else None


def proposed_on(diagnosis: Diagnosis, rec: Recommendation) -> dict[str, object]:
    """The run a proposal is made on, as a retry will judge it: its leading bottleneck, every
    bottleneck's cost and the share of the step the feature acts on."""
    share = rec.ceiling_ratio
    if share is None and rec.cause is not None:
        share = rec.cause.cost_ratio
    return {
        "leading": _leading(diagnosis),
        "cost_ratios": {b.id: round(b.cost_ratio, 4) for b in diagnosis.bottlenecks},
        "share": None if share is None else round(share, 4),
    }


def masked_by(
    proposal: Mapping[str, Any] | None, changed: Diagnosis, addressed: str
) -> dict[str, object] | None:
    """The bottleneck (not the one the change addressed) whose cost rose most in the change's own
    run over the run it was proposed on, when it rose beyond noise: where the freed time went."""
    before = proposal.get("cost_ratios") if proposal is not None else None
    if not isinstance(before, Mapping):
        return None
    least = retry_policy().masking_min_growth
    best: dict[str, object] | None = None
    grew_most = least
    for found in changed.bottlenecks:
        was = as_number(before.get(found.id)) or 0.0
        if found.id != addressed and found.cost_ratio - was >= grew_most:
            grew_most = found.cost_ratio - was
            best = {"bottleneck": found.id, "from_ratio": round(was, 4)}
            best["to_ratio"] = round(found.cost_ratio, 4)
    return best


# --- whether a reverted feature is a candidate again ---------------------------------------------


@dataclass(frozen=True)
class _Revert:
    """A feature's last revert without effect, the proposal it followed, the changes kept since."""

    feature: str
    event: LedgerEvent
    proposal: LedgerEvent | None
    kept_since: tuple[LedgerEvent, ...]


def _reverts_without_effect(history: History, policy: RetryPolicy) -> Iterator[_Revert]:
    events = history.events
    for feature, status in history.statuses.items():
        if status != "reverted":
            continue
        at = max(i for i, e in enumerate(events) if e.feature == feature and e.event == status)
        if events[at].note not in policy.no_effect:
            continue
        retried = sum(1 for e in events if e.feature == feature and e.retry)
        if retried >= policy.per_feature:
            continue
        kept = tuple(
            e
            for e in events[at + 1 :]
            if e.event == "kept" and e.feature != feature and e.note != COLLECTION_NOTE
        )
        proposal = next(
            (e for e in reversed(events[:at]) if e.event == "proposed" and e.feature == feature),
            None,
        )
        if kept:
            yield _Revert(feature, events[at], proposal, kept)


def _share_now(
    graph: RuleGraph, diagnosis: Diagnosis, ctx: Context, revert: _Revert
) -> float | None:
    rule = graph.ruleset.feature(revert.feature)
    reach = reach_of(rule, ctx) if rule is not None else None
    if reach is not None:
        return reach.ratio
    addressed = revert.event.bottleneck
    found = next((b for b in diagnosis.bottlenecks if b.id == addressed), None)
    return found.cost_ratio if found is not None else None


def _acts_on(graph: RuleGraph, kept: LedgerEvent, bottleneck: str | None) -> bool:
    """The kept change was made for the bottleneck, or its rule addresses it too (a fused
    kernel proposed for compute also removes launches from a host-bound step)."""
    if bottleneck is None:
        return False
    rule = graph.ruleset.feature(kept.feature)
    addressed = {item.bottleneck for item in rule.addresses} if rule is not None else set()
    return kept.bottleneck == bottleneck or bottleneck in addressed


def _grounds(
    graph: RuleGraph, diagnosis: Diagnosis, ctx: Context, revert: _Revert, policy: RetryPolicy
) -> Reason | None:
    kept: tuple[Value, ...] = tuple(e.feature for e in revert.kept_since)
    masked = revert.event.masked_by
    relieved = next((e.feature for e in revert.kept_since if _acts_on(graph, e, masked)), None)
    if masked is not None and relieved is not None:
        values: dict[str, Value] = {"masked_by": masked, "relieved_by": relieved, "kept": kept}
        return Reason(Grounds.masking_relieved, values)
    on = revert.proposal.proposed_on if revert.proposal is not None else None
    was_leading = on.get("leading") if on is not None else None
    now_leading = _leading(diagnosis)
    if isinstance(was_leading, str) and now_leading is not None and was_leading != now_leading:
        values = {"was": was_leading, "now": now_leading, "kept": kept}
        return Reason(Grounds.leading_changed, values)
    was_share = as_number(on.get("share")) if on is not None else None
    now_share = _share_now(graph, diagnosis, ctx, revert)
    if was_share and now_share is not None and now_share >= was_share * policy.share_growth:
        values = {"was": was_share, "now": round(now_share, 4), "factor": policy.share_growth}
        return Reason(Grounds.share_grown, {**values, "kept": kept})
    return None


def retries(
    graph: RuleGraph, diagnosis: Diagnosis, ctx: Context, history: History
) -> dict[str, Reason]:
    """The features reverted for no measurable effect that may be proposed again now, with the
    grounds of each (code and values)."""
    policy = retry_policy()
    found: dict[str, Reason] = {}
    for revert in _reverts_without_effect(history, policy):
        grounds = _grounds(graph, diagnosis, ctx, revert, policy)
        if grounds is not None:
            found[revert.feature] = grounds
    return found
