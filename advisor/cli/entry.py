"""The `advisor` program: run the command tree, map what it raises to one line and an exit code.

Exit codes: 0 success, 1 findings or a revert verdict (3 inconclusive), 2 a usage or input
error or a crash (one "internal error" line), so a CI step that accepts 1 never mistakes a crash
for findings.
"""

from __future__ import annotations

import time

# the first thing the program does: -v reports how long the imports took from here (a run in
# a process that ran the program before starts its clock when it starts)
_FIRST_RUN_STARTED: list[float] = [time.monotonic()]

import sys  # noqa: E402
from contextlib import nullcontext  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import NoReturn  # noqa: E402

import typer  # noqa: E402

import advisor.cli.console as console  # noqa: E402
from advisor.cli.help_text import usage_message  # noqa: E402
from advisor.cli.options import EXIT_INPUT_ERROR  # noqa: E402
from advisor.inputs import progress  # noqa: E402


def main() -> None:
    started = _FIRST_RUN_STARTED.pop() if _FIRST_RUN_STARTED else time.monotonic()
    from advisor.cli.commands import command, named_command

    console.reset()
    tree = command(named_command(sys.argv[1:]))
    imported = time.monotonic()
    try:
        # without standalone mode click returns a command's exit code instead of exiting
        with (
            progress.reporting(console.TerminalProgress())
            if console.stderr_is_terminal()
            else nullcontext()
        ):
            code = tree.main(prog_name="advisor", standalone_mode=False)
        console.detail(f"start-up (imports) in {imported - started:.2f} s")
        console.detail(f"done in {time.monotonic() - started:.2f} s")
        if isinstance(code, int) and code:
            sys.exit(code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        print("advisor: aborted", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:
        if _is_input_error(exc):
            print(f"advisor: error: {exc}", file=sys.stderr)
            sys.exit(EXIT_INPUT_ERROR)
        # click usage errors carry their own exit code
        code = getattr(exc, "exit_code", None)
        show = getattr(exc, "show", None)
        if code is not None and callable(show):
            message = getattr(exc, "message", None)
            if isinstance(message, str):
                exc.message = usage_message(message)  # type: ignore[attr-defined]
            show()
            sys.exit(code)
        _internal_error(exc)


def _is_input_error(exc: BaseException) -> bool:
    """Bad input (a file, a value): the domain's error classes, imported only when raised —
    `advisor --help` never loads the domain model."""
    model = sys.modules.get("advisor.model")
    return model is not None and isinstance(exc, model.AdvisorError)


def _internal_error(exc: BaseException) -> NoReturn:
    """A bug, not bad input: one line (the traceback with -v) and exit 2, so a CI recipe that
    keeps its report on findings (exit 1) never mistakes a crash for findings."""
    if console.VERBOSITY.verbose:
        import traceback

        traceback.print_exception(exc)
    where = ""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is not None:
        where = f" at {Path(tb.tb_frame.f_code.co_filename).name}:{tb.tb_lineno}"
    print(
        f"advisor: internal error: {type(exc).__name__}: {exc}{where} — a bug in advisor; "
        "-v shows the traceback",
        file=sys.stderr,
    )
    sys.exit(EXIT_INPUT_ERROR)
