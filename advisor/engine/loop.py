"""The loop around the one change: what the ledger remembers (rejections, the undo after a
revert, an applied change not measured yet) and whether the profile still describes the job."""

from __future__ import annotations

from dataclasses import dataclass, field

from advisor.engine.changes import current_value, is_applied
from advisor.engine.conditions import Context
from advisor.engine.diagnose import Diagnosis
from advisor.engine.graph import RuleGraph
from advisor.inputs.ledger import FINAL_NO, LedgerEvent
from advisor.model import (
    Applicability,
    Direction,
    Grounds,
    Patch,
    PatchOp,
    PatchTarget,
    Reason,
    Recommendation,
    Status,
    Suggestion,
    Value,
    VerifyCheck,
)


@dataclass(frozen=True)
class History:
    """What the ledger says: features rejected or reverted, every event in order, and the
    applied change still waiting for a profile that measures it."""

    rejected: frozenset[str] = frozenset()
    events: tuple[LedgerEvent, ...] = ()
    statuses: dict[str, str] = field(default_factory=dict)
    awaiting: LedgerEvent | None = None  # its proposal, made from the profile given now

    @classmethod
    def of(cls, events: list[LedgerEvent], profile: str | None = None) -> History:
        statuses: dict[str, str] = {}
        for event in events:
            statuses[event.feature] = event.event
        rejected = frozenset(f for f, s in statuses.items() if s in FINAL_NO)
        proposal = next((e for e in reversed(events) if e.event == "proposed"), None)
        awaiting = None
        if (
            proposal is not None
            and profile is not None
            and statuses.get(proposal.feature) == "applied"
            and proposal.profile_fingerprint == profile
        ):
            awaiting = proposal
        return cls(rejected, tuple(events), statuses, awaiting)


def undo(graph: RuleGraph, ctx: Context, history: History) -> Suggestion | None:
    """After a 'revert' verdict or a failed run, undo the change (if it is still in place)."""
    reverted = [e for e in history.events if e.event in ("reverted", "failed")]
    if not reverted:
        return None
    last = reverted[-1]
    rule = graph.ruleset.feature(last.feature)
    if history.statuses.get(last.feature) != last.event or rule is None:
        return None
    proposal = next(
        (e for e in reversed(history.events) if e.event == "proposed" and e.feature == rule.id),
        None,
    )
    if proposal is None or proposal.patch_target is None:
        return None
    target = PatchTarget.env if proposal.patch_target == "env" else PatchTarget.config
    ops = []
    for op in proposal.patch_ops:
        if op.op == "set":
            current = current_value(ctx, target, op.path)
            if str(current) != str(op.value):
                continue  # already undone
            ops.append(
                PatchOp("remove", op.path, None, current)
                if op.expect is None
                else PatchOp("set", op.path, op.expect, current)
            )
        elif op.expect is not None:
            ops.append(PatchOp("set", op.path, op.expect, None))
    if not ops:
        return None
    rec = Recommendation(
        feature=rule.id,
        bottleneck=last.bottleneck or "",
        title=rule.title,
        cause=None,
        evidence=(),
        patch=Patch(rule.id, target, tuple(ops), Applicability.safe, rule.title),
        advice="",
        expected="",
        risk="",
        verify=(VerifyCheck("step.time_ms", Direction.back_to_baseline),),
        undo=True,
        revert_note=last.note,
    )
    return Suggestion(Status.change, rec, (), Reason(Grounds.undo, {"feature": rule.id}))


def stale(graph: RuleGraph, diagnosis: Diagnosis, ctx: Context) -> Suggestion | None:
    """The launch environment now applies a fix for the main bottleneck that the profiled run
    did not have: the profile no longer describes the job."""
    if diagnosis.main is None or ctx.env_ran is None:
        return None
    ran = Context(ctx.facts, ctx.config, ctx.env_ran, ctx.env_ran)
    changed = [
        rule
        for _, rule in graph.features_for(diagnosis.main.id)
        if rule.applied_when is not None
        and rule.applied_when.names("env")
        and not rule.applied_when.names("config")
        # a variable the profiler does not record is unknown in the profile, never a difference
        and all(name in ctx.env_ran for name in rule.applied_when.names("env"))
        and is_applied(rule, ctx)
        and not is_applied(rule, ran)
    ]
    if not changed:
        return None
    names = sorted({name for rule in changed for name in rule.applied_when.names("env")})  # type: ignore[union-attr]
    values: dict[str, Value] = {
        "bottleneck": diagnosis.main.id,
        "names": tuple(names),
        "now": tuple((ctx.env or {}).get(name) for name in names),  # None: unset
        "ran": tuple(ctx.env_ran.get(name) for name in names),
    }
    return Suggestion(Status.stale, None, (), Reason(Grounds.stale_environment, values))


def awaiting(history: History) -> Suggestion | None:
    if history.awaiting is None:
        return None
    reason = Reason(Grounds.awaiting_measurement, {"feature": history.awaiting.feature})
    return Suggestion(Status.awaiting_measurement, None, (), reason)
