"""Operator facts from kernel_details.csv (or op_statistic.csv when it is the only source)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from advisor.facts.base import Recorder, SteadySteps, ratio
from advisor.facts.contract import Deriver, RankInputs, Scope
from advisor.facts.steady import PerStep
from advisor.inputs.thresholds import reader_thresholds
from advisor.parsers.profile_data import KernelGroup, RankProfile

TOP_N = 10
KERNELS = "kernel_details.csv"
OP_STAT = "op_statistic.csv"
SHARE_FACTS = {
    "ops.matmul_share": "matmul",
    "ops.moe_gemm_share": "moe_gemm",
    "ops.format_conversion_share": "format_conversion",
}
DEVICE_COMPUTE = "ops.device_compute_ms_per_step"
ALL_OPS_FACTS = (
    "ops.kernels_per_step",
    "ops.top",
    "ops.attention_share",
    "ops.unfused_attention_share",
    "ops.small_vector_ops_share",
    "ops.small_ops_per_step",
    "ops.matmul_share",
    "ops.moe_gemm_share",
    "ops.format_conversion_share",
    "ops.format_conversion_ms_per_step",
    "ops.aicpu_share",
    "ops.mte2_bound_share",
)


@dataclass
class KernelSelection:
    groups: list[KernelGroup]
    steps: int
    source: str
    note: str
    has_pmu: bool


def select_kernels(rank: RankProfile, steady: SteadySteps) -> KernelSelection | None:
    if rank.kernels is not None:
        table = rank.kernels
        wanted = {int(label) for label in steady.labels if label.isdigit()}
        present = {g.step for g in table.groups if g.step is not None}
        if table.has_step_ids and wanted and wanted & present:
            groups = [g for g in table.groups if g.step in wanted]
            steps = len(wanted & present)
            note = f"kernels of {steady.note}"
        else:
            groups = list(table.groups)
            profiled = len(rank.step_rows or (rank.trace.steps if rank.trace else []))
            steps = max(1, len(present)) if table.has_step_ids else max(1, profiled)
            reason = "no Step Id column" if not table.has_step_ids else "step ids do not match"
            note = f"all {table.rows} kernel rows ({reason}); per-step values divide by {steps} step(s)"
        source = f"{rank.origin}:kernels" if rank.origin else KERNELS
        return KernelSelection(groups, steps, source, note, table.has_pmu)
    if rank.op_stats is not None:
        groups = []
        for stat in rank.op_stats:
            g = KernelGroup(None, stat.op_type, stat.core, stat.op_type, stat.count, stat.total_us)
            groups.append(g)
        steps = max(1, len(rank.step_rows or []))
        note = f"op_statistic.csv totals over all {steps} profiled step(s) (no kernel_details.csv)"
        return KernelSelection(groups, steps, OP_STAT, note, False)
    return None


def _bound(group_list: list[KernelGroup]) -> str:
    pmu = sum(g.pmu_us for g in group_list)
    if pmu <= 0:
        return "unknown"
    # most of the type's time in kernels classified memory-bound (see the taxonomy's rule)
    bound = sum(g.mte2_bound_us for g in group_list)
    return "memory" if bound > pmu / 2 else "compute"


def _top(
    by_type: dict[str, list[KernelGroup]], compute_us: float, steps: int
) -> list[dict[str, Any]]:
    ranked = sorted(by_type.items(), key=lambda kv: -sum(g.total_us for g in kv[1]))[:TOP_N]
    top = []
    for op_type, groups in ranked:
        total = sum(g.total_us for g in groups)
        count = sum(g.count for g in groups)
        top.append(
            {
                "type": op_type,
                "core": "/".join(sorted({g.core for g in groups if g.core})),
                "total_ms": round(total / 1000.0, 3),
                "per_step_ms": round(total / 1000.0 / steps, 3),
                "share": round(total / compute_us, 4) if compute_us > 0 else None,
                "count": count,
                "mean_us": round(total / count, 3) if count else None,
                "bound": _bound(groups),
            }
        )
    return top


def _device_compute(given: RankInputs, out: Recorder) -> None:
    """Device compute time per step, defined once: the time a compute kernel runs in the
    step's window (streams overlapping counted once; Ascend: step_trace_time.csv's Computing,
    msprof-analyze's figure), with the per-step statistic of every time fact. It equals
    attrib.compute_ms; the kernel tables below sum kernel durations by the launching step."""
    rows, _, source = given.steady
    if not rows:
        out.miss(
            DEVICE_COMPUTE,
            "no step model (step_trace_time.csv, ProfilerStep windows or Overlap Analysis "
            "lanes): device compute time is measured in the step windows",
        )
        return
    per = PerStep.of([r.total for r in rows])
    out.add(
        DEVICE_COMPUTE,
        per.ms(sum(r.computing for r in rows)),
        f"{source}:Computing",
        f"compute kernels' busy time in the step windows, streams overlapping once (= "
        f"attrib.compute_ms); {per.note}",
    )


def derive(given: RankInputs, out: Recorder) -> None:
    _device_compute(given, out)
    taxonomy = given.taxonomy
    sel = select_kernels(given.profile, given.steady.steps)
    if sel is None:
        for fact_id in ALL_OPS_FACTS:
            out.miss(fact_id, "no kernel_details.csv or op_statistic.csv")
        return
    by_class: dict[str, float] = defaultdict(float)
    small_us = 0.0
    small_count = 0
    compute_us = 0.0
    kernel_count = 0
    aicpu_us = 0.0
    mte2_bound_us = 0.0
    by_type: dict[str, list[KernelGroup]] = defaultdict(list)
    for g in sel.groups:
        classes = taxonomy.op_class(g.op_type, g.example_name)
        if "communication" in classes or g.core.upper() == "HCCL":
            continue
        compute_us += g.total_us
        kernel_count += g.count
        by_type[g.op_type].append(g)
        for cls in classes:
            by_class[cls] += g.total_us
        if "small_vector" in classes:
            small_us += g.small_us
            small_count += g.small_count
        if g.core == taxonomy.aicpu_core:
            aicpu_us += g.total_us
        mte2_bound_us += g.mte2_bound_us
    src, note, steps = sel.source, sel.note, sel.steps
    if compute_us <= 0:
        for fact_id in ALL_OPS_FACTS:
            out.miss(fact_id, f"{src} has no compute kernels in the steady steps")
        return
    out.add("ops.kernels_per_step", kernel_count / steps, f"{src}:Type", note)
    out.add(
        "ops.top", _top(by_type, compute_us, steps), f"{src}:Type", f"top {TOP_N} types; {note}"
    )
    fused = by_class.get("attention_fused", 0.0)
    unfused = by_class.get("attention_unfused", 0.0)
    if fused > 0:
        out.add(
            "ops.attention_share",
            fused / compute_us,
            f"{src}:Type",
            f"fused attention kernels; {note}",
        )
        out.add(
            "ops.unfused_attention_share",
            0.0,
            f"{src}:Type",
            f"fused attention kernels run, so batched matmul/softmax are not an unfused chain; {note}",
        )
    else:
        out.add(
            "ops.attention_share",
            unfused / compute_us,
            f"{src}:Type",
            f"unfused chain (no fused attention kernel); {note}",
        )
        out.add(
            "ops.unfused_attention_share",
            unfused / compute_us,
            f"{src}:Type",
            f"BatchMatMul/Softmax/mask/dropout kernels; {note}",
        )
    if src != OP_STAT:
        # the readers classified the small kernels: their threshold is the one to name
        small_note = f"kernels under {reader_thresholds().small_op_max_us:g} us; {note}"
        out.add(
            "ops.small_vector_ops_share", small_us / compute_us, f"{src}:Duration(us)", small_note
        )
        out.add("ops.small_ops_per_step", small_count / steps, f"{src}:Type", small_note)
    else:
        reason = "op_statistic.csv has no per-kernel durations (small kernels cannot be told apart)"
        out.miss("ops.small_vector_ops_share", reason)
        out.miss("ops.small_ops_per_step", reason)
    for fact_id, cls in SHARE_FACTS.items():
        out.add(fact_id, by_class.get(cls, 0.0) / compute_us, f"{src}:Type", note)
    conversion_ms = by_class.get("format_conversion", 0.0) / 1000.0 / steps
    out.add("ops.format_conversion_ms_per_step", conversion_ms, f"{src}:Type", note)
    if given.profile.origin is None:
        out.add("ops.aicpu_share", aicpu_us / compute_us, f"{src}:Accelerator Core", note)
    else:  # a GPU trace has no Accelerator Core column: no kernel runs on an AI CPU
        out.add("ops.aicpu_share", aicpu_us / compute_us, src, f"GPU kernels, no AI CPU; {note}")
    if sel.has_pmu:
        value = ratio(mte2_bound_us, compute_us)
        out.add(
            "ops.mte2_bound_share",
            value,
            f"{src}:aic_mte2_ratio,aiv_mte2_ratio",
            f"kernels whose mte2 ratio exceeds mac/vec ratio; {note}",
        )
    elif given.profile.origin is not None:
        out.miss("ops.mte2_bound_share", "a GPU trace records no per-kernel pipe utilisation")
    else:
        out.miss(
            "ops.mte2_bound_share",
            f"{src} has no PipeUtilization columns (Level0, or aic_metrics off)",
        )


DERIVER = Deriver[RankInputs](
    name="ops",
    scope=Scope.RANK,
    inputs=frozenset({"profile", "taxonomy", "steady"}),
    reads=frozenset(),
    writes=frozenset({*ALL_OPS_FACTS, DEVICE_COMPUTE}),
    derive=derive,
)
