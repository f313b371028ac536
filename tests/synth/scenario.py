"""Knobs of the synthetic profile writer, and named presets for the situations rules recognise."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

UPSTREAM_ENV = {
    "TRAINING_BACKEND": "mindspeed_fsdp",
    "TASK_QUEUE_ENABLE": "2",
    "CPU_AFFINITY_CONF": "1",
    "MULTI_STREAM_MEMORY_REUSE": "2",
    "PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True",
    "HCCL_CONNECT_TIMEOUT": "1800",
    "ASCEND_GLOBAL_LOG_LEVEL": "3",
}


@dataclass(frozen=True)
class Scenario:
    """One rank's synthetic training step, repeated `steps` times. Times in microseconds.

    Every kernel runs on one compute stream in launch order; the host launches one kernel every
    `launch_us`, so kernels shorter than that leave the device waiting (host-bound dispatch).
    """

    name: str = "healthy"
    framework: str = "torch_npu"  # or "mindspore" (writes *_ascend_ms)
    level: str = "Level1"  # Level0: no communication files, no PMU columns
    rank: int = 0
    world_size: int = 8
    pipeline_stages: int = 1  # recorded as distributed_args pipeline_model_parallel_size
    tensor_parallel: int = 1  # recorded as distributed_args tensor_model_parallel_size
    # the framework's name of the one communication group (parallel_group_info); None: unnamed
    group_name: str | None = None
    steps: int = 5
    first_step: int = 1
    layers: int = 4
    matmul_us: float = 400.0  # four dense matmuls per layer
    attention_us: float = 300.0  # fused attention forward; the gradient takes twice as long
    unfused_attention: bool = False  # BatchMatMul + Softmax + mask + dropout instead of FA
    small_ops_per_layer: int = 6  # Norm / RoPE / Cast / Transpose / elementwise kernels
    small_op_us: float = 20.0
    moe_gemm_us: float = 0.0  # two grouped expert GEMMs per layer when > 0
    aicpu_us: float = 0.0  # one AI-CPU kernel per layer when > 0
    # the unfused fp32 cross-entropy after the last layer (Cast, Exp, Sub, RealDiv, Mul) when > 0
    loss_chain_us: float = 0.0
    # RMSNorm as elementwise kernels at the start of each layer (Pows, ReduceMean, Adds, Rsqrt,
    # Mul) instead of the fused RmsNorm, this long in all, when > 0
    unfused_rmsnorm_us: float = 0.0
    # TransData kernels converting each layer's matmul inputs between ND and the private NZ
    # format (the internal format on), this long in all per layer, when > 0
    transdata_us: float = 0.0
    mte2_bound: bool = False  # matmuls limited by memory loads (mte2) rather than the cube
    compute_scale: float = 1.0  # >1 makes every kernel slower (a slow rank)
    launch_us: float = 5.0  # host time per kernel launch
    comm_overlapped_us: float = 1000.0  # all-gather hidden under compute
    comm_exposed_us: float = 200.0  # reduce-scatter after the last kernel (not overlapped)
    overlapped_comm: str = "allgather"  # the collective hidden under compute (FSDP: all-gather)
    exposed_comm: str = (
        "reducescatter"  # the one after the last kernel (DDP: allreduce; PP: batchsendrecv)
    )
    alltoall_us: float = 0.0  # MoE token dispatch (all-to-all) under compute when > 0
    comm_wait_ratio: float = 0.05  # share of each communication op spent waiting for peers
    # the job spans nodes: each collective also moves this many MB over RDMA, in its transit time
    rdma_mb_per_op: float = 0.0
    # how each collective's HCCS transfer is cut into pieces (communication.json's Size
    # Distribution) as (piece size in MB, share of the transit time); empty: no distribution
    hccs_pieces: tuple[tuple[float, float], ...] = ()
    # communication_matrix.json: the links from this rank to ranks 1..matrix_peers over HCCS,
    # each carrying the collective's data (1: the one link 0-1)
    matrix_peers: int = 1
    # (peer, bandwidth as a share of the other links'): that link is degraded and sets the
    # collectives' duration, the others finish early; None: every link at the same speed
    slow_link: tuple[int, float] | None = None
    dataloader_us: float = 200.0
    # host work after data loading and before the first launch (allocator calls, Python): the
    # malloc calls of the step are made then when > 0
    prep_other_us: float = 0.0
    sync_calls_per_step: int = 1
    # mid-step the host reads a device value (aten::item -> AscendCL@aclrtMemcpy, a synchronous
    # copy to the host): it waits for the stream to drain, then this long for the copy, while
    # nothing is queued (0: no such read)
    blocking_read_us: float = 0.0
    malloc_calls_per_step: int = 0
    free_calls_per_step: int = 0
    allocated_peak_mb: float = 20000.0
    reserved_peak_mb: float = 21000.0
    # allocated at step start and end as a share of the peak: what stays resident (parameters,
    # optimizer states); the rest rises and is freed within the step
    allocated_floor_share: float = 0.6
    # the chip a database export records in NPU_INFO (None: no NPU_INFO row)
    device: str | None = None
    # the AI Core frequency samples (MHz) a database export records in AICORE_FREQ, spread
    # evenly over the profiled steps; empty: no AICORE_FREQ table
    aicore_freq_mhz: tuple[int, ...] = ()
    # the kernels' input dtype as kernel_details.csv / COMPUTE_TASK_INFO write it (DT_FLOAT16:
    # an fp16 run, whose loss scaler can overflow)
    compute_dtype: str = "DT_BF16"
    # the AI Core and vector core counts written to the raw PROF_* folder's device description
    # (PROF_*/device_*/info.json.<id>, DeviceInfo ai_core_num / aiv_num); None: no such file
    device_cores: tuple[int, int] | None = None
    # Block Dim of the vector kernels (AI_VECTOR_CORE) in kernel_details.csv; the others keep 24
    vector_block_dim: int = 24
    # operators holding memory at the allocated peak, written to operator_memory.csv /
    # OP_MEMORY as (name, MiB); empty: no operator memory file
    peak_holders: tuple[tuple[str, float], ...] = ()
    with_memory: bool = True
    kernel_step_ids: bool = True
    jitter: float = 0.0  # each step's kernels run up to this fraction slower or faster (seeded)
    host_pause_us: float = 0.0  # every other step the host pauses mid-step (garbage collection)
    partial_last_step: bool = False  # the profiler stop cuts the last step after 30% of kernels
    host_ops_per_kernel: int = 1  # aten operators recorded on the host per launch (trace size)
    # framework ranges around the loop's parts (timeline.PHASE_RANGES), and in a database
    # export the links from each kernel's enqueueing operator (CONNECTION_IDS): each range
    # closes when its last operator returns, before that operator's runtime launch, as with
    # torch_npu's task queue on
    phase_ranges: bool = False
    env: dict[str, str] = field(default_factory=lambda: dict(UPSTREAM_ENV))

    def with_(self, **changes: object) -> Scenario:
        return replace(self, **changes)  # type: ignore[arg-type]


HEALTHY = Scenario()

PRESETS: dict[str, Scenario] = {
    "healthy": HEALTHY,
    "host-bound": HEALTHY.with_(
        name="host-bound",
        matmul_us=100.0,
        attention_us=80.0,
        small_ops_per_layer=40,
        small_op_us=8.0,
        launch_us=60.0,
        env={
            k: v
            for k, v in UPSTREAM_ENV.items()
            if k not in ("TASK_QUEUE_ENABLE", "CPU_AFFINITY_CONF")
        },
    ),
    # FSDP with too little prefetch: the forward waits for the next layers' all-gathers, the
    # gradient reduce-scatters hide under the backward pass
    "comm-bound": HEALTHY.with_(
        name="comm-bound",
        comm_overlapped_us=2000.0,
        comm_exposed_us=2400.0,
        overlapped_comm="reducescatter",
        exposed_comm="allgather",
    ),
    "unfused-attention": HEALTHY.with_(
        name="unfused-attention", unfused_attention=True, attention_us=900.0
    ),
    "small-ops": HEALTHY.with_(name="small-ops", small_ops_per_layer=60, small_op_us=12.0),
    "aicpu": HEALTHY.with_(name="aicpu", aicpu_us=500.0),
    "mte2-bound": HEALTHY.with_(name="mte2-bound", mte2_bound=True),
    # a model whose RMSNorm runs as five elementwise kernels per layer (no fused RmsNorm)
    "unfused-norm": HEALTHY.with_(name="unfused-norm", unfused_rmsnorm_us=400.0),
    # the internal format on: each layer converts its matmul inputs to NZ and back (TransData),
    # 200 us per layer, about 7% of device compute
    "format-conversions": HEALTHY.with_(name="format-conversions", transdata_us=200.0),
    "slow-dataloader": HEALTHY.with_(name="slow-dataloader", dataloader_us=2500.0),
    "fragmentation": HEALTHY.with_(
        name="fragmentation",
        allocated_peak_mb=20000.0,
        reserved_peak_mb=32000.0,
        malloc_calls_per_step=40,
        free_calls_per_step=30,
    ),
    # a healthy step at 61 of 64 GiB reserved: most of the peak rises and is freed within the
    # step (activations), and the operators holding it are named
    "memory-pressure": HEALTHY.with_(
        name="memory-pressure",
        allocated_peak_mb=58000.0,
        reserved_peak_mb=61.0 * 1024,
        allocated_floor_share=0.35,
        peak_holders=(("aten::mul", 14000.0), ("npu_fusion_attention", 9000.0)),
    ),
    # the same pressure held high through the step: parameters and optimizer states
    "memory-pressure-static": HEALTHY.with_(
        name="memory-pressure-static",
        allocated_peak_mb=58000.0,
        reserved_peak_mb=61.0 * 1024,
        allocated_floor_share=0.8,
    ),
    "level0": HEALTHY.with_(name="level0", level="Level0", comm_exposed_us=2400.0),
    "moe": HEALTHY.with_(name="moe", moe_gemm_us=700.0),
    # the time before the first device task goes to the allocator, not to data loading
    "allocator-storm": HEALTHY.with_(
        name="allocator-storm", prep_other_us=3000.0, malloc_calls_per_step=200
    ),
    # MoE: the token dispatch all-to-all waits outside compute; parameter all-gathers hide
    "moe-comm-bound": HEALTHY.with_(
        name="moe-comm-bound",
        moe_gemm_us=700.0,
        comm_overlapped_us=2000.0,
        comm_exposed_us=2400.0,
        exposed_comm="alltoall",
    ),
    # DDP-style data parallelism: the gradient all-reduce after the backward pass, no all-gathers
    "ddp-allreduce": HEALTHY.with_(
        name="ddp-allreduce",
        comm_overlapped_us=0.0,
        comm_exposed_us=2400.0,
        exposed_comm="allreduce",
    ),
    "partial-last-step": HEALTHY.with_(name="partial-last-step", partial_last_step=True),
    # tensor parallelism without sequence parallelism: the TP all-reduces of every layer wait
    "tp-allreduce": HEALTHY.with_(
        name="tp-allreduce",
        tensor_parallel=2,
        group_name="tp",
        comm_overlapped_us=0.0,
        comm_exposed_us=2400.0,
        exposed_comm="allreduce",
    ),
    "mindspore": HEALTHY.with_(name="mindspore", framework="mindspore"),
    # two nodes, a lossy RoCE queue: the gradient all-reduce after the backward pass spends
    # 4.5 s in RDMA transit for 64 MB (a retransmission timeout), and every step waits for it
    "rdma-retransmission": HEALTHY.with_(
        name="rdma-retransmission",
        comm_overlapped_us=1000.0,
        comm_exposed_us=4_500_000.0,
        exposed_comm="allreduce",
        rdma_mb_per_op=64.0,
    ),
}

# DDP whose gradient buckets are not padded: the exposed all-reduce moves most of its HCCS
# data in 1.937312 MB pieces (not a multiple of 512 bytes), the rest in aligned 2.064384 MB
# pieces, the two sizes the real DDP profile's all-reduce uses
PRESETS["unaligned-transfers"] = PRESETS["ddp-allreduce"].with_(
    name="unaligned-transfers", hccs_pieces=((1.937312, 0.6), (2.064384, 0.4))
)

# one server's eight NPUs: rank 0's HCCS link to rank 5 moves data at 45% of the speed of its
# six other links (a degraded port); every collective lasts as long as that link takes
PRESETS["slow-link"] = HEALTHY.with_(name="slow-link", matrix_peers=7, slow_link=(5, 0.45))

# a database export of a 910B whose AI Core clock falls from its 1800 MHz to 1300 MHz for the
# last samples of the profile (power capping or thermal throttling)
PRESETS["aicore-freq-drop"] = HEALTHY.with_(
    name="aicore-freq-drop",
    device="Ascend910B",
    aicore_freq_mhz=(1800, 1800, 1800, 1800, 1650, 1300, 1300, 1300),
)

# host-bound, plus ASCEND_LAUNCH_BLOCKING=1: every launch synchronises
PRESETS["launch-blocking"] = PRESETS["host-bound"].with_(
    name="launch-blocking",
    sync_calls_per_step=400,
    env={**UPSTREAM_ENV, "ASCEND_LAUNCH_BLOCKING": "1"},
)

# a healthy step, but mid-step the host reads a loss value with a synchronous copy: the NPU
# drains its queue and idles while the host waits
# a 910B2's 24 AI Cores and 48 vector cores recorded by the profiler; the vector kernels
# launched on 8 blocks, a sixth of the vector cores
PRESETS["low-block-dim"] = HEALTHY.with_(
    name="low-block-dim", device_cores=(24, 48), vector_block_dim=8, small_op_us=80.0
)
PRESETS["ascend-blocking-sync"] = HEALTHY.with_(
    name="ascend-blocking-sync", blocking_read_us=3000.0
)
