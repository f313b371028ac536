"""The trust gate: invariants a profile must satisfy before its advice is believed.

Each failed check is a warning with a stable id, shown with the suggestion and in its JSON;
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
from advisor.facts.catalogue import GPU_PLATFORMS
from advisor.inputs.taxonomy import Taxonomy, default_taxonomy
from advisor.model import Suggestion, TrustWarning

LEVEL_CHECK = "trust.level-below-need"
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
    return _Check(
        TrustWarning(
            LEVEL_CHECK,
            f"the profile is {level}; {', '.join(short)} "
            f"{'rests' if len(short) == 1 else 'rest'} on {wanted} data (communication "
            f"files, pipe metrics): profile again with training.profile_level: {wanted.lower()}",
        ),
        frozenset(short),
    )


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
        side = "newer" if version > high else "older"
        out.append(
            _Check(
                TrustWarning(
                    "trust.unknown-profiler-version",
                    f"{tool} {text} is {side} than the versions the parser knows "
                    f"({low[0]}.{low[1]}-{high[0]}.{high[1]}): columns may have moved or "
                    "changed meaning; check the facts' sources before acting",
                ),
                frozenset(),
            )
        )
    return out


def _how_to_profile_steps(platform: object) -> str:
    if platform in GPU_PLATFORMS:
        return "torch.profiler.schedule with active >= 3"
    return "profile_step_start/end"


def _checks(ctx: Context, needs: Mapping[str, str] | None = None) -> list[_Check]:
    facts = ctx.facts
    taxonomy = default_taxonomy()
    out: list[_Check] = []
    level = _level_check(ctx, needs or {}, taxonomy)
    if level is not None:
        out.append(level)
    out.extend(_version_checks(ctx, taxonomy))
    world = as_number(facts.get("profile.world_size"))
    comm = as_number(facts.get("comm.time_ms_per_step"))
    if world is not None and world > 1 and comm is not None and comm == 0:
        out.append(
            _Check(
                TrustWarning(
                    "trust.no-collectives",
                    f"the job ran on {world:g} ranks but the profile records no communication: "
                    "the communication files are incomplete or the wrong ranks were profiled",
                ),
                frozenset({"bottleneck.communication", "bottleneck.slow-rank"}),
            )
        )
    step = as_number(facts.get("attrib.step_ms"))
    parts = [as_number(facts.get(p)) for p in PARTS]
    if step and all(p is not None for p in parts):
        total = sum(p or 0.0 for p in parts) + (as_number(facts.get(MEMORY_PART)) or 0.0)
        if abs(total - step) > 0.01 * step:
            out.append(
                _Check(
                    TrustWarning(
                        "trust.parts-do-not-add-up",
                        f"the step's attributed parts add up to {total:.2f} ms, not "
                        f"{step:.2f} ms: the step model and the trace disagree",
                    ),
                    frozenset(),
                )
            )
    step_ms = as_number(facts.get("step.time_ms"))
    if step_ms is not None and step_ms < taxonomy.min_trusted_step_ms:
        out.append(
            _Check(
                TrustWarning(
                    "trust.short-step",
                    f"the steady step is {step_ms:.3f} ms, shorter than "
                    f"{taxonomy.min_trusted_step_ms:g} ms: not a training step (the profiler "
                    "window cut it, or the markers wrap something else); profile whole steps",
                ),
                ALL_BOTTLENECKS,
            )
        )
    if as_number(facts.get("profile.steps")) == 0:
        out.append(
            _Check(
                TrustWarning(
                    "trust.no-steps",
                    "the trace has no ProfilerStep#N markers: shares are over one window of "
                    "arbitrary length and nothing is per step; profile with "
                    "torch.profiler.schedule and call prof.step() every iteration",
                ),
                frozenset(),
            )
        )
    steady = as_number(facts.get("step.steady_steps"))
    if steady is not None and steady < 2:
        out.append(
            _Check(
                TrustWarning(
                    "trust.single-step",
                    "one steady step: no spread to tell a change from noise; profile at least "
                    f"three steps ({_how_to_profile_steps(facts.get('profile.platform'))}) "
                    "before comparing",
                ),
                frozenset(),
            )
        )
    return out


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
    if main is None or suggestion.status not in ("change", "needs-data"):
        return suggestion
    for check in _checks(ctx, needs):
        if main.id in check.blocks or check.blocks == ALL_BOTTLENECKS:
            summary = (
                f"{main.id} leads, but the profile fails a check it rests on "
                f"({check.warning.id}): {check.warning.message}"
            )
            if suggestion.status == "needs-data":
                if check.warning.id == LEVEL_CHECK:
                    continue  # the request already says what to collect; the warning says why
                # a profiling change is still the right next step
                return Suggestion(
                    "needs-data", suggestion.recommendation, suggestion.rejected, summary
                )
            return Suggestion("needs-data", None, suggestion.rejected, summary)
    return suggestion
