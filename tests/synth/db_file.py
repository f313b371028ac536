"""The database export (export_type db) of a synthetic scenario: the same timeline as the text
export, in the tables torch_npu writes (ascend_pytorch_profiler_<rank>.db and analysis.db)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.synth.layout import (
    BASE_US,
    GROUP,
    HCCS_GBPS,
    SDMA_GBPS,
    merge_intervals,
    subtract_intervals,
)
from tests.synth.scenario import Scenario
from tests.synth.timeline import NS, StepPlan, phase_ranges, plan_steps
from tests.synth.writer import Written, profiler_info, recorded_env

PROFILER_TABLES = {
    "STRING_IDS": "id INTEGER PRIMARY KEY, value TEXT",
    "META_DATA": "name TEXT, value TEXT",
    "RANK_DEVICE_MAP": "rankId INTEGER, deviceId INTEGER",
    "SESSION_TIME_INFO": "startNs INTEGER, endNs INTEGER",
    "STEP_TIME": "id INTEGER, startNs INTEGER, endNs INTEGER",
    "TASK": "startNs INTEGER, endNs INTEGER, deviceId INTEGER, connectionId INTEGER, "
    "globalTaskId INTEGER, globalPid INTEGER, taskType INTEGER, contextId INTEGER, "
    "streamId INTEGER, taskId INTEGER, modelId INTEGER",
    "COMPUTE_TASK_INFO": "name INTEGER, globalTaskId INTEGER PRIMARY KEY, blockDim INTEGER, "
    "mixBlockDim INTEGER, taskType INTEGER, opType INTEGER, inputDataTypes INTEGER",
    "TASK_PMU_INFO": "globalTaskId INTEGER, name INTEGER, value NUMERIC",
    "COMMUNICATION_OP": "opName INTEGER, startNs INTEGER, endNs INTEGER, connectionId INTEGER, "
    "groupName INTEGER, opId INTEGER PRIMARY KEY, relay INTEGER, retry INTEGER, "
    "dataType INTEGER, algType INTEGER, count NUMERIC, opType INTEGER, waitNs INTEGER",
    "CANN_API": "startNs INTEGER, endNs INTEGER, type INTEGER, globalTid INTEGER, "
    "connectionId INTEGER PRIMARY KEY, name INTEGER",
    "PYTORCH_API": "startNs TEXT, endNs TEXT, globalTid INTEGER, connectionId INTEGER, "
    "name INTEGER, type INTEGER",
    "connectionCats": "connectionId INT, cat",
    "OVERLAP_ANALYSIS": "id INTEGER PRIMARY KEY AUTOINCREMENT, deviceId integer, "
    "startNs integer, endNs integer, type integer",
    "MEMORY_RECORD": "component INTEGER, timestamp INTEGER, totalAllocated INTEGER, "
    "totalReserved INTEGER, totalActive INTEGER, streamPtr INTEGER, deviceId INTEGER",
    "OP_MEMORY": "name INTEGER, size INTEGER, allocationTime INTEGER, releaseTime INTEGER, "
    "activeReleaseTime INTEGER, duration INTEGER, activeDuration INTEGER, "
    "allocationTotalAllocated INTEGER, allocationTotalReserved INTEGER, "
    "allocationTotalActive INTEGER, releaseTotalAllocated INTEGER, releaseTotalReserved INTEGER, "
    "releaseTotalActive INTEGER, streamPtr INTEGER, deviceId INTEGER",
    "NPU_INFO": "id INTEGER, name TEXT",
    "NPU_MODULE_MEM": "moduleId INTEGER, timestampNs INTEGER, totalReserved INTEGER, "
    "deviceId INTEGER",
    "ENUM_MODULE": "id INTEGER PRIMARY KEY, name TEXT",
}
ANALYSIS_TABLES = {
    "StepTraceTime": "step TEXT, computing NUMERIC, communication_not_overlapped NUMERIC, "
    "overlapped NUMERIC, communication NUMERIC, free NUMERIC, stage NUMERIC, bubble NUMERIC, "
    "communication_not_overlapped_and_exclude_receive NUMERIC, preparing NUMERIC",
    "CommAnalyzerTime": "hccl_op_name TEXT, group_name TEXT, start_timestamp NUMERIC, "
    "elapse_time NUMERIC, transit_time NUMERIC, wait_time NUMERIC, "
    "synchronization_time NUMERIC, idle_time NUMERIC, step TEXT, type TEXT",
    "CommAnalyzerBandwidth": "hccl_op_name TEXT, group_name TEXT, transport_type TEXT, "
    "transit_size NUMERIC, transit_time NUMERIC, bandwidth NUMERIC, large_packet_ratio NUMERIC, "
    "package_size NUMERIC, count NUMERIC, total_duration NUMERIC, step TEXT, type TEXT",
    "CommAnalyzerMatrix": "hccl_op_name TEXT, group_name TEXT, src_rank TEXT, dst_rank TEXT, "
    "transport_type TEXT, transit_size NUMERIC, transit_time NUMERIC, bandwidth NUMERIC, "
    "step TEXT, type TEXT, op_name TEXT",
}
PMU_METRICS = [
    f"aic_{m}"
    for m in [
        "total_time",
        "total_cycles",
        "mac_time",
        "mac_ratio",
        "scalar_time",
        "scalar_ratio",
        "mte1_time",
        "mte1_ratio",
        "mte2_time",
        "mte2_ratio",
        "fixpipe_time",
        "fixpipe_ratio",
        "icache_miss_rate",
    ]
] + [
    f"aiv_{m}"
    for m in [
        "total_time",
        "total_cycles",
        "vec_time",
        "vec_ratio",
        "mac_time",
        "mac_ratio",
        "scalar_time",
        "scalar_ratio",
        "mte1_time",
        "mte1_ratio",
        "mte2_time",
        "mte2_ratio",
        "mte3_time",
        "mte3_ratio",
        "icache_miss_rate",
    ]
]
LOADER = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"
ACL_API = 20000


class _Strings:
    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        return self.ids.setdefault(text, len(self.ids) + 1)


def _abs(ns: int) -> int:
    return BASE_US * NS + ns


def _create(path: Path, tables: dict[str, str]) -> sqlite3.Connection:
    conn = sqlite3.connect(path)
    for name, columns in tables.items():
        conn.execute(f"CREATE TABLE {name} ({columns})")
    return conn


def write_profile_db(parent: Path, s: Scenario, analysis: bool = True) -> Written:
    """One rank's directory with the database export instead of the text files (MindSpore's
    names for a MindSpore scenario: _ascend_ms, ascend_mindspore_profiler_<rank>.db,
    communication_analyzer.db)."""
    ms = s.framework == "mindspore"
    directory = parent / f"node0_{20000 + s.rank}_20260101093000000_ascend_{'ms' if ms else 'pt'}"
    output = directory / "ASCEND_PROFILER_OUTPUT"
    output.mkdir(parents=True, exist_ok=True)
    plans = plan_steps(s)
    info = profiler_info(s)
    info["config"]["experimental_config"]["_export_type"] = ["db"]
    (directory / f"profiler_info_{s.rank}.json").write_text(json.dumps(info, indent=2))
    name = f"ascend_{'mindspore' if ms else 'pytorch'}_profiler_{s.rank}.db"
    conn = _create(output / name, PROFILER_TABLES)
    _timeline(conn, s, plans)
    if s.device is not None:
        conn.execute("INSERT INTO NPU_INFO (id, name) VALUES (0, ?)", (s.device,))
    _aicore_freq(conn, s, plans)
    conn.commit()
    conn.close()
    if analysis:
        conn = _create(
            output / ("communication_analyzer.db" if ms else "analysis.db"), ANALYSIS_TABLES
        )
        _analysis(conn, s, plans)
        conn.commit()
        conn.close()
    return Written(directory, plans)


def _aicore_freq(conn: sqlite3.Connection, s: Scenario, plans: list[StepPlan]) -> None:
    """AICORE_FREQ as torch_npu writes it (deviceId, timestampNs, freq): the samples at even
    intervals from the first step's start to the last step's end."""
    if not s.aicore_freq_mhz:
        return
    conn.execute("CREATE TABLE AICORE_FREQ (deviceId INTEGER, timestampNs NUMERIC, freq INTEGER)")
    start, end = plans[0].start, plans[-1].end
    every = (end - start) // len(s.aicore_freq_mhz)
    conn.executemany(
        "INSERT INTO AICORE_FREQ (deviceId, timestampNs, freq) VALUES (0, ?, ?)",
        [(_abs(start + i * every), f) for i, f in enumerate(s.aicore_freq_mhz)],
    )


def _timeline(conn: sqlite3.Connection, s: Scenario, plans: list[StepPlan]) -> None:
    sid = _Strings()
    meta = {
        "SCHEMA_VERSION_MAJOR": "1",
        "SCHEMA_VERSION": "1.0.0",
        "ENV_VARIABLES": json.dumps(recorded_env(s.env)),
        "distributed_args": json.dumps(
            {
                "world_size": s.world_size,
                "rank": s.rank,
                "tensor_model_parallel_size": 1,
                "pipeline_model_parallel_size": s.pipeline_stages,
                "data_parallel_size": s.world_size // s.pipeline_stages,
                "context_parallel_size": 1,
                "expert_model_parallel_size": 1,
            }
        ),
    }
    conn.executemany("INSERT INTO META_DATA VALUES (?, ?)", meta.items())
    conn.execute("INSERT INTO RANK_DEVICE_MAP VALUES (?, ?)", (s.rank, s.rank))
    conn.execute(
        "INSERT INTO SESSION_TIME_INFO VALUES (?, ?)",
        (_abs(plans[0].start) - 1000, _abs(plans[-1].end) + 1000),
    )
    launch = round(s.launch_us * NS)
    if s.phase_ranges:
        conn.execute("CREATE TABLE CONNECTION_IDS (id INTEGER, connectionId INTEGER)")
    task_id = 0
    connection = 10**12  # host calls without a device task: ids no launch reaches
    for plan in plans:
        conn.execute(
            "INSERT INTO STEP_TIME VALUES (?, ?, ?)",
            (plan.number, _abs(plan.start), _abs(plan.end)),
        )
        lo, hi = plan.loader
        conn.execute(
            "INSERT INTO PYTORCH_API (startNs, endNs, name) VALUES (?, ?, ?)",
            (str(_abs(lo)), str(_abs(hi)), sid(LOADER)),
        )
        # host operators around each launch, as real exports are dominated by them; with
        # phase ranges, the first links to its kernel as torch_npu's enqueueing operator does
        # (its row's connectionId -> CONNECTION_IDS -> the task's connectionId)
        linked = s.phase_ranges
        conn.executemany(
            "INSERT INTO PYTORCH_API (startNs, endNs, name, connectionId) VALUES (?, ?, ?, ?)",
            [
                (
                    str(_abs(p.launch - launch + j)),
                    str(_abs(p.launch - launch + j + max(1, launch // 2))),
                    sid("aten::" + (p.kernel.op_type.lower() if j == 0 else "empty")),
                    p.flow_id if linked and j == 0 else None,
                )
                for p in plan.kernels
                for j in range(s.host_ops_per_kernel)
            ],
        )
        if linked:
            conn.executemany(
                "INSERT INTO CONNECTION_IDS VALUES (?, ?)", [(p.flow_id,) * 2 for p in plan.kernels]
            )
            conn.executemany(
                "INSERT INTO connectionCats VALUES (?, 'async_npu')",
                [(p.flow_id,) for p in plan.kernels],
            )
        conn.executemany(
            "INSERT INTO PYTORCH_API (startNs, endNs, name) VALUES (?, ?, ?)",
            [(str(_abs(lo)), str(_abs(hi)), sid(name)) for name, lo, hi in phase_ranges(s, plan)],
        )
        for p in plan.kernels:
            k = p.kernel
            task_id += 1
            conn.execute(
                "INSERT INTO TASK (startNs, endNs, connectionId, globalTaskId, streamId) "
                "VALUES (?, ?, ?, ?, 2)",
                (_abs(p.start), _abs(p.start + k.dur), p.flow_id, task_id),
            )
            conn.execute(
                "INSERT INTO COMPUTE_TASK_INFO (name, globalTaskId, taskType, opType, "
                "inputDataTypes, blockDim, mixBlockDim) VALUES (?, ?, ?, ?, ?, 24, 0)",
                # the text table's dtypes and block dims (tables.py)
                (
                    sid(k.name),
                    task_id,
                    sid(k.core),
                    sid(k.op_type),
                    sid(f"{s.compute_dtype};{s.compute_dtype}"),
                ),
            )
            conn.execute(
                "INSERT INTO CANN_API (startNs, endNs, type, connectionId, name) "
                "VALUES (?, ?, ?, ?, ?)",
                (
                    _abs(p.launch),
                    _abs(p.launch + launch // 2),
                    ACL_API,
                    p.flow_id,
                    sid(f"aclnn{k.op_type}"),
                ),
            )
            conn.execute("INSERT INTO connectionCats VALUES (?, 'HostToDevice')", (p.flow_id,))
            if s.level != "Level0" and k.compute_ratio is not None and k.mte2_ratio is not None:
                unit = "aiv" if k.core == "AI_VECTOR_CORE" else "aic"
                compute = "aiv_vec_ratio" if unit == "aiv" else "aic_mac_ratio"
                # every metric of the PipeUtilization set, as torch_npu writes them
                values = {compute: k.compute_ratio, f"{unit}_mte2_ratio": k.mte2_ratio}
                conn.executemany(
                    "INSERT INTO TASK_PMU_INFO VALUES (?, ?, ?)",
                    [(task_id, sid(m), values.get(m, 0.0)) for m in PMU_METRICS],
                )
        for c in plan.comm:
            task_id += 1
            conn.execute(
                "INSERT INTO TASK (startNs, endNs, globalTaskId, streamId) VALUES (?, ?, ?, 8)",
                (_abs(c.start), _abs(c.start + c.dur), task_id),
            )
            conn.execute(
                "INSERT INTO COMMUNICATION_OP (opName, startNs, endNs, groupName, opId, waitNs) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (
                    sid(c.name),
                    _abs(c.start),
                    _abs(c.start + c.dur),
                    sid(GROUP),
                    task_id,
                    round(c.dur * s.comm_wait_ratio),
                ),
            )
        for name, times in (
            ("aclrtSynchronizeStream", plan.sync),
            ("aclMallocMemInner", plan.malloc),
            ("aclrtFree", plan.free),
        ):
            for at in times:
                connection += 1
                conn.execute(
                    "INSERT INTO CANN_API (startNs, endNs, type, connectionId, name) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (_abs(at), _abs(at + 1000), ACL_API, connection, sid(name)),
                )
        _overlap(conn, plan)
        if s.with_memory:
            _op_memory(conn, s, plan, sid)
            for at, allocated in (
                (plan.start, s.allocated_peak_mb * s.allocated_floor_share),
                ((plan.start + plan.end) // 2, s.allocated_peak_mb),
                (plan.end, s.allocated_peak_mb * s.allocated_floor_share),
            ):
                reserved = s.reserved_peak_mb if plan is not plans[0] else s.reserved_peak_mb * 0.9
                conn.execute(
                    "INSERT INTO MEMORY_RECORD (component, timestamp, totalAllocated, "
                    "totalReserved) VALUES (?, ?, ?, ?)",
                    (sid("PTA"), _abs(at), round(allocated * 2**20), round(reserved * 2**20)),
                )
                # the whole process, as the text export's APP rows: the pool and 1200 MB more
                conn.execute(
                    "INSERT INTO NPU_MODULE_MEM (moduleId, timestampNs, totalReserved, deviceId) "
                    "VALUES (0, ?, ?, 0)",
                    (_abs(at), round((reserved + 1200) * 2**20)),
                )
    conn.execute("INSERT INTO ENUM_MODULE VALUES (0, 'APP')")
    conn.executemany(
        "INSERT INTO STRING_IDS VALUES (?, ?)", [(i, text) for text, i in sid.ids.items()]
    )


def _op_memory(conn: sqlite3.Connection, s: Scenario, plan: StepPlan, sid: _Strings) -> None:
    """Each holder allocated at the step's start and released at its end: live at the peak."""
    for name, mib in s.peak_holders:
        conn.execute(
            "INSERT INTO OP_MEMORY (name, size, allocationTime, releaseTime) VALUES (?, ?, ?, ?)",
            (sid(name), round(mib * 2**20), _abs(plan.start + 1), _abs(plan.end - 1)),
        )


