"""PyTorch profiler (Kineto) traces from GPUs: `*.pt.trace.json[.gz]`, one file per rank.

The same step model as on Ascend is rebuilt from the device kernels: computing (non-collective
kernels), communication (NCCL/RCCL kernels), the part of it no compute hides, device idle time,
and the host time before the step's first kernel. Launch gaps come from the runtime launch and
kernel that share a `correlation` id.
"""

from __future__ import annotations

import gzip
import json
import re
from bisect import bisect_left
from pathlib import Path
from typing import Any

from advisor.inputs.taxonomy import Taxonomy
from advisor.model import InputError
from advisor.parsers.profile_data import (
    CommStep,
    KernelGroup,
    KernelTable,
    ProcessGroup,
    RankProfile,
    StepRow,
)
from advisor.parsers.trace_steps import (
    TraceData,
    TraceStep,
    clipped_sum,
    count_in,
    exposed_by_kind,
    idle_gaps,
    merged_intervals,
    preparation,
    sorted_intervals,
)

DEVICE_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset"}
LAUNCHES = re.compile(
    r"cu(da)?LaunchKernel(Ex)?|hipLaunchKernel|hipExtLaunchKernel|cudaLaunchCooperativeKernel"
)
SYNC = re.compile(r"cuda(Device|Stream|Event)Synchronize|hip(Device|Stream|Event)Synchronize")
MALLOC = re.compile(r"cudaMalloc(Async|Managed)?|hipMalloc(Async|Managed)?")
FREE = re.compile(r"cudaFree(Async)?|hipFree(Async)?")
_STEP = re.compile(r"ProfilerStep#(\d+)")
SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz", ".json", ".json.gz")


def is_kineto_file(path: Path) -> bool:
    return (
        path.is_file() and path.name.endswith(SUFFIXES) and not path.name.startswith("trace_view")
    )


def kineto_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.pt.trace.json*") if p.is_file())


