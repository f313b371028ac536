"""Allocator facts from memory_record.csv (profile_with_memory; a PyTorch trace's [memory]
events alike): the peaks, fragmentation, and the peak split into what stays resident (the
lowest allocated of the steady steps) and what a step raises, with the operators holding the
most at the peak (operator_memory.csv); the whole process's device memory (component APP, the
database's NPU_MEM, else the modules' sum) and its modules outside the allocator
(npu_module_mem.csv)."""

from __future__ import annotations

from advisor.facts.base import Recorder
from advisor.facts.contract import Deriver, RankInputs, Scope

MEMORY = "memory_record.csv"
MIB = 1024 * 1024
MODULES = "npu_module_mem.csv"
# modules named beside the process's peak: the few holding the most
MODULES_SHOWN = 5
PROCESS_FACTS = ("memory.process_peak_bytes", "memory.module_peaks")
MEMORY_FACTS = (
    "memory.allocated_peak_bytes",
    "memory.reserved_peak_bytes",
    "memory.fragmentation_ratio",
    "memory.static_bytes",
    "memory.dynamic_bytes",
    "memory.peak_holders",
)


def derive(given: RankInputs, out: Recorder) -> None:
    _process(given, out)
    rank = given.profile
    mem = rank.memory
    if mem is None:
        reason = (
            rank.absent[MEMORY]
            if rank.framework == "pytorch" and MEMORY in rank.absent
            else f"{MEMORY} {rank.absent.get(MEMORY, 'not in the profile')} (profile_with_memory off)"
        )
        for fact_id in MEMORY_FACTS:
            out.miss(fact_id, reason)
        return
    exact = mem.recorded_in == "bytes"
    note = f"component {mem.component}, {mem.samples} samples" + (
        "" if exact else "; MB read as MiB"
    )
    allocated, reserved = (
        ("Total Allocated", "Total Reserved")
        if exact
        else ("Total Allocated(MB)", "Total Reserved(MB)")
    )
    out.add(
        "memory.allocated_peak_bytes",
        int(mem.allocated_peak_mb * MIB),
        f"{MEMORY}:{allocated}",
        note,
    )
    out.add(
        "memory.reserved_peak_bytes",
        int(mem.reserved_peak_mb * MIB),
        f"{MEMORY}:{reserved}",
        note,
    )
    _split(given, out)
    if mem.reserved_peak_mb > 0:
        out.add(
            "memory.fragmentation_ratio",
            1.0 - mem.allocated_at_reserved_peak_mb / mem.reserved_peak_mb,
            f"{MEMORY}:{allocated},{reserved}",
            f"1 - allocated/reserved at the sample with the highest reserved; {note}",
        )
    else:
        out.miss("memory.fragmentation_ratio", f"{MEMORY} never reserved any memory")


def _split(given: RankInputs, out: Recorder) -> None:
    """Seed 003's curve shape: memory held high through the window is parameters and optimizer
    states (static); what rises above that floor and is freed is activations and temporaries."""
    rank = given.profile
    mem = rank.memory
    assert mem is not None
    source = rank.sources.get(MEMORY, MEMORY)
    column = "Total Allocated" if mem.recorded_in == "bytes" else "Total Allocated(MB)"
    if mem.allocated_floor_mb is None or mem.samples < 2:
        for fact_id in ("memory.static_bytes", "memory.dynamic_bytes"):
            out.miss(fact_id, f"{MEMORY} has too few allocated samples for a curve")
    else:
        floor = mem.allocated_floor_mb
        steps = _steps(mem.window_steps) if mem.window_steps else ""
        held = (
            f"lowest allocated within {steps} (read step by step: samples outside the "
            "steady steps left out)"
            if mem.step_rise_mb is not None
            else f"lowest allocated of the {mem.samples} samples (no step windows: the whole "
            "profile, start-up included)"
        )
        out.add("memory.static_bytes", int(floor * MIB), f"{source}:{column}", held)
        if mem.step_rise_mb is not None:
            rise = mem.step_rise_mb
            raised = f"largest rise within one step above that step's own low ({steps})"
        else:
            rise = mem.allocated_peak_mb - floor
            raised = "allocated peak above that floor: raised and freed within a step"
        out.add("memory.dynamic_bytes", int(rise * MIB), f"{source}:{column}", raised)
    holders_from = rank.sources.get("operator_memory.csv", "operator_memory.csv")
    if mem.holders:
        out.add(
            "memory.peak_holders",
            {name: int(mib * MIB) for name, mib in mem.holders},
            holders_from,
            "operators holding the most at the allocated peak, largest first, summed by name",
        )
    elif mem.peak_time_us is None:
        out.miss("memory.peak_holders", f"{MEMORY} has no timestamps")
    else:
        reason = rank.absent.get("operator_memory.csv", "not in the profile")
        out.miss("memory.peak_holders", f"operator_memory.csv {reason}")


