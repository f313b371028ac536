"""The report's rank section: a table of every rank shaded towards each column's worst value,
the straggler and pipeline stages marked; a heat map and the most deviating ranks for clusters
too large to list.

The straggler is `ranks.slowest`: the rank whose busy time (step time less exposed
communication, as facts/spread.py measures it) is furthest above its stage's median. The table
shows that busy time beside the badge, and the badge appears only when the slow-rank symptom
fired: a rank within normal jitter of its peers is nobody's straggler."""

from __future__ import annotations

from html import escape
from statistics import median

from advisor.facts.units import format_value
from advisor.model import JOB_SCOPE, FactSet
from advisor.render.html_charts import Cell, heat_colour, heat_grid

# Ranks shown row by row; larger clusters get a heat map and the most deviating ranks only.
RANK_TABLE_LIMIT = 64
BUSY = "busy"  # step time less exposed communication: the number the straggler is chosen by
RANK_COLUMNS = (
    ("step.time_ms", "step"),
    (BUSY, "busy (step - exposed comm)"),
    ("step.compute_ratio", "compute"),
    ("step.comm_exposed_ratio", "exposed comm"),
    ("step.free_ratio", "device idle"),
    ("comm.wait_ratio", "comm wait"),
    ("ops.device_compute_ms_per_step", "device compute"),
)


def number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _scope_rank(scope: str) -> str:
    return scope.split(":", 1)[-1]


def _stage_of(facts: FactSet) -> dict[str, int]:
    groups = facts.value("pipeline.stage_ranks")
    stage: dict[str, int] = {}
    if isinstance(groups, list):
        for index, group in enumerate(groups):
            for rank in group if isinstance(group, list) else []:
                stage[str(rank)] = index
    return stage


def _rank_row(facts: FactSet, scope: str) -> dict[str, float]:
    row: dict[str, float] = {}
    for fact_id, _ in RANK_COLUMNS:
        measured = number(facts.value(fact_id, scope))
        if measured is not None:
            row[fact_id] = measured
    if "step.time_ms" in row:
        row[BUSY] = row["step.time_ms"] * (1.0 - row.get("step.comm_exposed_ratio", 0.0))
    return row


def rank_section(facts: FactSet, straggler: bool = True) -> str:
    """`straggler`: whether the slow-rank symptom fired (the badge is shown only then)."""
    scopes = sorted(
        {f.scope for f in facts.facts if f.scope != JOB_SCOPE},
        key=lambda s: (0, int(_scope_rank(s))) if _scope_rank(s).isdigit() else (1, s),
    )
    if len(scopes) < 2:
        return ""
    slowest = str(facts.value("ranks.slowest")) if straggler else ""
    stage = _stage_of(facts)
    values = {_scope_rank(scope): _rank_row(facts, scope) for scope in scopes}
    columns = [(f, t) for f, t in RANK_COLUMNS if any(f in row for row in values.values())]
    spread = {
        f: (
            min(r[f] for r in values.values() if f in r),
            max(r[f] for r in values.values() if f in r),
        )
        for f, _ in columns
    }
    parts = [_rank_summary(facts, slowest)]
    times = {rank: row[BUSY] for rank, row in values.items() if BUSY in row}
    shown = list(values)
    if len(values) > RANK_TABLE_LIMIT and times:
        cells = [
            Cell(f"rank {rank}", times[rank], f"busy {times[rank]:.2f} ms", rank == slowest)
            for rank in values
            if rank in times
        ]
        parts.append(
            "<p>Busy time per rank, step time less exposed communication (white: least, red: "
            "most; outlined: the straggler, furthest above its stage's median):</p>"
            + heat_grid(cells)
        )
        middle = median(times.values())
        shown = sorted(times, key=lambda r: -abs(times[r] - middle))[: RANK_TABLE_LIMIT // 2]
        shown.sort(key=lambda r: (not r.isdigit(), int(r) if r.isdigit() else 0, r))
        parts.append(f"<p>The {len(shown)} ranks furthest from the median busy time:</p>")
    head = (
        "<tr><th>rank</th><th>stage</th>"
        + "".join(f"<th>{escape(t)}</th>" for _, t in columns)
        + "</tr>"
    )
    rows = []
    for rank in shown:
        row = values[rank]
        mark = ' class="slow"' if rank == slowest else ""
        cells_html = []
        for fact_id, _ in columns:
            if fact_id not in row:
                cells_html.append('<td class="num">-</td>')
                continue
            low, high = spread[fact_id]
            position = (row[fact_id] - low) / (high - low) if high > low else 0.0
            if fact_id == "step.compute_ratio":  # a higher compute share is the better end
                position = 1.0 - position
            unit = "ms" if fact_id == BUSY or fact_id.endswith(("_ms", "_per_step")) else "ratio"
            cells_html.append(
                f'<td class="num" data-v="{row[fact_id]}" style="background:'
                f'{heat_colour(position * 0.8)}">{escape(format_value(row[fact_id], unit))}</td>'
            )
        badge = (
            ' <span class="pill error" title="largest busy time of its pipeline stage against '
            "the stage's median: the rank the others wait for\">straggler</span>"
            if rank == slowest
            else ""
        )
        rows.append(
            f'<tr{mark}><td data-v="{rank}">{escape(rank)}{badge}</td>'
            f"<td>{stage.get(rank, '-')}</td>{''.join(cells_html)}</tr>"
        )
    parts.append(
        f'<table class="sortable heat"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'
    )
    return "".join(parts)


def _rank_summary(facts: FactSet, slowest: str) -> str:
    bits = []
    for fact_id in ("ranks.step_time_spread_ratio", "ranks.busy_spread_ratio"):
        fact = facts.get(fact_id)
        if fact is not None:
            bits.append(
                f"{fact_id.split('.')[1].replace('_', ' ')}: "
                f"{format_value(fact.value, fact.unit)} ({fact.note})"
            )
    stages = facts.get("pipeline.stage_imbalance_ratio")
    if stages is not None:
        bits.append(f"stage imbalance: {format_value(stages.value, stages.unit)}")
    if slowest and slowest != "None":
        bits.insert(0, f"straggler: rank {slowest}")
    return "<p>" + escape("; ".join(bits)) + "</p>" if bits else ""
