"""The phases of a rank's steady steps from the framework's annotations (parsers/traces/phases.py):
forward, backward, optimizer update, device work launched outside any phase range, exposed
communication, and the idle time spent waiting for data; with the Python garbage collections
inside the steps. Ratios are the phases' sums over the steps' sums, so they add up to at most 1
(every microsecond counts once)."""

from __future__ import annotations

from typing import Any

from advisor.facts.base import Recorder
from advisor.facts.contract import Deriver, RankInputs, Scope
from advisor.parsers.profile_data import RankProfile
from advisor.parsers.traces.phases import COMM_EXPOSED, OTHER, PHASES, Placement, StepPhases

# phase -> the fact of its share of the step
RATIO_FACTS = {
    "forward": "phase.forward_ratio",
    "backward": "phase.backward_ratio",
    "optimizer": "phase.optimizer_ratio",
    OTHER: "phase.unplaced_ratio",
    COMM_EXPOSED: "phase.comm_exposed_ratio",
}
PHASE_FACTS = (
    *RATIO_FACTS.values(),
    "phase.data_wait_ratio",
    "phase.optimizer_ms_per_step",
    "phase.data_wait_ms_per_step",
    "phase.table",
)
GC_FACTS = ("host.gc_ms_per_step", "host.gc_max_ms", "host.gc_ratio")

# why a GPU trace records no collections, and the option that records them
GPU_NO_GC = (
    "the trace records no garbage collection: PyTorch's profiler writes them only with "
    "experimental_config=torch._C._profiler._ExperimentalConfig(record_python_gc_info=True)"
)
NPU_NO_GC = (
    "GC detection was off (profiler_info records gc_detect_threshold null): torch_npu writes "
    "collections only with _ExperimentalConfig(gc_detect_threshold=1), in ms"
)
NPU_GC_UNRECORDED = (
    "the profile does not say whether GC detection was on (no profiler_info.json): torch_npu "
    "writes collections only with _ExperimentalConfig(gc_detect_threshold=1), in ms"
)
# why a phase the trace has no range of has no time, and how to record its ranges
UNRECORDED = {
    "forward": (
        "the trace has no forward range: profile with with_modules=True (nn.Module: ranges) or "
        "label the forward with torch.profiler.record_function('## forward ##')"
    ),
    "backward": (
        "the trace has no backward range (autograd::engine::evaluate_function, recorded with CPU "
        "activity), or label it with record_function('## backward ##')"
    ),
    "optimizer": (
        "the trace has no optimizer range: torch.optim optimizers record Optimizer.step#...; "
        "label another with record_function('## optimizer_step ##')"
    ),
}
NO_TRACE = (
    "no trace_view.json or database export, whose host ranges the phases and collections are "
    "read from"
)


def _steady(rank: RankProfile, given: RankInputs) -> list[StepPhases]:
    """The phase rows of the rank's steady steps (all of them when the numbers differ)."""
    table = rank.trace.phases if rank.trace is not None else None
    if table is None:
        return []
    kept = {row.step for row in given.steady.rows}
    steady = [s for s in table.steps if s.number in kept]
    return steady or table.steps


def _placement(placed: Placement) -> tuple[str, str]:
    """What the phases' device operations were placed by: the source's words and the note's."""
    parts = []
    if placed.by_operator:
        parts.append(
            f"by the framework operator that enqueued them ({placed.by_operator} device operations)"
        )
    if placed.by_launch:
        where = " where none is linked" if placed.by_operator else ""
        unit = "" if placed.by_operator else " device operations"
        parts.append(f"by their runtime launch{where} ({placed.by_launch}{unit})")
    what = "enqueueing operators" if placed.by_operator else "launches"
    note = f"placed {', '.join(parts)}" if parts else "no device operation linked to the host"
    return what, note


def _table(steps: list[StepPhases], recorded: tuple[str, ...]) -> list[dict[str, Any]]:
    """The steps' phases in ms; a phase the trace has no range of is left out (unknown)."""
    shown = [n for n in RATIO_FACTS if n not in UNRECORDED or n in recorded]
    return [
        {
            "step": s.number,
            "step_ms": round(s.duration_us / 1000.0, 3),
            **{name: round(s.phase_us.get(name, 0.0) / 1000.0, 3) for name in shown},
            "data_wait": round(s.data_wait_us / 1000.0, 3),
            # the device's other idle time (data wait is idle time too)
            "idle": round(max(0.0, s.duration_us - s.busy_us - s.data_wait_us) / 1000.0, 3),
        }
        for s in steps
    ]


