"""Every fact deriver, and the runner that applies one scope's derivers in their computed order.

The list below is the one place a new fact family is added. Its order only breaks ties: a
deriver runs after the derivers whose facts it reads, whatever its place (facts/order.py).
The runner holds each deriver to its declaration: a fact it writes or calls missing that it did
not declare is a programming error, raised on the spot.
"""

from __future__ import annotations

from collections.abc import Collection
from functools import cache
from typing import Any

from advisor.facts import (
    allgather_passes,
    attrib,
    block_dim,
    cluster,
    comm,
    comm_quality,
    comm_split,
    coverage,
    exposure,
    frequency,
    fusion,
    fusion_reach,
    gpu_kernels,
    groups,
    host,
    links,
    log,
    memory,
    op_diff,
    op_types,
    ops,
    phases,
    profile,
    queue,
    spread,
    stages,
    steps,
    topology,
)
from advisor.facts.base import Recorder
from advisor.facts.contract import Deriver, InputsT, LogInputs, Scope
from advisor.facts.order import DeclarationError, derivation_order
from advisor.inputs.taxonomy import Taxonomy
from advisor.parsers.trainlog.log import TrainLog

DERIVERS: tuple[Deriver[Any], ...] = (
    # one rank
    profile.DERIVER,
    steps.DERIVER,
    attrib.DERIVER,
    allgather_passes.DERIVER,
    ops.DERIVER,
    op_types.DERIVER,
    block_dim.DERIVER,
    host.DERIVER,
    comm.DERIVER,
    exposure.DERIVER,
    comm_quality.DERIVER,
    comm_split.DERIVER,
    memory.DERIVER,
    frequency.DERIVER,
    phases.DERIVER,
    gpu_kernels.DERIVER,
    fusion.DERIVER,
    fusion_reach.DERIVER,
    queue.DERIVER,
    # the job
    stages.DERIVER,
    op_diff.DERIVER,
    spread.DERIVER,
    cluster.DERIVER,
    groups.DERIVER,
    topology.DERIVER,
    links.DERIVER,
    coverage.DERIVER,
    spread.SINGLE_RANK,
    # training logs
    log.DERIVER,
)


@cache
def plan(scope: Scope) -> tuple[Deriver[Any], ...]:
    """The derivers of `scope` in the order they run."""
    members = [d for d in DERIVERS if d.scope is scope]
    by_name = {d.name: d for d in members}
    return tuple(by_name[name] for name in derivation_order(members))


def execution(scope: Scope) -> tuple[Deriver[Any], ...]:
    """The plan's derivers in the order they run: a deriver that waits runs after the others,
    unless one after it in the plan reads its facts (then where the plan puts it)."""
    planned = plan(scope)
    last = [
        d
        for i, d in enumerate(planned)
        if d.waits and not any(_depends(later, d) for later in planned[i + 1 :])
    ]
    return tuple(d for d in planned if d not in last) + tuple(last)


def _depends(later: Deriver[Any], waiting: Deriver[Any]) -> bool:
    """Whether `later` reads the waiting deriver's facts or writes some of the same."""
    return waiting.writes_any(later.reads) or waiting.writes_any(later.writes)


def run(scope: Scope, given: InputsT, out: Recorder, only: Collection[str] | None = None) -> None:
    """Apply the derivers of `scope` (those named in `only`, when given) that apply to `given`;
    their facts are recorded in the plan's order, whatever the order they ran in."""
    planned, order = plan(scope), execution(scope)
    earlier = set(out.facts) | set(out.missing)
    touched: dict[str, list[str]] = {}
    for deriver in order:
        if (only is None or deriver.name in only) and deriver.applies(given):
            touched[deriver.name] = _run_one(deriver, given, out)
    if order != planned:
        _in_plan_order(out, earlier, [touched.get(d.name, []) for d in planned])


def _run_one(deriver: Deriver[Any], given: object, out: Recorder) -> list[str]:
    """Run one deriver; the ids of the facts and missing facts it recorded, in order."""
    facts, missing = dict(out.facts), dict(out.missing)
    deriver.derive(given, out)
    touched = [k for k, f in out.facts.items() if facts.get(k) is not f]
    touched += [k for k, m in out.missing.items() if missing.get(k) is not m]
    undeclared = sorted({k for k in touched if not deriver.declares(k)})
    if undeclared:
        raise DeclarationError(
            f"deriver {deriver.name} wrote facts it does not declare: {', '.join(undeclared)}"
        )
    return touched


def _in_plan_order(out: Recorder, earlier: set[str], by_deriver: list[list[str]]) -> None:
    """The facts and missing facts recorded before the run first (as they were), then each
    deriver's in the plan's order (each fact is one deriver's: the declarations say which)."""
    rank = {fact_id: i for i, fact_id in enumerate(k for ids in by_deriver for k in ids)}

    def place(fact_id: str) -> tuple[int, int]:
        return (0, 0) if fact_id in earlier else (1, rank.get(fact_id, len(rank)))

    out.facts = {k: out.facts[k] for k in sorted(out.facts, key=place)}
    out.missing = {k: out.missing[k] for k in sorted(out.missing, key=place)}


def derive_log(log: TrainLog, taxonomy: Taxonomy, out: Recorder) -> None:
    """The facts of training logs (rotated files together)."""
    run(Scope.LOG, LogInputs(log, taxonomy), out)
