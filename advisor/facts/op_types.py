"""Operator facts the analyzers read beyond the top list: every compute kernel type's time and
count per step (what the slowest and fastest ranks are compared by), the AI-CPU operators with
the input dtypes that sent them there, the share of device compute run as dynamic-shape
operators (kernel_details.csv's OP State), and the share of matrix-multiplication time computed
in fp16 (what says whether the run has a loss scaler at all)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from advisor.facts.base import Recorder
from advisor.facts.contract import Deriver, RankInputs, Scope
from advisor.facts.ops import KernelSelection, select_kernels
from advisor.inputs.analyzer_rules import analyzer_rules
from advisor.inputs.taxonomy import Taxonomy
from advisor.parsers.profile_data import KernelGroup, OpDetail, RankProfile

OP_TYPE_FACTS = (
    "ops.type_table",
    "ops.aicpu_ops",
    "ops.aicpu_by_op",
    "ops.dynamic_shape_share",
    "ops.fp16_matmul_share",
    "ops.optimizer_ms_per_step",
    "ops.optimizer_ratio",
)
# what only the per-kernel detail rows (dtypes, core, OP State) of an Ascend table tell
DETAIL_FACTS = (
    "ops.aicpu_ops",
    "ops.aicpu_by_op",
    "ops.dynamic_shape_share",
    "ops.fp16_matmul_share",
)
# types kept in the table: far more than any model runs (~60 in a dense transformer)
MAX_TYPES = 200


def is_compute(group: KernelGroup, taxonomy: Taxonomy) -> bool:
    classes = taxonomy.op_class(group.op_type, group.example_name)
    return "communication" not in classes and group.core.upper() != "HCCL"


def _type_table(groups: list[KernelGroup], steps: int) -> list[dict[str, Any]]:
    time_us: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    for g in groups:
        time_us[g.op_type] += g.total_us
        count[g.op_type] += g.count
    ranked = sorted(time_us, key=lambda t: (-time_us[t], t))[:MAX_TYPES]
    return [
        {
            "type": t,
            "per_step_ms": round(time_us[t] / 1000.0 / steps, 4),
            "per_step_count": round(count[t] / steps, 2),
        }
        for t in ranked
    ]


def _steady_details(rank: RankProfile, sel: KernelSelection) -> list[OpDetail] | None:
    """The detail rows of the steps the kernel selection kept (None: the source has none)."""
    table = rank.kernels
    if table is None or table.details is None:
        return None
    kept = {g.step for g in sel.groups}
    return [d for d in table.details if d.step in kept]


def _aicpu(
    details: list[OpDetail], aicpu_core: str, steps: int
) -> tuple[list[dict[str, Any]], dict[str, float]]:
    rules = analyzer_rules()
    by_key: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for d in details:
        if d.core == aicpu_core:
            slot = by_key[(d.op_type, d.input_dtypes)]
            slot[0] += d.count
            slot[1] += d.total_us
    ranked = sorted(by_key.items(), key=lambda kv: (-kv[1][1], kv[0]))[: rules.aicpu_top]
    rows = []
    by_op: dict[str, float] = {}
    for (op_type, dtypes), (count, total_us) in ranked:
        fallback = sorted(
            {d for d in dtypes.replace(",", ";").split(";") if d.upper() in rules.fallback_dtypes}
        )
        rows.append(
            {
                "type": op_type,
                "input_dtypes": dtypes,
                "per_step_count": round(count / steps, 2),
                "per_step_ms": round(total_us / 1000.0 / steps, 4),
                "fallback_dtypes": fallback,
            }
        )
        label = f"{op_type}({dtypes})" if dtypes else op_type
        by_op[label] = round(total_us / 1000.0 / steps, 3)
    return rows, by_op


def _dynamic(
    rank: RankProfile, details: list[OpDetail], taxonomy: Taxonomy, src: str, note: str
) -> tuple[float | None, str]:
    """The dynamic-shape share of compute time, or None with the reason."""
    if rank.kernels is None or not rank.kernels.has_op_state:
        return None, f"{src} has no OP State column (CANN before 8.0, or a database export)"
    total = dynamic = 0.0
    for d in details:
        classes = taxonomy.op_class(d.op_type, d.op_type)
        if "communication" in classes or d.core.upper() in ("HCCL", "COMMUNICATION"):
            continue
        total += d.total_us
        dynamic += d.dynamic_us
    if total <= 0:
        return None, f"{src} has no compute kernels in the steady steps"
    return dynamic / total, note


def _fp16_matmul_share(details: list[OpDetail], taxonomy: Taxonomy) -> float | None:
    """The share of matmul time whose inputs are fp16; None without matmuls to judge by."""
    fp16 = analyzer_rules().fp16_dtypes
    total = half = 0.0
    for d in details:
        if "matmul" not in taxonomy.op_class(d.op_type, d.op_type):
            continue
        total += d.total_us
        if any(t.strip().upper() in fp16 for t in d.input_dtypes.replace(",", ";").split(";")):
            half += d.total_us
    return half / total if total > 0 else None


def _optimizer(
    groups: list[KernelGroup], steps: int, out: Recorder, source: str, note: str
) -> None:
    """The optimizer update's device time, where it runs as fused optimizer kernels."""
    pattern = analyzer_rules().optimizer_types
    found = [g for g in groups if pattern.fullmatch(g.op_type) or pattern.fullmatch(g.example_name)]
    if not found:
        why = (
            "no fused optimizer kernel (rules/analyzers.yaml optimizer types): an unfused "
            "optimizer runs as elementwise kernels the kernel table cannot tell apart"
        )
        out.miss("ops.optimizer_ms_per_step", why)
        out.miss("ops.optimizer_ratio", why)
        return
    ms = sum(g.total_us for g in found) / 1000.0 / steps
    types = ", ".join(sorted({g.op_type for g in found}))
    out.add("ops.optimizer_ms_per_step", ms, f"{source}:Type", f"{types}; {note}")
    step = out.facts.get("step.time_ms")
    if step is None or not isinstance(step.value, int | float) or step.value <= 0:
        out.miss("ops.optimizer_ratio", "no step time")
    else:
        out.add("ops.optimizer_ratio", ms / float(step.value), f"{source}:Type", f"{types}; {note}")


