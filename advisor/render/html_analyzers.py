"""The report's analyzer tables: the step's phases, what the slowest rank runs beyond the
fastest, the AI-CPU operators, the kernels launched on fewer blocks than cores, the unfused kernel sequences a fused operator replaces, how the
collectives use their links, and where their time goes (transit, wait, idle) by kind and by
group. Each table appears only when its facts do;
a missing fact is left out here (the diagnosis lists what is unknown and how to collect it)."""

from __future__ import annotations

from html import escape

from advisor.facts.units import format_value
from advisor.model import FactSet


def _table(head: list[str], rows: list[list[str]]) -> str:
    cells = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>"


def _slow_fast(facts: FactSet) -> str:
    extra = facts.value("ops.slow_fast_extra_by_type")
    pair = facts.value("ops.slow_fast_ranks")
    if not isinstance(extra, dict) or not extra or not isinstance(pair, dict):
        return ""
    counts = facts.value("ops.slow_fast_counts")
    counts = counts if isinstance(counts, dict) else {}
    loss = facts.value("ops.slow_stage_loss_by_type")
    loss = loss if isinstance(loss, dict) else {}
    rows = [
        [
            str(op_type),
            f"+{float(ms):.1f} ms",
            str(counts.get(op_type, "?")),
            "loss chain" if op_type in loss else "",
        ]
        for op_type, ms in extra.items()
    ]
    cause = facts.value("ops.slow_fast_cause")
    share = facts.value("ops.slow_fast_extra_ratio")
    lead = (
        f"<p>Rank {escape(str(pair.get('slow')))} against rank {escape(str(pair.get('fast')))}: "
        f"{escape(format_value(share, 'ratio'))} of the step more device compute; cause: "
        f"<b>{escape(str(cause))}</b>.</p>"
    )
    table = _table(["kernel type", "extra per step", "kernels per step (slow vs fast)", ""], rows)
    return f"<h3>The slowest rank against the fastest</h3>{lead}{table}"


def _aicpu(facts: FactSet) -> str:
    ops = facts.value("ops.aicpu_ops")
    if not isinstance(ops, list) or not ops:
        return ""
    rows = [
        [
            str(op.get("type")),
            str(op.get("input_dtypes") or "-"),
            f"{op.get('per_step_count')}",
            f"{float(op.get('per_step_ms') or 0.0):.3f} ms",
            ", ".join(op.get("fallback_dtypes") or []) or "-",
        ]
        for op in ops
        if isinstance(op, dict)
    ]
    table = _table(
        ["operator", "input dtypes", "kernels per step", "time per step", "dtypes AI Core lacks"],
        rows,
    )
    return f"<h3>AI-CPU operators</h3>{table}"


def _block_dim(facts: FactSet) -> str:
    ops = facts.value("ops.low_block_dim_ops")
    if not isinstance(ops, list) or not ops:
        return ""
    rows = [
        [
            str(op.get("type")),
            str(op.get("core")),
            str(op.get("cores")),
            f"{op.get('per_step_count')}",
            f"{float(op.get('per_step_ms') or 0.0):.3f} ms",
        ]
        for op in ops
        if isinstance(op, dict)
    ]
    share = facts.value("ops.low_block_dim_share")
    idle = facts.value("ops.low_block_dim_idle_ms_per_step")
    lead = (
        f"<p>{escape(format_value(share, 'ratio'))} of the AI Core and vector kernels' time runs "
        f"on fewer blocks than the unit has cores; at most {escape(format_value(idle, 'ms'))} "
        "per step of idle cores.</p>"
    )
    head = ["operator", "core kind", "cores of the unit", "kernels per step", "time per step"]
    return f"<h3>Kernels on fewer blocks than cores</h3>{lead}{_table(head, rows)}"


def _links(facts: FactSet) -> str:
    achieved = facts.value("comm.bandwidth_gbps_by_link")
    if not isinstance(achieved, dict) or not achieved:
        return ""
    peak = facts.value("comm.link_peak_ratio_by_link")
    peak = peak if isinstance(peak, dict) else {}
    rows = [
        [
            str(link),
            f"{float(gbps):.2f} GB/s",
            format_value(peak[link], "ratio") if link in peak else "unknown",
        ]
        for link, gbps in achieved.items()
    ]
    table = _table(["link type", "achieved", "share of the link's peak"], rows)
    extra = []
    for fact_id, label in (
        ("comm.small_transfer_ratio", "collectives moving small transfers"),
        ("comm.unaligned_ratio", "SDMA time in sizes not a multiple of 512 bytes"),
    ):
        value = facts.value(fact_id)
        if value is not None:
            extra.append(f"<li>{escape(label)}: {escape(format_value(value, 'ratio'))}</li>")
    more = f"<ul>{''.join(extra)}</ul>" if extra else ""
    return f"<h3>Links</h3>{table}{more}"


# phase.table columns and their headings, in the loop's order
PHASE_COLUMNS = (
    ("forward", "forward"),
    ("backward", "backward"),
    ("optimizer", "optimizer"),
    ("other", "outside the phases"),
    ("comm_exposed", "exposed comm"),
    ("data_wait", "waiting for data"),
    ("idle", "idle"),
)


