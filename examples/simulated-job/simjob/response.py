"""The response model (response.yaml) applied to one run's settings: the recipe of its steps.

Everything the settings change is decided here, once per run: which kernels a layer launches
(fused or not), how long the host takes per launch (task queue, launch blocking, CPU binding,
loader workers competing for cores), how long the data loader and the allocator hold the host
before the first launch, how much communication there is and how far ahead it is issued, and
how much device memory the run needs. The timeline then plays the recipe step by step.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from simjob.settings import Settings

GIB = 1024**3


@dataclass(frozen=True)
class KernelSpec:
    """One kernel launch: its operator type, the core it runs on, its device time (µs)."""

    op_type: str
    core: str
    us: float


@dataclass(frozen=True)
class Memory:
    """Device memory per rank at the step's peak (GiB) and the device's limits."""

    allocated_gib: float
    reserved_gib: float
    usable_gib: float
    device_gib: float

    @property
    def fits(self) -> bool:
        return self.reserved_gib <= self.usable_gib


@dataclass(frozen=True)
class Recipe:
    """How every step of this run is built."""

    layers: int
    micro_batches: int
    samples: int  # per micro-batch (per_device_train_batch_size)
    forward: tuple[KernelSpec, ...]  # one layer, one micro-batch
    backward: tuple[KernelSpec, ...]  # one layer, recomputed forward included
    optimizer: tuple[KernelSpec, ...]
    launch_us: float
    blocking: bool  # ASCEND_LAUNCH_BLOCKING=1: each launch waits for its kernel
    blocking_sync_us: float
    load_us: float  # one step's batches loaded by one worker
    workers: int
    collate_us: float
    malloc_calls: int
    malloc_us: float
    allgather_us: float
    reducescatter_us: float
    wait_ratio: float
    forward_prefetch: int
    backward_prefetch: int
    memory: Memory
    startup_ms: float
    seed: int
    step_jitter: float
    launch_jitter: float
    loss: Mapping[str, float]


def load_response(path: Path) -> dict[str, Any]:
    """A response model; one with `extends: OTHER.yaml` (relative to it) is that model with the
    values it gives replaced, section by section (a list, such as `layer`, replaced whole)."""
    loaded = YAML(typ="safe").load(path.read_text(encoding="utf-8"))
    if not isinstance(loaded, dict):
        raise ValueError(f"{path}: the response model must be a mapping")
    base = loaded.pop("extends", None)
    if base is None:
        return loaded
    return _merged(load_response(path.parent / str(base)), loaded)


def _merged(base: dict[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in changes.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out


def _kernels(entries: list[Mapping[str, Any]], scale: float) -> list[KernelSpec]:
    out = []
    for entry in entries:
        spec = KernelSpec(str(entry["type"]), str(entry["core"]), float(entry["us"]) * scale)
        out.extend([spec] * int(entry.get("count", 1)))
    return out


def _layer(
    model: Mapping[str, Any], settings: Settings, scale: float
) -> tuple[list[KernelSpec], list[KernelSpec]]:
    forward: list[KernelSpec] = []
    backward: list[KernelSpec] = []
    for entry in model["layer"]:
        if "block" in entry:
            block = model["blocks"][entry["block"]]
            entries = block["fused"] if settings.flag(block["switch"]) else block["unfused"]
        else:
            entries = [entry]
        for item in entries:
            forward.extend(_kernels([item], scale))
            backward.extend(_kernels([item], scale * float(item.get("bwd", 2.0))))
    backward.reverse()  # gradients flow from the layer's output back to its input
    return forward, backward


def _launch_us(model: Mapping[str, Any], settings: Settings, workers: int) -> tuple[float, bool]:
    host = model["host"]
    blocking = settings.env_value("ASCEND_LAUNCH_BLOCKING") == "1"
    # blocking launches force the task queue off, whatever TASK_QUEUE_ENABLE says
    level = "0" if blocking else settings.env_value("TASK_QUEUE_ENABLE", "1") or "1"
    factor = float(host["task_queue"].get(level, host["task_queue"]["1"]))
    mode = settings.env_value("CPU_AFFINITY_CONF").split(",")[0].strip()
    bound = mode in host["cpu_affinity"]
    if bound:
        factor *= float(host["cpu_affinity"][mode])
    else:
        crowd = max(0, workers - int(host["free_cores"]))
        factor *= 1.0 + float(host["contention_per_worker"]) * crowd
    return float(host["launch_us"]) * factor, blocking


def _memory(model: Mapping[str, Any], settings: Settings, samples: int) -> Memory:
    mem = model["memory"]
    kept = float(mem["recompute_activations"]) if settings.flag("parallel.recompute") else 1.0
    allocated = float(mem["static_gib"]) + float(mem["activations_gib"]) * samples * kept
    prefetch = max(0, settings.number("parallel.num_to_forward_prefetch")) + max(
        0, settings.number("parallel.num_to_backward_prefetch")
    )
    allocated += float(mem["prefetch_gib"]) * prefetch
    if settings.env_value("TASK_QUEUE_ENABLE") == "2":
        allocated += float(mem["task_queue_2_gib"])
    alloc = model["allocator"]
    key = "expandable_fragmentation" if _expandable(settings) else "fragmentation"
    job = model["job"]
    return Memory(
        allocated_gib=allocated,
        reserved_gib=allocated * float(alloc[key]),
        usable_gib=float(job["usable_memory_gib"]),
        device_gib=float(job["device_memory_gib"]),
    )


def _expandable(settings: Settings) -> bool:
    entries = settings.env_value("PYTORCH_NPU_ALLOC_CONF").replace(" ", "").split(",")
    return "expandable_segments:True" in entries


def recipe(model: Mapping[str, Any], settings: Settings) -> Recipe:
    """The run's step recipe under the response model."""
    job = model["job"]
    samples = settings.number("training.per_device_train_batch_size")
    scale = samples ** float(job["batch_exponent"])
    forward, backward = _layer(model, settings, scale)
    if settings.flag("parallel.recompute"):
        share = float(model["recompute"]["forward_again"])
        backward = [KernelSpec(k.op_type, k.core, k.us * share) for k in forward] + backward
    workers = max(0, settings.number("training.dataloader_num_workers"))
    launch_us, blocking = _launch_us(model, settings, workers)
    micro_batches = settings.number("training.gradient_accumulation_steps")
    alloc = model["allocator"]
    comm = model["communication"]
    reduce_scale = 0.5 if settings.get("parallel.reduce_dtype") in ("bf16", "fp16") else 1.0
    noise = model["noise"]
    seed = int(settings.env_value("SIMJOB_SEED") or noise["seed"])
    return Recipe(
        layers=int(job["layers"]),
        micro_batches=micro_batches,
        samples=samples,
        forward=tuple(forward),
        backward=tuple(backward),
        optimizer=tuple(_kernels(model["optimizer"], 1.0)),
        launch_us=launch_us,
        blocking=blocking,
        blocking_sync_us=float(model["host"]["blocking_sync_us"]),
        load_us=float(model["data"]["batch_load_ms"]) * 1000.0 * samples * micro_batches,
        workers=workers,
        collate_us=float(model["data"]["collate_ms"]) * 1000.0,
        malloc_calls=0 if _expandable(settings) else int(alloc["malloc_calls_per_step"]),
        malloc_us=float(alloc["malloc_us"]),
        allgather_us=float(comm["allgather_us"]),
        reducescatter_us=float(comm["reducescatter_us"]) * reduce_scale,
        wait_ratio=float(comm["wait_ratio"]),
        forward_prefetch=max(0, settings.number("parallel.num_to_forward_prefetch")),
        backward_prefetch=max(0, settings.number("parallel.num_to_backward_prefetch")),
        memory=_memory(model, settings, samples),
        startup_ms=float(job["startup_ms"]),
        seed=seed,
        step_jitter=float(noise["step_jitter"]),
        launch_jitter=float(noise["launch_jitter"]),
        loss={k: float(v) for k, v in model["loss"].items()},
    )