def _process(given: RankInputs, out: Recorder) -> None:
    """What the whole process holds on the device, from the most complete record there is:
    memory_record.csv's APP component (text export), the database's NPU_MEM app rows (the same
    samples: the database's MEMORY_RECORD leaves the APP component out), else the highest sum of
    npu_module_mem.csv's modules at one sample (APP, the allocator's pool, plus HCCL, the
    runtime...: everything but what no module claims). The modules but APP are the parts outside
    the allocator."""
    rank = given.profile
    modules = rank.module_memory
    process = rank.memory.process_peak_mb if rank.memory is not None else None
    if process is not None:
        source = f"{rank.sources.get(MEMORY, MEMORY)}:APP Total Reserved(MB)"
        note = "the whole process on the device (allocator pool, communication buffers, runtime); MB read as MiB"
        out.add("memory.process_peak_bytes", int(process * MIB), source, note)
    elif rank.process_sampled_peak_mb is not None:
        note = (
            "the whole process on the device as the driver samples it (NPU_MEM app rows: what "
            "the text export writes as memory_record.csv's APP rows)"
        )
        out.add(
            "memory.process_peak_bytes",
            int(rank.process_sampled_peak_mb * MIB),
            "NPU_MEM:app hbm",
            note,
        )
    elif modules is not None:
        note = (
            "the highest sum over the modules at one sample (APP, the allocator's pool, plus "
            "HCCL, the runtime...): the process as its modules account for it; MB read as MiB"
        )
        source = rank.sources.get(MODULES, MODULES)
        out.add("memory.process_peak_bytes", int(modules.total_peak_mb * MIB), source, note)
    elif rank.origin is not None:
        out.miss(
            "memory.process_peak_bytes",
            "a PyTorch trace records the allocator's [memory] events, not the whole process's "
            "device memory (torch.cuda.mem_get_info or nvidia-smi / rocm-smi tell it)",
        )
    else:
        out.miss(
            "memory.process_peak_bytes",
            f"neither {MEMORY} (component APP) nor {MODULES} records the process: profile_memory=True",
        )
    peaks = modules.peaks if modules is not None else {}
    parts = sorted(
        ((mib, name) for name, mib in peaks.items() if name != "APP" and mib > 0), reverse=True
    )
    if parts:
        held = {name: int(mib * MIB) for mib, name in parts[:MODULES_SHOWN]}
        out.add(
            "memory.module_peaks",
            held,
            rank.sources.get(MODULES, MODULES),
            "highest reserved of each module outside the allocator's pool (APP), largest first; "
            "MB read as MiB",
        )
    elif rank.origin is not None:
        out.miss("memory.module_peaks", "a PyTorch trace records no device memory by module")
    else:
        reason = (
            rank.absent.get(MODULES, "records no module but APP")
            if not peaks
            else "records no module but APP"
        )
        out.miss("memory.module_peaks", f"{MODULES} {reason}")


def _steps(numbers: tuple[int, ...]) -> str:
    """'step 13', 'steps 2-4', 'steps 2, 5'."""
    if len(numbers) == 1:
        return f"step {numbers[0]}"
    if list(numbers) == list(range(numbers[0], numbers[0] + len(numbers))):
        return f"steps {numbers[0]}-{numbers[-1]}"
    return "steps " + ", ".join(map(str, numbers))


DERIVER = Deriver[RankInputs](
    name="memory",
    scope=Scope.RANK,
    inputs=frozenset({"profile"}),
    reads=frozenset(),
    writes=frozenset((*MEMORY_FACTS, *PROCESS_FACTS)),
    derive=derive,
)
