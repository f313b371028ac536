"""Write a simulated scenario as a torch_npu (or MindSpore) profiler directory.

The layout and file formats follow what torch_npu writes (including its quirks: string
timestamps, TAB-terminated quoted start times, shapes wrapped in literal quotes, N/A PMU cells
for AI-CPU kernels), so the readers are exercised on the same shapes as real output.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.synth.layout import GROUP, HCCS_GBPS
from tests.synth.scenario import Scenario
from tests.synth.tables import (
    communication_json,
    write_kernels,
    write_memory,
    write_op_statistic,
    write_operator_memory,
    write_step_trace,
)
from tests.synth.timeline import NS, StepPlan, StepTruth, plan_steps
from tests.synth.trace_file import write_trace


@dataclass(frozen=True)
class Written:
    """What was written, and the ground truth a reader must recover."""

    directory: Path
    steps: list[StepPlan]

    @property
    def truths(self) -> list[StepTruth]:
        return [p.truth for p in self.steps]


def profiler_info(s: Scenario) -> dict[str, Any]:
    info: dict[str, Any] = {
        "config": {
            "common_config": {
                "activities": ["ProfilerActivity.CPU", "ProfilerActivity.NPU"],
                "schedule": {
                    "wait": 0,
                    "warmup": 0,
                    "active": s.steps,
                    "repeat": 1,
                    "skip_first": 5,
                },
                "record_shapes": False,
                "profile_memory": s.with_memory,
                "with_stack": False,
            },
            "experimental_config": {
                "_profiler_level": s.level,
                "_aic_metrics": "ACL_AICORE_PIPE_UTILIZATION"
                if s.level != "Level0"
                else "ACL_AICORE_NONE",
                "_export_type": ["text"],
            },
        },
        "cann_version": "8.2.RC1",
        "rank_id": s.rank,
    }
    if s.framework == "mindspore":
        info["ms_version"] = "2.6.0"
    else:
        info["torch_npu_version"] = "2.6.0.post1"
    return info


# torch_npu's metadata lists a fixed set of variables read with os.environ.get(name, ""): unset
# ones appear as "", and nothing else of the launch environment (TASK_QUEUE_ENABLE,
# CPU_AFFINITY_CONF...) is ever recorded
TORCH_NPU_RECORDED_ENV = (
    "ASCEND_GLOBAL_LOG_LEVEL",
    "HCCL_RDMA_TC",
    "HCCL_RDMA_SL",
    "ACLNN_CACHE_LIMIT",
    "HOST_CACHE_CAPACITY",
    "ASCEND_ENHANCE_ENABLE",
    "PYTORCH_NPU_ALLOC_CONF",
    "ASCEND_LAUNCH_BLOCKING",
    "HCCL_ALGO",
)


def recorded_env(env: dict[str, str]) -> dict[str, str]:
    """The launch environment as torch_npu writes it into ENV_VARIABLES."""
    return {name: env.get(name, "") for name in TORCH_NPU_RECORDED_ENV}


def write_profile(parent: Path, s: Scenario) -> Written:
    """Write one rank's profile directory under `parent` and return it with its ground truth."""
    suffix = "_ascend_ms" if s.framework == "mindspore" else "_ascend_pt"
    directory = parent / f"node0_{20000 + s.rank}_20260101093000000{suffix}"
    output = directory / "ASCEND_PROFILER_OUTPUT"
    output.mkdir(parents=True, exist_ok=True)
    plans = plan_steps(s)
    (directory / f"profiler_info_{s.rank}.json").write_text(json.dumps(profiler_info(s), indent=2))
    meta = {
        "ENV_VARIABLES": recorded_env(s.env),
        "distributed_args": {
            "world_size": s.world_size,
            "rank": s.rank,
            "tensor_model_parallel_size": s.tensor_parallel,
            "pipeline_model_parallel_size": s.pipeline_stages,
            "data_parallel_size": s.world_size // (s.pipeline_stages * s.tensor_parallel),
            "context_parallel_size": 1,
            "expert_model_parallel_size": 1,
        },
    }
    if s.group_name is not None:
        meta["parallel_group_info"] = {
            GROUP: {"group_name": s.group_name, "global_ranks": list(range(s.world_size))}
        }
    (directory / "profiler_metadata.json").write_text(json.dumps(meta, indent=2))
    if s.device_cores is not None:
        # the raw folder's device description a simplified export would have deleted
        device = directory / "PROF_000001_20260101093000000_ABCDEFGH" / f"device_{s.rank}"
        device.mkdir(parents=True, exist_ok=True)
        ai_cores, vector_cores = s.device_cores
        info = {"DeviceInfo": [{"id": s.rank, "ai_core_num": ai_cores, "aiv_num": vector_cores}]}
        (device / f"info.json.{s.rank}").write_text(json.dumps(info, indent=2))
    write_trace(output / "trace_view.json", s, plans)
    write_kernels(output / "kernel_details.csv", s, plans)
    write_op_statistic(output / "op_statistic.csv", plans)
    write_step_trace(output / "step_trace_time.csv", plans)
    if s.level != "Level0":
        (output / "communication.json").write_text(
            json.dumps(communication_json(s, plans), indent=1)
        )
        (output / "communication_matrix.json").write_text(json.dumps(_matrix(s, plans), indent=1))
    if s.with_memory:
        write_memory(output / "memory_record.csv", s, plans)
        if s.peak_holders:
            write_operator_memory(output / "operator_memory.csv", s, plans)
    return Written(directory, plans)


