"""Work started aside in a forked process: its result, its errors, and the fallbacks where no
process runs it."""

from __future__ import annotations

import os

import pytest

from advisor.parsers.traces import workers

FORKS = workers.pool_context().get_start_method() == "fork"


@pytest.mark.skipif(not FORKS, reason="the platform cannot fork: the work is done in process")
def test_work_worth_a_process_runs_in_one_and_returns_its_result() -> None:
    collect = workers.aside("test", os.getpid, worth=True)
    assert collect() != os.getpid()


def test_work_not_worth_a_process_is_done_here_at_once() -> None:
    ran: list[int] = []

    def work() -> int:
        ran.append(os.getpid())
        return 7

    collect = workers.aside("test", work, worth=False)
    assert ran == [os.getpid()]
    assert collect() == 7 and ran == [os.getpid()]


@pytest.mark.skipif(not FORKS, reason="the platform cannot fork: the work is done in process")
def test_an_error_of_the_work_propagates_from_the_collector() -> None:
    def work() -> int:
        raise ValueError("broken input")

    collect = workers.aside("test", work, worth=True)
    with pytest.raises(ValueError, match="broken input"):
        collect()


@pytest.mark.skipif(not FORKS, reason="the platform cannot fork: the work is done in process")
def test_a_process_that_dies_leaves_the_work_to_the_collector() -> None:
    parent = os.getpid()

    def work() -> int:
        if os.getpid() != parent:
            os._exit(1)  # killed (out of memory, a signal)
        return 42

    assert workers.aside("test", work, worth=True)() == 42


def test_one_core_does_the_work_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    assert workers.aside("test", os.getpid, worth=True)() == os.getpid()
