"""`advisor watch`: follow a growing training log and alert on slow steps or NaN loss."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median

from advisor.model import InputError
from advisor.parsers.trainlog import Iteration, parse_line

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

    def feed(self, it: Iteration) -> list[str]:
        alerts = []
        if it.loss is not None and math.isnan(it.loss):
            alerts.append(f"ALERT iteration {it.number}: loss is NaN")
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
                    f"ALERT iteration {it.number}: step time {it.step_ms:.1f} ms > {what} "
                    f"for {self.consecutive} consecutive logged iterations ({self.streak[0]}-{it.number})"
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


def follow(
    path: Path, poll: float, idle_timeout: float | None, sleep: Callable[[float], None] = time.sleep
) -> Iterator[tuple[int, str]]:
    """Lines of a growing file (like tail -f from the start); reopens a rotated or truncated file."""
    try:
        handle = path.open("r", encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InputError(str(path), f"cannot read: {exc.strerror}") from None
    inode = os.fstat(handle.fileno()).st_ino
    buffer, number, idle = "", 0, 0.0
    try:
        while True:
            chunk = handle.readline()
            if chunk:
                idle = 0.0
                buffer += chunk
                if buffer.endswith("\n"):
                    number += 1
                    yield number, buffer.rstrip("\n")
                    buffer = ""
                continue
            try:
                stat = path.stat()
            except OSError:
                stat = None
            if stat is not None and (stat.st_ino != inode or stat.st_size < handle.tell()):
                handle.close()
                handle = path.open("r", encoding="utf-8", errors="replace")
                inode, buffer = os.fstat(handle.fileno()).st_ino, ""
                continue
            if idle_timeout is not None and idle >= idle_timeout:
                return
            sleep(poll)
            idle += poll
    finally:
        handle.close()


def watch(
    path: Path,
    watcher: Watcher,
    on_alert: Callable[[str], None],
    poll: float = 1.0,
    idle_timeout: float | None = None,
    stop_on_alert: bool = False,
) -> int:
    """Returns the number of alerts raised."""
    alerts = 0
    for number, line in follow(path, poll, idle_timeout):
        it = parse_line(line, number)
        if it is None:
            continue
        for alert in watcher.feed(it):
            alerts += 1
            on_alert(alert)
            if stop_on_alert:
                return alerts
    return alerts
