"""Small PyTorch profiler traces of two GPU situations the advisor must tell apart:

- an all-to-all job: NCCL runs all-to-all as ncclKernel_SendRecv, launched under
  `c10d::alltoall_base_` / `record_param_comms` / `nccl:all_to_all` host ranges: the
  collective's kind comes from those ranges, not the kernel's name (no pipeline);
- a blocking-copy job: inside `## sparse_data_dist ##` the host copies a tensor to pageable host
  memory (cudaMemcpyAsync, "Memcpy DtoH (Device -> Pageable)") and waits in
  cudaStreamSynchronize; the device idles until the host launches again.

Times in microseconds; one step every `step_us`, deterministic.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HOST, DEVICE, COMM = (10, 10), (0, 7), (0, 20)
SENDRECV = "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)"
GEMM = "sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel"


def _span(cat: str, name: str, where: tuple[int, int], ts: float, dur: float, **args: Any) -> dict:
    pid, tid = where
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
            "args": args}  # fmt: skip


def _header(events: list[dict[str, Any]], rank: int, world: int) -> dict[str, Any]:
    return {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}],
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": world},
        "traceEvents": events,
    }


class _Steps:
    """Host and device events of a few steps, correlation ids handed out in order."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.correlation = 0

    def launch(
        self, at: float, kernel: tuple[str, str, tuple[int, int], float, float], call: str
    ) -> None:
        """A runtime call at `at` (host) and its device operation (cat, name, lane, ts, dur)."""
        self.correlation += 1
        cat, name, lane, ts, dur = kernel
        self.events.append(_span("cuda_runtime", call, HOST, at, 4.0, correlation=self.correlation))
        self.events.append(_span(cat, name, lane, ts, dur, correlation=self.correlation))


def all_to_all_trace(steps: int = 4, gemm_us: float = 3000.0, a2a_us: float = 2000.0) -> dict:
    """Each step: two GEMMs, then an all-to-all whose SendRecv kernel waits outside compute."""
    out = _Steps()
    step_us = 2 * gemm_us + a2a_us + 400.0
    for step in range(steps):
        t0 = 1_000_000.0 + step * step_us
        out.events.append(_span("user_annotation", f"ProfilerStep#{step + 1}", HOST, t0, step_us))
        out.launch(t0 + 10, ("kernel", GEMM, DEVICE, t0 + 20, gemm_us), "cudaLaunchKernel")
        out.launch(
            t0 + 15, ("kernel", GEMM, DEVICE, t0 + 20 + gemm_us, gemm_us), "cudaLaunchKernel"
        )
        at = t0 + 30
        out.events.append(_span("cpu_op", "c10d::alltoall_base_", HOST, at - 6, 30.0))
        out.events.append(
            _span("cpu_op", "record_param_comms", HOST, at - 4, 26.0,
                  **{"Collective name": "all_to_allv", "Process Group Name": "0",
                     "In msg nelems": 4194304, "Out msg nelems": 4194304, "dtype": "BFloat16"})
        )  # fmt: skip
        out.events.append(_span("user_annotation", "nccl:all_to_all", HOST, at - 2, 20.0))
        begin = t0 + 20 + 2 * gemm_us
        out.launch(at, ("kernel", SENDRECV, COMM, begin, a2a_us), "cudaLaunchKernel")
    return _header(out.events, 0, 8)


