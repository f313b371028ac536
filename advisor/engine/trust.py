"""The trust gate: invariants a profile must satisfy before its advice is believed.

Each failed check is a warning with a stable id, shown with the suggestion and in its JSON;
when the main bottleneck rests on the broken invariant, the suggestion becomes a request for
better data instead of a change.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.engine.conditions import Context
from advisor.engine.diagnose import Diagnosis
from advisor.facts.attrib import PARTS
from advisor.inputs.values import as_number
from advisor.model import Suggestion, TrustWarning


@dataclass(frozen=True)
class _Check:
    warning: TrustWarning
    blocks: frozenset[str]  # main bottlenecks whose advice the failure voids


def _checks(ctx: Context) -> list[_Check]:
    facts = ctx.facts
    out: list[_Check] = []
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
        total = sum(p or 0.0 for p in parts)
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
    steady = as_number(facts.get("step.steady_steps"))
    if steady is not None and steady < 2:
        out.append(
            _Check(
                TrustWarning(
                    "trust.single-step",
                    "one steady step: no spread to tell a change from noise; profile at least "
                    "three steps (profile_step_start/end) before comparing",
                ),
                frozenset(),
            )
        )
    return out


def trust_warnings(ctx: Context) -> tuple[TrustWarning, ...]:
    return tuple(c.warning for c in _checks(ctx))


def gate(suggestion: Suggestion, diagnosis: Diagnosis, ctx: Context) -> Suggestion:
    """The suggestion, or a request for data when the main bottleneck rests on a failed check."""
    main = diagnosis.main
    if main is None or suggestion.status not in ("change", "needs-data"):
        return suggestion
    for check in _checks(ctx):
        if main.id in check.blocks:
            summary = (
                f"{main.id} leads, but the profile fails a check it rests on "
                f"({check.warning.id}): {check.warning.message}"
            )
            # a profiling change is still the right next step; any other change is withheld
            keep = suggestion.recommendation if suggestion.status == "needs-data" else None
            return Suggestion("needs-data", keep, suggestion.rejected, summary)
    return suggestion
