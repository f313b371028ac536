"""`advisor watch`: follow a growing training log and alert on slow steps, NaN loss and the
training-health signals of app/health.py."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median
from typing import BinaryIO

from advisor.app.health import Alert, Health
from advisor.core.text import require_regular
from advisor.model import InputError
from advisor.parsers.trainlog.log import Iteration, parse_line

BASELINE_SAMPLES = 20  # steady iterations that define "normal" for --regression
MIN_BASELINE = 5


@dataclass
class Watcher:
    max_step_ms: float | None = None
    regression: float | None = None
    consecutive: int = 3
    warmup: int = 1
    seen: int = 0
    baseline: list[float] = field(default_factory=list)
    streak: list[int] = field(default_factory=list)

    def feed(self, it: Iteration) -> list[Alert]:
        alerts = []
        if it.loss is not None and math.isnan(it.loss):
            alerts.append(Alert("nan-loss", it.number, "loss is NaN"))
        if it.step_ms is None or math.isnan(it.step_ms):
            return alerts
        self.seen += 1
        if self.seen <= self.warmup:
            return alerts
        limit, what = self._limit()
        if limit is not None and it.step_ms > limit:
            self.streak.append(it.number)
            if len(self.streak) == self.consecutive:
                alerts.append(
                    Alert(
                        "slow-steps",
                        it.number,
                        f"step time {it.step_ms:.1f} ms > {what} for {self.consecutive} "
                        f"consecutive logged iterations ({self.streak[0]}-{it.number})",
                        {"step_ms": it.step_ms, "first": self.streak[0]},
                    )
                )
        else:
            self.streak = []
            if len(self.baseline) < BASELINE_SAMPLES:
                self.baseline.append(it.step_ms)
        return alerts

    def _limit(self) -> tuple[float | None, str]:
        if self.max_step_ms is not None:
            return self.max_step_ms, f"{self.max_step_ms:g} ms"
        if self.regression is not None and len(self.baseline) >= MIN_BASELINE:
            normal = median(self.baseline)
            return (
                normal * self.regression,
                f"{self.regression:g} x the steady median {normal:.1f} ms",
            )
        return None, ""


def check_timing(poll: float, idle_timeout: float | None) -> None:
    """--poll must be a positive number of seconds (0 would spin a core, a negative or NaN
    sleep fails) and --idle-timeout a non-negative one."""
    if not math.isfinite(poll) or poll <= 0:
        raise InputError("--poll", f"must be a positive number of seconds, not {poll:g}")
    if idle_timeout is not None and (not math.isfinite(idle_timeout) or idle_timeout < 0):
        raise InputError(
            "--idle-timeout", f"must be a non-negative number of seconds, not {idle_timeout:g}"
        )


@dataclass
class _Reading:
    """The open log and what has been read of it: enough to tell an append from a rewrite."""

    path: Path
    handle: BinaryIO
    inode: int
    last: bytes = b""  # the last bytes read (up to FINGERPRINT): a rewrite changes them

    @classmethod
    def open(cls, path: Path) -> _Reading:
        try:
            require_regular(path, ": give the training log itself")
            handle = path.open("rb")
        except OSError as exc:
            raise InputError(str(path), f"cannot read: {exc.strerror}") from None
        return cls(path, handle, os.fstat(handle.fileno()).st_ino)

    def readline(self) -> bytes:
        chunk = self.handle.readline()
        if chunk:
            self.last = (self.last + chunk)[-FINGERPRINT:]
        return chunk

    def replaced(self) -> bool:
        """Rotated (another file), truncated, or rewritten in place (same size, shorter or
        longer, other content where it was read): read the whole file again from its start.
        Costs one small read of the bytes before the position per poll, never the whole file."""
        try:
            stat = self.path.stat()
        except OSError:
            return False
        position = self.handle.tell()
        if stat.st_ino != self.inode or stat.st_size < position:
            return True
        if not self.last:
            return False
        there = os.pread(self.handle.fileno(), len(self.last), position - len(self.last))
        return there != self.last


FINGERPRINT = 4096


def follow(
    path: Path,
    poll: float,
    idle_timeout: float | None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[tuple[int, str]]:
    """Lines of a growing file (like tail -f from the start); reads a rotated, truncated or
    rewritten file again from its start."""
    check_timing(poll, idle_timeout)
    reading = _Reading.open(path)
    buffer, number, quiet_since = "", 0, clock()
    try:
        while True:
            if reading.replaced():
                reading.handle.close()
                reading, buffer = _Reading.open(path), ""
                continue
            chunk = reading.readline()
            if chunk:
                quiet_since = clock()
                buffer += chunk.decode("utf-8", errors="replace")
                if buffer.endswith("\n"):
                    number += 1
                    yield number, buffer.rstrip("\r\n")
                    buffer = ""
                continue
            if idle_timeout is not None and clock() - quiet_since >= idle_timeout:
                return
            sleep(poll)
    finally:
        reading.handle.close()


def watch(
    path: Path,
    watcher: Watcher,
    on_alert: Callable[[Alert], None],
    poll: float = 1.0,
    idle_timeout: float | None = None,
    stop_on_alert: bool = False,
    health: Health | None = None,
) -> int:
    """Returns the number of alerts raised. `health` adds the training-health checks."""
    alerts = 0
    for number, line in follow(path, poll, idle_timeout):
        it = parse_line(line, number)
        if it is None:
            continue
        raised = watcher.feed(it) + (health.feed(it) if health is not None else [])
        for alert in raised:
            alerts += 1
            on_alert(alert)
            if stop_on_alert:
                return alerts
    return alerts
