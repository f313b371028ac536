"""Run the real entry point (exit codes, one-line errors) in this process: the CLI tests' helper,
faster than a subprocess per call."""

from __future__ import annotations

import contextlib
import io
import sys
from dataclasses import dataclass


@dataclass
class Ran:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def run_cli(*args: str) -> Ran:
    """The real entry point (exit codes, one-line errors) in this process."""
    from advisor.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved = sys.argv
    sys.argv = ["advisor", *args]
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.argv = saved
    return Ran(code, out.getvalue(), err.getvalue())
