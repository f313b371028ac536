"""Facts about the profile itself: framework, level, versions, environment."""

from __future__ import annotations

from advisor.facts.base import Recorder
from advisor.facts.contract import Deriver, RankInputs, Scope
from advisor.facts.groups import LAYOUT_FACT, recorded_layout
from advisor.parsers.profile_data import RankProfile

INFO = "profiler_info.json"
META = "profiler_metadata.json"
_PLATFORM_NOTE = {
    "ascend": "a torch_npu / MindSpore profile: Ascend NPU",
    "cuda": "a PyTorch profiler trace without ROCm markers: NVIDIA GPU (CUDA)",
    "rocm": "a PyTorch profiler trace with roctracer / HIP versions or an AMD device: ROCm",
}


def _level(rank: RankProfile, out: Recorder) -> None:
    if rank.level:
        out.add("profile.level", rank.level, rank.level_source or INFO, "profiler level")
    elif rank.origin is not None:
        out.miss("profile.level", f"{rank.origin}: a PyTorch trace has no profiler level")
    else:
        out.miss(
            "profile.level", f"{INFO} absent and no kernel or communication files to infer it from"
        )


def _world_size(rank: RankProfile, out: Recorder) -> None:
    if rank.world_size is not None:
        out.add(
            "profile.world_size",
            rank.world_size,
            f"{rank.origin}:distributedInfo" if rank.origin else f"{META}:distributed_args",
            "world_size recorded by the profiler",
        )
    elif rank.origin is not None:
        out.miss("profile.world_size", f"{rank.origin} records no distributedInfo world_size")
    else:
        out.miss(
            "profile.world_size",
            f"{META} {rank.absent.get(META, 'has no distributed_args.world_size')}",
        )


def derive(given: RankInputs, out: Recorder) -> None:
    rank, taxonomy = given.profile, given.taxonomy
    out.add("profile.framework", rank.framework, rank.path.name, rank.framework_source)
    out.add("profile.platform", rank.platform, rank.path.name, _PLATFORM_NOTE[rank.platform])
    _level(rank, out)
    has_comm = rank.comm is not None
    if rank.origin:
        out.add(
            "profile.has_communication",
            has_comm,
            rank.origin,
            "NCCL/RCCL kernels in the trace" if has_comm else "no collective kernels",
        )
    else:
        comm_note = "communication.json read" if has_comm else "no communication.json"
        out.add("profile.has_communication", has_comm, "ASCEND_PROFILER_OUTPUT", comm_note)
    for fact_id, value in (
        ("profile.torch_npu_version", rank.torch_npu_version),
        ("profile.cann_version", rank.cann_version),
        ("profile.framework_version", rank.framework_version),
    ):
        if value:
            out.add(fact_id, value, INFO, "recorded by the profiler")
        elif rank.origin is None and (
            fact_id != "profile.framework_version" or rank.framework == "mindspore"
        ):
            out.miss(fact_id, f"not recorded in {INFO}")
    if not rank.env and rank.origin is None:
        reason = rank.absent.get(META, "has no ENV_VARIABLES")
        out.miss("env.*", f"{META} {reason}: the launch environment is unknown")
    _device(rank, out)
    _world_size(rank, out)
    sizes = recorded_layout(rank.layout, taxonomy.recorded_layout)
    if sizes:
        out.add(
            LAYOUT_FACT,
            sizes,
            f"{META}:distributed_args",
            "parallel degrees recorded by the profiler",
        )
    elif rank.origin is not None:
        groups = (
            "its process groups do not tell them (job.group_layout)"
            if rank.process_groups
            else "it records no process groups (distributedInfo.pg_config, PyTorch 2.3+)"
        )
        out.miss(LAYOUT_FACT, f"{rank.origin}: PyTorch traces record no parallel degrees; {groups}")
    else:
        out.miss(LAYOUT_FACT, f"{META} records no distributed_args parallel degrees")
    for name, value in sorted(rank.env.items()):
        out.add(
            f"env.{name}", value, f"{META}:ENV_VARIABLES", "as recorded when the profiler started"
        )


def _device(rank: RankProfile, out: Recorder) -> None:
    if rank.device:
        by_trace = f"{rank.origin}:deviceProperties" if rank.origin else "NPU_INFO"
        out.add(
            "profile.device",
            rank.device,
            rank.device_source or by_trace,
            "device 0 of the trace" if rank.origin else "the chip the database export names",
        )


DERIVER = Deriver[RankInputs](
    name="profile",
    scope=Scope.RANK,
    inputs=frozenset({"profile", "taxonomy"}),
    reads=frozenset(),
    writes=frozenset(
        {
            "profile.framework",
            "profile.platform",
            "profile.level",
            "profile.has_communication",
            "profile.torch_npu_version",
            "profile.cann_version",
            "profile.framework_version",
            "profile.device",
            "profile.world_size",
            LAYOUT_FACT,
            "env.*",
        }
    ),
    derive=derive,
)
