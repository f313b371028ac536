"""What the slowest compute group does that the fastest does not, kernel type by kernel type.

Ranks are grouped by device compute (the pipeline stages; without a pipeline, a straggler
apart from its peers). The slowest rank of the slowest group is compared with the fastest rank
of the fastest group, each by its own kernel table (ops.type_table, per step): the types that
account for the extra time, with their counts, and the cause the difference points to — the
loss (the unfused cross-entropy chain of rules/analyzers.yaml carries the extra time), extra
kernels (more layers, another head), or the same kernels running slower (a hardware or host
problem on that rank).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.facts.base import Recorder
from advisor.facts.contract import Deriver, JobInputs, Scope
from advisor.facts.stages import compute_groups, compute_ms, timed_ranks
from advisor.inputs.analyzer_rules import AnalyzerRules, analyzer_rules
from advisor.model import Fact

DIFF_FACTS = (
    "ops.slow_fast_ranks",
    "ops.slow_fast_extra_ratio",
    "ops.slow_fast_extra_by_type",
    "ops.slow_fast_counts",
    "ops.slow_fast_cause",
    "ops.slow_stage_loss_share",
    "ops.slow_stage_loss_ratio",
    "ops.slow_stage_loss_by_type",
)

RankFacts = Mapping[str, Fact]
TypeRow = dict[str, Any]


def _table(facts: RankFacts) -> dict[str, TypeRow] | None:
    fact = facts.get("ops.type_table")
    if fact is None or not isinstance(fact.value, list):
        return None
    return {str(row["type"]): row for row in fact.value}


def _pair(
    ranks: dict[str, RankFacts], groups: list[list[str]]
) -> tuple[str, str, str] | tuple[None, None, str]:
    """(slow, fast, how they were chosen), or (None, None, why not)."""
    with_table = {label for label, f in ranks.items() if _table(f) is not None}
    if len(with_table) < 2:
        return None, None, "fewer than two ranks have a kernel table (kernel_details.csv)"
    usable = [[label for label in g if label in with_table] for g in groups]
    usable = [g for g in usable if g]
    if len(usable) >= 2:
        slow_group, fast_group, how = usable[-1], usable[0], "slowest and fastest compute group"
    else:
        slow_group = fast_group = usable[0]
        how = "slowest and fastest rank of one compute group"
    slow = max(slow_group, key=lambda label: compute_ms(ranks[label]) or 0.0)
    fast = min(fast_group, key=lambda label: compute_ms(ranks[label]) or 0.0)
    if slow == fast:
        return None, None, "one rank with a kernel table in the compute groups"
    return slow, fast, how


def _diff(
    slow: dict[str, TypeRow], fast: dict[str, TypeRow]
) -> list[tuple[str, float, float, float]]:
    """(type, extra ms, slow count, fast count) per type, largest extra first."""
    rows = []
    for op_type in set(slow) | set(fast):
        s, f = slow.get(op_type, {}), fast.get(op_type, {})
        extra = float(s.get("per_step_ms", 0.0)) - float(f.get("per_step_ms", 0.0))
        rows.append(
            (op_type, extra, float(s.get("per_step_count", 0)), float(f.get("per_step_count", 0)))
        )
    return sorted(rows, key=lambda r: (-r[1], r[0]))


def _cause(
    rows: list[tuple[str, float, float, float]], extra: float, step: float, rules: AnalyzerRules
) -> tuple[str, float]:
    """The cause and the loss chain's extra time (ms per step)."""
    loss = sum(max(0.0, e) for t, e, _, _ in rows if t in rules.loss_chain)
    if step <= 0 or extra < rules.min_extra_ratio * step:
        return "none", loss
    if loss / extra >= rules.loss_min_share:
        return "loss", loss
    grown = sum(
        max(0.0, e) for _, e, s, f in rows if f > 0 and abs(s - f) / f <= rules.same_count_tolerance
    )
    return ("slower-kernels" if extra > 0 and grown / extra >= 0.5 else "extra-kernels"), loss


