"""The trace part of a database export: device tasks, overlap lanes, collectives, host calls and
launch flows, reduced per step exactly as a trace_view.json would be."""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator
from pathlib import Path

from advisor.inputs.taxonomy import Taxonomy
from advisor.parsers.ascend_db.checks import valid_interval
from advisor.parsers.ascend_db.sqlite import Database
from advisor.parsers.trace_view.schema import DEVICE_LANE, OVERLAP_LANES, TRACE_VIEW
from advisor.parsers.traces.blocking import BlockingEvents
from advisor.parsers.traces.phases import NEITHER, RangeReader
from advisor.parsers.traces.plain import PlainTrace
from advisor.parsers.traces.steps import StepWindow, TraceData
from advisor.parsers.traces.whole import reduce_steps

# why a database export has no phases: its framework ranges (PYTORCH_API) name none
DB_NO_PHASES = (
    "the database export's PYTORCH_API holds no forward, backward or optimizer range "
    "(Optimizer.step#..., autograd::engine::evaluate_function, nn.Module: or ## forward ##-style "
    "record_function ranges): profile with ProfilerActivity.CPU and with_modules=True, and label "
    "the loop's parts with torch.profiler.record_function"
)
# without the overlap lanes a collective's time would count for the phase that launched it
DB_NO_OVERLAP = (
    "the database export has no OVERLAP_ANALYSIS table, which tells the communication that "
    "compute does not hide from the compute: without it a collective's time would count for the "
    "phase whose range launched it (another rank's export, or the text export, has it)"
)

DEVICE_LANE_KEY = "device"


def _lane(table: dict[str, list[array[float]]], name: str) -> list[array[float]]:
    lane = table.get(name)
    if lane is None:
        lane = table[name] = [array("d"), array("d")]
    return lane


def read_db_trace(
    db: Database,
    path: Path,
    strings: dict[int, str],
    origin: int,
    windows: list[StepWindow],
    taxonomy: Taxonomy,
) -> TraceData:
    raw = PlainTrace(process_names={DEVICE_LANE_KEY: DEVICE_LANE}, steps=list(windows))
    starts, ends = array("d"), array("d")
    for a, b in db.rows("TASK", f"SELECT startNs, endNs FROM TASK WHERE {valid_interval(origin)}"):
        if isinstance(a, int) and isinstance(b, int) and b >= a:
            starts.append((a - origin) / 1000.0)
            ends.append((b - origin) / 1000.0)
    raw.starts[DEVICE_LANE_KEY], raw.ends[DEVICE_LANE_KEY] = starts, ends
    raw.events = len(starts)
    overlap = db.has("OVERLAP_ANALYSIS", "startNs", "endNs", "type")
    if overlap:
        sql = f"SELECT type, startNs, endNs FROM OVERLAP_ANALYSIS WHERE {valid_interval(origin)}"
        for kind, a, b in db.rows("OVERLAP_ANALYSIS", sql):
            if isinstance(kind, int) and 0 <= kind < len(OVERLAP_LANES):
                lane = _lane(raw.overlap, OVERLAP_LANES[kind])
                lane[0].append((a - origin) / 1000.0)
                lane[1].append((b - origin) / 1000.0)
                raw.events += 1
    if db.has("COMMUNICATION_OP", "opName", "startNs", "endNs"):
        sql = f"SELECT opName, startNs, endNs FROM COMMUNICATION_OP WHERE {valid_interval(origin)}"
        for name, a, b in db.rows("COMMUNICATION_OP", sql):
            if isinstance(a, int) and isinstance(b, int) and b >= a:
                lane = _lane(raw.collectives, taxonomy.comm_kind(strings.get(name, "")))
                lane[0].append((a - origin) / 1000.0)
                lane[1].append((b - origin) / 1000.0)
    _host_calls(db, strings, origin, raw, taxonomy)
    if overlap:
        _phase_ranges(db, strings, origin, raw, taxonomy)
    _launch_flows(db, origin, raw)
    if raw.host_ranges.starts:
        _operator_flows(db, origin, raw)
    return reduce_steps(path, raw, TRACE_VIEW, DB_NO_PHASES if overlap else DB_NO_OVERLAP)


def _host_calls(
    db: Database, strings: dict[int, str], origin: int, raw: PlainTrace, taxonomy: Taxonomy
) -> None:
    """Synchronisation, blocking and allocator calls (CANN_API), data loading and value reads
    (PYTORCH_API)."""
    if db.has("CANN_API", "startNs", "endNs", "name"):
        raw.blocking = BlockingEvents()
        wanted = {}
        for key, value in strings.items():
            label = f"AscendCL@{value}"
            for kind, pattern in (
                ("sync", taxonomy.sync_calls),
                ("block", taxonomy.blocking_calls),
                ("malloc", taxonomy.malloc_calls),
                ("free", taxonomy.free_calls),
            ):
                if pattern.fullmatch(label):
                    wanted[key] = kind
        if wanted:
            marks = ", ".join(str(k) for k in wanted)
            sql = (
                f"SELECT name, startNs, endNs FROM CANN_API WHERE name IN ({marks}) "
                f"AND {valid_interval(origin)}"
            )
            for name, a, b in db.rows("CANN_API", sql):
                at, end = (a - origin) / 1000.0, (b - origin) / 1000.0
                kind = wanted[name]
                if kind in ("sync", "block"):
                    raw.blocking.waits.append((at, end, f"AscendCL@{strings[name]}"))
                if kind == "sync":
                    raw.host.sync_start.append(at)
                    raw.host.sync_end.append(end)
                elif kind == "malloc":
                    raw.host.malloc_start.append(at)
                    raw.host.malloc_end.append(end)
                else:
                    raw.host.free.append(at)
    if db.has("PYTORCH_API", "startNs", "endNs", "name"):
        _value_reads(db, strings, origin, raw, taxonomy)
        loaders = [k for k, v in strings.items() if taxonomy.dataloader.fullmatch(v)]
        if loaders:
            marks = ", ".join(str(k) for k in loaders)
            # PYTORCH_API keeps its times as text in some exports: cast, then check
            cast = (
                "(SELECT CAST(startNs AS INTEGER) AS startNs, CAST(endNs AS INTEGER) AS endNs "
                f"FROM PYTORCH_API WHERE name IN ({marks}))"
            )
            sql = f"SELECT startNs, endNs FROM {cast} WHERE {valid_interval(origin)}"
            for a, b in db.rows("PYTORCH_API", sql):
                raw.host.loader_start.append((a - origin) / 1000.0)
                raw.host.loader_end.append((b - origin) / 1000.0)