def _load(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
        if path.name.endswith(".gz"):
            raw = gzip.decompress(raw)
        data = json.loads(raw)
    except OSError as exc:
        raise InputError(
            str(path), f"cannot read: {getattr(exc, 'strerror', None) or exc}"
        ) from None
    except json.JSONDecodeError as exc:
        raise InputError(
            str(path), f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    if isinstance(data, list):
        data = {"traceEvents": data}
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise InputError(
            str(path),
            "expected a profile directory or a PyTorch profiler trace (this JSON has no traceEvents)",
        )
    return data


def short_name(kernel: str) -> str:
    """`void at::native::vectorized_elementwise_kernel<4, ...>(...)` -> the kernel's own name."""
    text = kernel.removeprefix("void ").replace("(anonymous namespace)::", "").strip()
    cut = min((i for i in (text.find("<"), text.find("(")) if i > 0), default=len(text))
    return text[:cut].strip() or kernel[:60]


def _windows(events: list[dict[str, Any]]) -> list[tuple[int, float, float]]:
    found: dict[int, tuple[float, float]] = {}
    for e in events:
        if e.get("ph") != "X" or e.get("cat") not in ("user_annotation", "cpu_op"):
            continue
        m = _STEP.fullmatch(str(e.get("name", "")))
        if m:
            start = float(e["ts"])
            found[int(m.group(1))] = (start, start + float(e.get("dur", 0.0)))
    return [(n, a, b) for n, (a, b) in sorted(found.items())]


def read_kineto(path: Path, taxonomy: Taxonomy) -> RankProfile:
    data = _load(path)
    events = [e for e in data["traceEvents"] if isinstance(e, dict)]
    dist = data.get("distributedInfo") or {}
    rank = RankProfile(path=path, output_dir=None, framework="pytorch")
    rank.rank = dist.get("rank") if isinstance(dist.get("rank"), int) else None
    rank.world_size = dist.get("world_size") if isinstance(dist.get("world_size"), int) else None
    rank.process_groups = _process_groups(dist)
    devices = data.get("deviceProperties") or []
    if devices and isinstance(devices[0], dict) and devices[0].get("name"):
        rank.device = str(devices[0]["name"])
    rank.origin = path.name
    rank.inputs.append(path)
    windows = _windows(events)
    if not windows:
        raise InputError(str(path), "no steps: no ProfilerStep#N annotations in the trace")
    comm_re = taxonomy.operator_classes["communication"]
    compute: list[tuple[float, float, str]] = []
    comm: list[tuple[float, float, str]] = []
    comm_group: dict[tuple[float, str], str] = {}  # (start, kernel) -> process group name
    launches: dict[Any, float] = {}
    kernel_corr: dict[Any, float] = {}
    host: dict[str, list[float]] = {
        "sync": [],
        "sync_end": [],
        "malloc": [],
        "malloc_end": [],
        "free": [],
    }
    loader: list[tuple[float, float]] = []
    for e in events:
        if e.get("ph") != "X":
            continue
        cat, name = e.get("cat"), str(e.get("name", ""))
        start = float(e.get("ts", 0.0))
        end = start + float(e.get("dur", 0.0))
        if cat in DEVICE_CATEGORIES:
            kernel = short_name(name)
            args = e.get("args") or {}
            if comm_re.fullmatch(kernel):
                comm.append((start, end, kernel))
                group = args.get("Process Group Name")
                if group is not None:
                    comm_group[(start, kernel)] = str(group)
                    _learn_group(rank, str(group), args)
            else:
                compute.append((start, end, kernel))
            corr = args.get("correlation")
            if corr is not None and cat == "kernel":
                kernel_corr[corr] = start
        elif cat in ("cuda_runtime", "cuda_driver", "cuda_sync"):
            if LAUNCHES.fullmatch(name):
                corr = (e.get("args") or {}).get("correlation")
                if corr is not None:
                    launches[corr] = start
            elif SYNC.fullmatch(name) or cat == "cuda_sync":
                host["sync"].append(start)
                host["sync_end"].append(end)
            elif MALLOC.fullmatch(name):
                host["malloc"].append(start)
                host["malloc_end"].append(end)
            elif FREE.fullmatch(name):
                host["free"].append(start)
        elif taxonomy.dataloader.fullmatch(name):
            loader.append((start, end))
    if not compute and not comm:
        raise InputError(str(path), "no device kernels: a CPU-only trace has no step-time model")
    _fill(
        rank,
        path,
        windows,
        compute,
        (comm, comm_group),
        launches,
        kernel_corr,
        host,
        loader,
        taxonomy,
    )
    return rank


def _process_groups(dist: Any) -> dict[str, ProcessGroup]:
    """distributedInfo.pg_config: [{pg_name, pg_desc, ranks}, ...] (PyTorch 2.3 and later)."""
    groups: dict[str, ProcessGroup] = {}
    configs = dist.get("pg_config") if isinstance(dist, dict) else None
    for pg in configs if isinstance(configs, list) else []:
        ranks = pg.get("ranks") if isinstance(pg, dict) else None
        if isinstance(ranks, list) and all(isinstance(r, int) for r in ranks):
            key = str(pg.get("pg_name"))
            groups[key] = ProcessGroup(str(pg.get("pg_desc") or key), tuple(sorted(ranks)))
    return groups


def _learn_group(rank: RankProfile, key: str, args: dict[str, Any]) -> None:
    """Collective kernels name their group and its ranks ("[0, 1]") when pg_config is absent."""
    if key in rank.process_groups:
        return
    text = str(args.get("Process Group Ranks", ""))
    ranks = [int(r) for r in re.findall(r"-?\d+", text)]
    if ranks:
        name = str(args.get("Process Group Description") or key)
        rank.process_groups[key] = ProcessGroup(name, tuple(sorted(ranks)))


def _fill(
    rank: RankProfile,
    path: Path,
    windows: list[tuple[int, float, float]],
    compute: list[tuple[float, float, str]],
    comm_and_groups: tuple[list[tuple[float, float, str]], dict[tuple[float, str], str]],
    launches: dict[Any, float],
    kernel_corr: dict[Any, float],
    host: dict[str, list[float]],
    loader: list[tuple[float, float]],
    taxonomy: Taxonomy,
) -> None:
    comm, comm_group = comm_and_groups
    device_end = max(b for _, b, _ in compute + comm)
    bounds = []
    for i, (number, start, end) in enumerate(windows):
        # device work of a step may finish after its host annotation: the window runs to the
        # next step's start (and to the last kernel for the last step)
        hi = windows[i + 1][1] if i + 1 < len(windows) else max(end, device_end)
        bounds.append((number, start, hi))
    compute_iv = merged_intervals(sorted((a, b) for a, b, _ in compute))
    comm_iv = merged_intervals(sorted((a, b) for a, b, _ in comm))
    all_iv = merged_intervals(sorted(compute_iv + comm_iv))
    kernels = sorted_intervals([a for a, _, _ in compute + comm], [b for _, b, _ in compute + comm])
    launch_of = {kernel_corr[c]: t for c, t in launches.items() if c in kernel_corr}
    sync, malloc, free = (sorted(host[k]) for k in ("sync", "malloc", "free"))
    sync_iv = merged_intervals(sorted(zip(host["sync"], host["sync_end"], strict=True)))
    malloc_iv = merged_intervals(sorted(zip(host["malloc"], host["malloc_end"], strict=True)))
    loader_iv = merged_intervals(sorted(loader))
    tagged = sorted(
        [(a, b, k, False) for a, b, k in compute] + [(a, b, k, True) for a, b, k in comm]
    )
    by_kind: dict[str, list[tuple[float, float]]] = {}
    for a, b, kernel in comm:
        kind = taxonomy.comm_kind(re.sub(r"^(nccl|rccl)(Dev)?Kernel_", "", kernel))
        by_kind.setdefault(kind, []).append((a, b))
    collectives = {kind: merged_intervals(sorted(iv)) for kind, iv in by_kind.items()}
    rows: list[StepRow] = []
    steps: list[TraceStep] = []
    groups: dict[tuple[int, str, str], KernelGroup] = {}
    comm_steps: list[CommStep] = []
    for number, lo, hi in bounds:
        busy = clipped_sum(all_iv, lo, hi)
        firsts = [a for a, b in all_iv if b > lo and a < hi]
        first = max(lo, min(firsts)) if firsts else hi
        computing = clipped_sum(compute_iv, lo, hi)
        communication = clipped_sum(comm_iv, lo, hi)
        exposed = busy - computing
        rows.append(
            StepRow(
                number,
                computing,
                exposed,
                communication - exposed,
                communication,
                max(0.0, (hi - first) - busy),
                first - lo,
                None,
            )
        )
        gaps = idle_gaps(kernels, lo, hi, launch_of) if launch_of else None
        prep = preparation(lo, first, loader_iv, malloc_iv, sync_iv)
        steps.append(
            TraceStep(
                number=number,
                duration_us=hi - lo,
                overlap_us={},
                kernel_count=sum(1 for a, _ in kernels if lo <= a < hi),
                launch_gap_us=gaps.host if gaps else None,
                sync_calls=count_in(sync, lo, hi),
                malloc_calls=count_in(malloc, lo, hi),
                free_calls=count_in(free, lo, hi),
                dataloader_us=clipped_sum(loader_iv, lo, hi),
                idle_dependency_us=gaps.dependency if gaps else None,
                idle_unlinked_us=gaps.unlinked if gaps else None,
                first_task_us=first - lo,
                preparing_loader_us=prep[0],
                preparing_allocator_us=prep[1],
                preparing_sync_us=prep[2],
                comm_exposed_by_kind_us=exposed_by_kind(collectives, compute_iv, lo, hi)
                if collectives
                else None,
            )
        )
        step_comm = CommStep(step=number, has_wait=False)
        for start, end, kernel, is_comm in tagged[
            bisect_left(tagged, (lo,)) : bisect_left(tagged, (hi,))
        ]:
            core = "NCCL" if is_comm else "GPU"
            group = groups.get((number, kernel, core))
            if group is None:
                group = groups[(number, kernel, core)] = KernelGroup(number, kernel, core, kernel)
            dur = end - start
            group.count += 1
            group.total_us += dur
            if dur < taxonomy.small_op_max_us:
                group.small_count += 1
                group.small_us += dur
            if is_comm:
                kind = taxonomy.comm_kind(re.sub(r"^(nccl|rccl)(Dev)?Kernel_", "", kernel))
                step_comm.add(kind, dur / 1000.0, comm_group.get((start, kernel)))
        comm_steps.append(step_comm)
    rank.step_rows = rows
    rank.kernels = KernelTable(
        list(groups.values()), has_pmu=False, has_step_ids=True, rows=len(compute) + len(comm)
    )
    rank.comm = comm_steps if comm else None
    rank.trace = TraceData(
        path,
        sum(len(v) for v in host.values()) + len(compute) + len(comm),
        steps,
        [],
        "correlation" if launch_of else None,
        True,
        ["GPU"],
    )
