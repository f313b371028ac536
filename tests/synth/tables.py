"""The CSV and JSON summary files of ASCEND_PROFILER_OUTPUT, with torch_npu's quirks."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from tests.synth.layout import GROUP, HCCS_GBPS, SDMA_GBPS, STREAM_COMM, STREAM_COMPUTE, ts, us
from tests.synth.scenario import Scenario
from tests.synth.timeline import NS, StepPlan


def _cell(value: str) -> str:
    if any(ch in value for ch in ',"\n\t'):
        return '"' + value.replace('"', '""') + '"'
    return value


def _csv_line(cells: list[str]) -> str:
    return ",".join(_cell(c) for c in cells) + "\n"


KERNEL_BASE = [
    "Step Id",
    "Model ID",
    "Task ID",
    "Stream ID",
    "Name",
    "Type",
    "OP State",
    "Accelerator Core",
    "Start Time(us)",
    "Duration(us)",
    "Wait Time(us)",
    "Block Dim",
    "Mix Block Dim",
    "HF32 Eligible",
    "Input Shapes",
    "Input Data Types",
    "Input Formats",
    "Output Shapes",
    "Output Data Types",
    "Output Formats",
    "Context ID",
]
KERNEL_PMU = [
    "aicore_time(us)",
    "aic_total_cycles",
    "aic_mac_time(us)",
    "aic_mac_ratio",
    "aic_scalar_time(us)",
    "aic_scalar_ratio",
    "aic_mte1_time(us)",
    "aic_mte1_ratio",
    "aic_mte2_time(us)",
    "aic_mte2_ratio",
    "aic_fixpipe_time(us)",
    "aic_fixpipe_ratio",
    "aic_icache_miss_rate",
    "aiv_time(us)",
    "aiv_total_cycles",
    "aiv_vec_time(us)",
    "aiv_vec_ratio",
    "aiv_scalar_time(us)",
    "aiv_scalar_ratio",
    "aiv_mte2_time(us)",
    "aiv_mte2_ratio",
    "aiv_mte3_time(us)",
    "aiv_mte3_ratio",
    "aiv_icache_miss_rate",
    "cube_utilization(%)",
]


def _pmu(core: str, dur: int, compute: float | None, mte2: float | None) -> list[str]:
    if compute is None or mte2 is None:
        return ["N/A"] * len(KERNEL_PMU)
    d = dur / NS
    if core == "AI_VECTOR_CORE":
        return ["0"] * 13 + _pipe_block(d, compute, mte2, width=11, mte2_at=6) + ["0"]
    return (
        _pipe_block(d, compute, mte2, width=13, mte2_at=8) + ["0"] * 11 + [f"{compute * 100:.1f}"]
    )


def _pipe_block(d: float, compute: float, mte2: float, width: int, mte2_at: int) -> list[str]:
    """One unit's PMU columns: time, cycles, compute pipe time/ratio, ..., mte2 time/ratio, ..."""
    cells = ["0"] * width
    cells[0:4] = [f"{d:.3f}", "1000", f"{d * compute:.3f}", f"{compute}"]
    cells[mte2_at : mte2_at + 2] = [f"{d * mte2:.3f}", f"{mte2}"]
    return cells


