"""analysis.db beside a database export: what step_trace_time.csv and communication.json hold."""

from __future__ import annotations

from typing import Any

from advisor.inputs.taxonomy import Taxonomy
from advisor.model import InputError
from advisor.parsers.ascend_db.sqlite import Database
from advisor.parsers.bounds import BadValues, Invalid, parse_measure, step_model_breach
from advisor.parsers.profile_data import CommStep, LinkStat, StepRow


def step_number(text: Any) -> int | None:
    digits = "".join(ch for ch in str(text) if ch.isdigit())
    return int(digits) if digits else None


def _optional(value: object) -> float | None:
    parsed = parse_measure(value)
    return parsed if isinstance(parsed, float) else None


def read_step_rows(db: Database, bad: BadValues | None = None) -> list[StepRow]:
    """The StepTraceTime rows; a row whose columns contradict the step model is left out and
    counted in `bad` (its warnings name the table, the step and the column)."""
    bad = bad or BadValues()
    columns = ("step", "computing", "communication_not_overlapped", "overlapped")
    db.require("StepTraceTime", *columns, "communication", "free")
    extra = [c if c in db.columns("StepTraceTime") else "NULL" for c in ("preparing", "bubble")]
    sql = (
        "SELECT step, computing, communication_not_overlapped, overlapped, communication, free, "
        f"{extra[0]}, {extra[1]} FROM StepTraceTime"
    )
    rows = []
    for step, computing, exposed, overlapped, comm, free, preparing, bubble in db.rows(
        "StepTraceTime", sql
    ):
        values = (computing, exposed, overlapped, comm, free)
        if not all(isinstance(parse_measure(v), float) for v in values):
            raise InputError(
                str(db.path),
                f"table StepTraceTime: step {step}: {values!r} are not finite non-negative times",
            )
        named: dict[str, float | None] = {
            "Computing": float(computing),
            "Communication(Not Overlapped)": float(exposed),
            "Overlapped": float(overlapped),
            "Communication": float(comm),
            "Free": float(free),
        }
        breach = step_model_breach(named)
        if breach is not None:
            column, why = breach
            bad.drop(db.path, f"table StepTraceTime, step {step}, {column}", named[column], why)
            continue
        rows.append(
            StepRow(
                step=step_number(step),
                computing=float(computing),
                comm_not_overlapped=float(exposed),
                overlapped=float(overlapped),
                communication=float(comm),
                free=float(free),
                preparing=_optional(preparing),
                bubble=_optional(bubble),
            )
        )
    if not rows:
        raise InputError(str(db.path), "table StepTraceTime has no rows")
    return rows


def read_comm(db: Database, taxonomy: Taxonomy) -> list[CommStep]:
    """CommAnalyzerTime (elapse, wait per op) and CommAnalyzerBandwidth (per link)."""
    db.require("CommAnalyzerTime", "hccl_op_name", "group_name", "elapse_time", "wait_time", "step")
    by_step: dict[int | None, CommStep] = {}
    split = [
        c if c in db.columns("CommAnalyzerTime") else "NULL"
        for c in ("transit_time", "synchronization_time")
    ]
    sql = (
        "SELECT hccl_op_name, group_name, elapse_time, wait_time, step, "
        f"{split[0]}, {split[1]} FROM CommAnalyzerTime"
    )
    for name, group, elapse, wait, step_text, transit, sync in db.rows("CommAnalyzerTime", sql):
        if str(name).startswith("Total Op Info"):
            continue  # aggregated pseudo-op, as in communication.json
        number = step_number(step_text)
        step = by_step.setdefault(number, CommStep(step=number))
        kind = taxonomy.comm_kind(str(name))
        elapsed, waited = parse_measure(elapse), parse_measure(wait)
        if isinstance(elapsed, Invalid) or isinstance(waited, Invalid):
            raise InputError(
                str(db.path),
                f"table CommAnalyzerTime: {name}: elapse {elapse!r}, wait {wait!r} are not "
                "finite non-negative times",
            )
        if elapsed is not None:
            step.add(kind, elapsed, str(group) if group is not None else None)
        if waited is not None:
            step.wait_ms[kind] = step.wait_ms.get(kind, 0.0) + waited
        group_key = str(group) if group is not None else None
        step.split(kind, group_key, (elapsed, waited, _optional(transit), _optional(sync)))
    if db.has(
        "CommAnalyzerBandwidth", "hccl_op_name", "transport_type", "transit_size", "transit_time"
    ):
        _read_bandwidth(db, by_step)
    if not by_step:
        raise InputError(str(db.path), "table CommAnalyzerTime has no rows")
    return list(by_step.values())