def _count(value: float) -> str:
    return f"{value:g}"


def derive(given: JobInputs, job: Recorder) -> None:
    ranks = timed_ranks(given.recorders)
    groups = None
    if len(ranks) >= 2:
        groups = given.stages[0] or compute_groups(ranks, given.thresholds.stage_split_gap)
    if not groups:
        for fact_id in DIFF_FACTS:
            job.miss(fact_id, "fewer than two ranks with step data")
        return
    slow, fast, how = _pair(ranks, groups)
    if slow is None or fast is None:
        for fact_id in DIFF_FACTS:
            job.miss(fact_id, how)
        return
    rows = _diff(_table(ranks[slow]) or {}, _table(ranks[fast]) or {})
    step = float(ranks[slow]["step.time_ms"].value)
    source = f"{given.source}:ops.type_table"
    note = (
        f"rank {slow} ({how}: the slowest) against rank {fast} (the fastest), per step, from "
        "each rank's kernel table"
    )
    _record_diff(job, rows, (slow, fast), step, source, note)


def _record_diff(
    job: Recorder,
    rows: list[tuple[str, float, float, float]],
    pair: tuple[str, str],
    step: float,
    source: str,
    note: str,
) -> None:
    rules = analyzer_rules()
    slow, fast = pair
    extra = sum(e for _, e, _, _ in rows)
    cause, loss = _cause(rows, extra, step, rules)
    top = [r for r in rows if round(r[1], 1) > 0][: rules.slow_fast_top]
    job.add("ops.slow_fast_ranks", {"slow": slow, "fast": fast}, source, note)
    job.add("ops.slow_fast_extra_ratio", extra / step if step > 0 else 0.0, source, note)
    job.add("ops.slow_fast_extra_by_type", {t: round(e, 1) for t, e, _, _ in top}, source, note)
    job.add(
        "ops.slow_fast_counts",
        {t: f"{_count(s)} vs {_count(f)}" for t, _, s, f in top},
        source,
        f"kernels per step on rank {slow} vs rank {fast}",
    )
    job.add("ops.slow_fast_cause", cause, source, _cause_note(cause, rules))
    loss_note = f"the loss chain's types (rules/analyzers.yaml) on rank {slow} beyond rank {fast}"
    # a share of the extra time only where there is extra time to share (cause "none": nothing)
    share = min(1.0, loss / extra) if cause != "none" else 0.0
    job.add("ops.slow_stage_loss_share", share, source, loss_note)
    job.add("ops.slow_stage_loss_ratio", loss / step if step > 0 else 0.0, source, loss_note)
    chain = {t: round(e, 1) for t, e, _, _ in rows if t in rules.loss_chain and round(e, 1) > 0}
    job.add("ops.slow_stage_loss_by_type", chain, source, loss_note)


def _cause_note(cause: str, rules: AnalyzerRules) -> str:
    if cause == "none":
        return (
            f"the two ranks compute within {rules.min_extra_ratio:.0%} of the step of each other: "
            "no extra time to attribute"
        )
    if cause == "loss":
        return (
            f"the loss chain's types carry at least {rules.loss_min_share:.0%} of the extra time: "
            "an unfused cross-entropy over the vocabulary"
        )
    if cause == "slower-kernels":
        return (
            "most of the extra time is in kernel types run as often on both ranks: the same "
            "kernels are slower (frequency, thermals, host contention, a sick device)"
        )
    return "the extra time is in kernels the fastest rank runs less often or not at all"


DERIVER = Deriver[JobInputs](
    name="op_diff",
    scope=Scope.JOB,
    inputs=frozenset({"recorders", "stages", "source", "thresholds"}),
    reads=frozenset(),
    writes=frozenset(DIFF_FACTS),
    derive=derive,
    applies=lambda given: given.several,
)
