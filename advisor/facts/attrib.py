"""Where every millisecond of the steady step went: disjoint parts that add up to the step.

The step model (step_trace_time.csv, or the trace's Overlap Analysis) splits a step into
compute, exposed communication, device idle (Free) and preparation before the first device
task. The trace splits further: idle time by what the device waited for (a late launch from the
host that was dispatching, a late launch while the host waited in a blocking call, or a
dependency on another stream, event or rank), preparation by what the host did
(data loading, or anything else), exposed communication by collective kind. A part the profile
cannot split is missing with the reason; what is left unexplained is reported as unattributed.
"""

from __future__ import annotations

from advisor.facts.base import Recorder
from advisor.facts.contract import Deriver, RankInputs, Scope
from advisor.facts.steady import PerStep
from advisor.facts.wording import exposed_collectives
from advisor.parsers.profile_data import RankProfile, StepRow
from advisor.parsers.traces.steps import TraceStep

PARTS = (
    "attrib.compute_ms",
    "attrib.comm_exposed_ms",
    "attrib.idle_host_ms",
    "attrib.idle_blocked_ms",
    "attrib.idle_dependency_ms",
    "attrib.idle_unattributed_ms",
    "attrib.preparing_dataloader_ms",
    "attrib.preparing_allocator_ms",
    "attrib.preparing_sync_ms",
    "attrib.preparing_other_ms",
)
TRACE_PARTS = PARTS[2:]
# a part only some sources separate (PyTorch traces: memcpy/memset outside compute)
MEMORY_PART = "attrib.memory_ms"
BY_STEP = "attrib.by_step_ms"
ATTRIB_FACTS = (
    "attrib.step_ms",
    *PARTS,
    "attrib.comm_exposed_by_kind_ms",
    "attrib.preparing_not_loading_ratio",
    BY_STEP,
)
_Pair = tuple[StepRow, TraceStep]


def _split(row: StepRow, step: TraceStep) -> dict[str, float]:
    """One step's parts in microseconds; idle and preparation split by the trace."""
    free, preparing = row.free, row.preparing or 0.0
    host = min(step.launch_gap_us or 0.0, free)
    blocked = min(step.blocking_idle_us or 0.0, free - host)
    dependency = min(step.idle_dependency_us or 0.0, free - host - blocked)
    loader = min(step.preparing_loader_us, preparing)
    allocator = min(step.preparing_allocator_us, preparing - loader)
    sync = min(step.preparing_sync_us, preparing - loader - allocator)
    split = {
        "attrib.compute_ms": row.computing,
        "attrib.comm_exposed_ms": row.comm_not_overlapped,
        "attrib.idle_host_ms": host,
        "attrib.idle_blocked_ms": blocked,
        "attrib.idle_dependency_ms": dependency,
        "attrib.idle_unattributed_ms": free - host - blocked - dependency,
        "attrib.preparing_dataloader_ms": loader,
        "attrib.preparing_allocator_ms": allocator,
        "attrib.preparing_sync_ms": sync,
        "attrib.preparing_other_ms": preparing - loader - allocator - sync,
    }
    if row.memory is not None:
        split[MEMORY_PART] = row.memory
    return split


def _ms(us: float) -> float:
    return round(us / 1000.0, 4)


def _coarse_parts(row: StepRow) -> dict[str, float]:
    """A step's parts when the trace cannot split idle and preparation time."""
    parts = {"compute": row.computing, "comm_exposed": row.comm_not_overlapped}
    if row.memory is not None:
        parts["memory"] = row.memory
    parts["idle"] = row.free
    parts["preparing"] = row.preparing or 0.0
    return parts


def _fine_parts(split: dict[str, float], step: TraceStep) -> dict[str, float]:
    """A step's parts with exposed communication by collective kind: kinds can overlap each
    other, so they are scaled to the step model's exposed time and the bar still adds up."""
    parts = {"compute": split["attrib.compute_ms"]}
    exposed = split["attrib.comm_exposed_ms"]
    kinds = {k: v for k, v in (step.comm_exposed_by_kind_us or {}).items() if v > 0}
    total = sum(kinds.values())
    if kinds and exposed > 0:
        for kind, us in sorted(kinds.items()):
            parts[f"comm_exposed:{kind}"] = exposed * us / total
    else:
        parts["comm_exposed"] = exposed
    if MEMORY_PART in split:
        parts["memory"] = split[MEMORY_PART]
    for fact_id in TRACE_PARTS:
        parts[fact_id.removeprefix("attrib.").removesuffix("_ms")] = split[fact_id]
    return parts


def _by_step(
    rows: list[StepRow], parts: list[dict[str, float]], source: str, note: str, out: Recorder
) -> None:
    """Each steady step's parts (ms), for the per-step chart of the report."""
    value = [
        {
            "step": row.step,
            "total": _ms(row.total),
            "parts": {name: _ms(us) for name, us in part.items()},
        }
        for row, part in zip(rows, parts, strict=True)
    ]
    out.add(BY_STEP, value, source, note)


def _pairs(rank: RankProfile, rows: list[StepRow]) -> tuple[list[_Pair], str]:
    """Each steady row with its trace step, or why the trace cannot split the rows ("")."""
    trace = rank.trace
    if trace is None:
        return [], "trace_view.json not in the profile"
    by_number = {s.number: s for s in trace.steps}
    matched = [(r, by_number.get(r.step)) for r in rows if r.step is not None]
    pairs = [(r, s) for r, s in matched if s is not None and s.launch_gap_us is not None]
    if len(pairs) != len(rows):
        return [], "the trace has no launch flows or no ProfilerStep for these steps"
    return pairs, ""


