"""Command line: parse arguments, call the pipeline, render, choose the exit code.

The commands live in small modules of this package; they are registered here, explicitly.
"""

from __future__ import annotations

import sys
import time
import traceback
from contextlib import nullcontext
from pathlib import Path
from typing import Annotated, NoReturn

import typer
import typer.core
import typer.main

from advisor import __version__
from advisor.cli import console
from advisor.cli.check_cmds import check_cmd
from advisor.cli.help_text import polish, usage_message
from advisor.cli.loop_cmds import compare_cmd, estimate_cmd, ledger_cmd, watch_cmd
from advisor.cli.options import EXIT_INPUT_ERROR, QuietOpt, VerboseOpt
from advisor.cli.profile_cmds import diagnose, facts, suggest
from advisor.cli.report_cmds import report_cmd
from advisor.cli.rules_cmds import rules_graph, rules_lint, rules_list, rules_show
from advisor.inputs import progress
from advisor.model import AdvisorError

app = typer.Typer(
    name="advisor",
    help="Reads training profiles, finds the bottleneck, and proposes the one next change.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
rules_app = typer.Typer(
    help="List, show, lint and draw the rule graph.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(rules_app, name="rules")

app.command()(facts)
app.command()(diagnose)
app.command()(suggest)
app.command("report")(report_cmd)
app.command("check")(check_cmd)
app.command("compare")(compare_cmd)
app.command("estimate")(estimate_cmd)
app.command("watch")(watch_cmd)
app.command("ledger")(ledger_cmd)
rules_app.command("list")(rules_list)
rules_app.command("show")(rules_show)
rules_app.command("lint")(rules_lint)
rules_app.command("graph")(rules_graph)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"advisor {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """advisor: profile in, one validated change out."""


def command() -> typer.core.TyperGroup:
    """The click command tree of the app, with linter-style help (cli.help_text)."""
    group = typer.main.get_command(app)
    return polish(group)  # type: ignore[no-any-return]


def main() -> None:
    started = time.monotonic()
    console.reset()
    try:
        # without standalone mode click returns a command's exit code instead of exiting
        with (
            progress.reporting(console.TerminalProgress())
            if console.stderr_is_terminal()
            else nullcontext()
        ):
            code = command().main(prog_name="advisor", standalone_mode=False)
        console.detail(f"done in {time.monotonic() - started:.2f} s")
        if isinstance(code, int) and code:
            sys.exit(code)
    except AdvisorError as exc:
        print(f"advisor: error: {exc}", file=sys.stderr)
        sys.exit(EXIT_INPUT_ERROR)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        print("advisor: aborted", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:  # click usage errors carry their own exit code
        code = getattr(exc, "exit_code", None)
        show = getattr(exc, "show", None)
        if code is not None and callable(show):
            message = getattr(exc, "message", None)
            if isinstance(message, str):
                exc.message = usage_message(message)  # type: ignore[attr-defined]
            show()
            sys.exit(code)
        _internal_error(exc)


def _internal_error(exc: BaseException) -> NoReturn:
    """A bug, not bad input: one line (the traceback with -v) and exit 2, so a CI recipe that
    keeps its report on findings (exit 1) never mistakes a crash for findings."""
    if console.VERBOSITY.verbose:
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
