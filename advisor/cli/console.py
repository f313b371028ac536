"""What the command line prints besides results: warnings and notes on stderr (silenced by -q,
detailed by -v), progress bars for long reads (on a terminal only), and text wrapped to the
terminal's width (plain when piped, so scripts and golden files see whole lines)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import typer

from advisor.inputs.progress import Task

# a read shorter than this never shows a bar (no flicker on small profiles)
PROGRESS_DELAY_S = 0.5


@dataclass
class _Verbosity:
    """This run's -q / -v."""

    quiet: bool = False
    verbose: bool = False


VERBOSITY = _Verbosity()


def reset() -> None:
    """Each run starts at normal verbosity (the options of this run set it)."""
    VERBOSITY.quiet = VERBOSITY.verbose = False


def set_quiet(value: bool) -> None:
    if value:
        VERBOSITY.quiet, VERBOSITY.verbose = True, False


def set_verbose(value: bool) -> None:
    if value and not VERBOSITY.quiet:
        VERBOSITY.verbose = True


def warn(message: str) -> None:
    if not VERBOSITY.quiet:
        typer.echo(f"advisor: warning: {message}", err=True)


def note(message: str) -> None:
    """A line about what was done (wrote a file...): silenced by -q."""
    if not VERBOSITY.quiet:
        typer.echo(f"advisor: {message}", err=True)


def detail(message: str) -> None:
    """A line only -v shows (inputs read, time taken)."""
    if VERBOSITY.verbose:
        typer.echo(f"advisor: {message}", err=True)


@contextmanager
def phase(name: str) -> Iterator[None]:
    """-v: how long one phase of a command took (reading and analysis, rendering, writing)."""
    started = time.monotonic()
    yield
    detail(f"{name} in {time.monotonic() - started:.2f} s")


def inputs_read(inputs: list[str]) -> None:
    """-v: every file the result was read from."""
    if VERBOSITY.verbose:
        detail(f"read {len(inputs)} file(s):")
        for path in inputs:
            typer.echo(f"  {path}", err=True)


def _terminal_width(stream: Any) -> int | None:
    if not getattr(stream, "isatty", lambda: False)():
        return None
    import shutil

    return max(40, shutil.get_terminal_size((100, 24)).columns)


def _table_row(line: str) -> bool:
    """Aligned columns (two spaces inside the text) stay whole: wrapping would break them."""
    return "  " in line.strip()


def wrap_for_terminal(text: str, width: int) -> str:
    """Long prose lines wrapped with a hanging indent; table rows and diffs untouched."""
    import textwrap

    out: list[str] = []
    in_diff = False
    for line in text.split("\n"):
        in_diff = in_diff or line.startswith(("--- ", "diff --git "))
        if in_diff or len(line) <= width or _table_row(line):
            out.append(line)
            continue
        indent = len(line) - len(line.lstrip(" "))
        bullet = line.lstrip(" ").startswith("- ")
        hanging = " " * (indent + (2 if bullet else 4))
        out.append(
            textwrap.fill(
                line,
                width=width,
                subsequent_indent=hanging,
                break_long_words=False,
                break_on_hyphens=False,
            )
        )
    return "\n".join(out)


def emit(text: str, prose: bool = True) -> None:
    """A command's result on stdout: prose wrapped on a terminal, whole lines when piped;
    machine formats (JSON, diffs, markdown) always as they are."""
    width = _terminal_width(sys.stdout) if prose else None
    typer.echo(wrap_for_terminal(text, width) if width else text, nl=False)


def read_report(inputs: list[str], warnings: list[str]) -> None:
    """After a profile is read: the files (-v) and the warnings (unless -q)."""
    inputs_read(inputs)
    for warning in warnings:
        warn(warning)


class _BarTask:
    def __init__(self, bars: TerminalProgress, label: str, total: float, unit: str) -> None:
        self.bars, self.label, self.total, self.unit = bars, label, total, unit
        self.done = 0.0
        self.started = time.monotonic()
        self.id: Any = None

    def advance(self, amount: float = 1.0) -> None:
        self.done += amount
        if self.id is None and time.monotonic() - self.started >= PROGRESS_DELAY_S:
            self.id = self.bars.show(self)
        if self.id is not None:
            self.bars.update(self)

    def close(self) -> None:
        if self.id is not None:
            self.bars.hide(self)


class TerminalProgress:
    """rich progress bars on stderr, transient (they vanish when the read ends)."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

        self.progress = Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self.live = 0

    def open(self, label: str, total: float, unit: str) -> Task:
        return _BarTask(self, label, total, unit)

    def show(self, task: _BarTask) -> Any:
        if VERBOSITY.quiet:
            return None
        if self.live == 0:
            self.progress.start()
        self.live += 1
        return self.progress.add_task(f"{task.label} ({task.unit})", total=task.total)

    def update(self, task: _BarTask) -> None:
        self.progress.update(task.id, completed=min(task.done, task.total))

    def hide(self, task: _BarTask) -> None:
        self.progress.remove_task(task.id)
        self.live -= 1
        if self.live == 0:
            self.progress.stop()


def stderr_is_terminal() -> bool:
    """Bars only where a person watches: a terminal that is not a dumb one (CI logs)."""
    return sys.stderr.isatty() and os.environ.get("TERM") != "dumb"