def _coarse(rows: list[StepRow], source: str, why: str, out: Recorder) -> None:
    """The step model's parts alone: idle and preparation time stay whole."""
    per = PerStep.of([r.total for r in rows])
    out.add(
        "attrib.compute_ms", per.ms(sum(r.computing for r in rows)), f"{source}:Computing", per.note
    )
    out.add(
        "attrib.comm_exposed_ms",
        per.ms(sum(r.comm_not_overlapped for r in rows)),
        f"{source}:Communication(Not Overlapped)",
        per.note,
    )
    _by_step(
        rows,
        [_coarse_parts(r) for r in rows],
        source,
        f"{len(rows)} steady step(s); idle and preparation not split ({why})",
        out,
    )
    for fact_id in (
        *TRACE_PARTS,
        "attrib.comm_exposed_by_kind_ms",
        "attrib.preparing_not_loading_ratio",
    ):
        out.miss(fact_id, f"{why}: idle and preparation time cannot be split")


def _where(source: str, name: str) -> dict[str, str]:
    """The source each part names: the step model's column, and the trace events that split it."""
    return {
        "attrib.compute_ms": f"{source}:Computing",
        "attrib.comm_exposed_ms": f"{source}:Communication(Not Overlapped)",
        "attrib.idle_host_ms": f"{source}:Free + {name} launch flows (launched after the device ran dry, host not blocked)",
        "attrib.idle_blocked_ms": f"{source}:Free + {name} launch flows + blocking host calls (launched late, the host waited in the call)",
        "attrib.idle_dependency_ms": f"{source}:Free + {name} launch flows (launched in time, device waited)",
        "attrib.idle_unattributed_ms": f"{source}:Free, less the gaps the launches explain",
        "attrib.preparing_dataloader_ms": f"{source}:Preparing + {name} DataLoader events",
        "attrib.preparing_allocator_ms": f"{source}:Preparing + {name} allocator calls",
        "attrib.preparing_sync_ms": f"{source}:Preparing + {name} synchronisation calls",
        "attrib.preparing_other_ms": f"{source}:Preparing, less loading, allocation, synchronisation",
    }


def _fine(
    pairs: list[_Pair], source: str, name: str, wording: tuple[str, str], out: Recorder
) -> None:
    """Every part, idle and preparation split by the trace, and the per-step bars."""
    parts = [_split(r, s) for r, s in pairs]
    per = PerStep.of([r.total for r, _ in pairs])
    note = f"{per.note}; the parts add up to attrib.step_ms"
    where = _where(source, name)
    for fact_id in PARTS:
        out.add(fact_id, per.ms(sum(p[fact_id] for p in parts)), where[fact_id], note)
    _by_step(
        [r for r, _ in pairs],
        [_fine_parts(p, s) for p, (_, s) in zip(parts, pairs, strict=True)],
        f"{source} + {name}",
        f"{len(pairs)} steady step(s); exposed communication by kind scaled to the step "
        "model's exposed time (kinds can overlap each other)",
        out,
    )
    loading = sum(p["attrib.preparing_dataloader_ms"] for p in parts)
    preparing = sum(r.preparing or 0.0 for r, _ in pairs)
    out.add(
        "attrib.preparing_not_loading_ratio",
        (preparing - loading) / per.total_us if per.total_us > 0 else 0.0,
        f"{source}:Preparing, less data loading",
        "preparation before the first device task that is not data loading / step time: "
        "allocator calls, synchronisation, Python work",
    )
    _by_kind(pairs, name, per, wording, out)


def _by_kind(
    pairs: list[_Pair], name: str, per: PerStep, wording: tuple[str, str], out: Recorder
) -> None:
    """Exposed communication per collective kind, per step as every part."""
    kinds = [s.comm_exposed_by_kind_us for _, s in pairs]
    if not all(k is not None for k in kinds):
        out.miss(
            "attrib.comm_exposed_by_kind_ms",
            f"{name} {wording[1]}",
        )
        return
    summed: dict[str, float] = {}
    for k in kinds:
        for kind, us in (k or {}).items():
            summed[kind] = summed.get(kind, 0.0) + us
    out.add(
        "attrib.comm_exposed_by_kind_ms",
        {kind: round(per.ms(us), 3) for kind, us in sorted(summed.items())},
        f"{name}:{wording[0]}",
        "per kind, the collective's time that no compute overlaps (kinds can overlap each "
        f"other); {per.note}",
    )


def derive(given: RankInputs, out: Recorder) -> None:
    rank, (rows, _, source) = given.profile, given.steady
    if not rows:
        for fact_id in ATTRIB_FACTS:
            out.miss(fact_id, "no steady steps to attribute")
        return
    per = PerStep.of([r.total for r in rows])
    out.add(
        "attrib.step_ms",
        per.median_us / 1000.0,
        source,
        f"median of {len(rows)} steady step(s): step.time_ms, which the parts add up to",
    )
    if all(r.memory is not None for r in rows):
        out.add(
            MEMORY_PART,
            per.ms(sum(r.memory or 0.0 for r in rows)),
            f"{source}:Memory",
            f"memcpy/memset outside compute and communication; {per.note}",
        )
    pairs, why = _pairs(rank, rows)
    if why:
        _coarse(rows, source, why, out)
    else:
        _fine(pairs, source, rank.origin or "trace_view.json", exposed_collectives(rank), out)


DERIVER = Deriver[RankInputs](
    name="attrib",
    scope=Scope.RANK,
    inputs=frozenset({"profile", "steady"}),
    reads=frozenset(),
    writes=frozenset({*ATTRIB_FACTS, MEMORY_PART}),
    derive=derive,
)