def blocking_copy_trace(
    steps: int = 4, gemm_us: float = 2000.0, copy_us: float = 200.0, blocked_us: float = 6000.0
) -> dict:
    """Each step: a GEMM, then inside `## sparse_data_dist ##` a device-to-host copy into
    pageable memory and a cudaStreamSynchronize: the host blocks `blocked_us` before it launches
    the second GEMM, and the device idles meanwhile."""
    out = _Steps()
    step_us = 2 * gemm_us + copy_us + blocked_us + 200.0
    for step in range(steps):
        t0 = 1_000_000.0 + step * step_us
        out.events.append(_span("user_annotation", f"ProfilerStep#{step + 1}", HOST, t0, step_us))
        out.launch(t0 + 10, ("kernel", GEMM, DEVICE, t0 + 20, gemm_us), "cudaLaunchKernel")
        copy_at = t0 + 30
        copy_end = t0 + 20 + gemm_us + copy_us
        out.events.append(
            _span("user_annotation", "## sparse_data_dist ##", HOST, copy_at - 5, blocked_us)
        )
        out.events.append(_span("cpu_op", "aten::_to_copy", HOST, copy_at - 3, copy_end - copy_at))
        out.correlation += 1
        out.events.append(
            _span("cuda_runtime", "cudaMemcpyAsync", HOST, copy_at, copy_end - copy_at,
                  correlation=out.correlation)
        )  # fmt: skip
        out.events.append(
            _span("gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", DEVICE, t0 + 20 + gemm_us,
                  copy_us, correlation=out.correlation, bytes=268435456)
        )  # fmt: skip
        resume = copy_at + blocked_us
        out.events.append(
            _span(
                "cuda_runtime", "cudaStreamSynchronize", HOST, copy_end + 5, resume - copy_end - 5
            )
        )
        out.launch(resume + 5, ("kernel", GEMM, DEVICE, resume + 15, gemm_us), "cudaLaunchKernel")
    return _header(out.events, 0, 8)


BACKWARD = (10, 11)  # the autograd engine's thread
SGEMM = "ampere_sgemm_128x64_tn"
ADAM = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::AddcmulFunctor<float>, "
    "at::detail::Array<char*, 4> >(int, at::native::AddcmulFunctor<float>, "
    "at::detail::Array<char*, 4>)"
)


class _Device:
    """A device stream: each kernel starts when it is launched and the previous one ended."""

    def __init__(self, steps: _Steps) -> None:
        self.steps = steps
        self.free_at = 0.0

    def launch(self, at: float, name: str, dur: float, thread: tuple[int, int] = HOST) -> float:
        start = max(self.free_at, at + 5.0)
        self.free_at = start + dur
        self.steps.correlation += 1
        corr = self.steps.correlation
        self.steps.events.append(
            _span("cuda_runtime", "cudaLaunchKernel", thread, at, 4.0, correlation=corr)
        )
        self.steps.events.append(_span("kernel", name, DEVICE, start, dur, correlation=corr))
        return self.free_at


def phases_trace(
    steps: int = 4, loader_us: float = 3000.0, gc_us: float = 2000.0, adam_kernels: int = 240
) -> dict:
    """Each step: the host loads a batch (enumerate(DataLoader)) while the device idles, runs
    `## forward ##` (fp32 GEMMs), the backward nodes on the autograd thread, a Python garbage
    collection, then an unfused AdamW (Optimizer.step#AdamW.step) of many small kernels."""
    out = _Steps()
    device = _Device(out)
    t0 = 1_000_000.0
    for step in range(steps):
        marker = len(out.events)
        loader = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
        out.events.append(_span("user_annotation", loader, HOST, t0 + 10, loader_us))
        at = t0 + 20 + loader_us
        forward_end = at + 200.0
        out.events.append(_span("user_annotation", "## forward ##", HOST, at, 200.0))
        for i in range(4):
            device.launch(at + 10 + 40 * i, SGEMM, 1500.0)
        at = forward_end + 20
        for _ in range(4):
            node = "autograd::engine::evaluate_function: MmBackward0"
            out.events.append(_span("cpu_op", node, BACKWARD, at, 60.0))
            device.launch(at + 10, SGEMM, 1500.0, BACKWARD)
            device.launch(at + 30, SGEMM, 1500.0, BACKWARD)
            at += 70
        # the host reaches the collection once the backward's work is queued
        at = max(at, device.free_at - 500.0)
        collect = "<built-in method collect of module object at 0x7f3a2c1b9e50>"
        out.events.append(_span("python_function", collect, HOST, at, gc_us))
        at += gc_us + 20
        optimizer = "Optimizer.step#AdamW.step"
        begin = at
        for _ in range(adam_kernels):
            device.launch(at, ADAM, 25.0)
            at += 20.0
        out.events.append(_span("user_annotation", optimizer, HOST, begin - 5, at - begin + 10))
        end = max(at, device.free_at) + 50.0
        out.events.insert(
            marker, _span("user_annotation", f"ProfilerStep#{step + 1}", HOST, t0, end - t0)
        )
        t0 = end
    return _header(out.events, 0, 8)


def write_trace(folder: Path, data: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "rank0.pt.trace.json"
    path.write_text(json.dumps(data, indent=0) + "\n", encoding="utf-8")
    return path
