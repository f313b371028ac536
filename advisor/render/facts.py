"""Renderers: pure functions from results to text. No analysis happens here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.core.json_text import indented_json
from advisor.facts.catalogue import AREAS, spec_for
from advisor.facts.units import format_value
from advisor.model import JOB_SCOPE, Fact, FactSet

FACTS_SCHEMA = "advisor/facts@1"


def facts_json(result: FactSet) -> str:
    payload = {
        "schema": FACTS_SCHEMA,
        "inputs": result.inputs,
        "facts": [f.to_json() for f in result.facts],
        "missing": [m.to_json() for m in result.missing],
        "warnings": result.warnings,
    }
    return indented_json(payload)


def _area(fact: Fact) -> str:
    return spec_for(fact.id).area


def _top_table(rows: list[dict[str, Any]]) -> list[str]:
    # the name last and whole: kernel names share long prefixes (split_embedding_backward_...),
    # so a cut name makes different operators look alike
    known_bound = any(row.get("bound") not in (None, "unknown") for row in rows)
    bound_head = f"  {'bound':<8}" if known_bound else ""
    lines = [f"      {'share':>7} {'ms/step':>9} {'count':>7} {'mean us':>9}{bound_head}  type"]
    for row in rows:
        share = f"{row['share']:.1%}" if row.get("share") is not None else "-"
        mean = f"{row['mean_us']:.1f}" if row.get("mean_us") is not None else "-"
        bound = f"  {row.get('bound') or 'unknown':<8}" if known_bound else ""
        lines.append(
            f"      {share:>7} {row['per_step_ms']:>9.3f} {row['count']:>7} {mean:>9}{bound}  "
            f"{row['type']}"
        )
    if not known_bound:
        lines.append(
            "      (bound: unknown for every operator; the profile has no pipe utilisation)"
        )
    return lines


def _groups_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [f"      {'group':<22} {'name':<16} {'ranks':<18} {'ms/step':>9}  kinds"]
    for row in rows:
        ranks = ",".join(str(r) for r in row.get("ranks") or []) or "-"
        kinds = ", ".join(f"{k} {v:.3g}" for k, v in row["kinds"].items())
        lines.append(
            f"      {str(row['group'])[:22]:<22} {str(row.get('name') or '?')[:16]:<16} "
            f"{ranks[:18]:<18} {row['ms_per_step']:>9.3f}  {kinds}"
        )
    return lines


def _layout_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [f"      {'dim':<4} {'size':>4} {'stride':>6}  {'groups':<20} how"]
    for row in rows:
        groups = " ".join(",".join(str(r) for r in g) for g in row["groups"])
        stride = "-" if row["stride"] is None else str(row["stride"])
        lines.append(
            f"      {row['dim'] or '?'!s:<4} {row['size']:>4} {stride:>6}  "
            f"{groups[:20]:<20} {row['how']}"
        )
    return lines


def _by_step_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [f"      {'step':>6} {'total ms':>9}  parts (ms)"]
    for row in rows:
        parts = ", ".join(f"{name} {ms:.3g}" for name, ms in row["parts"].items() if ms > 0)
        lines.append(f"      {row['step']!s:>6} {row['total']:>9.3f}  {parts}")
    return lines


_TABLES: dict[str, Callable[[list[dict[str, Any]]], list[str]]] = {
    "ops.top": _top_table,
    "comm.groups": _groups_table,
    "job.group_layout": _layout_table,
    "attrib.by_step_ms": _by_step_table,
}


def _rank_table(result: FactSet) -> list[str]:
    scopes = sorted({f.scope for f in result.facts if f.scope != JOB_SCOPE}, key=_scope_key)
    if not scopes:
        return []
    cols = [
        ("step.time_ms", "step ms"),
        ("step.compute_ratio", "compute"),
        ("step.comm_exposed_ratio", "exp.comm"),
        ("step.free_ratio", "free"),
        ("comm.wait_ratio", "comm wait"),
    ]
    lines = ["", "per rank", f"  {'rank':<8}" + "".join(f"{title:>11}" for _, title in cols)]
    for scope in scopes:
        cells = []
        for fact_id, _ in cols:
            fact = result.get(fact_id, scope)
            cells.append(format_value(fact.value, fact.unit) if fact else "-")
        lines.append(f"  {scope.split(':', 1)[-1]:<8}" + "".join(f"{c:>11}" for c in cells))
    return lines


def _scope_key(scope: str) -> tuple[int, str]:
    tail = scope.split(":", 1)[-1]
    return (int(tail), "") if tail.isdigit() else (1 << 30, tail)


def _inputs_line(inputs: list[str]) -> str:
    if not inputs:
        return "inputs: none"
    if len(inputs) <= 4:
        return "inputs: " + ", ".join(inputs)
    folders = sorted({str(Path(p).parent) for p in inputs})
    return f"inputs: {len(inputs)} files in {len(folders)} folders (--format json lists them)"


def facts_text(result: FactSet, show_notes: bool = False) -> str:
    lines: list[str] = [f"warning: {w}" for w in result.warnings]
    job = [f for f in result.facts if f.scope == JOB_SCOPE]
    for area in AREAS:
        facts = [f for f in job if _area(f) == area]
        if not facts:
            continue
        lines.append("")
        lines.append(area)
        for fact in facts:
            lines.append(f"  {fact.id:<34} {format_value(fact.value, fact.unit):<24} {fact.source}")
            table = _TABLES.get(fact.id)
            if table is not None and isinstance(fact.value, list):
                lines.extend(table(fact.value))
            if show_notes and fact.note:
                lines.append(f"      {fact.note}")
    lines.extend(_rank_table(result))
    if result.missing:
        lines.append("")
        lines.append("missing (not computed, with the reason)")
        for miss in result.missing:
            lines.append(f"  {miss.id:<34} {miss.reason}")
    lines.append("")
    lines.append(_inputs_line(result.inputs))
    return "\n".join(lines).lstrip("\n") + "\n"


@dataclass(frozen=True)
class FactsReport:
    facts: FactSet
    show_notes: bool = False


FORMATS: dict[str, Callable[[FactsReport], str]] = {
    "text": lambda r: facts_text(r.facts, show_notes=r.show_notes),
    "json": lambda r: facts_json(r.facts) + "\n",
}
