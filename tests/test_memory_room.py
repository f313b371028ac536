"""After a run that ran out of device memory, a change that holds more device memory waits until
a change that lowers the peak is kept (rules/tune.yaml memory_room; effect.device_memory)."""

from __future__ import annotations

import pytest

from advisor.engine.loop import History
from advisor.engine.memory_room import out_of_room, waits_for_room
from advisor.engine.rules import load_rules
from advisor.inputs.ledger import LedgerEvent

FORWARD = "feature.fsdp-forward-prefetch"
BACKWARD = "feature.fsdp-backward-prefetch"


def _history(*events: tuple[str, str, str | None]) -> History:
    return History.of(
        [LedgerEvent.of({"event": e, "feature": f, "failure": why}) for e, f, why in events]
    )


def test_a_prefetch_step_waits_after_the_other_ran_out_of_memory() -> None:
    rules = load_rules()
    history = _history(("applied", FORWARD, None), ("failed", FORWARD, "out-of-memory"))
    backward = rules.feature(BACKWARD)
    assert backward is not None and backward.effect.device_memory == "more"
    assert waits_for_room(backward, rules, history) == FORWARD
    # a change that does not add memory goes on
    rmsnorm = rules.feature("feature.fused-rmsnorm")
    assert rmsnorm is not None and waits_for_room(rmsnorm, rules, history) is None


def test_room_returns_once_a_change_that_lowers_the_peak_is_kept() -> None:
    rules = load_rules()
    failed = (("failed", FORWARD, "out-of-memory"),)
    kept_fusion = _history(*failed, ("kept", "feature.fused-rmsnorm", None))
    assert out_of_room(rules, kept_fusion) == FORWARD  # the peak did not move
    kept_allocator = _history(*failed, ("kept", "feature.expandable-segments", None))
    assert out_of_room(rules, kept_allocator) is None


def test_a_run_that_failed_for_another_cause_leaves_room() -> None:
    rules = load_rules()
    assert out_of_room(rules, _history(("failed", FORWARD, "hccl-timeout"))) is None


def test_the_change_that_ran_out_stays_failed_by_default() -> None:
    from advisor.engine.memory_room import room_made

    rules = load_rules()
    freed = _history(
        ("failed", FORWARD, "out-of-memory"), ("kept", "feature.expandable-segments", None)
    )
    # rules/tune.yaml: a failed run's change is never tried again in the job
    assert room_made(rules, freed) == {}


def test_where_allowed_the_change_that_ran_out_runs_once_more_after_memory_is_freed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from advisor.engine import memory_room as room
    from advisor.engine.memory_room import MemoryRoom, room_made
    from advisor.model import Grounds

    allowed = MemoryRoom(frozenset({"out-of-memory"}), retry_failed=True)
    monkeypatch.setattr(room, "memory_room", lambda: allowed)
    rules = load_rules()
    failed = (("failed", FORWARD, "out-of-memory"),)
    assert room_made(rules, _history(*failed, ("kept", "feature.fused-rmsnorm", None))) == {}
    freed = _history(*failed, ("kept", "feature.expandable-segments", None))
    again = room_made(rules, freed)
    assert list(again) == [FORWARD] and again[FORWARD].code is Grounds.memory_freed
    assert again[FORWARD].values["freed_by"] == "feature.expandable-segments"
    # once: a proposal made again (the ledger's retry) and failed again stays failed
    retried = History.of(
        [
            *freed.events,
            LedgerEvent.of({"event": "proposed", "feature": FORWARD, "retry": {"code": "x"}}),
            LedgerEvent.of({"event": "failed", "feature": FORWARD, "failure": "out-of-memory"}),
        ]
    )
    assert room_made(rules, retried) == {}
