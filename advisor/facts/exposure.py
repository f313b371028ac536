"""Exposed communication split by cause: pipeline waiting apart from the collectives.

The step model counts a pipeline stage's receive wait (the bubble, the wait for a slower
neighbour) inside Communication(Not Overlapped): torch_npu reports that wait again as Bubble.
Overlap tuning of collectives cannot win that time back, and the pipeline bottleneck already
counts it, so each millisecond of exposed communication lands in exactly one of two parts:
`step.pipeline_wait_ratio` (receive wait) and `step.comm_exposed_collective_ratio` (the rest).
Both are measured on the same rank, so the job's values (medians over the same stage) stay
disjoint too.
"""

from __future__ import annotations

from advisor.facts.base import Recorder
from advisor.facts.contract import Deriver, RankInputs, Scope
from advisor.facts.wording import collective_tasks
from advisor.model import Fact
from advisor.parsers.profile_data import RankProfile

WAIT = "step.pipeline_wait_ratio"
COLLECTIVE = "step.comm_exposed_collective_ratio"
EXPOSED = "step.comm_exposed_ratio"


def _number(out: Recorder, fact_id: str) -> float | None:
    fact: Fact | None = out.facts.get(fact_id)
    if fact is None or isinstance(fact.value, bool) or not isinstance(fact.value, int | float):
        return None
    return float(fact.value)


def _wait(out: Recorder, exposed: float, rank: RankProfile) -> tuple[float, str, str] | str:
    """The receive wait inside the exposed communication, its source and note; or why it is
    unknown."""
    bubble, p2p = _number(out, "step.bubble_ratio"), _number(out, "comm.p2p_ratio")
    pipelined = out.facts.get("job.pipeline_parallel")
    if exposed <= 0:
        return 0.0, out.facts[EXPOSED].source, "no exposed communication: nothing to wait in"
    if bubble is not None and bubble > 0:
        source = out.facts["step.bubble_ratio"].source
        note = "Bubble (receive wait) / step time, at most the exposed communication it sits in"
        return min(bubble, exposed), source, note
    if p2p is not None and pipelined is not None and pipelined.value is True:
        source = out.facts["comm.p2p_ratio"].source
        note = (
            "send/recv time / step time (the step model names no Bubble), at most the exposed "
            "communication: send/recv between stages is counted as waiting, not as a collective"
        )
        return min(p2p, exposed), source, note
    if pipelined is not None and pipelined.value is False:
        return 0.0, pipelined.source, "no send/recv between ranks: no pipeline to wait for"
    if bubble is not None:
        note = (
            "the step model's Bubble (receive wait) is 0; batched send/recv, which it does not "
            "count, would show only in communication.json"
        )
        return 0.0, out.facts["step.bubble_ratio"].source, note
    if rank.origin is not None:
        return f"{rank.origin} has no {collective_tasks(rank)} to tell the receive wait apart"
    return "neither a Bubble column nor communication.json tells the receive wait apart"


def derive(given: RankInputs, out: Recorder) -> None:
    exposed = _number(out, EXPOSED)
    if exposed is None:
        for fact_id in (WAIT, COLLECTIVE):
            out.miss(fact_id, "no exposed communication (step.comm_exposed_ratio) to split")
        return
    found = _wait(out, exposed, given.profile)
    if isinstance(found, str):
        for fact_id in (WAIT, COLLECTIVE):
            out.miss(fact_id, found)
        return
    wait, source, note = found
    out.add(WAIT, wait, source, note)
    out.add(
        COLLECTIVE,
        exposed - wait,
        out.facts[EXPOSED].source,
        f"step.comm_exposed_ratio less step.pipeline_wait_ratio ({wait:.1%} of the step)",
    )


DERIVER = Deriver[RankInputs](
    name="exposure",
    scope=Scope.RANK,
    inputs=frozenset({"profile"}),
    reads=frozenset({EXPOSED, "step.bubble_ratio", "comm.p2p_ratio", "job.pipeline_parallel"}),
    writes=frozenset({WAIT, COLLECTIVE}),
    derive=derive,
)