def _matrix(s: Scenario, plans: list[StepPlan]) -> dict[str, Any]:
    """Each collective's links from rank 0: every link carries the same data; the slow link
    (if any) takes the whole op, the others the share of it their speed allows."""
    slow_peer, slow_share = s.slow_link or (None, 1.0)
    out: dict[str, Any] = {}
    for plan in plans:
        ops = {}
        for c in plan.comm:
            ms = c.dur / NS / 1000.0
            size = HCCS_GBPS * ms * slow_share
            links = {}
            for peer in range(1, s.matrix_peers + 1):
                time = ms if peer == slow_peer else ms * slow_share
                links[f"0-{peer}"] = {
                    "Transport Type": "HCCS",
                    "Transit Size(MB)": size,
                    "Transit Time(ms)": time,
                    "Bandwidth(GB/s)": round(size / time, 4),
                    "Op Name": c.name,
                }
            ops[f"{c.name.split('__')[0]}-top1@{GROUP}"] = links
        out[f"step{plan.number}"] = {"collective": ops, "p2p": {}}
    return out


def write_cluster(
    parent: Path, base: Scenario, ranks: int, slow_rank: int | None = None, slow_factor: float = 1.5
) -> list[Written]:
    """Several ranks of one job. A slow rank computes `slow_factor` times longer; the others wait
    for it in their final (exposed) communication, as synchronous collectives do."""
    written = []
    extra_us = 0.0
    if slow_rank is not None:
        one_step = plan_steps(base.with_(steps=1))[0]
        compute_us = sum(p.kernel.dur for p in one_step.kernels) / NS
        extra_us = compute_us * (slow_factor - 1.0)
    for rank in range(ranks):
        if rank == slow_rank:
            s = base.with_(rank=rank, world_size=ranks, compute_scale=slow_factor)
        else:
            # the extra exposed time is spent waiting for the slow rank
            comm_us = base.comm_overlapped_us + base.comm_exposed_us
            wait = (base.comm_wait_ratio * comm_us + extra_us) / (comm_us + extra_us)
            s = base.with_(
                rank=rank,
                world_size=ranks,
                comm_exposed_us=base.comm_exposed_us + extra_us,
                comm_wait_ratio=round(wait, 6),
            )
        written.append(write_profile(parent, s))
    return written


def write_pipeline(
    parent: Path,
    base: Scenario,
    stages: int = 2,
    ranks_per_stage: int = 2,
    stage_factor: float = 1.7,
    p2p_us: float = 300.0,
    last_stage: dict[str, object] | None = None,
) -> list[Written]:
    """A pipeline-parallel job: stage s computes stage_factor**s times the first stage's work.
    Every rank exchanges activations with batchSendRecv after its kernels; a faster stage waits
    there for the slowest one (its send/recv lasts the compute difference longer). `last_stage`:
    scenario changes of the last stage's ranks only (the loss, which only that stage runs)."""
    one_step = plan_steps(base.with_(steps=1))[0]
    compute_us = sum(p.kernel.dur for p in one_step.kernels) / NS
    slowest = stage_factor ** (stages - 1)
    written = []
    for stage in range(stages):
        factor = stage_factor**stage
        wait_us = compute_us * (slowest - factor)
        for i in range(ranks_per_stage):
            s = base.with_(
                rank=stage * ranks_per_stage + i,
                world_size=stages * ranks_per_stage,
                pipeline_stages=stages,
                compute_scale=factor,
                exposed_comm="batchsendrecv",
                comm_exposed_us=p2p_us + wait_us,
            )
            if last_stage and stage == stages - 1:
                s = s.with_(**last_stage)  # what only the last stage runs (the loss)
            written.append(write_profile(parent, s))
    return written
