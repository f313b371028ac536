"""Two kernel analyses of GPU traces: GEMMs that run in fp32 on the CUDA cores (no tensor core:
the cuda_core_gemm class of rules/taxonomy.yaml) against all GEMM time, and the share of kernels
too short to cover their own launch (a launch storm: under the readers' small_op_max_us,
rules/thresholds.yaml, which the kernel tables count them by)."""

from __future__ import annotations

from advisor.facts.base import Recorder
from advisor.facts.contract import Deriver, RankInputs, Scope
from advisor.facts.ops import select_kernels
from advisor.inputs.thresholds import reader_thresholds

GEMM_FACTS = ("ops.cuda_core_gemm_share", "ops.cuda_core_gemm_ms_per_step", "ops.gemm_ratio")
TINY_FACTS = ("ops.tiny_kernel_share", "ops.tiny_kernels_per_step")
ASCEND = (
    "an Ascend profile: every MatMul runs on the cube unit, there is no fp32 CUDA-core path to "
    "tell apart"
)


def derive(given: RankInputs, out: Recorder) -> None:
    taxonomy = given.taxonomy
    sel = select_kernels(given.profile, given.steady.steps)
    if sel is None:
        for fact_id in (*GEMM_FACTS, *TINY_FACTS):
            out.miss(fact_id, "no kernel_details.csv or device kernels in the trace")
        return
    gemm_us = cuda_core_us = 0.0
    kernels = tiny = 0
    for g in sel.groups:
        classes = taxonomy.op_class(g.op_type, g.example_name)
        if "communication" in classes or g.core.upper() in ("HCCL", "NCCL"):
            continue
        kernels += g.count
        tiny += g.small_count
        if "matmul" in classes:
            gemm_us += g.total_us
            if "cuda_core_gemm" in classes:
                cuda_core_us += g.total_us
    src, note, steps = sel.source, sel.note, sel.steps
    if kernels and sel.source != "op_statistic.csv":
        tiny_note = f"kernels under {reader_thresholds().small_op_max_us:g} us; {note}"
        out.add("ops.tiny_kernel_share", tiny / kernels, f"{src}:Duration", tiny_note)
        out.add("ops.tiny_kernels_per_step", tiny / steps, f"{src}:Duration", tiny_note)
    else:
        for fact_id in TINY_FACTS:
            out.miss(fact_id, f"{src} has no per-kernel durations in the steady steps")
    if given.profile.platform == "ascend":
        for fact_id in GEMM_FACTS:
            out.miss(fact_id, ASCEND)
    elif gemm_us <= 0:
        # no GEMM ran: no share of it to speak of, but no GEMM time either (known, not unknown)
        out.miss("ops.cuda_core_gemm_share", "no GEMM kernels in the steady steps")
        none = f"no GEMM kernels in the steady steps; {note}"
        out.add("ops.cuda_core_gemm_ms_per_step", 0.0, f"{src}:kernel names", none)
        _gemm_ratio(0.0, src, none, out)
    else:
        out.add(
            "ops.cuda_core_gemm_share",
            cuda_core_us / gemm_us,
            f"{src}:kernel names",
            f"of {gemm_us / 1000.0 / steps:.3f} ms of GEMMs per step; {note}",
        )
        out.add("ops.cuda_core_gemm_ms_per_step", cuda_core_us / 1000.0 / steps, src, note)
        _gemm_ratio(gemm_us / 1000.0 / steps, src, note, out)


def _gemm_ratio(gemm_ms: float, src: str, note: str, out: Recorder) -> None:
    """The GEMMs' share of the step: what a faster GEMM path can act on at most."""
    step = out.facts.get("step.time_ms")
    if step is None or not isinstance(step.value, int | float) or step.value <= 0:
        out.miss("ops.gemm_ratio", "no step time")
        return
    ratio = gemm_ms / float(step.value)
    out.add("ops.gemm_ratio", ratio, f"{src}:kernel names", f"{gemm_ms:.3f} ms per step; {note}")


DERIVER = Deriver[RankInputs](
    name="gpu_kernels",
    scope=Scope.RANK,
    inputs=frozenset({"profile", "taxonomy", "steady"}),
    reads=frozenset({"step.time_ms"}),
    writes=frozenset((*GEMM_FACTS, *TINY_FACTS)),
    derive=derive,
)
