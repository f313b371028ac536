"""The facts catalogue: every fact id the advisor can derive, its unit, meaning and provenance.

This is the public contract rules and users rely on. Ids are fixed once published; a fact that
cannot be computed is reported as missing with the reason, never as a made-up zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Combine(StrEnum):
    """How a job-level fact is formed from the ranks' facts in a cluster profile."""

    MAX = "max"  # the slowest / biggest rank sets the pace (step time, memory peaks)
    MEDIAN = "median"  # a typical rank (ratios, per-step counts)
    FIRST = "first"  # identical on every rank (versions, level, environment)
    REPRESENTATIVE = "representative"  # structured values: the rank with the median step time
    JOB = "job"  # only defined for the job (cluster facts)


@dataclass(frozen=True)
class FactSpec:
    id: str
    unit: str
    area: str
    doc: str
    combine: Combine
    collect: str  # how to get the data when the fact is missing


_LEVEL1 = "profile with training.profile_level: level1 (adds communication files and PMU columns)"
_TRACE = "keep trace_view.json (profile_export_type: text) and profile with CPU activity"
_MEMORY = "profile with training.profile_with_memory: true (writes memory_record.csv)"
_KERNELS = "keep kernel_details.csv (profile_export_type: text)"
_MATRIX = (
    "keep communication_matrix.json (level1 and above), or msprof-analyze's "
    "cluster_communication_matrix.json"
)
_STEPS = "profile whole steps (profile_step_start/end) so step_trace_time.csv is written"