def _phases(given: RankInputs, steps: list[StepPhases], out: Recorder) -> None:
    rank = given.profile
    table = rank.trace.phases if rank.trace is not None else None
    reason = NO_TRACE if table is None else table.absent
    if not reason and not steps:
        reason = "no steps: the phases are measured per ProfilerStep#N window"
    if reason or table is None:
        for fact_id in PHASE_FACTS:
            out.miss(fact_id, reason)
        return
    total = sum(s.duration_us for s in steps)
    placed_by, placement = _placement(table.placement)
    source = f"{rank.trace.path.name if rank.trace else ''}:host ranges + {placed_by}"
    recorded = table.recorded
    for name, fact_id in RATIO_FACTS.items():
        if name in UNRECORDED and name not in recorded:
            # its work is in phase.unplaced_ratio: unknown, not zero
            out.miss(fact_id, UNRECORDED[name])
            continue
        part = sum(s.phase_us.get(name, 0.0) for s in steps)
        note = f"{part / 1000.0 / len(steps):.3f} ms per step"
        if name != COMM_EXPOSED:
            note += f"; {placement}"
        out.add(fact_id, part / total, source, note)
    wait = sum(s.data_wait_us for s in steps)
    out.add(
        "phase.data_wait_ratio",
        wait / total,
        source,
        "device idle while the host is in the data loader",
    )
    optimizer = sum(s.phase_us.get("optimizer", 0.0) for s in steps)
    if "optimizer" in recorded:
        out.add("phase.optimizer_ms_per_step", optimizer / 1000.0 / len(steps), source, placement)
    else:
        out.miss("phase.optimizer_ms_per_step", UNRECORDED["optimizer"])
    out.add("phase.data_wait_ms_per_step", wait / 1000.0 / len(steps), source)
    out.add(
        "phase.table", _table(steps, recorded), source, f"{len(steps)} steady step(s); {placement}"
    )


def _gc_known(rank: RankProfile) -> str:
    """Why the rank's collections are unknown ("" when the profile records them)."""
    table = rank.trace.phases if rank.trace is not None else None
    if table is None:
        return NO_TRACE
    if table.gc_recorded or rank.gc_detect_ms is not None:
        return ""
    if rank.gc_detect_off:
        return NPU_NO_GC
    if rank.platform != "ascend":
        return GPU_NO_GC
    return NPU_GC_UNRECORDED


def _gc(given: RankInputs, steps: list[StepPhases], out: Recorder) -> None:
    rank = given.profile
    reason = _gc_known(rank)
    if not reason and not steps and not (rank.trace and rank.trace.steps):
        reason = "no steps: collections are counted per ProfilerStep#N window"
    if reason:
        for fact_id in GC_FACTS:
            out.miss(fact_id, reason)
        return
    source = f"{rank.trace.path.name if rank.trace else ''}:GC ranges"
    total = sum(s.gc_us for s in steps)
    duration = sum(s.duration_us for s in steps)
    note = (
        f"collections over {rank.gc_detect_ms:g} ms only (gc_detect_threshold)"
        if rank.gc_detect_ms
        else ""
    )
    out.add("host.gc_ms_per_step", total / 1000.0 / len(steps) if steps else 0.0, source, note)
    out.add("host.gc_max_ms", max((s.gc_max_us for s in steps), default=0.0) / 1000.0, source)
    out.add("host.gc_ratio", total / duration if duration else 0.0, source, note)


def derive(given: RankInputs, out: Recorder) -> None:
    steps = _steady(given.profile, given)
    _phases(given, steps, out)
    _gc(given, steps, out)


DERIVER = Deriver[RankInputs](
    name="phases",
    scope=Scope.RANK,
    inputs=frozenset({"profile"}),
    reads=frozenset(),
    writes=frozenset((*PHASE_FACTS, *GC_FACTS)),
    derive=derive,
    waits=True,  # a large torch_npu trace's phases are measured aside (traces/whole.py)
)

__all__ = ["DERIVER", "PHASES"]
