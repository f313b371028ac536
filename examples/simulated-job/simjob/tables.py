"""The CSV and JSON summaries of ASCEND_PROFILER_OUTPUT, with torch_npu's quirks: a quoted start
time ending in a TAB, shapes wrapped in literal quotes, PMU columns only at Level1 and above,
an aggregated "Total Op Info" entry in each communication bucket."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from simjob.response import Memory
from simjob.timeline import NS, StepPlan
from simjob.trace import COMM_STREAMS, GROUPS, STREAM_COMPUTE, Clock, kernel_name, us

HCCS_GBPS, SDMA_GBPS = 18.0, 25.0
MIB_PER_GIB = 1024.0

KERNEL_BASE = [
    "Step Id", "Model ID", "Task ID", "Stream ID", "Name", "Type", "OP State", "Accelerator Core",
    "Start Time(us)", "Duration(us)", "Wait Time(us)", "Block Dim", "Mix Block Dim",
    "HF32 Eligible", "Input Shapes", "Input Data Types", "Input Formats", "Output Shapes",
    "Output Data Types", "Output Formats", "Context ID",
]  # fmt: skip
KERNEL_PMU = [
    "aicore_time(us)", "aic_total_cycles", "aic_mac_time(us)", "aic_mac_ratio",
    "aic_scalar_time(us)", "aic_scalar_ratio", "aic_mte1_time(us)", "aic_mte1_ratio",
    "aic_mte2_time(us)", "aic_mte2_ratio", "aic_fixpipe_time(us)", "aic_fixpipe_ratio",
    "aic_icache_miss_rate", "aiv_time(us)", "aiv_total_cycles", "aiv_vec_time(us)",
    "aiv_vec_ratio", "aiv_scalar_time(us)", "aiv_scalar_ratio", "aiv_mte2_time(us)",
    "aiv_mte2_ratio", "aiv_mte3_time(us)", "aiv_mte3_ratio", "aiv_icache_miss_rate",
    "cube_utilization(%)",
]  # fmt: skip
# pipe ratios of a healthy kernel: cube-bound matrix kernels, balanced vector kernels
CUBE_RATIOS, VECTOR_RATIOS = (0.8, 0.35), (0.5, 0.4)


def _cell(value: str) -> str:
    if any(ch in value for ch in ',"\n\t'):
        return '"' + value.replace('"', '""') + '"'
    return value


def _line(cells: list[str]) -> str:
    return ",".join(_cell(c) for c in cells) + "\n"


def _pipe_block(d: float, ratios: tuple[float, float], width: int, mte2_at: int) -> list[str]:
    """One unit's PMU columns: time, cycles, compute pipe time/ratio, ..., mte2 time/ratio, ..."""
    compute, mte2 = ratios
    cells = ["0"] * width
    cells[0:4] = [f"{d:.3f}", f"{round(d * 1800)}", f"{d * compute:.3f}", f"{compute}"]
    cells[mte2_at : mte2_at + 2] = [f"{d * mte2:.3f}", f"{mte2}"]
    return cells


def _pmu(core: str, dur: int) -> list[str]:
    d = dur / NS
    if core == "AI_VECTOR_CORE":
        return ["0"] * 13 + _pipe_block(d, VECTOR_RATIOS, width=11, mte2_at=6) + ["0"]
    block = _pipe_block(d, CUBE_RATIOS, width=13, mte2_at=8)
    return block + ["0"] * 11 + [f"{CUBE_RATIOS[0] * 100:.1f}"]


def write_kernels(path: Path, plans: list[StepPlan], clock: Clock, level1: bool) -> None:
    header = KERNEL_BASE + (KERNEL_PMU if level1 else [])
    with path.open("w", encoding="utf-8", newline="") as f:
        f.write(_line(header))
        for plan in plans:
            rows = [
                (kernel_name(p.kernel.op_type), p.kernel.op_type, p.kernel.core, p.start, p.dur, STREAM_COMPUTE, p.flow_id)
                for p in plan.kernels
            ]  # fmt: skip
            rows += [
                (c.name, c.name.split("__")[0] + "_", "HCCL", c.start, c.dur, COMM_STREAMS[c.kind], 0)
                for c in plan.comm
            ]  # fmt: skip
            for name, op_type, core, start, dur, stream, task in sorted(rows, key=lambda r: r[3]):
                cells = [str(plan.number), "4294967295", str(task), str(stream), name, op_type]
                cells += ["dynamic", core, clock.ts(start) + "\t", us(dur), "0", "24", "0", "NO"]
                cells += ['"4096,4096;4096,4096"', "DT_BF16;DT_BF16", "ND;ND", '"4096,4096"']
                cells += ["DT_BF16", "ND", "N/A"]
                if level1:
                    cells += ["N/A"] * len(KERNEL_PMU) if core == "HCCL" else _pmu(core, dur)
                f.write(_line(cells))