CATALOGUE: tuple[FactSpec, ...] = (
    # profile
    FactSpec(
        "profile.framework",
        "",
        "profile",
        "torch_npu, mindspore or pytorch; the note says how it was recognised.",
        Combine.FIRST,
        "",
    ),
    FactSpec(
        "profile.platform",
        "",
        "profile",
        "The accelerator platform the profile was recorded on: ascend, cuda or rocm. Advice "
        "for one platform's features, variables and profiler keys is given only on it.",
        Combine.FIRST,
        "",
    ),
    FactSpec(
        "profile.level",
        "",
        "profile",
        "Profiler level: Level0, Level1, Level2 (profiler_info, or inferred).",
        Combine.FIRST,
        "keep profiler_info_<rank>.json",
    ),
    FactSpec(
        "profile.has_communication",
        "bool",
        "profile",
        "communication.json is present (Level1 and above).",
        Combine.FIRST,
        _LEVEL1,
    ),
    FactSpec(
        "profile.ranks",
        "count",
        "profile",
        "Profiled ranks (rank directories read).",
        Combine.JOB,
        "",
    ),
    FactSpec(
        "profile.ranks_in_full",
        "count",
        "profile",
        "Ranks read in full when the profile was read in two tiers (the others: their step "
        "model and communication summary only; --deep). Absent when every rank was read in "
        "full.",
        Combine.JOB,
        "",
    ),
    FactSpec(
        "profile.device",
        "",
        "profile",
        "Device name recorded by a PyTorch trace (deviceProperties).",
        Combine.FIRST,
        "a PyTorch profiler trace",
    ),
    FactSpec(
        "profile.world_size",
        "count",
        "profile",
        "World size of the job (profiler_metadata.json distributed_args).",
        Combine.FIRST,
        "profile with torch_npu >= 2.1 (profiler_metadata.json)",
    ),
    FactSpec(
        "profile.steps", "count", "profile", "Profiled steps of one rank.", Combine.MEDIAN, _STEPS
    ),
    FactSpec(
        "profile.torch_npu_version",
        "",
        "profile",
        "torch_npu version recorded by the profiler.",
        Combine.FIRST,
        "keep profiler_info_<rank>.json",
    ),
    FactSpec(
        "profile.cann_version",
        "",
        "profile",
        "CANN version recorded by the profiler.",
        Combine.FIRST,
        "keep profiler_info_<rank>.json",
    ),
    FactSpec(
        "profile.framework_version",
        "",
        "profile",
        "MindSpore version recorded by the profiler.",
        Combine.FIRST,
        "keep profiler_info_<rank>.json",
    ),
    # step time model
    FactSpec(
        "step.time_ms",
        "ms",
        "step",
        "Median wall time of the steady steps (preparing + computing + exposed communication + free).",
        Combine.MAX,
        _STEPS,
    ),
    FactSpec(
        "step.time_mad_ratio",
        "ratio",
        "step",
        "step.time_mad_ms / step.time_ms: how much the steady steps vary (host pauses, jitter).",
        Combine.MAX,
        _STEPS,
    ),
    FactSpec(
        "step.time_mad_ms",
        "ms",
        "step",
        "Median absolute deviation of the steady steps' time: the profile's noise.",
        Combine.MAX,
        _STEPS,
    ),
    FactSpec(
        "step.steady_steps",
        "count",
        "step",
        "Steady steps the step facts were computed from.",
        Combine.MEDIAN,
        _STEPS,
    ),
    FactSpec(
        "step.compute_ratio",
        "ratio",
        "step",
        "Device computing time / step time.",
        Combine.MEDIAN,
        _STEPS,
    ),
    FactSpec(
        "step.comm_total_ratio",
        "ratio",
        "step",
        "All communication time (overlapped or not) / step time.",
        Combine.MEDIAN,
        _STEPS,
    ),
    FactSpec(
        "step.comm_exposed_ratio",
        "ratio",
        "step",
        "Communication NOT overlapped by compute / step time (not / communication time).",
        Combine.MEDIAN,
        _STEPS,
    ),
    FactSpec(
        "step.comm_overlapped_ratio",
        "ratio",
        "step",
        "Communication hidden under compute / step time.",
        Combine.MEDIAN,
        _STEPS,
    ),
    FactSpec(
        "step.free_ratio",
        "ratio",
        "step",
        "Device idle time (neither computing nor communicating) / step time.",
        Combine.MEDIAN,
        _STEPS,
    ),
    FactSpec(
        "step.memory_ratio",
        "ratio",
        "step",
        "Device memory operations (memcpy/memset) that neither compute nor communication hides "
        "/ step time (PyTorch traces; torch_npu counts them in Computing).",
        Combine.MEDIAN,
        _STEPS,
    ),
    FactSpec(
        "step.preparing_ratio",
        "ratio",
        "step",
        "Host time before the step's first device task (data loading...) / step time.",
        Combine.MEDIAN,
        "a torch_npu version whose step_trace_time.csv has the Preparing column",
    ),
    FactSpec(
        "step.bubble_ratio",
        "ratio",
        "step",
        "Pipeline-parallel bubble / step time.",
        Combine.MEDIAN,
        "a torch_npu version whose step_trace_time.csv has the Bubble column",
    ),
    # operators
    FactSpec(
        "ops.device_compute_ms_per_step",
        "ms",
        "ops",
        "Sum of compute kernel durations per steady step (communication kernels excluded).",
        Combine.MEDIAN,
        _KERNELS,
    ),
    FactSpec(
        "ops.kernels_per_step",
        "count",
        "ops",
        "Compute kernels launched per steady step.",
        Combine.MEDIAN,
        _KERNELS,
    ),
    FactSpec(
        "ops.top",
        "list",
        "ops",
        "Operator types by total time: time, share of device compute, count, mean, bound type (from AI Core pipe ratios).",
        Combine.REPRESENTATIVE,
        _KERNELS,
    ),
    FactSpec(
        "ops.attention_share",
        "ratio",
        "ops",
        "Attention kernels (fused, or the unfused chain when no fused kernel runs) / device compute.",
        Combine.MEDIAN,
        _KERNELS,
    ),
    FactSpec(
        "ops.unfused_attention_share",
        "ratio",
        "ops",
        "BatchMatMul + Softmax + mask/dropout kernels / device compute, when no FlashAttention kernel runs (0 when one does).",
        Combine.MEDIAN,
        _KERNELS,
    ),
    FactSpec(
        "ops.small_vector_ops_share",
        "ratio",
        "ops",
        "Small Norm/RoPE/Cast/Transpose/elementwise kernels (under the taxonomy's small_op_max_us) / device compute.",
        Combine.MEDIAN,
        _KERNELS,
    ),
    FactSpec(
        "ops.small_ops_per_step",
        "count",
        "ops",
        "Small Norm/RoPE/Cast/Transpose/elementwise kernels per steady step.",
        Combine.MEDIAN,
        _KERNELS,
    ),
    FactSpec(
        "ops.matmul_share",
        "ratio",
        "ops",
        "Dense matmul kernels / device compute.",
        Combine.MEDIAN,
        _KERNELS,
    ),
    FactSpec(
        "ops.moe_gemm_share",
        "ratio",
        "ops",
        "Grouped expert GEMM kernels / device compute.",
        Combine.MEDIAN,
        _KERNELS,
    ),
    FactSpec(
        "ops.aicpu_share",
        "ratio",
        "ops",
        "AI-CPU kernels / device compute.",
        Combine.MEDIAN,
        _KERNELS,
    ),
    FactSpec(
        "ops.mte2_bound_share",
        "ratio",
        "ops",
        "Kernels bound by memory loads (mte2 pipe >= taxonomy mte2_bound_min_ratio, above their compute pipe, compute pipe below compute_well_used_ratio) / device compute.",
        Combine.MEDIAN,
        _LEVEL1 + " with aic_metrics PipeUtilization",
    ),
    # host dispatch
    FactSpec(
        "host.launch_gap_ms_per_step",
        "ms",
        "host",
        "Device idle time between kernels where the next kernel was launched only after the device ran dry.",
        Combine.MEDIAN,
        _TRACE,
    ),
    FactSpec(
        "host.dispatch_bound_ratio",
        "ratio",
        "host",
        "host.launch_gap / step time (trace step windows).",
        Combine.MEDIAN,
        _TRACE,
    ),
    FactSpec(
        "host.sync_calls_per_step",
        "count",
        "host",
        "aclrtSynchronizeStream/Device/Event calls per steady step.",
        Combine.MEDIAN,
        _TRACE,
    ),
    FactSpec(
        "trace.step_cross_check",
        "ratio",
        "step",
        "Largest relative difference between step_trace_time.csv and the trace's Overlap Analysis lanes.",
        Combine.MEDIAN,
        _TRACE,
    ),
    # communication
    FactSpec(
        "comm.time_ms_by_op",
        "ms",
        "comm",
        "Communication elapse time per steady step by op kind (allgather, reducescatter, allreduce, alltoall, send, recv...).",
        Combine.REPRESENTATIVE,
        _LEVEL1,
    ),
    FactSpec(
        "comm.time_ms_per_step",
        "ms",
        "comm",
        "All communication elapse time per steady step (communication.json).",
        Combine.MEDIAN,
        _LEVEL1,
    ),
    FactSpec(
        "comm.bandwidth_gbps_by_link",
        "GB/s",
        "comm",
        "Transit size / transit time by link type (HCCS, RDMA, PCIE, SDMA).",
        Combine.REPRESENTATIVE,
        _LEVEL1,
    ),
    FactSpec(
        "comm.links_compared",
        "count",
        "comm",
        "Links of the communication matrix compared for the slow-link check (links of a transport "
        "type with enough loaded peers).",
        Combine.JOB,
        _MATRIX,
    ),
    FactSpec(
        "comm.slowest_link",
        "",
        "comm",
        "The link (source-destination rank) moving data slowest against the median of the links "
        "of its transport type: link, transport, bandwidth_gbps, median_gbps.",
        Combine.JOB,
        _MATRIX,
    ),
    FactSpec(
        "comm.slow_link_ratio",
        "ratio",
        "comm",
        "1 - the slowest link's bandwidth / the median of its transport type (0: no slow link).",
        Combine.JOB,
        _MATRIX,
    ),
    FactSpec(
        "comm.wait_ratio",
        "ratio",
        "comm",
        "Wait time / elapse time of communication ops (waiting for peers: a slow rank elsewhere).",
        Combine.MEDIAN,
        _LEVEL1,
    ),
    FactSpec(
        "comm.allgather_share",
        "ratio",
        "comm",
        "All-gather time / all communication time (FSDP parameter gathers, ZeRO-3).",
        Combine.MEDIAN,
        _LEVEL1,
    ),
    FactSpec(
        "comm.reducescatter_share",
        "ratio",
        "comm",
        "Reduce-scatter time / all communication time (FSDP / ZeRO gradient reduction).",
        Combine.MEDIAN,
        _LEVEL1,
    ),
    FactSpec(
        "comm.allreduce_share",
        "ratio",
        "comm",
        "All-reduce time / all communication time (DDP-style gradient reduction, TP).",
        Combine.MEDIAN,
        _LEVEL1,
    ),
    FactSpec(
        "comm.alltoall_share",
        "ratio",
        "comm",
        "All-to-all time / all communication time (MoE token dispatch, Ulysses).",
        Combine.MEDIAN,
        _LEVEL1,
    ),
    FactSpec(
        "comm.p2p_share",
        "ratio",
        "comm",
        "Send/recv time / all communication time (pipeline stages exchanging activations).",
        Combine.MEDIAN,
        _LEVEL1,
    ),
    FactSpec(
        "comm.p2p_ratio",
        "ratio",
        "comm",
        "Send/recv time per steady step / step time: the time a pipeline stage waits for its neighbours (bubbles, stage imbalance).",
        Combine.MEDIAN,
        _LEVEL1,
    ),
    FactSpec(
        "job.data_parallel",
        "",
        "comm",
        "How gradients are reduced: sharded (all-gather + reduce-scatter: FSDP, ZeRO), all-reduce (DDP-style), both, or none seen.",
        Combine.FIRST,
        _LEVEL1,
    ),
    FactSpec(
        "job.pipeline_parallel",
        "bool",
        "comm",
        "Send/recv traffic between ranks: the job runs pipeline stages.",
        Combine.FIRST,
        _LEVEL1,
    ),
    FactSpec(
        "job.expert_parallel",
        "bool",
        "comm",
        "All-to-all traffic: expert parallelism (MoE dispatch) or Ulysses context parallelism.",
        Combine.FIRST,
        _LEVEL1,
    ),
    FactSpec(
        "comm.tp_share",
        "ratio",
        "comm",
        "Tensor-parallel group's collectives / all communication time (groups named tp in the profiler's metadata; taxonomy tp_group_names).",
        Combine.MEDIAN,
        _LEVEL1,
    ),
    FactSpec(
        "comm.groups",
        "list",
        "comm",
        "Collectives by communication group: the group's key in the profile, the framework's name for it (dp, pp, tp... from parallel_group_info / pg_config, or matched by members), its ranks, ms per step by kind.",
        Combine.JOB,
        _LEVEL1,
    ),
    FactSpec(
        "job.tensor_parallel",
        "bool",
        "comm",
        "Tensor parallelism: tp > 1 in the job's parallel sizes.",
        Combine.FIRST,
        "profile with torch_npu 2.1+ (records distributed_args), or pass the config or the training log",
    ),
    FactSpec(
        "job.context_parallel",
        "bool",
        "comm",
        "Context (sequence) parallelism: cp > 1 in the job's parallel sizes.",
        Combine.FIRST,
        "profile with torch_npu 2.1+ (records distributed_args), or pass the config or the training log",
    ),
    FactSpec(
        "job.parallel_sizes",
        "",
        "comm",
        "Parallel degrees (tp, pp, vpp, dp, cp, ep, microbatches...) as the profiler (distributed_args), the training log's argument dump or the config states them; which one is the source.",
        Combine.FIRST,
        "profile with torch_npu 2.1+ (records distributed_args), or pass the config or the training log",
    ),
    # data
    FactSpec(
        "data.loader_ms_per_step",
        "ms",
        "data",
        "Host time in DataLoader __next__ per steady step.",
        Combine.MEDIAN,
        _TRACE,
    ),
    FactSpec(
        "data.loader_ratio",
        "ratio",
        "data",
        "DataLoader time / step time (trace step windows).",
        Combine.MEDIAN,
        _TRACE,
    ),
    # memory
    FactSpec(
        "memory.allocated_peak_bytes",
        "bytes",
        "memory",
        "Peak memory held by live tensors (allocator's allocated).",
        Combine.MAX,
        _MEMORY,
    ),
    FactSpec(
        "memory.reserved_peak_bytes",
        "bytes",
        "memory",
        "Peak memory reserved by the caching allocator.",
        Combine.MAX,
        _MEMORY,
    ),
    FactSpec(
        "memory.fragmentation_ratio",
        "ratio",
        "memory",
        "1 - allocated/reserved at the reserved peak.",
        Combine.MAX,
        _MEMORY,
    ),
    FactSpec(
        "memory.malloc_calls_per_step",
        "count",
        "memory",
        "Device malloc calls (aclrtMalloc...) per steady step: the caching allocator growing.",
        Combine.MEDIAN,
        _TRACE,
    ),
    FactSpec(
        "memory.free_calls_per_step",
        "count",
        "memory",
        "Device free calls (aclrtFree) per steady step: the allocator releasing cache.",
        Combine.MEDIAN,
        _TRACE,
    ),
    # cluster
    FactSpec(
        "ranks.count",
        "count",
        "cluster",
        "Ranks with step data (rank directories or cluster_step_trace_time.csv rows).",
        Combine.JOB,
        "profile several ranks (training.profile_ranks)",
    ),
    FactSpec(
        "ranks.step_time_spread_ratio",
        "ratio",
        "cluster",
        "(slowest rank's step time - median) / median.",
        Combine.JOB,
        "profile several ranks (training.profile_ranks)",
    ),
    FactSpec(
        "ranks.busy_spread_ratio",
        "ratio",
        "cluster",
        "(largest per-rank busy time - median) / median; busy = step time minus exposed communication, which is where the others wait.",
        Combine.JOB,
        "profile several ranks (training.profile_ranks)",
    ),
    FactSpec(
        "ranks.slowest",
        "rank",
        "cluster",
        "The rank with the largest busy time: the one the others wait for.",
        Combine.JOB,
        "profile several ranks (training.profile_ranks)",
    ),
    # training log
    FactSpec(
        "log.parallel_sizes",
        "",
        "log",
        "Parallel degrees and batch sizes from the argument dump at the top of a Megatron-style training log.",
        Combine.JOB,
        "pass the log of the whole run (its first lines hold the argument dump)",
    ),
    FactSpec(
        "log.iterations",
        "count",
        "log",
        "Iteration lines parsed from the training log(s).",
        Combine.JOB,
        "pass --log train.log",
    ),
    FactSpec(
        "log.step_time_ms",
        "ms",
        "log",
        "Median logged step time of steady iterations (warm-up and outliers such as checkpoint steps excluded).",
        Combine.JOB,
        "pass --log train.log",
    ),
    FactSpec(
        "log.step_time_mad_ms",
        "ms",
        "log",
        "Median absolute deviation of the steady step times: the noise of the measurement.",
        Combine.JOB,
        "pass --log train.log",
    ),
    FactSpec(
        "log.tokens_per_s",
        "tokens/s",
        "log",
        "Median logged throughput (training.log_throughput).",
        Combine.JOB,
        "log with training.log_throughput: true",
    ),
    FactSpec(
        "log.mfu",
        "ratio",
        "log",
        "Median logged MFU (the backend logs it for qwen3/qwen3_moe on 910B only).",
        Combine.JOB,
        "log with training.log_throughput: true",
    ),
    FactSpec(
        "log.tflops_per_device",
        "TFLOP/s",
        "log",
        "Median logged throughput per device (Megatron / MindFormers logs).",
        Combine.JOB,
        "a Megatron or MindFormers log",
    ),
    FactSpec(
        "log.memory_allocated_peak_bytes",
        "bytes",
        "log",
        "Largest logged max_memory_allocated (process lifetime peak, max over ranks).",
        Combine.JOB,
        "an FSDP2 backend log",
    ),
    FactSpec(
        "log.memory_reserved_peak_bytes",
        "bytes",
        "log",
        "Largest logged max_memory_reserved.",
        Combine.JOB,
        "an FSDP2 backend log",
    ),
    FactSpec(
        "log.loss",
        "list",
        "log",
        "The loss curve: [iteration, loss] pairs.",
        Combine.JOB,
        "pass --log train.log",
    ),
    FactSpec(
        "log.grad_norm_spikes",
        "count",
        "log",
        "Iterations whose grad norm exceeds the taxonomy's spike factor x the median.",
        Combine.JOB,
        "pass --log train.log",
    ),
    FactSpec(
        "log.nan_iterations",
        "count",
        "log",
        "Iterations with a NaN loss (or reported as NaN iterations).",
        Combine.JOB,
        "pass --log train.log",
    ),
    FactSpec(
        "log.skipped_iterations",
        "count",
        "log",
        "Iterations the optimizer skipped (reported by the Megatron-style backend).",
        Combine.JOB,
        "a Megatron-style log",
    ),
    # estimates (advisor estimate --model-config)
    FactSpec(
        "model.params",
        "count",
        "estimate",
        "Total parameters from the Hugging Face model config.",
        Combine.JOB,
        "pass --model-config config.json",
    ),
    FactSpec(
        "model.active_params",
        "count",
        "estimate",
        "Parameters used per token (MoE: routed experts only).",
        Combine.JOB,
        "pass --model-config config.json",
    ),
    FactSpec(
        "model.flops_per_token",
        "FLOP",
        "estimate",
        "Training model FLOPs per token: 6 x active parameters + attention term.",
        Combine.JOB,
        "pass --model-config config.json",
    ),
    FactSpec(
        "model.hardware_flops_per_token",
        "FLOP",
        "estimate",
        "With full recompute: 8 x active parameters + attention (hardware view).",
        Combine.JOB,
        "pass --model-config with parallel.recompute: true",
    ),
    FactSpec(
        "mfu.estimated",
        "ratio",
        "estimate",
        "Model FLOPs utilisation from the step time and the device peak.",
        Combine.JOB,
        "pass --model-config with --step-ms or --log and --device",
    ),
    FactSpec(
        "memory.estimate.weights_bytes",
        "bytes",
        "estimate",
        "Per-rank bf16 weights after FSDP sharding.",
        Combine.JOB,
        "pass --model-config config.json",
    ),
    FactSpec(
        "memory.estimate.gradients_bytes",
        "bytes",
        "estimate",
        "Per-rank gradients after FSDP sharding.",
        Combine.JOB,
        "pass --model-config config.json",
    ),
    FactSpec(
        "memory.estimate.optimizer_bytes",
        "bytes",
        "estimate",
        "Per-rank Adam states and master weights after FSDP sharding.",
        Combine.JOB,
        "pass --model-config config.json",
    ),
    FactSpec(
        "memory.estimate.activations_bytes",
        "bytes",
        "estimate",
        "Per-rank activation estimate for one micro-batch.",
        Combine.JOB,
        "pass --model-config config.json",
    ),
    FactSpec(
        "memory.estimate.total_bytes",
        "bytes",
        "estimate",
        "Sum of the per-rank estimates.",
        Combine.JOB,
        "pass --model-config config.json",
    ),
    FactSpec(
        "memory.estimate.dominant",
        "",
        "estimate",
        "Which part (weights, gradients, optimizer, activations) dominates the estimate.",
        Combine.JOB,
        "pass --model-config config.json",
    ),
    # attribution: the steady step split into parts that add up to it
    FactSpec(
        "attrib.step_ms",
        "ms",
        "attrib",
        "Mean steady step time that the attrib.* parts add up to.",
        Combine.REPRESENTATIVE,
        _STEPS,
    ),
    FactSpec(
        "attrib.compute_ms",
        "ms",
        "attrib",
        "Device compute per step (Computing).",
        Combine.REPRESENTATIVE,
        _STEPS,
    ),
    FactSpec(
        "attrib.comm_exposed_ms",
        "ms",
        "attrib",
        "Communication no compute hides, per step.",
        Combine.REPRESENTATIVE,
        _STEPS,
    ),
    FactSpec(
        "attrib.memory_ms",
        "ms",
        "attrib",
        "Device memory operations (memcpy/memset) that neither compute nor communication hides, "
        "per step (PyTorch traces; torch_npu counts them in compute).",
        Combine.REPRESENTATIVE,
        _STEPS,
    ),
    FactSpec(
        "attrib.idle_host_ms",
        "ms",
        "attrib",
        "Device idle because the host launched the next kernel only after the device ran dry.",
        Combine.REPRESENTATIVE,
        _TRACE,
    ),
    FactSpec(
        "attrib.idle_dependency_ms",
        "ms",
        "attrib",
        "Device idle although the next kernel was launched: waiting on another stream, an event or a rank.",
        Combine.REPRESENTATIVE,
        _TRACE,
    ),
    FactSpec(
        "attrib.idle_unattributed_ms",
        "ms",
        "attrib",
        "Device idle the launches do not explain (no launch flow, or idle outside kernel gaps).",
        Combine.REPRESENTATIVE,
        _TRACE,
    ),
    FactSpec(
        "attrib.preparing_dataloader_ms",
        "ms",
        "attrib",
        "Before the step's first device task: data loading (DataLoader events).",
        Combine.REPRESENTATIVE,
        _TRACE,
    ),
    FactSpec(
        "attrib.preparing_allocator_ms",
        "ms",
        "attrib",
        "Before the step's first device task: device memory allocation calls (aclrtMalloc, cudaMalloc), outside data loading.",
        Combine.REPRESENTATIVE,
        _TRACE,
    ),
    FactSpec(
        "attrib.preparing_sync_ms",
        "ms",
        "attrib",
        "Before the step's first device task: synchronisation calls, outside data loading and allocation.",
        Combine.REPRESENTATIVE,
        _TRACE,
    ),
    FactSpec(
        "attrib.preparing_other_ms",
        "ms",
        "attrib",
        "Before the step's first device task: anything else the host does (Python, untraced work).",
        Combine.REPRESENTATIVE,
        _TRACE,
    ),
    FactSpec(
        "attrib.preparing_not_loading_ratio",
        "ratio",
        "attrib",
        "(Preparing - data loading) / step time: preparation the data pipeline does not explain.",
        Combine.REPRESENTATIVE,
        _TRACE,
    ),
    FactSpec(
        "attrib.comm_exposed_by_kind_ms",
        "ms",
        "attrib",
        "Exposed communication per step by collective kind (allgather, reducescatter, allreduce...).",
        Combine.REPRESENTATIVE,
        _TRACE,
    ),
    FactSpec(
        "attrib.by_step_ms",
        "ms",
        "attrib",
        "Each steady step split into its parts (compute, exposed communication by kind, memory "
        "operations, idle by cause, preparation); the parts of a step add up to its total.",
        Combine.REPRESENTATIVE,
        _STEPS,
    ),
    # pipeline stages (clusters)
    FactSpec(
        "pipeline.stages",
        "count",
        "cluster",
        "Pipeline stages found: ranks with send/recv traffic grouped by device compute time.",
        Combine.JOB,
        "profile every rank of the job (or at least one per stage), profile level1",
    ),
    FactSpec(
        "pipeline.stage_ranks",
        "",
        "cluster",
        "The ranks of each stage, fastest stage first.",
        Combine.JOB,
        "profile every rank of the job (or at least one per stage), profile level1",
    ),
    FactSpec(
        "pipeline.stage_compute_ms",
        "ms",
        "cluster",
        "Median device compute per step of each stage, in the order of pipeline.stage_ranks.",
        Combine.JOB,
        "profile every rank of the job (or at least one per stage), profile level1",
    ),
    FactSpec(
        "pipeline.stage_bubble_ratio",
        "ratio",
        "pipeline",
        "Pipeline bubble (receive wait) / step time of each stage, from the stage rows of "
        "msprof-analyze's cluster_step_trace_time.csv; the job's step.bubble_ratio is the worst.",
        Combine.JOB,
        "run msprof-analyze cluster -m all on the profiled ranks (writes cluster_step_trace_time.csv)",
    ),
    FactSpec(
        "pipeline.stage_imbalance_ratio",
        "ratio",
        "cluster",
        "(slowest stage's compute - fastest stage's compute) / step time: what the fastest stage waits each step.",
        Combine.JOB,
        "profile every rank of the job (or at least one per stage), profile level1",
    ),
    FactSpec(
        "pipeline.slowest_stage_p2p_ratio",
        "ratio",
        "cluster",
        "Send/recv time per step of the slowest pipeline stage / step time: what the stages wait beyond the imbalance (the schedule's fill and drain, the transfers).",
        Combine.JOB,
        "profile every rank of the job (or at least one per stage), profile level1",
    ),
    FactSpec(
        "pipeline.microbatches",
        "count",
        "cluster",
        "Micro-batches per step and pipeline (m): as stated, or global batch / (micro batch x dp).",
        Combine.JOB,
        "pass the training log with its argument dump, or a config that states micro_batch_num",
    ),
    FactSpec(
        "pipeline.bubble_expected_ratio",
        "ratio",
        "cluster",
        "Schedule bubble of the pipeline: (p-1)/(v*m+p-1) for p stages, v virtual stages, m micro-batches (1F1B).",
        Combine.JOB,
        "needs the pipeline stages and micro-batches (training log argument dump or config)",
    ),
)