def _overlap(conn: sqlite3.Connection, plan: StepPlan) -> None:
    compute = merge_intervals([(p.start, p.start + p.kernel.dur) for p in plan.kernels])
    comm = merge_intervals([(c.start, c.start + c.dur) for c in plan.comm])
    exposed = subtract_intervals(comm, compute)
    free = subtract_intervals([(compute[0][0], plan.end)], compute + comm)
    for kind, intervals in enumerate((compute, comm, exposed, free)):
        conn.executemany(
            "INSERT INTO OVERLAP_ANALYSIS (deviceId, startNs, endNs, type) VALUES (0, ?, ?, ?)",
            [(_abs(a), _abs(b), kind) for a, b in intervals if b > a],
        )


def _analysis(conn: sqlite3.Connection, s: Scenario, plans: list[StepPlan]) -> None:
    for plan in plans:
        t = plan.truth
        conn.execute(
            "INSERT INTO StepTraceTime VALUES (?, ?, ?, ?, ?, ?, 0, 0, ?, ?)",
            (
                str(plan.number),
                t.computing / NS,
                t.exposed / NS,
                (t.communication - t.exposed) / NS,
                t.communication / NS,
                t.free / NS,
                t.exposed / NS,
                t.preparing / NS,
            ),
        )
        if s.level == "Level0":
            continue
        for c in plan.comm:
            elapse = c.dur / NS / 1000.0
            wait = elapse * s.comm_wait_ratio
            transit = elapse - wait
            step = f"step{plan.number}"
            kind = "p2p" if c.kind == "batchsendrecv" else "collective"
            conn.execute(
                "INSERT INTO CommAnalyzerTime VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?)",
                (c.name, GROUP, _abs(c.start) / 1000, elapse, transit, wait, wait / 2, step, kind),
            )
            # the text export's communication_matrix.json: one HCCS link per op
            conn.execute(
                "INSERT INTO CommAnalyzerMatrix VALUES (?, ?, '0', '1', 'HCCS', ?, ?, ?, ?, ?, ?)",
                (
                    f"{c.name.split('__')[0]}-top1@{GROUP}",
                    GROUP,
                    HCCS_GBPS * elapse,
                    elapse,
                    HCCS_GBPS,
                    step,
                    kind,
                    c.name,
                ),
            )
            # one row per packet-size bucket, each repeating the link totals
            for link, gbps in (("HCCS", HCCS_GBPS), ("SDMA", SDMA_GBPS), ("RDMA", 0.0)):
                for bucket in (2.0, 12.0):
                    conn.execute(
                        "INSERT INTO CommAnalyzerBandwidth VALUES (?, ?, ?, ?, ?, ?, 1, ?, 1, "
                        "?, ?, ?)",
                        (
                            c.name,
                            GROUP,
                            link,
                            gbps * transit,
                            transit if gbps else 0.0,
                            gbps,
                            bucket,
                            0,
                            step,
                            kind,
                        ),
                    )
