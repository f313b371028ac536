"""One profiled rank's folder, laid out as torch_npu's text export writes it:
`<host>_<pid>_<timestamp>_ascend_pt/` with profiler_info_<rank>.json, profiler_metadata.json and
ASCEND_PROFILER_OUTPUT/ (trace, kernels, operator statistics, step trace, communication files at
Level1 and above, the memory record with profile_with_memory)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simjob.response import Recipe
from simjob.settings import Settings
from simjob.tables import (
    communication_json,
    communication_matrix,
    write_kernels,
    write_memory,
    write_op_statistic,
    write_step_trace,
)
from simjob.timeline import NS, StepPlan
from simjob.trace import Clock, write_trace

# torch_npu records these variables, and only these, whatever else the launch exported (unset
# ones as empty strings): the task queue, CPU binding and most HCCL settings are not among them.
RECORDED_ENV = (
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
LEVELS = {"level_none": "LevelNone", "level0": "Level0", "level1": "Level1", "level2": "Level2"}
TORCH_NPU_VERSION, CANN_VERSION = "2.6.0.post1", "8.2.RC1"


@dataclass(frozen=True)
class Collection:
    """What the profiler was asked to collect (the config's training.profile_* keys)."""

    level: str  # Level0 / Level1 / Level2
    with_cpu: bool
    with_memory: bool
    start: int  # first profiled optimizer step (0-based)
    active: int

    @property
    def level1(self) -> bool:
        return self.level in ("Level1", "Level2")


def collection(settings: Settings, iterations: int) -> Collection | None:
    """The profiled steps, or None when the run does not profile."""
    if not settings.flag("training.profile"):
        return None
    start = max(0, settings.number("training.profile_step_start"))
    end = settings.number("training.profile_step_end")
    end = iterations if end < 0 else min(end, iterations)
    if end <= start:
        return None
    level = str(settings.get("training.profile_level")).lower()
    return Collection(
        level=LEVELS.get(level, "Level0"),
        with_cpu=settings.flag("training.profile_with_cpu"),
        with_memory=settings.flag("training.profile_with_memory"),
        start=start,
        active=end - start,
    )


def profiled_ranks(settings: Settings) -> list[int]:
    ranks = settings.get("training.profile_ranks")
    listed = [int(r) for r in (ranks if isinstance(ranks, list) else [ranks])]
    if -1 in listed:
        return list(range(settings.world_size))
    return sorted({r for r in listed if 0 <= r < settings.world_size})


def profiler_info(c: Collection, rank: int, started_ns: int, ended_ns: int) -> dict[str, Any]:
    activities = ["ProfilerActivity.CPU"] if c.with_cpu else []
    return {
        "config": {
            "common_config": {
                "activities": [*activities, "ProfilerActivity.NPU"],
                "schedule": {
                    "wait": 0,
                    "active": c.active,
                    "warmup": 0,
                    "repeat": 1,
                    "skip_first": c.start,
                },
                "record_shapes": False,
                "profile_memory": c.with_memory,
                "with_stack": False,
                "with_flops": False,
                "with_modules": False,
            },
            "experimental_config": {
                "_profiler_level": c.level,
                "_aic_metrics": "ACL_AICORE_PIPE_UTILIZATION" if c.level1 else "ACL_AICORE_NONE",
                "_l2_cache": False,
                "_msprof_tx": False,
                "_data_simplification": True,
                "record_op_args": False,
                "_export_type": "text",
                "_op_attr": False,
                "_gc_detect_threshold": None,
            },
        },
        "start_info": {"syscnt_enable": True, "freq": 100, "start_cnt": started_ns // 10},
        "end_info": {"collectionTimeEnd": ended_ns},
        "torch_npu_version": TORCH_NPU_VERSION,
        "cann_version": CANN_VERSION,
        "rank_id": rank,
    }


def profiler_metadata(settings: Settings, rank: int) -> dict[str, Any]:
    world = settings.world_size
    return {
        "distributed_args": {
            "tensor_model_parallel_size": 1,
            "pipeline_model_parallel_size": 1,
            "data_parallel_size": world,
            "context_parallel_size": 1,
            "expert_model_parallel_size": 1,
            "sequence_parallel": False,
            "rank": rank,
            "world_size": world,
        },
        "ENV_VARIABLES": {name: settings.env_value(name) for name in RECORDED_ENV},
    }


def write_rank(
    folder: Path,
    settings: Settings,
    recipe: Recipe,
    plans: list[StepPlan],
    c: Collection,
    rank: int,
    clock: Clock,
) -> Path:
    """Write one rank's profile folder under `folder` (named as torch_npu names it)."""
    folder.mkdir(parents=True, exist_ok=True)
    output = folder / "ASCEND_PROFILER_OUTPUT"
    output.mkdir(parents=True, exist_ok=True)
    started = clock.epoch_us * NS + plans[0].start
    ended = clock.epoch_us * NS + plans[-1].end
    info = profiler_info(c, rank, started, ended)
    (folder / f"profiler_info_{rank}.json").write_text(json.dumps(info, indent=4))
    meta = profiler_metadata(settings, rank)
    (folder / "profiler_metadata.json").write_text(json.dumps(meta, indent=4))
    launch_ns = round(recipe.launch_us * NS)
    # SIMJOB_FSDP_RANGES=0: a trace without FSDP2's record_function ranges (an older or
    # patched FSDP, a profile taken without them), which advisor must read as well
    fsdp_ranges = settings.env_value("SIMJOB_FSDP_RANGES", "1") != "0"
    write_trace(output / "trace_view.json", plans, launch_ns, clock, fsdp_ranges)
    write_kernels(output / "kernel_details.csv", plans, clock, c.level1)
    write_op_statistic(output / "op_statistic.csv", plans)
    write_step_trace(output / "step_trace_time.csv", plans)
    if c.level1:
        comm = communication_json(plans, clock, recipe.wait_ratio)
        (output / "communication.json").write_text(json.dumps(comm, indent=1))
        matrix = communication_matrix(plans)
        (output / "communication_matrix.json").write_text(json.dumps(matrix, indent=1))
    if c.with_memory:
        write_memory(output / "memory_record.csv", plans, recipe.memory, clock)
    return folder
