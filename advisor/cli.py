"""Command line: parse arguments, call the pipeline, render, choose the exit code."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from advisor import __version__
from advisor.model import AdvisorError
from advisor.pipeline import profile_facts
from advisor.render import facts_json, facts_text

app = typer.Typer(
    name="advisor",
    help="Reads training profiles, finds the bottleneck, and proposes the one next change.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

EXIT_INPUT_ERROR = 2


class FactsFormat(StrEnum):
    text = "text"
    json = "json"


def _version(value: bool) -> None:
    if value:
        typer.echo(f"advisor {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """advisor: profile in, one validated change out."""


@app.command()
def facts(
    path: Annotated[
        Path,
        typer.Argument(
            help="A rank's *_ascend_pt / *_ascend_ms directory, its ASCEND_PROFILER_OUTPUT folder, "
            "or a folder holding one such directory per rank."
        ),
    ],
    output_format: Annotated[
        FactsFormat, typer.Option("--format", "-f", help="text table or the advisor/facts@1 JSON.")
    ] = FactsFormat.text,
    notes: Annotated[
        bool, typer.Option("--notes", help="Text: show how each fact was computed.")
    ] = False,
    skip_bad_files: Annotated[
        bool,
        typer.Option(
            "--skip-bad-files",
            help="Warn about unreadable files (e.g. a truncated trace_view.json) and use the rest.",
        ),
    ] = False,
) -> None:
    """Derive the diagnosis facts of a profile (step time model, operators, host, comm, memory)."""
    result = profile_facts(path, skip_bad_files=skip_bad_files)
    if output_format is FactsFormat.json:
        typer.echo(facts_json(result))
    else:
        for warning in result.warnings:
            typer.echo(f"advisor: warning: {warning}", err=True)
        result.warnings = []
        typer.echo(facts_text(result, show_notes=notes), nl=False)


def main() -> None:
    try:
        app(standalone_mode=False)
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
            show()
            sys.exit(code)
        raise


if __name__ == "__main__":
    main()