def _phases(facts: FactSet) -> str:
    table = facts.value("phase.table")
    if not isinstance(table, list) or not table:
        return ""
    rows = [
        [str(row.get("step")), f"{float(row.get('step_ms') or 0.0):.2f}"]
        # "-": the trace has no range of that phase (its work is outside the phases)
        + [f"{float(row[key]):.2f}" if key in row else "-" for key, _ in PHASE_COLUMNS]
        for row in table
        if isinstance(row, dict)
    ]
    head = ["step", "step ms", *(f"{words} ms" for _, words in PHASE_COLUMNS)]
    gc = facts.value("host.gc_ms_per_step")
    gc_line = (
        f"<p>Python garbage collection: {escape(format_value(gc, 'ms'))} per step, the longest "
        f"{escape(format_value(facts.value('host.gc_max_ms'), 'ms'))}.</p>"
        if gc is not None
        else ""
    )
    lead = (
        "<p>Device time by the phase whose host range launched it (a representative rank; "
        "waiting for data and idle are the device's idle time).</p>"
    )
    return f"<h3>Step phases</h3>{lead}{_table(head, rows)}{gc_line}"


def _fusion(facts: FactSet) -> str:
    rows_in = facts.value("ops.unfused_sequences")
    if not isinstance(rows_in, list) or not rows_in:
        return ""
    rows = [
        [
            str(r.get("pattern")),
            f"{r.get('per_step_count')}",
            f"{float(r.get('per_step_ms') or 0.0):.2f} ms",
            str(r.get("fused")),
            "; ".join(f"{k}: {v}" for k, v in (r.get("switches") or {}).items()) or "-",
        ]
        for r in rows_in
        if isinstance(r, dict)
    ]
    head = ["unfused sequence", "per step", "time per step", "fused operator", "switch"]
    return f"<h3>Unfused kernel sequences</h3>{_table(head, rows)}"


# operators shown in the queue table, longest queue first (the fact lists them all)
QUEUE_ROWS_SHOWN = 12


def _queue(facts: FactSet) -> str:
    """The operators waiting longest between their launch and their start on the device."""
    rows_in = facts.value("ops.queue_by_op")
    if not isinstance(rows_in, list) or not rows_in:
        return ""
    rows = [
        [
            str(r.get("type")),
            f"{r.get('per_step_count')}",
            f"{float(r.get('queue_median_ms') or 0.0):.2f} ms",
            f"{float(r.get('queue_p90_ms') or 0.0):.2f} ms",
            f"{float(r.get('queue_ms_per_step') or 0.0):.2f} ms",
            f"{float(r.get('exec_ms_per_step') or 0.0):.2f} ms",
            f"{r.get('waited_behind')} ({format_value(r.get('waited_behind_share'), 'ratio')})",
        ]
        for r in rows_in[:QUEUE_ROWS_SHOWN]
        if isinstance(r, dict)
    ]
    head = [
        "operator",
        "per step",
        "queue median",
        "queue p90",
        "queued per step",
        "running per step",
        "waited behind (share of its queue)",
    ]
    share = facts.value("ops.queue_wait_behind_comm_share")
    lead = (
        "<p>Launch to device start per operator type (a representative rank's steady steps). "
        "A view of time the step model already counts: an operator queued behind a "
        "collective waits through the exposed communication, not a cost of its own."
        + (
            f" The device only communicated during {escape(format_value(share, 'ratio'))} "
            "of the time some operator waited.</p>"
            if isinstance(share, int | float)
            else "</p>"
        )
    )
    return f"<h3>Operators waiting longest to start</h3>{lead}{_table(head, rows)}"


def _split_row(label: str, split: dict[str, object]) -> list[str]:
    def share(key: str) -> str:
        value = split.get(key)
        return format_value(value, "ratio") if isinstance(value, int | float) else "-"

    ms = split.get("ms")
    return [
        label,
        f"{float(ms):.2f} ms" if isinstance(ms, int | float) else "-",
        share("transit"),
        share("wait"),
        share("sync"),
        share("idle"),
    ]


def _comm_split(facts: FactSet) -> str:
    """Where each kind's and each group's collective time goes."""
    head = ["", "per step", "transit", "wait", "synchronization", "idle"]
    parts = []
    kinds = facts.value("comm.time_split_by_kind")
    if isinstance(kinds, dict) and kinds:
        rows = [_split_row(str(k), v) for k, v in kinds.items() if isinstance(v, dict)]
        parts.append(_table(["op kind", *head[1:]], rows))
    groups = facts.value("comm.time_split_by_group")
    if isinstance(groups, list) and groups:
        rows = [
            _split_row(f"{g.get('name') or '-'} ({g.get('group')})", g)
            for g in groups
            if isinstance(g, dict)
        ]
        parts.append(_table(["group (name, key)", *head[1:]], rows))
    if not parts:
        return ""
    notes = []
    retried = facts.value("comm.rdma_retransmission_ops")
    if isinstance(retried, int) and retried > 0:
        notes.append(
            f"<li>{retried} operation(s) with over 4 s of RDMA transit: retransmission</li>"
        )
    largest = facts.value("comm.largest_collective_mb")
    if isinstance(largest, int | float):
        notes.append(f"<li>largest collective: {escape(format_value(largest, 'MB'))}</li>")
    more = f"<ul>{''.join(notes)}</ul>" if notes else ""
    lead = (
        "<p>Transit is moving data; wait is the peers not there yet (a late member); idle is "
        "the rest of the elapse, neither.</p>"
    )
    return f"<h3>Collective time by kind and group</h3>{lead}{''.join(parts)}{more}"


def analyzer_section(facts: FactSet) -> str:
    """The analyzer tables the facts allow ("" when none)."""
    parts = (
        _phases(facts),
        _slow_fast(facts),
        _aicpu(facts),
        _block_dim(facts),
        _fusion(facts),
        _queue(facts),
        _links(facts),
        _comm_split(facts),
    )
    return "".join(part for part in parts if part)