def derive(given: RankInputs, out: Recorder) -> None:
    rank, taxonomy = given.profile, given.taxonomy
    sel = select_kernels(rank, given.steady.steps)
    if sel is None:
        for fact_id in OP_TYPE_FACTS:
            out.miss(fact_id, "no kernel_details.csv or op_statistic.csv")
        return
    compute = [g for g in sel.groups if is_compute(g, taxonomy)]
    if not compute:
        for fact_id in OP_TYPE_FACTS:
            out.miss(fact_id, f"{sel.source} has no compute kernels in the steady steps")
        return
    out.add("ops.type_table", _type_table(compute, sel.steps), f"{sel.source}:Type", sel.note)
    _optimizer(compute, sel.steps, out, sel.source, sel.note)
    details = _steady_details(rank, sel)
    if rank.platform != "ascend":
        for fact_id in DETAIL_FACTS:
            out.miss(fact_id, "a GPU trace: no AI CPU, no OP State, no kernel dtypes")
        return
    if details is None:
        for fact_id in DETAIL_FACTS:
            out.miss(fact_id, f"{sel.source} has no per-kernel dtypes or OP State")
        return
    fp16 = _fp16_matmul_share(details, taxonomy)
    if fp16 is None:
        out.miss("ops.fp16_matmul_share", f"{sel.source} has no matmul kernels in the steady steps")
    else:
        dtypes = f"{sel.source}:Type,Input Data Types"
        out.add("ops.fp16_matmul_share", fp16, dtypes, f"matmul time with fp16 inputs; {sel.note}")
    rows, by_op = _aicpu(details, taxonomy.aicpu_core, sel.steps)
    src = f"{sel.source}:Accelerator Core,Input Data Types"
    out.add("ops.aicpu_ops", rows, src, f"AI-CPU operator groups, longest first; {sel.note}")
    out.add("ops.aicpu_by_op", by_op, src, f"per step; {sel.note}")
    share, why = _dynamic(rank, details, taxonomy, sel.source, sel.note)
    if share is None:
        out.miss("ops.dynamic_shape_share", why)
    else:
        out.add("ops.dynamic_shape_share", share, f"{sel.source}:OP State", why)


DERIVER = Deriver[RankInputs](
    name="op_types",
    scope=Scope.RANK,
    inputs=frozenset({"profile", "taxonomy", "steady"}),
    reads=frozenset({"step.time_ms"}),
    writes=frozenset(OP_TYPE_FACTS),
    derive=derive,
)