def _read_bandwidth(db: Database, by_step: dict[int | None, CommStep]) -> None:
    """CommAnalyzerBandwidth: each op's link totals (repeated on every packet-size row) and,
    where the table has them, its packet sizes (communication.json's Size Distribution)."""
    packets = db.has("CommAnalyzerBandwidth", "package_size", "count", "total_duration")
    sql = (
        "SELECT hccl_op_name, transport_type, transit_size, transit_time, step, "
        + ("package_size, count, total_duration " if packets else "NULL, NULL, NULL ")
        + "FROM CommAnalyzerBandwidth"
    )
    seen: set[tuple[str, str, str]] = set()
    for name, link, size, time, step_text, packet, count, duration in db.rows(
        "CommAnalyzerBandwidth", sql
    ):
        if str(name).startswith("Total Op Info"):
            continue
        number = step_number(step_text)
        step = by_step.setdefault(number, CommStep(step=number))
        _add_packet(step, str(link), packet, count, duration)
        key = (str(name), str(link), str(step_text))
        # one row per packet-size bucket, each repeating the op's link totals
        if key in seen:
            continue
        seen.add(key)
        size, time = parse_measure(size), parse_measure(time)
        if not isinstance(size, float) or not isinstance(time, float):
            continue
        step.link_size_mb[str(link)] = step.link_size_mb.get(str(link), 0.0) + size
        step.link_time_ms[str(link)] = step.link_time_ms.get(str(link), 0.0) + time
        if size > 0:
            step.transfers.setdefault(str(link), []).append((size, time))
            if str(link) == "RDMA":
                step.rdma_ops.append((str(name), None, time))


def _add_packet(step: CommStep, link: str, size: object, count: object, time: object) -> None:
    size_mb, n, ms = parse_measure(size), parse_measure(count), parse_measure(time)
    if not isinstance(size_mb, float) or not isinstance(n, float) or not isinstance(ms, float):
        return
    if size_mb <= 0 or n <= 0:
        return  # the op's row for a link it did not use
    slot = step.packets.setdefault(link, {}).setdefault(size_mb, [0.0, 0.0])
    slot[0] += n
    slot[1] += ms


def read_links(db: Database) -> list[LinkStat] | None:
    """CommAnalyzerMatrix: what communication_matrix.json holds, totals per link."""
    columns = (
        "hccl_op_name",
        "src_rank",
        "dst_rank",
        "transport_type",
        "transit_size",
        "transit_time",
    )
    if not db.has("CommAnalyzerMatrix", *columns):
        return None
    sql = f"SELECT {', '.join(columns)} FROM CommAnalyzerMatrix"
    links: dict[tuple[int, int, str], LinkStat] = {}
    for name, src, dst, transport, size, time in db.rows("CommAnalyzerMatrix", sql):
        if (
            str(name).startswith("Total Op Info")
            or not str(src).isdigit()
            or not str(dst).isdigit()
        ):
            continue
        a, b, kind = int(src), int(dst), str(transport or "UNKNOWN")
        if a == b or kind == "LOCAL":
            continue
        if not isinstance(size, int | float) or not isinstance(time, int | float):
            continue
        if size < 0 or time < 0:
            continue
        stat = links.setdefault((a, b, kind), LinkStat(a, b, kind))
        stat.size_mb += float(size)
        stat.time_ms += float(time)
    return sorted(links.values(), key=lambda s: (s.src, s.dst, s.transport))
