"""How long reads say how far they are: a reporter the command line installs, a no-op default.

Readers open a task (`with task("ranks", total=32, unit="ranks") as t: ... t.advance()`) and
never know whether anybody watches; the CLI shows a bar on a terminal and nothing otherwise.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol


class Task(Protocol):
    def advance(self, amount: float = 1.0) -> None: ...

    def close(self) -> None: ...


class Reporter(Protocol):
    def open(self, label: str, total: float, unit: str) -> Task: ...


class _Silent:
    def advance(self, amount: float = 1.0) -> None:
        return None

    def close(self) -> None:
        return None

    def open(self, label: str, total: float, unit: str) -> Task:
        return self


_SILENT = _Silent()
_REPORTER: ContextVar[Reporter | None] = ContextVar("advisor_progress", default=None)


@contextmanager
def reporting(reporter: Reporter) -> Iterator[None]:
    """Install `reporter` for the reads inside the block."""
    token = _REPORTER.set(reporter)
    try:
        yield
    finally:
        _REPORTER.reset(token)


@contextmanager
def task(label: str, total: float, unit: str) -> Iterator[Task]:
    opened = (_REPORTER.get() or _SILENT).open(label, total, unit)
    try:
        yield opened
    finally:
        opened.close()
