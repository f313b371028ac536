"""When a change reverted for no measurable effect is proposed again (engine/retry.py): once,
after a change was kept since, when the job has changed (the bottleneck that took its freed time
addressed, another bottleneck leading, more of the step where it acts); never after a failed run
or a measurably worse step. The ledger and the words say why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from advisor.app.rulesets import load_graph
from advisor.engine.conditions import Context
from advisor.engine.diagnose import Diagnosis
from advisor.engine.loop import History
from advisor.engine.retry import masked_by, retries, retry_policy
from advisor.inputs.ledger import Ledger, LedgerEvent
from advisor.model import Bottleneck, Grounds, Reason
from advisor.render.ledger import ledger_text
from advisor.render.retry_words import retry_reason

PREFETCH = "feature.fsdp-forward-prefetch"
COMM, HOST, COMPUTE = "bottleneck.communication", "bottleneck.host-dispatch", "bottleneck.compute"
# the run prefetch was proposed on: communication leads, the host is not in the way yet
PROPOSED_ON = {
    "leading": COMM,
    "cost_ratios": {COMM: 0.26, COMPUTE: 0.06, HOST: 0.015},
    "share": 0.30,
}


def _diagnosis(*costs: tuple[str, float]) -> Diagnosis:
    return Diagnosis(bottlenecks=[Bottleneck(b, "warning", c, [], "") for b, c in costs])


def _ctx(allgather_ms: float = 15.0, step_ms: float = 60.0) -> Context:
    facts = {
        "attrib.step_ms": step_ms,
        "attrib.comm_exposed_by_kind_ms": {"allgather": allgather_ms},
        "attrib.compute_ms": 40.0,
    }
    return Context(facts=facts, config={}, dialect="fsdp2-config")


def _history(*entries: dict[str, Any]) -> History:
    return History.of([LedgerEvent.of(e) for e in entries])


def _proposed(feature: str, bottleneck: str, **extra: Any) -> dict[str, Any]:
    return {"event": "proposed", "feature": feature, "bottleneck": bottleneck, **extra}


def _tried(feature: str, bottleneck: str, verdict: str, **extra: Any) -> list[dict[str, Any]]:
    return [
        _proposed(feature, bottleneck, proposed_on=PROPOSED_ON),
        {"event": "applied", "feature": feature, "bottleneck": bottleneck},
        {"event": verdict, "feature": feature, "bottleneck": bottleneck, **extra},
    ]


MASKED = {
    "note": "below-min-effect",
    "masked_by": {"bottleneck": HOST, "from_ratio": 0.015, "to_ratio": 0.10},
}


@pytest.fixture(scope="module")
def graph() -> Any:
    return load_graph()


def test_a_masked_change_is_retried_once_the_bottleneck_that_took_its_time_is_addressed(
    graph: Any,
) -> None:
    history = _history(
        *_tried(PREFETCH, COMM, "reverted", **MASKED),
        # proposed for compute, but its rule also addresses host dispatch (fewer launches)
        *_tried("feature.fused-rmsnorm", COMPUTE, "kept", note="beyond-noise"),
    )
    found = retries(graph, _diagnosis((COMM, 0.2), (HOST, 0.02)), _ctx(), history)
    assert found == {
        PREFETCH: Reason(
            Grounds.masking_relieved,
            {
                "masked_by": HOST,
                "relieved_by": "feature.fused-rmsnorm",
                "kept": ("feature.fused-rmsnorm",),
            },
        )
    }
    words = retry_reason(found[PREFETCH])
    assert "host-dispatch" in words and "fused-rmsnorm" in words


def test_nothing_kept_since_the_revert_means_no_retry(graph: Any) -> None:
    history = _history(
        *_tried(PREFETCH, COMM, "reverted", **MASKED),
        *_tried("feature.fused-rmsnorm", COMPUTE, "reverted", note="below-min-effect"),
        # a collection change (profile level) is kept but changes no speed
        *_tried("feature.collect-level1-profile", COMM, "kept", note="collection"),
    )
    assert retries(graph, _diagnosis((COMPUTE, 0.3), (COMM, 0.2)), _ctx(), history) == {}


def test_another_leading_bottleneck_or_a_larger_share_makes_it_a_candidate_again(
    graph: Any,
) -> None:
    unmasked = {"note": "below-min-effect"}
    kept = _tried("feature.dataloader-workers", "bottleneck.data-pipeline", "kept")
    history = _history(*_tried(PREFETCH, COMM, "reverted", **unmasked), *kept)
    leading = retries(graph, _diagnosis((COMPUTE, 0.3), (COMM, 0.2)), _ctx(), history)
    assert leading[PREFETCH].code is Grounds.leading_changed
    assert leading[PREFETCH].values["was"] == COMM and leading[PREFETCH].values["now"] == COMPUTE
    # same leader; the exposed all-gathers are 40% of the step now, 30% when proposed
    grown = retries(graph, _diagnosis((COMM, 0.4)), _ctx(allgather_ms=24.0), history)
    assert grown[PREFETCH].code is Grounds.share_grown
    assert grown[PREFETCH].values["now"] == pytest.approx(0.4)
    # 1.2 times the share is not enough (rules/thresholds.yaml planner.retry_share_growth: 1.25)
    assert retries(graph, _diagnosis((COMM, 0.4)), _ctx(allgather_ms=21.6), history) == {}


@pytest.mark.parametrize(
    "verdict",
    [
        {"event": "failed", "failure": "out-of-memory"},
        {"event": "reverted", "note": "beyond-noise"},  # measurably worse
        {"event": "reverted", "note": "loss-diverged"},
    ],
)
def test_a_failed_or_worse_change_is_never_retried(graph: Any, verdict: dict[str, Any]) -> None:
    event = verdict.pop("event")
    history = _history(
        *_tried(PREFETCH, COMM, event, **verdict, masked_by=MASKED["masked_by"]),
        *_tried("feature.expandable-segments", HOST, "kept"),
    )
    assert retries(graph, _diagnosis((COMPUTE, 0.3), (COMM, 0.2)), _ctx(), history) == {}


def test_at_most_once_per_feature(graph: Any) -> None:
    retry = {"code": "masking-relieved", "values": {}}
    history = _history(
        *_tried(PREFETCH, COMM, "reverted", **MASKED),
        *_tried("feature.expandable-segments", HOST, "kept"),
        _proposed(PREFETCH, COMM, retry=retry, proposed_on=PROPOSED_ON),
        {"event": "applied", "feature": PREFETCH},
        {"event": "reverted", "feature": PREFETCH, **MASKED},
        *_tried("feature.task-queue-level2", HOST, "kept"),
    )
    assert retries(graph, _diagnosis((COMPUTE, 0.3), (COMM, 0.2)), _ctx(), history) == {}


def test_the_bottleneck_that_took_the_freed_time_is_the_one_that_grew_most() -> None:
    changed = _diagnosis((COMM, 0.16), (HOST, 0.10), (COMPUTE, 0.065))
    assert masked_by(PROPOSED_ON, changed, COMM) == {
        "bottleneck": HOST,
        "from_ratio": 0.015,
        "to_ratio": 0.1,
    }
    # growth within the comparison's noise is no evidence
    small = retry_policy().masking_min_growth / 2
    assert masked_by(PROPOSED_ON, _diagnosis((COMM, 0.26), (HOST, 0.015 + small)), COMM) is None
    assert masked_by(None, changed, COMM) is None  # a proposal that recorded no run


def test_the_ledger_text_says_why_a_change_is_proposed_again(tmp_path: Path) -> None:
    book = Ledger.load(tmp_path / "ledger.jsonl")
    retry = {
        "code": "leading-changed",
        "values": {"was": COMM, "now": COMPUTE, "kept": ["feature.dataloader-workers"]},
    }
    book.append("reverted", PREFETCH, bottleneck=COMM, **MASKED)
    book.append("proposed", PREFETCH, bottleneck=COMM, retry=retry)
    text = ledger_text(Ledger.load(tmp_path / "ledger.jsonl"))
    assert "the time it freed went to host-dispatch (1.5% -> 10.0% of the step)" in text
    assert "Proposed again, once" in text
    assert "communication led then, compute leads now (kept since: dataloader-workers)" in text
