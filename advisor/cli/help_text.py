"""Help and usage errors as linters print them: `--fix` (no `<bool>`), `--log LOG`, a
choice named once with its values listed in the help, and a bad choice answered with the list."""

from __future__ import annotations

import re
from typing import Any

from advisor.cli.coercion import convert_plainly

# "Value error, 'xml' is not one of 'text', 'json'." (how typer reports a bad enum value)
_NOT_ONE_OF = re.compile(r"^(?:Value error, )?(?P<value>'.*?') is not one of (?P<choices>.*?)\.?$")


def _choices(param: Any) -> list[str]:
    descriptor = getattr(param, "type_descriptor", None)
    values = getattr(descriptor, "choices", None) or ()
    return [str(getattr(v, "value", v)) for v in values]


def commands_of(command: Any) -> list[Any]:
    """The command and every command under it."""
    found = [command]
    for sub in (getattr(command, "commands", None) or {}).values():
        found.extend(commands_of(sub))
    return found


def polish(command: Any) -> Any:
    """Set each parameter's metavar: none for a flag, its upper-case name for a value; list a
    choice's values and the default in the help text. Returns the command."""
    for cmd in commands_of(command):
        help_text = getattr(cmd, "help", None)
        if help_text and not getattr(cmd, "short_help", None):
            # the whole first paragraph in the list of commands, wrapped, never cut at "..."
            cmd.short_help = " ".join(help_text.strip().split("\n\n")[0].split())
        for param in getattr(cmd, "params", []):
            if getattr(param, "is_flag", False):
                param.metavar = ""
                continue
            if type(param).__name__.endswith("Argument"):
                # the usage line names an argument in capitals, as click and argparse do
                # (typer would print `{path}`, which reads as a template left unfilled)
                param.metavar = (param.name or "value").upper()
                param.get_usage_pieces = _usage_pieces(param)
                continue
            name = (param.name or "value").upper()
            if name == "OUTPUT_FORMAT":
                name = "FORMAT"
            param.metavar = name
            choices = _choices(param)
            if choices and param.help and "one of:" not in param.help:
                param.help = f"{param.help} (one of: {', '.join(choices)})"
            if not hasattr(param, "opts") or not param.opts[0].startswith("-"):
                continue
        _plain_help_option(cmd)
        for param in getattr(cmd, "params", []):
            if type(param).__name__.endswith("Argument"):
                # an argument is named by its metavar; no second column of types
                param.display_type_rich = _no_type
    return command


def _usage_pieces(argument: Any) -> Any:
    """An argument in the usage line: PATH when required, [PATH] when not, ... when repeated."""
    name = argument.metavar if argument.required else f"[{argument.metavar}]"
    shown = [f"{name}..." if argument.nargs != 1 else name]
    return lambda ctx: shown


def _no_type(*_: Any, **__: Any) -> None:
    return None


def _plain_help_option(cmd: Any) -> None:
    """-h/--help is a flag like any other: no `<bool>` beside it, no pydantic to read it."""
    make = getattr(cmd, "get_help_option", None)
    if make is None or getattr(make, "polished", False):
        return

    def help_option(ctx: Any) -> Any:
        option = make(ctx)
        if option is not None:
            option.metavar = ""
            convert_plainly([option])  # made anew for each run: converted like the others
        return option

    help_option.polished = True  # type: ignore[attr-defined]
    cmd.get_help_option = help_option


def usage_message(message: str) -> str:
    """A bad choice as 'invalid choice: 'xml' (choose from text, json, ...)'."""
    match = _NOT_ONE_OF.match(message)
    if match is None:
        return message
    choices = ", ".join(c.strip().strip("'") for c in match.group("choices").split(","))
    return f"invalid choice: {match.group('value')} (choose from {choices})"
