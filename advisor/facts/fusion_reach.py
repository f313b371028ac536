"""What fusing each unfused kernel sequence the profile shows can recover per step: the device
time of the sequence (the fused operator's own time is not known before it runs, so none of it
is taken off), plus the host dispatch the removed launches cost, bounded by the time the device
waited for the host's launches.

A fused operator replaces a sequence of n kernels with one: n - 1 launches fewer each time it
runs. On a step whose device waits for launches (attrib.idle_host_ms), each launch the host
no longer makes saves about one launch's host time (host.launch_interval_ms), and together no
more than that wait. A pattern the profile does not show is left out: unknown, not zero (the
sequence may be there in a form the pattern does not match)."""

from __future__ import annotations

from typing import Any

from advisor.core.values import as_number
from advisor.facts.base import Recorder
from advisor.facts.contract import Deriver, RankInputs, Scope
from advisor.inputs.analyzer_rules import analyzer_rules

REACH = "ops.fusion_reach_ms"
READS = ("ops.unfused_sequences", "attrib.idle_host_ms", "host.launch_interval_ms")


def _value(out: Recorder, fact_id: str) -> Any:
    fact = out.facts.get(fact_id)
    return None if fact is None else fact.value


def derive(given: RankInputs, out: Recorder) -> None:
    rows, idle, interval = (_value(out, fact_id) for fact_id in READS)
    lacking = [f for f, v in zip(READS, (rows, idle, interval), strict=True) if v is None]
    if lacking:
        out.miss(REACH, f"needs {', '.join(lacking)}")
        return
    lengths = {p.name: len(p.kernels) for p in analyzer_rules().fusion}
    idle_ms, launch_ms = float(idle), float(interval)
    reach: dict[str, float] = {}
    launches: list[str] = []
    for row in rows if isinstance(rows, list) else []:
        name, count, device = row.get("pattern"), row.get("per_step_count"), row.get("per_step_ms")
        if name not in lengths or as_number(count) is None or as_number(device) is None:
            continue
        removed = float(count) * (lengths[name] - 1)
        host = min(idle_ms, removed * launch_ms)
        reach[str(name)] = round(float(device) + host, 4)
        launches.append(f"{name} {removed:g} launches")
    out.add(
        REACH,
        reach,
        "ops.unfused_sequences + attrib.idle_host_ms + host.launch_interval_ms",
        "per pattern: the sequence's device time + min(the device's wait for launches, launches "
        f"removed x the host's time per launch); {', '.join(launches) or 'no sequence found'} "
        "per step",
    )


DERIVER = Deriver[RankInputs](
    name="fusion_reach",
    scope=Scope.RANK,
    inputs=frozenset(),
    reads=frozenset(READS),
    writes=frozenset({REACH}),
    derive=derive,
)
