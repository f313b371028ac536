"""The command tree: every command registered on the typer app, explicitly, and the root options.

The commands live in small modules of this package; `command()` turns the app into the click
command that runs: linter-style help (cli.help_text) and plain value conversion (cli.coercion).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Annotated

import typer
import typer.core
import typer.main

from advisor import __version__
from advisor.cli.check_cmds import check_cmd
from advisor.cli.coercion import convert_plainly
from advisor.cli.help_text import commands_of, polish
from advisor.cli.loop_cmds import compare_cmd, estimate_cmd, ledger_cmd, scaling_cmd, watch_cmd
from advisor.cli.options import QuietOpt, VerboseOpt
from advisor.cli.profile_cmds import diagnose, facts, suggest
from advisor.cli.report_cmds import report_cmd
from advisor.cli.rules_cmds import rules_graph, rules_lint, rules_list, rules_show
from advisor.cli.tune_cmds import tune_cmd

# Every command, by the name people type. The click tree of a run is built for the named command
# only: building each command's parameters is a third of `advisor check`'s start-up otherwise.
COMMANDS: dict[str, Callable[..., None]] = {
    "facts": facts,
    "diagnose": diagnose,
    "suggest": suggest,
    "report": report_cmd,
    "check": check_cmd,
    "compare": compare_cmd,
    "estimate": estimate_cmd,
    "scaling": scaling_cmd,
    "watch": watch_cmd,
    "ledger": ledger_cmd,
    "tune": tune_cmd,
}
RULES_COMMANDS: dict[str, Callable[..., None]] = {
    "list": rules_list,
    "show": rules_show,
    "lint": rules_lint,
    "graph": rules_graph,
}
RULES = "rules"
# the shell's completion calls the program with this variable set: it needs the whole tree
COMPLETION_VARIABLE = "_ADVISOR_COMPLETE"


def _version(value: bool) -> None:
    if value:
        typer.echo(f"advisor {__version__}")
        raise typer.Exit()


def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """advisor: profile in, one validated change out."""


def _typer_app(only: str | None = None) -> typer.Typer:
    """The app with every command, or with the one named `only` (its help and usage the same)."""
    root = typer.Typer(
        name="advisor",
        help="Reads training profiles, finds the bottleneck, and proposes the one next change."
        "\n\n\b\nExample:\n  advisor suggest prof/ config.yaml --launch run.sh",
        no_args_is_help=True,
        add_completion=True,
        pretty_exceptions_enable=False,
        # plain help and usage errors, as linters print them: rich's boxed help costs more
        # start-up (importing rich and its markdown) than the rest of `advisor --help` together
        rich_markup_mode=None,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    root.callback()(_root)
    for name, function in COMMANDS.items():
        if only in (None, name):
            root.command(name)(function)
    if only in (None, RULES):
        rules = typer.Typer(
            help="List, show, lint and draw the rule graph."
            "\n\n\b\nExample:\n  advisor rules list --kind feature",
            no_args_is_help=True,
            rich_markup_mode=None,
            context_settings={"help_option_names": ["-h", "--help"]},
        )
        for name, function in RULES_COMMANDS.items():
            rules.command(name)(function)
        root.add_typer(rules, name=RULES)
    return root


app = _typer_app()


def named_command(argv: Sequence[str]) -> str | None:
    """The command a run names (the first word that is not an option), when it is one of ours
    and no shell completion is asked for; None otherwise (the whole tree answers)."""
    if os.environ.get(COMPLETION_VARIABLE):
        return None
    word = next((w for w in argv if not w.startswith("-")), None)
    return word if word in COMMANDS or word == RULES else None


def command(only: str | None = None) -> typer.core.TyperGroup:
    """The click command tree, with linter-style help and plain value conversion: every command,
    or only the one named (see named_command)."""
    group = typer.main.get_command(app if only is None else _typer_app(only))
    for cmd in commands_of(group):
        convert_plainly(cmd.params)
    return polish(group)  # type: ignore[no-any-return]