def write_op_statistic(path: Path, plans: list[StepPlan]) -> None:
    stats: dict[tuple[str, str], list[int]] = defaultdict(list)
    for plan in plans:
        for p in plan.kernels:
            stats[(p.kernel.op_type, p.kernel.core)].append(p.dur)
    grand = sum(sum(v) for v in stats.values())
    with path.open("w", encoding="utf-8", newline="") as f:
        f.write(
            "OP Type,Core Type,Count,Total Time(us),Min Time(us),Avg Time(us),Max Time(us),Ratio(%)\n"
        )
        for (op_type, core), durs in sorted(stats.items(), key=lambda kv: -sum(kv[1])):
            total = sum(durs)
            cells = [op_type, core, str(len(durs)), us(total), us(min(durs))]
            cells += [f"{total / len(durs) / NS:.3f}", us(max(durs)), f"{100 * total / grand:.3f}"]
            f.write(_line(cells))


def write_step_trace(path: Path, plans: list[StepPlan]) -> None:
    with path.open("w", encoding="utf-8", newline="") as f:
        f.write(
            "Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,"
            "Bubble,Communication(Not Overlapped and Exclude Receive),Preparing\n"
        )
        for plan in plans:
            t = plan.truth
            overlapped = t.communication - t.exposed
            cells = [str(plan.number), us(t.computing), us(t.exposed), us(overlapped)]
            cells += [us(t.communication), us(t.free), us(t.total - t.preparing), "0"]
            cells += [us(t.exposed), us(t.preparing)]
            f.write(_line(cells))


def _link(size_mb: float, time_ms: float) -> dict[str, Any]:
    return {
        "Transit Size(MB)": size_mb,
        "Transit Time(ms)": time_ms,
        "Bandwidth(GB/s)": round(size_mb / time_ms, 4) if time_ms > 0 else 0,
        "Large Packet Ratio": 1.0 if size_mb else 0,
        "Size Distribution": {},
    }


def communication_json(plans: list[StepPlan], clock: Clock, wait_ratio: float) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for plan in plans:
        ops: dict[str, Any] = {}
        for c in plan.comm:
            elapse = c.dur / NS / 1000.0
            wait = elapse * wait_ratio
            transit = elapse - wait
            ops[f"{c.name}@{GROUPS[c.kind]}"] = {
                "Communication Time Info": {
                    "Start Timestamp(us)": float(clock.ts(c.start)),
                    "Elapse Time(ms)": elapse,
                    "Transit Time(ms)": transit,
                    "Wait Time(ms)": wait,
                    "Synchronization Time(ms)": wait / 2,
                    "Idle Time(ms)": 0.0,
                    "Wait Time Ratio": round(wait_ratio, 4),
                    "Synchronization Time Ratio": round(wait_ratio / 2, 4),
                },
                "Communication Bandwidth Info": {
                    "HCCS": _link(HCCS_GBPS * transit, transit),
                    "SDMA": _link(SDMA_GBPS * transit, transit),
                    "RDMA": _link(0.0, 0.0),
                    "PCIE": _link(0.0, 0.0),
                },
            }
        total = sum(c.dur for c in plan.comm) / NS / 1000.0
        ops["Total Op Info"] = {
            "Communication Time Info": {
                "Elapse Time(ms)": total,
                "Wait Time(ms)": total * wait_ratio,
            },
            "Communication Bandwidth Info": {"HCCS": _link(HCCS_GBPS * total, total)},
        }
        out[f"step{plan.number}"] = {"collective": ops, "p2p": {}}
    return out


def communication_matrix(plans: list[StepPlan]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for plan in plans:
        ops: dict[str, Any] = {}
        for c in plan.comm:
            ms = c.dur / NS / 1000.0
            ops[f"{c.name.split('__')[0]}-top1@{GROUPS[c.kind]}"] = {
                "0-1": {
                    "Transport Type": "HCCS",
                    "Transit Size(MB)": HCCS_GBPS * ms,
                    "Transit Time(ms)": ms,
                    "Bandwidth(GB/s)": HCCS_GBPS,
                    "Op Name": c.name,
                },
            }
        out[f"step{plan.number}"] = {"collective": ops, "p2p": {}}
    return out


def write_memory(path: Path, plans: list[StepPlan], memory: Memory, clock: Clock) -> None:
    """The PyTorch allocator (PTA) and the whole process (APP) over each step: tensors peak in
    the middle of the step (activations held for backward) and drop back at its end."""
    allocated = memory.allocated_gib * MIB_PER_GIB
    reserved = memory.reserved_gib * MIB_PER_GIB
    with path.open("w", encoding="utf-8", newline="") as f:
        f.write(
            "Component,Timestamp(us),Total Allocated(MB),Total Reserved(MB),Total Active(MB),"
            "Stream Ptr,Device Type\n"
        )
        for plan in plans:
            mid = (plan.start + plan.end) // 2
            for at, share in ((plan.start, 0.7), (mid, 1.0), (plan.end, 0.7)):
                now = allocated * share
                pta = ["PTA", clock.ts(at) + "\t", f"{now:.3f}", f"{reserved:.3f}", f"{now:.3f}"]
                f.write(_line([*pta, "187651014180864", "NPU:0"]))
                app = ["APP", clock.ts(at) + "\t", "", f"{reserved + 1200:.3f}", "", "", "NPU:0"]
                f.write(_line(app))
