"""Simulate a scenario's steps: which kernel runs when, and the true step-time breakdown.

All times are integer nanoseconds so that every number written to the profile is exact; the
ground truth is computed here from the simulation itself, independently of the readers.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from tests.synth.scenario import Scenario

NS = 1000  # nanoseconds per microsecond


# how torch_npu names the collectives' tasks (hcom_<name>__<id>)
HCOM = {
    "allgather": "allGather",
    "reducescatter": "reduceScatter",
    "allreduce": "allReduce",
    "alltoall": "allToAll",
    "batchsendrecv": "batchSendRecv",
}


@dataclass(frozen=True)
class Kernel:
    name: str
    op_type: str
    core: str  # Accelerator Core: AI_CORE, AI_VECTOR_CORE, MIX_AIC, AI_CPU
    dur: int
    compute_ratio: float | None  # aic_mac_ratio / aiv_vec_ratio
    mte2_ratio: float | None


@dataclass(frozen=True)
class Placed:
    kernel: Kernel
    launch: int  # host launch time
    start: int
    flow_id: int


@dataclass(frozen=True)
class CommOp:
    name: str  # hcom_allGather__..., hcom_reduceScatter__...
    kind: str
    start: int
    dur: int


@dataclass
class StepTruth:
    computing: int = 0
    communication: int = 0
    exposed: int = 0
    free: int = 0
    preparing: int = 0
    total: int = 0
    launch_gap: int = 0
    dataloader: int = 0


@dataclass
class StepPlan:
    number: int
    start: int
    end: int
    loader: tuple[int, int]
    kernels: list[Placed]
    comm: list[CommOp]
    sync: list[int]
    malloc: list[int]
    free: list[int]
    truth: StepTruth = field(default_factory=StepTruth)
    # (start, end) of the host's blocking value reads
    blocking: list[tuple[int, int]] = field(default_factory=list)


def _ns(us: float) -> int:
    return round(us * NS)


# RMSNorm written as x * rsqrt(mean(x^2) + eps): the kernels torch_npu launches for it
UNFUSED_RMSNORM = ("Pows", "ReduceMean", "Adds", "Rsqrt", "Mul")

# a matmul's input converted between ND and FRACTAL_NZ, as the real Qwen3 profile names it
TRANSDATA = ("aclnnMatmul_TransData_TransData", "TransData", "AI_VECTOR_CORE")


def layer_kernels(s: Scenario) -> list[Kernel]:
    """The kernels of one layer (forward and backward folded together)."""
    scale = s.compute_scale
    cube = (0.3, 0.9) if s.mte2_bound else (0.8, 0.35)
    vector = (0.5, 0.4)
    out: list[Kernel] = []

    def add(
        name: str, op_type: str, core: str, us: float, ratios: tuple[float, float] | None
    ) -> None:
        out.append(Kernel(name, op_type, core, _ns(us * scale), *(ratios or (None, None))))

    if s.unfused_rmsnorm_us > 0:
        for t in UNFUSED_RMSNORM:
            us = s.unfused_rmsnorm_us / len(UNFUSED_RMSNORM)
            add(f"aclnn{t}_{t}AiCore_{t}", t, "AI_VECTOR_CORE", us, vector)
    small_types = ("RmsNorm", "Cast", "RotaryMul", "Transpose", "Mul", "Add")
    half = s.small_ops_per_layer // 2
    for i in range(half):
        t = small_types[i % len(small_types)]
        add(f"aclnn{t}_{t}AiCore_{t}", t, "AI_VECTOR_CORE", s.small_op_us, vector)
    if s.transdata_us > 0:
        add(*TRANSDATA, s.transdata_us / 2, vector)
    for _ in range(2):
        add("aclnnMatmul_MatMulCommon_MatMulV2", "MatMulV2", "AI_CORE", s.matmul_us, cube)
    if s.transdata_us > 0:
        add(*TRANSDATA, s.transdata_us / 2, vector)
    a = s.attention_us
    if s.unfused_attention:
        for name, op_type, core, share, ratios in (
            ("aclnnBmm_BatchMatMulV2", "BatchMatMulV2", "AI_CORE", 0.3, cube),
            ("aclnnMaskedFill_MaskedFill", "MaskedFill", "AI_VECTOR_CORE", 0.1, vector),
            ("aclnnSoftmax_SoftmaxV2", "SoftmaxV2", "AI_VECTOR_CORE", 0.2, vector),
            ("aclnnDropoutDoMask_DropOutDoMask", "DropOutDoMask", "AI_VECTOR_CORE", 0.1, vector),
            ("aclnnBmm_BatchMatMulV2", "BatchMatMulV2", "AI_CORE", 0.3, cube),
            ("aclnnBmm_BatchMatMulV2", "BatchMatMulV2", "AI_CORE", 0.6, cube),
            ("aclnnSoftmaxBackward_SoftmaxGrad", "SoftmaxGrad", "AI_VECTOR_CORE", 0.4, vector),
            ("aclnnDropoutDoMask_DropOutDoMask", "DropOutDoMask", "AI_VECTOR_CORE", 0.2, vector),
            ("aclnnBmm_BatchMatMulV2", "BatchMatMulV2", "AI_CORE", 0.8, cube),
        ):
            add(name, op_type, core, a * share, ratios)
    else:
        add(
            "aclnnFlashAttentionScore_FlashAttentionScore",
            "FlashAttentionScore",
            "MIX_AIC",
            a,
            cube,
        )
        add(
            "aclnnFlashAttentionScoreGrad_FlashAttentionScoreGrad",
            "FlashAttentionScoreGrad",
            "MIX_AIC",
            2 * a,
            cube,
        )
    for i in range(half, s.small_ops_per_layer):
        t = small_types[i % len(small_types)]
        add(f"aclnn{t}_{t}AiCore_{t}", t, "AI_VECTOR_CORE", s.small_op_us, vector)
    if s.moe_gemm_us > 0:
        for _ in range(2):
            add("aclnnGroupedMatmul_GroupedMatmul", "GroupedMatmul", "AI_CORE", s.moe_gemm_us, cube)
    for _ in range(2):
        add("aclnnMatmul_MatMulCommon_MatMulV2", "MatMulV2", "AI_CORE", s.matmul_us, cube)
    if s.aicpu_us > 0:
        add("NonZero", "NonZero", "AI_CPU", s.aicpu_us, None)
    return out


# the unfused fp32 cross-entropy as the real Qwen3 PP2 profile's last stage runs it: each kernel
# type's share of the chain
LOSS_CHAIN = (("Cast", 0.25), ("Exp", 0.2), ("Sub", 0.2), ("RealDiv", 0.2), ("Mul", 0.15))


def loss_kernels(s: Scenario) -> list[Kernel]:
    """The loss's kernels once per step after the last layer (none when loss_chain_us is 0)."""
    return [
        Kernel(
            f"aclnn{t}_{t}AiCore_{t}", t, "AI_VECTOR_CORE", _ns(s.loss_chain_us * share), 0.5, 0.4
        )
        for t, share in LOSS_CHAIN
        if s.loss_chain_us > 0
    ]