def _phase_ranges(
    db: Database, strings: dict[int, str], origin: int, raw: PlainTrace, taxonomy: Taxonomy
) -> None:
    """The framework ranges naming a phase of the step (forward, backward, optimizer) and the
    garbage collections, as trace_view.json's decoder keeps them (PYTORCH_API, names by id)."""
    if not db.has("PYTORCH_API", "startNs", "endNs", "name"):
        return
    reader = RangeReader(taxonomy.phase_ranges, taxonomy.gc_ranges)
    named = [k for k, v in strings.items() if reader.kind(v) != NEITHER]
    if not named:
        return
    for name, start, end in _api_calls(db, strings, origin, named):
        reader.add(raw.host_ranges, name, start, end)


def _api_calls(
    db: Database, strings: dict[int, str], origin: int, names: list[int]
) -> Iterator[tuple[str, float, float]]:
    """PYTORCH_API calls of the given name ids: (name, start, end) in us from the origin."""
    marks = ", ".join(str(k) for k in names)
    cast = (
        "(SELECT name, CAST(startNs AS INTEGER) AS startNs, CAST(endNs AS INTEGER) AS endNs "
        f"FROM PYTORCH_API WHERE name IN ({marks}))"
    )
    sql = f"SELECT name, startNs, endNs FROM {cast} WHERE {valid_interval(origin)}"
    for name, a, b in db.rows("PYTORCH_API", sql):
        yield strings[name], (a - origin) / 1000.0, (b - origin) / 1000.0


def _value_reads(
    db: Database, strings: dict[int, str], origin: int, raw: PlainTrace, taxonomy: Taxonomy
) -> None:
    """Operators that read a device value on the host (aten::item): the host waits in them."""
    if raw.blocking is None:
        return
    reads = [k for k, v in strings.items() if taxonomy.blocking_ops.fullmatch(v)]
    if not reads:
        return
    for name, start, end in _api_calls(db, strings, origin, reads):
        raw.blocking.waits.append((start, end, name))


def _launch_flows(db: Database, origin: int, raw: PlainTrace) -> None:
    """HostToDevice: the runtime call (CANN_API) and the device task sharing a connectionId."""
    if not (db.has("CANN_API", "connectionId", "startNs") and db.has("TASK", "connectionId")):
        return
    restrict = f" WHERE {valid_interval(origin, 't.')}"
    if db.has("connectionCats", "connectionId", "cat"):
        restrict += (
            " AND t.connectionId IN (SELECT connectionId FROM connectionCats "
            "WHERE cat = 'HostToDevice')"
        )
    sql = (
        "SELECT t.startNs, a.startNs FROM TASK t "
        f"JOIN CANN_API a ON a.connectionId = t.connectionId{restrict}"
    )
    pairs = raw.launch_pairs
    for device, host in db.rows("TASK", sql):
        if isinstance(host, int) and not isinstance(host, bool):
            pairs[(device - origin) / 1000.0] = (host - origin) / 1000.0


def _operator_flows(db: Database, origin: int, raw: PlainTrace) -> None:
    """async_npu: the framework operator (PYTORCH_API) that enqueued each device task, by the
    connection id CONNECTION_IDS gives the operator's row and the task shares; of two
    operators linked to one task, the later (inner) one. Read only for the step phases."""
    if not (
        db.has("CONNECTION_IDS", "id", "connectionId")
        and db.has("PYTORCH_API", "connectionId", "startNs")
        and db.has("TASK", "connectionId")
    ):
        return
    # PYTORCH_API (the largest table: every host operator) scanned once, the two others looked
    # up through automatic indexes: the other order indexes PYTORCH_API, ~3x the time
    sql = (
        "SELECT t.startNs, CAST(p.startNs AS INTEGER) FROM PYTORCH_API p "
        "CROSS JOIN CONNECTION_IDS c CROSS JOIN TASK t "
        "WHERE p.connectionId IS NOT NULL AND c.id = p.connectionId "
        f"AND t.connectionId = c.connectionId AND {valid_interval(origin, 't.')}"
    )
    pairs = raw.operator_pairs
    for device, host in db.rows("TASK", sql):
        if isinstance(host, int) and not isinstance(host, bool):
            at = (device - origin) / 1000.0
            enqueued = (host - origin) / 1000.0
            if enqueued > pairs.get(at, -math.inf):
                pairs[at] = enqueued
