"""A small PyTorch profiler (Kineto) trace with known structure, in the current schema or the
PyTorch 1.8-1.10 one: ProfilerStep#N windows, runtime launches linked to their kernels by
correlation id, compute kernels, a memcpy and an NCCL all-reduce per step."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

CURRENT = {
    "annotation": "user_annotation",
    "cpu_op": "cpu_op",
    "runtime": "cuda_runtime",
    "kernel": "kernel",
    "memcpy": "gpu_memcpy",
}
LEGACY = {
    "annotation": "Operator",
    "cpu_op": "Operator",
    "runtime": "Runtime",
    "kernel": "Kernel",
    "memcpy": "Memcpy",
}


def kineto_trace(
    steps: int = 4,
    kernels_per_step: int = 20,
    kernel_us: float = 100.0,
    launch_us: float = 8.0,
    legacy: bool = False,
    host_ops_per_kernel: int = 0,
    comm_us: float | None = None,
    step_markers: bool = True,
    distributed: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """`host_ops_per_kernel`: nested CPU operators (with shapes, as PyTorch records them)
    around each launch; real traces hold about ten events per kernel. `comm_us`: the all-reduce
    kernel's length (default `kernel_us`: a rank waiting for a slower peer waits in it);
    `step_markers`: False leaves the ProfilerStep#N ranges out; `distributed`: the trace's
    distributedInfo."""
    cats = LEGACY if legacy else CURRENT
    events: list[dict[str, Any]] = []
    t = 1_000_000.0
    correlation = 1
    device_free = t
    for step in range(1, steps + 1):
        start = t
        host = t + 50.0  # a little Python before the first launch
        launches: list[tuple[float, int, str, float]] = []
        names = [
            f"void at::native::elementwise_kernel<{i}>(float*)" for i in range(kernels_per_step)
        ]
        for name in [*names, "Memcpy DtoD (Device -> Device)", "ncclDevKernel_AllReduce_Sum_f32"]:
            events.extend(_host_ops(cats["cpu_op"], host, launch_us, host_ops_per_kernel))
            length = comm_us if comm_us is not None and name.startswith("nccl") else kernel_us
            launches.append((host, correlation, name, length))
            events.append(
                {
                    "ph": "X",
                    "cat": cats["runtime"],
                    "name": "cudaMemcpyAsync" if name.startswith("Memcpy") else "cudaLaunchKernel",
                    "pid": 100,
                    "tid": 100,
                    "ts": host,
                    "dur": launch_us - 1.0,
                    "args": {"correlation": correlation},
                }
            )
            host += launch_us
            correlation += 1
        for launched, corr, name, dur in launches:
            begin = max(launched + 5.0, device_free)
            kind = "memcpy" if name.startswith("Memcpy") else "kernel"
            events.append(
                {
                    "ph": "X",
                    "cat": cats[kind],
                    "name": name,
                    "pid": 0,
                    "tid": "stream 20" if name.startswith("nccl") else "stream 7",
                    "ts": begin,
                    "dur": dur,
                    "args": {"correlation": corr, "device": 0, "stream": 7},
                }
            )
            device_free = begin + dur
        end = max(host, device_free) + 20.0
        events.append(
            {}
            if not step_markers
            else {
                "ph": "X",
                "cat": cats["annotation"],
                "name": f"ProfilerStep#{step}",
                "pid": 100,
                "tid": 100,
                "ts": start,
                "dur": end - start,
                "args": {},
            }
        )
        events.append(
            {
                "ph": "X",
                "cat": cats["cpu_op"],
                "name": "aten::add",
                "pid": 100,
                "tid": 100,
                "ts": start + 1.0,
                "dur": 10.0,
                "args": {},
            }
        )
        t = end
    return {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": "NVIDIA Test GPU"}],
        "distributedInfo": distributed or {"backend": "nccl", "rank": 0, "world_size": 2},
        "traceEvents": [e for e in events if e],
    }


HOST_OPS = ("aten::linear", "aten::matmul", "aten::mm", "aten::empty", "aten::add_", "aten::view")


def _host_ops(category: str, at: float, span: float, count: int) -> list[dict[str, Any]]:
    """`count` CPU operators nested around a launch at `at`, each a little inside the last."""
    return [
        {
            "ph": "X",
            "cat": category,
            "name": HOST_OPS[i % len(HOST_OPS)],
            "pid": 100,
            "tid": 100,
            "ts": at + 0.01 * i,
            "dur": max(span - 1.0 - 0.02 * i, 0.1),
            "args": {
                "External id": i + 1,
                "Record function id": 0,
                "Sequence number": 1000 + i,
                "Fwd thread id": 0,
                "Input Dims": [[4096, 4096], [4096, 4096]],
                "Input type": ["float", "float"],
                "Input Strides": [[4096, 1], [4096, 1]],
                "Ev Idx": i,
            },
        }
        for i in range(count)
    ]


def write_kineto(path: Path, **kwargs: Any) -> Path:
    data = json.dumps(kineto_trace(**kwargs)).encode()
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
    return path