# the framework ranges of a step with phase_ranges: each the next share of the step's kernels
# (the first third forward, then backward to five sixths, then the optimizer update)
PHASE_RANGES = (
    ("nn.Module: GPTModel_0", 1 / 3),
    ("autograd::engine::evaluate_function: MmBackward0", 5 / 6),
    ("Optimizer.step#AdamW.step", 1.0),
)


def operator_start(s: Scenario, p: Placed) -> int:
    """When the host operator that enqueued the kernel starts (its runtime launch follows
    launch_us later)."""
    return p.launch - round(s.launch_us * NS)


def phase_ranges(s: Scenario, plan: StepPlan) -> list[tuple[str, int, int]]:
    """The step's framework ranges as (name, start, end): a range opens when its first
    operator starts and closes when its last operator returns."""
    if not s.phase_ranges:
        return []
    launch = round(s.launch_us * NS)
    n = len(plan.kernels)
    out = []
    lo = 0
    for name, upto in PHASE_RANGES:
        hi = round(n * upto)
        if hi > lo:
            last = operator_start(s, plan.kernels[hi - 1])
            end = last + s.host_ops_per_kernel - 1 + max(1, launch // 2)
            out.append((name, operator_start(s, plan.kernels[lo]), end))
        lo = hi
    return out


def _union_length(intervals: list[tuple[int, int]]) -> int:
    total, cur_a, cur_b = 0, None, None
    for a, b in sorted(intervals):
        if cur_b is None or a > cur_b:
            if cur_b is not None and cur_a is not None:
                total += cur_b - cur_a
            cur_a, cur_b = a, b
        elif b > cur_b:
            cur_b = b
    if cur_a is not None and cur_b is not None:
        total += cur_b - cur_a
    return total


def _uncovered(a: int, b: int, cover: list[tuple[int, int]]) -> int:
    """Length of [a, b) not covered by the intervals in `cover`."""
    if b <= a:
        return 0
    clipped = [(max(a, x), min(b, y)) for x, y in cover if y > a and x < b]
    return (b - a) - _union_length(clipped)


def _spread(count: int, lo: int, hi: int) -> list[int]:
    if count <= 0 or hi <= lo:
        return []
    step = (hi - lo) // (count + 1)
    return [lo + step * (i + 1) for i in range(count)]


def plan_steps(s: Scenario, epoch_start: int = 0) -> list[StepPlan]:
    recipe = layer_kernels(s) * s.layers + loss_kernels(s)
    plans: list[StepPlan] = []
    t = epoch_start
    flow = 1
    for index in range(s.steps):
        number = s.first_step + index
        kernels = recipe
        if s.jitter:
            # deterministic per-step noise, as repeated runs of a real job show
            factor = 1.0 + s.jitter * random.Random(f"{s.rank}:{number}").uniform(-1.0, 1.0)
            kernels = [
                Kernel(
                    k.name, k.op_type, k.core, round(k.dur * factor), k.compute_ratio, k.mte2_ratio
                )
                for k in recipe
            ]
        partial = s.partial_last_step and index == s.steps - 1
        if partial:
            kernels = recipe[: max(1, int(len(recipe) * 0.3))]
        loader = (t, t + _ns(s.dataloader_us))
        host = prep_end = loader[1] + _ns(s.prep_other_us)
        device = t
        placed: list[Placed] = []
        reads: list[tuple[int, int]] = []
        for i, k in enumerate(kernels):
            if s.blocking_read_us and i == len(kernels) // 2:
                # the read returns once the stream has drained and the copy is done
                done = max(host, device) + _ns(s.blocking_read_us)
                reads.append((host, done))
                host = done
            host += _ns(s.launch_us)
            if s.host_pause_us and index % 2 and i == len(kernels) // 2:
                host += _ns(s.host_pause_us)  # the host stops launching mid-step (a GC pause)
            start = max(device, host)
            placed.append(Placed(k, host, start, flow))
            flow += 1
            device = start + k.dur
        first = placed[0].start
        comm: list[CommOp] = []
        if s.comm_overlapped_us > 0:
            kind = s.overlapped_comm
            comm.append(
                CommOp(f"hcom_{HCOM[kind]}__{number}_0", kind, first, _ns(s.comm_overlapped_us))
            )
        if s.alltoall_us > 0:
            comm.append(
                CommOp(
                    f"hcom_{HCOM['alltoall']}__{number}_2", "alltoall", first, _ns(s.alltoall_us)
                )
            )
        if s.comm_exposed_us > 0 and not partial:
            kind = s.exposed_comm
            comm.append(
                CommOp(f"hcom_{HCOM[kind]}__{number}_1", kind, device, _ns(s.comm_exposed_us))
            )
        end = max([device, host] + [c.start + c.dur for c in comm])
        plan = StepPlan(
            number=number,
            start=t,
            end=end,
            loader=loader,
            kernels=placed,
            comm=comm,
            sync=_spread(s.sync_calls_per_step, loader[1], end),
            malloc=_spread(
                s.malloc_calls_per_step, loader[1], prep_end if s.prep_other_us > 0 else end
            ),
            free=_spread(s.free_calls_per_step, loader[1], end),
            blocking=reads,
        )
        plan.truth = _truth(plan)
        plans.append(plan)
        t = end
    return plans


def _truth(plan: StepPlan) -> StepTruth:
    compute = [(p.start, p.start + p.kernel.dur) for p in plan.kernels]
    comm = [(c.start, c.start + c.dur) for c in plan.comm]
    first = min(a for a, _ in compute)
    truth = StepTruth()
    truth.computing = _union_length(compute)
    truth.communication = _union_length(comm)
    truth.exposed = sum(_uncovered(a, b, compute) for a, b in comm)
    busy = _union_length(compute + comm)
    truth.free = (plan.end - first) - busy
    truth.preparing = first - plan.start
    truth.total = plan.end - plan.start
    truth.dataloader = plan.loader[1] - plan.loader[0]
    for prev, cur in zip(plan.kernels, plan.kernels[1:], strict=False):
        prev_end = prev.start + prev.kernel.dur
        if cur.start > prev_end and cur.start == cur.launch:
            truth.launch_gap += _uncovered(prev_end, cur.start, comm)
    return truth
