"""The command tree: every command registered on the typer app, explicitly, and the root options.

The commands live in small modules of this package; `command()` turns the app into the click
command that runs: linter-style help (cli.help_text) and plain value conversion (cli.coercion).
"""

from __future__ import annotations

from typing import Annotated

import typer
import typer.core
import typer.main

from advisor import __version__
from advisor.cli.check_cmds import check_cmd
from advisor.cli.coercion import convert_plainly
from advisor.cli.help_text import commands_of, polish
from advisor.cli.loop_cmds import compare_cmd, estimate_cmd, ledger_cmd, watch_cmd
from advisor.cli.options import QuietOpt, VerboseOpt
from advisor.cli.profile_cmds import diagnose, facts, suggest
from advisor.cli.report_cmds import report_cmd
from advisor.cli.rules_cmds import rules_graph, rules_lint, rules_list, rules_show

app = typer.Typer(
    name="advisor",
    help="Reads training profiles, finds the bottleneck, and proposes the one next change."
    "\n\n\b\nExample:\n  advisor suggest prof/ config.yaml --launch run.sh",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    # plain help and usage errors, as linters print them: rich's boxed help costs more start-up
    # (importing rich and its markdown) than the rest of `advisor --help` together
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
rules_app = typer.Typer(
    help="List, show, lint and draw the rule graph.\n\n\b\nExample:\n  advisor rules list --kind feature",
    no_args_is_help=True,
    rich_markup_mode=None,
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
    """The click command tree of the app, with linter-style help and plain value conversion."""
    group = typer.main.get_command(app)
    for cmd in commands_of(group):
        convert_plainly(cmd.params)
    return polish(group)  # type: ignore[no-any-return]
