"""The exposed FSDP parameter all-gathers of a rank's steady steps, split by the pass that
issued them (parsers/traces/fsdp_passes.py): what forward prefetch can hide, and what backward
prefetch can (each pass's first all-gather in a step left out: no earlier hook of the pass to
prefetch it from). Per step as every time fact; with the passes' first all-gathers they add up
to the all-gathers' exposed time (attrib.comm_exposed_by_kind_ms allgather) when every
all-gather is FSDP's. With the same
hooks marking where the backward pass starts on the host, each pass's device lag: how long its
device work still ran after its last launch, what hiding its all-gathers can save at most."""

from __future__ import annotations

from advisor.facts.base import Recorder
from advisor.facts.contract import Deriver, RankInputs, Scope
from advisor.facts.steady import PerStep
from advisor.parsers.profile_data import StepRow
from advisor.parsers.traces.fsdp_passes import AllGatherPasses

PASS_FACTS = {
    "forward": "comm.exposed_allgather_forward_ms",
    "backward": "comm.exposed_allgather_backward_ms",
}
LAG_FACTS = {
    "forward": "host.forward_device_lag_ms",
    "backward": "host.backward_device_lag_ms",
}
IDLE_FACTS = {
    "forward": "comm.allgather_idle_forward_ms",
    "backward": "comm.allgather_idle_backward_ms",
}
NO_TRACE = (
    "no trace: the all-gathers' pass is read from the host ranges of trace_view.json (keep it: "
    "profile_export_type text, with CPU activity)"
)
NOT_MEASURED = (
    "the all-gathers' pass is measured on torch_npu traces (trace_view.json), not yet on "
    "PyTorch traces"
)


def _missing(out: Recorder, reason: str) -> None:
    for fact_id in (*PASS_FACTS.values(), *LAG_FACTS.values(), *IDLE_FACTS.values()):
        out.miss(fact_id, reason)


def _lags(
    split: AllGatherPasses, rows: list[StepRow], per: PerStep, source: str, out: Recorder
) -> None:
    """Each pass's device lag behind the host, per steady step as every time fact."""
    if not all(r.step in split.lag_by_step for r in rows):
        for fact_id in LAG_FACTS.values():
            out.miss(
                fact_id,
                "no FSDP pre-backward hook (or no linked launches) in every steady step to "
                "split its passes",
            )
        return
    for name, fact_id in LAG_FACTS.items():
        part = sum(split.lag_by_step[r.step][name] for r in rows if r.step is not None)
        out.add(
            fact_id,
            round(per.ms(part), 4),
            source,
            f"the end of the last kernel the {name} pass launched less its last launch: what "
            f"faster {name} device work can save before the host paces it; {per.note}",
        )


def derive(given: RankInputs, out: Recorder) -> None:
    rank = given.profile
    if rank.trace is None:
        _missing(out, NO_TRACE)
        return
    split = rank.trace.allgather_passes
    if split is None:
        _missing(out, NOT_MEASURED)
        return
    if split.absent:
        _missing(out, split.absent)
        return
    rows = [r for r in given.steady.rows if r.step is not None and r.step in split.by_step]
    if not rows or len(rows) != len(given.steady.rows):
        _missing(out, "the trace has no ProfilerStep window for every steady step")
        return
    per = PerStep.of([r.total for r in rows])
    source = (
        f"{rank.trace.path.name}:FSDP::all_gather ranges + hcom_allGather tasks outside the "
        "Computing lane"
    )
    for name, fact_id in PASS_FACTS.items():
        part = sum(split.by_step[r.step][name] for r in rows if r.step is not None)
        out.add(
            fact_id,
            round(per.ms(part), 4),
            source,
            f"all-gathers issued from FSDP's {name} hooks, paired in issue order; {per.note}",
        )
    for name, fact_id in IDLE_FACTS.items():
        if not all(r.step in split.idle_by_step for r in rows):
            out.miss(fact_id, "the trace's split has no all-gather stream times for every step")
            continue
        part = sum(split.idle_by_step[r.step][name] for r in rows if r.step is not None)
        out.add(
            fact_id,
            round(per.ms(part), 4),
            source,
            f"the time between the {name} pass's first and last all-gather that none runs: the "
            f"room prefetch has to start them earlier; {per.note}",
        )
    _lags(split, rows, per, f"{rank.trace.path.name}:FSDP hooks + launch flows", out)


DERIVER = Deriver[RankInputs](
    name="allgather_passes",
    scope=Scope.RANK,
    inputs=frozenset({"profile", "steady"}),
    reads=frozenset(),
    writes=frozenset((*PASS_FACTS.values(), *LAG_FACTS.values(), *IDLE_FACTS.values())),
    derive=derive,
)