def write_kernels(path: Path, s: Scenario, plans: list[StepPlan]) -> None:
    level1 = s.level != "Level0"
    header = list(KERNEL_BASE) + (KERNEL_PMU if level1 else [])
    if not s.kernel_step_ids:
        header.remove("Step Id")
    with path.open("w", encoding="utf-8", newline="") as f:
        f.write(_csv_line(header))
        for plan in plans:
            rows = [
                (
                    p.kernel.name,
                    p.kernel.op_type,
                    p.kernel.core,
                    p.start,
                    p.kernel.dur,
                    p.kernel.compute_ratio,
                    p.kernel.mte2_ratio,
                    STREAM_COMPUTE,
                    p.flow_id,
                )
                for p in plan.kernels
            ]
            rows += [
                (
                    c.name,
                    c.name.split("__")[0] + "_",
                    "HCCL",
                    c.start,
                    c.dur,
                    None,
                    None,
                    STREAM_COMM,
                    0,
                )
                for c in plan.comm
            ]
            for name, op_type, core, start, dur, compute, mte2, stream, task in rows:
                cells = [str(plan.number)] if s.kernel_step_ids else []
                cells += [
                    "4294967295",
                    str(task),
                    str(stream),
                    name,
                    op_type,
                    "dynamic",
                    core,
                    ts(start) + "\t",
                    us(dur),
                    "0.5",
                    str(s.vector_block_dim if core == "AI_VECTOR_CORE" else 24),
                    "0",
                    "NO",
                    '"4096,4096;4096,4096"',
                    f"{s.compute_dtype};{s.compute_dtype}",
                    "ND;ND",
                    '"4096,4096"',
                    s.compute_dtype,
                    "ND",
                    "N/A",
                ]
                if level1:
                    cells += _pmu(core, dur, compute, mte2)
                f.write(_csv_line(cells))


def write_op_statistic(path: Path, plans: list[StepPlan]) -> None:
    stats: dict[tuple[str, str], list[int]] = defaultdict(list)
    for plan in plans:
        for p in plan.kernels:
            stats[(p.kernel.op_type, p.kernel.core)].append(p.kernel.dur)
    grand = sum(sum(v) for v in stats.values())
    with path.open("w", encoding="utf-8", newline="") as f:
        f.write(
            "Device_id,OP Type,Core Type,Count,Total Time(us),Min Time(us),Avg Time(us),Max Time(us),Ratio(%)\n"
        )
        for (op_type, core), durs in sorted(stats.items(), key=lambda kv: -sum(kv[1])):
            total = sum(durs)
            f.write(
                _csv_line(
                    [
                        "0",
                        op_type,
                        core,
                        str(len(durs)),
                        us(total),
                        us(min(durs)),
                        f"{total / len(durs) / NS:.3f}",
                        us(max(durs)),
                        f"{100 * total / grand:.2f}",
                    ]
                )
            )


def write_step_trace(path: Path, plans: list[StepPlan]) -> None:
    with path.open("w", encoding="utf-8", newline="") as f:
        f.write(
            "Device_id,Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble,"
            "Communication(Not Overlapped and Exclude Receive),Preparing\n"
        )
        for plan in plans:
            t = plan.truth
            f.write(
                _csv_line(
                    [
                        "0",
                        str(plan.number),
                        us(t.computing),
                        us(t.exposed),
                        us(t.communication - t.exposed),
                        us(t.communication),
                        us(t.free),
                        "0",
                        "0",
                        us(t.exposed),
                        us(t.preparing),
                    ]
                )
            )


