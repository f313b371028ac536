"""Low block-dim kernels (Ascend): the share of the AI Core and vector kernels' time spent in
kernels launched on fewer blocks than their unit has cores, so part of the device idles while
they run.

A rank's kernels are tabled by (type, core kind, block dim) over its steady steps
(`ops.block_dim_table`, kernel_details.csv's Block Dim or the database's blockDim). The core
counts come, most direct first, from the profile (PROF_*/device_*/info.json's DeviceInfo, what
msprof-analyze's block-dim checker reads), else from rules/devices.yaml's `cores` rows for the
device the profile or --device names; else the share is unknown, never guessed: the 910B
variants differ and an export that names only "Ascend910B" does not say which one ran.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from advisor.facts.base import Recorder
from advisor.facts.contract import Deriver, RankInputs, Scope
from advisor.facts.estimate import device_cores, named_devices
from advisor.facts.ops import select_kernels
from advisor.inputs.analyzer_rules import analyzer_rules
from advisor.inputs.thresholds import fact_thresholds
from advisor.model import JOB_SCOPE, Fact, FactSet
from advisor.parsers.profile_data import BlockDimGroup

TABLE = "ops.block_dim_table"
RECORDED = ("profile.ai_core_count", "profile.vector_core_count")
JOB_FACTS = (
    "ops.low_block_dim_share",
    "ops.low_block_dim_ms_per_step",
    "ops.low_block_dim_ops",
    "ops.low_block_dim_by_op",
    "ops.low_block_dim_idle_ms_per_step",
    "profile.device_ai_cores",
    "profile.device_vector_cores",
)
GPU = "a GPU trace: no AI Cores, no block dims"
# rows kept in the table: types x core kinds x block dims of one model stay far below it
MAX_ROWS = 500


def _table(groups: list[BlockDimGroup], steps: int) -> list[dict[str, Any]]:
    time_us: dict[tuple[str, str, int, int | None], float] = defaultdict(float)
    count: dict[tuple[str, str, int, int | None], int] = defaultdict(int)
    for g in groups:
        key = (g.op_type, g.core, g.block_dim, g.mix_block_dim)
        time_us[key] += g.total_us
        count[key] += g.count
    ranked = sorted(time_us, key=lambda k: (-time_us[k], k[0], k[1], k[2]))[:MAX_ROWS]
    return [
        {
            "type": op_type,
            "core": core,
            "block_dim": block,
            "mix_block_dim": mix,
            "per_step_ms": round(time_us[key] / 1000.0 / steps, 4),
            "per_step_count": round(count[key] / steps, 2),
        }
        for key in ranked
        for op_type, core, block, mix in [key]
    ]


def derive(given: RankInputs, out: Recorder) -> None:
    rank = given.profile
    if rank.platform != "ascend":
        for fact_id in (TABLE, *RECORDED):
            out.miss(fact_id, GPU)
        return
    if rank.ai_cores is not None:
        out.add(
            "profile.ai_core_count", rank.ai_cores, rank.cores_source, "recorded by the profiler"
        )
    else:
        out.miss(
            "profile.ai_core_count", "no PROF_*/device_*/info.json with DeviceInfo ai_core_num"
        )
    if rank.vector_cores is not None:
        out.add("profile.vector_core_count", rank.vector_cores, rank.cores_source, "aiv_num")
    else:
        out.miss(
            "profile.vector_core_count", "no PROF_*/device_*/info.json with DeviceInfo aiv_num"
        )
    sel = select_kernels(rank, given.steady.steps)
    blocks = rank.kernels.block_dims if rank.kernels is not None else None
    if sel is None or blocks is None:
        out.miss(TABLE, "no Block Dim column (kernel_details.csv, the database's blockDim)")
        return
    units = analyzer_rules().block_dim_units
    kept = {g.step for g in sel.groups}
    steady = [g for g in blocks if g.step in kept and g.core.upper() in units]
    if not steady:
        out.miss(TABLE, f"{sel.source} has no AI Core or vector kernels in the steady steps")
        return
    source = f"{sel.source}:Block Dim,Accelerator Core"
    note = f"AI Core and vector kernels by type, core kind and block dim; {sel.note}"
    out.add(TABLE, _table(steady, sel.steps), source, note)


DERIVER = Deriver[RankInputs](
    name="block_dim",
    scope=Scope.RANK,
    inputs=frozenset({"profile", "steady"}),
    reads=frozenset(),
    writes=frozenset((TABLE, *RECORDED)),
    derive=derive,
)


def _core_counts(facts: FactSet, device: str | None) -> tuple[dict[str, int], str, bool] | str:
    """{"ai_cores": n, "vector_cores": m}, where they come from and whether the profile recorded
    them (else a device table looked up by name), or why they are unknown."""
    recorded = facts.get("profile.ai_core_count")
    if recorded is not None and isinstance(recorded.value, int):
        counts = {"ai_cores": recorded.value}
        vector = facts.get("profile.vector_core_count")
        if vector is not None and isinstance(vector.value, int):
            counts["vector_cores"] = vector.value
        return counts, recorded.source, True
    names = named_devices(facts, device)
    for name, _, why in names:
        row = device_cores(name)
        if row is not None:
            counts = {k: int(row[k]) for k in ("ai_cores", "vector_cores") if k in row}
            where = f"rules/devices.yaml cores ({row['name']}, {why}: {name}; {row['source']})"
            return counts, where, False
    tried = ", ".join(name for name, _, _ in names) or "no device named"
    return (
        f"the profile records no core counts (PROF_*/device_*/info.json) and rules/devices.yaml "
        f"states none for {tried}: the 910B variants differ (910B2 24 AI Cores, 910B3/910B4 20); "
        "pass --device with the variant (npu-smi info shows it)"
    )


def _mismatch(table: list[dict[str, Any]], ai_cores: int) -> str | None:
    """Why the named device's AI Core count is doubtful: most of the AI Core kernels' time runs
    on one and the same block dim below it (the grid CANN sizes to the cores that ran)."""
    units = analyzer_rules().block_dim_units
    by_dim: dict[int, float] = defaultdict(float)
    for row in table:
        if units.get(str(row["core"]).upper()) == "ai_cores":
            by_dim[int(row["block_dim"])] += float(row["per_step_ms"])
    total = sum(by_dim.values())
    if total <= 0:
        return None
    dim, ms = max(by_dim.items(), key=lambda kv: (kv[1], kv[0]))
    share = ms / total
    if dim >= ai_cores or share < fact_thresholds().block_dim_mismatch_share:
        return None
    return (
        f"{share:.0%} of the AI Core kernels' time runs on {dim} blocks, fewer than the "
        f"{ai_cores} AI Cores of the device named: the job more likely ran on a variant with "
        f"{dim} AI Cores; check --device (npu-smi info shows the variant)"
    )


@dataclass
class _Judged:
    judged_ms: float = 0.0  # the AI Core and vector kernels whose unit's count is known
    low_ms: float = 0.0  # of them, launched on fewer blocks than the unit's cores
    idle_ms: float = 0.0  # the low kernels' time times the share of their unit's cores left idle
    ops: list[dict[str, Any]] = field(default_factory=list)
    unknown: set[str] = field(default_factory=set)  # core kinds whose count is unknown


def _judge(table: list[dict[str, Any]], counts: dict[str, int]) -> _Judged:
    """The kernels of the table against their unit's core count."""
    units = analyzer_rules().block_dim_units
    result = _Judged()
    by_type: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for row in table:
        core = str(row["core"])
        cores = counts.get(units.get(core.upper(), ""))
        if cores is None:
            result.unknown.add(core)
            continue
        ms = float(row["per_step_ms"])
        result.judged_ms += ms
        block_dim = int(row["block_dim"])
        if block_dim < cores:
            result.low_ms += ms
            result.idle_ms += ms * (1.0 - block_dim / cores)
            slot = by_type[(str(row["type"]), core)]
            slot[0] += ms
            slot[1] += float(row["per_step_count"])
            slot[2] = max(slot[2], float(cores))
    ranked = sorted(by_type.items(), key=lambda kv: (-kv[1][0], kv[0]))
    result.ops = [
        {
            "type": op_type,
            "core": core,
            "per_step_ms": round(ms, 4),
            "per_step_count": round(count, 2),
            "cores": int(cores),
        }
        for (op_type, core), (ms, count, cores) in ranked[: analyzer_rules().block_dim_top]
    ]
    return result