SPECS: dict[str, FactSpec] = {spec.id: spec for spec in CATALOGUE}
ENV_PREFIX = "env."
AREAS = (
    "profile",
    "step",
    "attrib",
    "ops",
    "host",
    "comm",
    "data",
    "memory",
    "cluster",
    "log",
    "estimate",
    "env",
)


def spec_for(fact_id: str) -> FactSpec:
    """The catalogue entry of a fact id; `env.<NAME>` facts share one generic entry."""
    if fact_id.startswith(ENV_PREFIX):
        return FactSpec(
            fact_id,
            "",
            "env",
            "Environment variable recorded by the profiler.",
            Combine.FIRST,
            "profile with torch_npu >= 2.1 (profiler_metadata.json)",
        )
    return SPECS[fact_id]


# What to collect when a fact is missing from a PyTorch profiler (GPU) trace: the Ascend
# profiler's keys mean nothing there; facts only torch_npu writes have no GPU counterpart.
_GPU_COLLECT = {
    _STEPS: "profile whole steps: torch.profiler.schedule(wait=1, warmup=1, active=3) and "
    "prof.step() every iteration",
    _TRACE: "record CPU and device activity (activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])",
    _KERNELS: "record device activity (ProfilerActivity.CUDA)",
}
GPU_PLATFORMS = ("cuda", "rocm")


STEP_MODELS_ONLY = (
    "read the ranks in full: --deep auto or all (--deep 0 read the step models and "
    "communication summaries only)"
)


def collect_hint(fact_id: str, platform: object, step_models_only: bool = False) -> str:
    """How to collect a missing fact on the profile's platform (`step_models_only`: no rank
    was read in full, so the profile may well hold it)."""
    spec = spec_for(fact_id)
    if step_models_only and spec.collect:
        return STEP_MODELS_ONLY
    if platform in GPU_PLATFORMS:
        return _GPU_COLLECT.get(spec.collect) or "not recorded in PyTorch profiler traces"
    return spec.collect or f"a profile that yields {fact_id}"


def is_known(fact_id: str) -> bool:
    return fact_id in SPECS or (fact_id.startswith(ENV_PREFIX) and len(fact_id) > len(ENV_PREFIX))
