"""Command line: arguments in, a service called, a renderer chosen, the exit code out.

`main` is the program (cli.entry); `app` the typer app and `command()` the click command tree
(cli.commands). The command modules import their siblings directly, never this face, so the
package has no import cycle.
"""

# isort: off
# cli.entry first: it starts the clock from which -v reports the start-up's imports
from advisor.cli.entry import main
from advisor.cli.commands import app, command

# isort: on

__all__ = ["app", "command", "main"]
