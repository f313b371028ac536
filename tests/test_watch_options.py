"""watch never hangs and never crashes on its options, and sees a log rewritten in place."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from advisor.app.watch import follow
from tests.cli_run import run_cli
from tests.test_trainlog import fsdp2_line


@pytest.mark.parametrize("poll", ["0", "-1", "nan", "inf"])
def test_a_poll_that_is_not_a_positive_number_is_one_line(tmp_path: Path, poll: str) -> None:
    log = tmp_path / "train.log"
    log.write_text(fsdp2_line(1, 1800.0) + "\n")
    ran = run_cli("watch", str(log), "--poll", poll, "--idle-timeout", "0")
    assert ran.exit_code == 2, ran.output
    assert "--poll" in ran.stderr and "positive" in ran.stderr
    assert "Traceback" not in ran.output


def test_a_negative_idle_timeout_is_one_line(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(fsdp2_line(1, 1800.0) + "\n")
    ran = run_cli("watch", str(log), "--idle-timeout", "-5")
    assert ran.exit_code == 2 and "--idle-timeout" in ran.stderr, ran.output


def test_the_idle_timeout_counts_time_not_polls(tmp_path: Path) -> None:
    """With a clock that advances, idle time is measured on it, whatever the poll interval."""
    log = tmp_path / "train.log"
    log.write_text(fsdp2_line(1, 1800.0) + "\n")
    now = [0.0]
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        now[0] += 0.25

    lines = list(follow(log, 1e-6, 1.0, sleep=sleep, clock=lambda: now[0]))
    assert len(lines) == 1
    assert len(sleeps) == 4  # 4 x 0.25 s of clock: stopped at the timeout, not spinning


def test_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "train.log"
    os.mkfifo(fifo)
    ran = run_cli("watch", str(fifo), "--idle-timeout", "0")
    assert ran.exit_code == 2 and "not a regular file" in ran.stderr, ran.output


def test_a_same_size_rewrite_with_a_nan_loss_is_seen(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    first = "\n".join(fsdp2_line(i, 1800.0, loss=2.5) for i in range(1, 4)) + "\n"
    second = "\n".join(fsdp2_line(i, 1800.0, loss="nan") for i in range(1, 4)) + "\n"
    second = second.ljust(len(first) - 1)[: len(first) - 1] + "\n"
    assert len(second) == len(first)
    log.write_text(first)
    rewritten = [False]

    def sleep(_: float) -> None:
        if not rewritten[0]:
            # truncate and rewrite to the same size, with a later modification time
            stat = log.stat()
            log.write_text(second)
            os.utime(log, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
            rewritten[0] = True
        else:
            raise StopIteration

    seen: list[str] = []
    try:
        for _, line in follow(log, 0.01, None, sleep=sleep):
            seen.append(line)
    except RuntimeError:  # the StopIteration raised inside the generator ends the test's loop
        pass
    assert len(seen) == 6 and "nan" in seen[-1]
