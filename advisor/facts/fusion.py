"""Fusion opportunities from the device's launch order: the unfused kernel sequences of
rules/analyzers.yaml (RMSNorm, rotary embedding, SwiGLU, the softmax cross-entropy) found in the
steady steps' kernels, with the fused operator that replaces each and its switch per config
dialect. Read from kernel_details.csv in file order or the database export's tasks in start
order; op_statistic.csv holds totals only and leaves them unknown."""

from __future__ import annotations

from advisor.facts.base import Recorder
from advisor.facts.contract import Deriver, RankInputs, Scope
from advisor.facts.op_types import is_compute
from advisor.facts.ops import select_kernels
from advisor.inputs.analyzer_rules import analyzer_rules

FUSION_FACTS = ("ops.unfused_sequences", "ops.unfused_sequence_ratio", "ops.unfused_sequence_fixes")


def _rows(found: dict[str, list[float]], steps: int) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = [
        {
            "pattern": p.name,
            "per_step_count": round(found[p.name][0] / steps, 2),
            "per_step_ms": round(found[p.name][1] / 1000.0 / steps, 4),
            "fused": p.fused,
            "switches": dict(p.switches),
        }
        for p in analyzer_rules().fusion
        if p.name in found
    ]
    rows.sort(key=lambda r: -float(str(r["per_step_ms"])))
    return rows


def _fix(row: dict[str, object]) -> str:
    switches = row["switches"]
    named = (
        ", ".join(f"{k}: {v}" for k, v in switches.items()) if isinstance(switches, dict) else ""
    )
    where = f" ({named})" if named else ""
    return f"{row['pattern']} {float(str(row['per_step_ms'])):.2f} ms per step -> {row['fused']}{where}"


def _missing(out: Recorder, why: str) -> None:
    for fact_id in FUSION_FACTS:
        out.miss(fact_id, why)


def derive(given: RankInputs, out: Recorder) -> None:
    rank = given.profile
    table = rank.kernels
    if rank.platform != "ascend":
        _missing(out, "a GPU trace: the patterns are Ascend kernel types")
        return
    if table is None or table.sequences is None:
        _missing(
            out,
            "the kernels' launch order is read from kernel_details.csv or the database export, "
            "not from op_statistic.csv (totals only)",
        )
        return
    sel = select_kernels(rank, given.steady.steps)
    compute_us = sum(g.total_us for g in sel.groups if is_compute(g, given.taxonomy)) if sel else 0
    if sel is None or compute_us <= 0:
        _missing(out, "no compute kernels in the steady steps")
        return
    kept = {g.step for g in sel.groups}
    found: dict[str, list[float]] = {}
    for (step, name), seq in table.sequences.items():
        if step in kept:
            slot = found.setdefault(name, [0.0, 0.0])
            slot[0] += seq.count
            slot[1] += seq.total_us
    rows = _rows(found, sel.steps)
    source = f"{sel.source}:Type (launch order)"
    out.add("ops.unfused_sequences", rows, source, f"longest first; {sel.note}")
    out.add(
        "ops.unfused_sequence_fixes", "; ".join(map(_fix, rows)) or "none found", source, sel.note
    )
    matched_us = sum(us for _, us in found.values())
    out.add(
        "ops.unfused_sequence_ratio",
        matched_us / compute_us,
        source,
        f"kernels in unfused sequences / device compute; {sel.note}",
    )


DERIVER = Deriver[RankInputs](
    name="fusion",
    scope=Scope.RANK,
    inputs=frozenset({"profile", "taxonomy", "steady"}),
    reads=frozenset(),
    writes=frozenset(FUSION_FACTS),
    derive=derive,
)
