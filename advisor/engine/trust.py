"""The trust gate: invariants a profile must satisfy before its advice is believed.

Each failed check is a warning with a stable id and the values that failed it (the renderers
word it), shown with the suggestion and in its JSON;
when the main bottleneck rests on the broken invariant, the suggestion becomes a request for
better data instead of a change.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from advisor.core.values import as_number
from advisor.engine.conditions import Context
from advisor.engine.diagnose import Diagnosis
from advisor.facts.attrib import MEMORY_PART, PARTS
from advisor.inputs.taxonomy import Taxonomy, default_taxonomy
from advisor.inputs.thresholds import PlannerThresholds, planner_thresholds
from advisor.model import (
    Grounds,
    Reason,
    Status,
    Suggestion,
    TrustCheck,
    TrustWarning,
    Value,
)

_VERSION_FACTS = {
    "torch_npu": "profile.torch_npu_version",
    "cann": "profile.cann_version",
    "mindspore": "profile.framework_version",
}


# a check that voids every bottleneck's advice
ALL_BOTTLENECKS = frozenset({"*"})


@dataclass(frozen=True)
class _Check:
    warning: TrustWarning
    blocks: frozenset[str]  # main bottlenecks whose advice the failure voids ("*": all)


def _level_check(ctx: Context, needs: Mapping[str, str], taxonomy: Taxonomy) -> _Check | None:
    """The profile's level is below what some bottleneck's evidence rests on."""
    level = ctx.facts.get("profile.level")
    order = taxonomy.profiler_levels
    if not isinstance(level, str) or level not in order:
        return None
    short = sorted(b for b, need in needs.items() if order.index(level) < order.index(need))
    if not short:
        return None
    wanted = sorted({needs[b] for b in short}, key=order.index)[0]
    values: dict[str, Value] = {"level": level, "bottlenecks": tuple(short), "wanted": wanted}
    return _Check(TrustWarning(TrustCheck.level_below_need, values), frozenset(short))


def _version_checks(ctx: Context, taxonomy: Taxonomy) -> list[_Check]:
    out = []
    for tool, fact_id in _VERSION_FACTS.items():
        text = ctx.facts.get(fact_id)
        known = taxonomy.profiler_versions.get(tool)
        m = re.match(r"\s*(\d+)\.(\d+)", text) if isinstance(text, str) else None
        if known is None or m is None:
            continue
        version = (int(m.group(1)), int(m.group(2)))
        low, high = known
        if low <= version <= high:
            continue
        values: dict[str, Value] = {
            "tool": tool,
            "version": str(text),
            "side": "newer" if version > high else "older",
            "low": f"{low[0]}.{low[1]}",
            "high": f"{high[0]}.{high[1]}",
        }
        warning = TrustWarning(TrustCheck.unknown_profiler_version, values)
        out.append(_Check(warning, frozenset()))
    return out


def _no_collectives(facts: Mapping[str, object]) -> _Check | None:
    world = as_number(facts.get("profile.world_size"))
    comm = as_number(facts.get("comm.time_ms_per_step"))
    if world is None or world <= 1 or comm is None or comm != 0:
        return None
    return _Check(
        TrustWarning(TrustCheck.no_collectives, {"world_size": world}),
        frozenset({"bottleneck.communication", "bottleneck.slow-rank"}),
    )


def _parts_do_not_add_up(facts: Mapping[str, object]) -> _Check | None:
    step = as_number(facts.get("attrib.step_ms"))
    parts = [as_number(facts.get(p)) for p in PARTS]
    if not step or any(p is None for p in parts):
        return None
    total = sum(p or 0.0 for p in parts) + (as_number(facts.get(MEMORY_PART)) or 0.0)
    if abs(total - step) <= 0.01 * step:
        return None
    values = {"total_ms": total, "step_ms": step}
    return _Check(TrustWarning(TrustCheck.parts_do_not_add_up, values), frozenset())


def _step_checks(facts: Mapping[str, object], limits: PlannerThresholds) -> list[_Check]:
    """Whether the profile holds whole training steps, and enough of them."""
    out = []
    step_ms = as_number(facts.get("step.time_ms"))
    if step_ms is not None and step_ms < limits.min_trusted_step_ms:
        values: dict[str, Value] = {"step_ms": step_ms, "min_ms": limits.min_trusted_step_ms}
        out.append(_Check(TrustWarning(TrustCheck.short_step, values), ALL_BOTTLENECKS))
    if as_number(facts.get("profile.steps")) == 0:
        out.append(_Check(TrustWarning(TrustCheck.no_steps), frozenset()))
    steady = as_number(facts.get("step.steady_steps"))
    if steady is not None and steady < 2:
        platform = facts.get("profile.platform")
        values = {"steady_steps": steady, "platform": str(platform) if platform else None}
        out.append(_Check(TrustWarning(TrustCheck.single_step, values), frozenset()))
    return out


def _checks(ctx: Context, needs: Mapping[str, str] | None = None) -> list[_Check]:
    taxonomy = default_taxonomy()
    found = [
        _level_check(ctx, needs or {}, taxonomy),
        *_version_checks(ctx, taxonomy),
        _no_collectives(ctx.facts),
        _parts_do_not_add_up(ctx.facts),
        *_step_checks(ctx.facts, planner_thresholds()),
    ]
    return [check for check in found if check is not None]


def trust_warnings(
    ctx: Context, needs: Mapping[str, str] | None = None
) -> tuple[TrustWarning, ...]:
    """`needs`: bottleneck id -> the least profiler level its evidence rests on. Only the
    bottlenecks that fired matter: a Level0 profile of a compute-bound job is fine."""
    return tuple(c.warning for c in _checks(ctx, needs))


def gate(
    suggestion: Suggestion,
    diagnosis: Diagnosis,
    ctx: Context,
    needs: Mapping[str, str] | None = None,
) -> Suggestion:
    """The suggestion, or a request for data when the main bottleneck rests on a failed check."""
    main = diagnosis.main
    if main is None or suggestion.status not in (Status.change, Status.needs_data):
        return suggestion
    for check in _checks(ctx, needs):
        if main.id in check.blocks or check.blocks == ALL_BOTTLENECKS:
            reason = Reason(
                Grounds.trust_failed, {"bottleneck": main.id, "check": check.warning.id.value}
            )
            if suggestion.status is Status.needs_data:
                if check.warning.id is TrustCheck.level_below_need:
                    continue  # the request already says what to collect; the warning says why
                # a profiling change is still the right next step
                return Suggestion(
                    Status.needs_data, suggestion.recommendation, suggestion.rejected, reason
                )
            return Suggestion(Status.needs_data, None, suggestion.rejected, reason)
    return suggestion