def block_dim_usage(facts: FactSet, device: str | None) -> None:
    """Add the job's low block-dim facts (replacing earlier ones) from the job's block-dim
    table and the device's core counts."""
    out = Recorder(JOB_SCOPE)
    _usage(facts, device, out)
    facts.facts = [f for f in facts.facts if not (f.id in JOB_FACTS and f.scope == JOB_SCOPE)]
    facts.missing = [m for m in facts.missing if not (m.id in JOB_FACTS and m.scope == JOB_SCOPE)]
    facts.facts.extend(out.facts.values())
    facts.missing.extend(out.missing.values())


def _usage(facts: FactSet, device: str | None, out: Recorder) -> None:
    platform = facts.value("profile.platform")
    found = GPU if platform not in (None, "ascend") else _core_counts(facts, device)
    if isinstance(found, str):
        for fact_id in JOB_FACTS:
            out.miss(fact_id, found)
        return
    counts, counts_source, recorded = found
    out.add("profile.device_ai_cores", counts["ai_cores"], counts_source)
    if "vector_cores" in counts:
        out.add("profile.device_vector_cores", counts["vector_cores"], counts_source)
    else:
        out.miss("profile.device_vector_cores", f"{counts_source} states no vector core count")
    table = facts.get(TABLE)
    judged = _judged_or_why(facts, table, counts, recorded)
    if isinstance(judged, str) or table is None:
        for fact_id in JOB_FACTS[:5]:
            out.miss(fact_id, judged if isinstance(judged, str) else "no block-dim table")
        return
    cores = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in sorted(counts.items()))
    unknown = judged.unknown
    left = f"; not judged: {', '.join(sorted(unknown))} (core count unknown)" if unknown else ""
    note = f"block dim below the unit's cores ({cores}){left}; {table.note}"
    src = table.source
    share_note = f"of the AI Core and vector kernels' time; {note}"
    out.add("ops.low_block_dim_share", judged.low_ms / judged.judged_ms, src, share_note)
    out.add("ops.low_block_dim_ms_per_step", judged.low_ms, src, note)
    idle_note = f"each low kernel's time x the share of its unit's cores it leaves idle; {note}"
    out.add("ops.low_block_dim_idle_ms_per_step", judged.idle_ms, src, idle_note)
    out.add("ops.low_block_dim_ops", judged.ops, src, f"longest first; {note}")
    by_op = {f"{op['type']} ({op['core']})": round(op["per_step_ms"], 3) for op in judged.ops}
    out.add("ops.low_block_dim_by_op", by_op, src, f"per step; {note}")


def _judged_or_why(
    facts: FactSet, table: Fact | None, counts: dict[str, int], recorded: bool
) -> _Judged | str:
    """The table judged against the counts, or why it cannot be: no table, a device name the
    kernels contradict (when the counts were looked up, not recorded), no kernel of a unit
    whose count is known."""
    if table is None or not isinstance(table.value, list):
        missing = next((m for m in facts.missing if m.id == TABLE), None)
        return missing.reason if missing is not None else "no block-dim table"
    doubt = None if recorded else _mismatch(table.value, counts["ai_cores"])
    if doubt is not None:
        return doubt
    judged = _judge(table.value, counts)
    if judged.judged_ms <= 0:
        return f"no kernel whose unit's core count is known ({', '.join(sorted(judged.unknown))})"
    return judged