def communication_json(s: Scenario, plans: list[StepPlan]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for plan in plans:
        ops: dict[str, Any] = {}
        p2p: dict[str, Any] = {}
        for c in plan.comm:
            elapse = c.dur / NS / 1000.0
            wait = elapse * s.comm_wait_ratio
            transit = elapse - wait
            (p2p if c.kind == "batchsendrecv" else ops)[f"{c.name}@{GROUP}"] = {
                "Communication Time Info": {
                    "Start Timestamp(us)": float(ts(c.start)),
                    "Elapse Time(ms)": elapse,
                    "Transit Time(ms)": transit,
                    "Wait Time(ms)": wait,
                    "Synchronization Time(ms)": wait / 2,
                    "Idle Time(ms)": 0.0,
                    "Wait Time Ratio": round(s.comm_wait_ratio, 4),
                    "Synchronization Time Ratio": round(s.comm_wait_ratio / 2, 4),
                },
                "Communication Bandwidth Info": {
                    "HCCS": _link(HCCS_GBPS * transit, transit, s.hccs_pieces),
                    "SDMA": _link(SDMA_GBPS * transit, transit),
                    "RDMA": _link(s.rdma_mb_per_op, transit if s.rdma_mb_per_op else 0.0),
                    "PCIE": _link(0.0, 0.0),
                },
            }
        total_elapse = sum(c.dur for c in plan.comm) / NS / 1000.0
        ops["Total Op Info"] = {
            "Communication Time Info": {
                "Elapse Time(ms)": total_elapse,
                "Wait Time(ms)": total_elapse * s.comm_wait_ratio,
            },
            "Communication Bandwidth Info": {"HCCS": _link(HCCS_GBPS * total_elapse, total_elapse)},
        }
        out[f"step{plan.number}"] = {"collective": ops, "p2p": p2p}
    return out


def _link(
    size_mb: float, time_ms: float, pieces: tuple[tuple[float, float], ...] = ()
) -> dict[str, Any]:
    bw = round(size_mb / time_ms, 4) if time_ms > 0 else 0
    return {
        "Transit Size(MB)": size_mb,
        "Transit Time(ms)": time_ms,
        "Bandwidth(GB/s)": bw,
        "Large Packet Ratio": 1.0 if size_mb else 0,
        "Size Distribution": _size_distribution(size_mb, time_ms, pieces),
    }


def _size_distribution(
    size_mb: float, time_ms: float, pieces: tuple[tuple[float, float], ...]
) -> dict[str, list[float]]:
    """{"<piece MB>": [count, transit ms]}: each piece size's share of the transit time, and as
    many pieces as carry that share of the data."""
    if size_mb <= 0:
        return {}
    return {
        str(piece): [max(1, round(size_mb * share / piece)), time_ms * share]
        for piece, share in pieces
    }


def write_operator_memory(path: Path, s: Scenario, plans: list[StepPlan]) -> None:
    """Each holder allocated at a step's start and released at its end: live at the peak."""
    with path.open("w", encoding="utf-8", newline="") as f:
        f.write(
            "Name,Size(KB),Allocation Time(us),Release Time(us),Active Release Time(us),"
            "Duration(us),Active Duration(us),Allocation Total Allocated(MB),"
            "Allocation Total Reserved(MB),Allocation Total Active(MB),"
            "Release Total Allocated(MB),Release Total Reserved(MB),Release Total Active(MB),"
            "Stream Ptr,Device Type\n"
        )
        for plan in plans:
            for name, mib in s.peak_holders:
                start, end = ts(plan.start + 1), ts(plan.end - 1)
                f.write(
                    _csv_line(
                        [
                            name,
                            f"{mib * 1024:.1f}",
                            start,
                            end,
                            end,
                            "",
                            "",
                            "",
                            "",
                            "",
                            "",
                            "",
                            "",
                            "187651014180864",
                            "NPU:0",
                        ]
                    )
                )


def write_memory(path: Path, s: Scenario, plans: list[StepPlan]) -> None:
    with path.open("w", encoding="utf-8", newline="") as f:
        f.write(
            "Component,Timestamp(us),Total Allocated(MB),Total Reserved(MB),Total Active(MB),Stream Ptr,Device Type\n"
        )
        for i, plan in enumerate(plans):
            mid = (plan.start + plan.end) // 2
            reserved = s.reserved_peak_mb if i > 0 else s.reserved_peak_mb * 0.9
            floor = s.allocated_peak_mb * s.allocated_floor_share
            for at, allocated in (
                (plan.start, floor),
                (mid, s.allocated_peak_mb),
                (plan.end, floor),
            ):
                f.write(
                    _csv_line(
                        [
                            "PTA",
                            ts(at),
                            f"{allocated:.3f}",
                            f"{reserved:.3f}",
                            f"{allocated:.3f}",
                            "187651014180864",
                            "NPU:0",
                        ]
                    )
                )
                f.write(
                    _csv_line(
                        [
                            "APP",
                            ts(at),
                            f"{reserved + 1200:.3f}",
                            f"{reserved + 1200:.3f}",
                            "0",
                            "",
                            "NPU:0",
                        ]
                    )
                )
