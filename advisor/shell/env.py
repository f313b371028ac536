"""The environment a launch script's training command runs with, read the way bash builds it.

Commands run in order up to the launcher: `export`/`declare -x` assignments, plain assignments
(which change an exported variable's value), `export NAME` of a variable set before, `unset`,
files pulled in with `source`/`.`, and `NAME=value` prefixes of the launcher command itself. A
value that only running the script would give (`$(...)`, a variable set inside an `if` or after
`&&`) is None: unknown. This is the second, independent reading every environment edit is
checked against: the edited script must give exactly the intended value and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from advisor.shell.commands import Command, split_commands
from advisor.shell.expand import OPAQUE, Char, Expander, Value, split_fields
from advisor.shell.launcher import command_start, env_unsets, launcher_end

_EXPORTERS = {"export", "declare", "typeset"}

# where a sourced file is: (the sourcing file, the argument as written) -> its path, or None
Resolve = Callable[[Path, str], Path | None]
Read = Callable[[Path], str]


@dataclass
class _Var:
    value: Value
    known: bool = True
    exported: bool = False


@dataclass
class ShellEnv:
    """Exported variables at the launcher: name -> value, None when it cannot be known."""

    env: dict[str, str | None] = field(default_factory=dict)
    found_launcher: bool = False


def _is_assignment(word: str) -> bool:
    name, eq, _ = word.partition("=")
    name = name.removesuffix("+")  # `NAME+=v` appends
    return bool(eq) and name.replace("_", "a").isalnum() and not name[:1].isdigit()


class _Walker:
    def __init__(self, resolve: Resolve, read: Read) -> None:
        self.vars: dict[str, _Var] = {}
        self.resolve = resolve
        self.read = read
        self.seen: set[Path] = set()
        self.done = False

    def lookup(self, name: str) -> Value | None:
        var = self.vars.get(name)
        return var.value if var is not None else None

    def assign(self, expander: Expander, text: str, start: int, end: int, sure: bool) -> str:
        name, _, _ = text[start:end].partition("=")
        at = start + len(name) + 1
        # an array (`NAME=(...)`) is never exported to a child's environment: unknown here
        array = text[at : at + 1] == "("
        value = (Char(OPAQUE, None),) if array else expander.word(at, end)
        appends = name.endswith("+")  # `NAME+=v`
        name = name.removesuffix("+")
        previous = self.vars.get(name)
        if appends and previous is not None:
            value = previous.value + value
        known = sure and OPAQUE not in "".join(c.ch for c in value)
        exported = previous.exported if previous is not None else False
        self.vars[name] = _Var(value, known, exported)
        return name

    def walk(self, path: Path, text: str, main: bool) -> None:
        if path in self.seen:
            return
        self.seen.add(path)
        expander = Expander(text, self.lookup)
        for cmd in split_commands(text):
            if self.done:
                return
            self.command(path, text, expander, cmd, main)

    def command(self, path: Path, text: str, expander: Expander, cmd: Command, main: bool) -> None:
        words = cmd.texts(text)
        sure = not cmd.conditional
        first = words[0]
        if first in _EXPORTERS and (first == "export" or "-x" in words[1:2]):
            self._export(expander, text, cmd, words, sure)
        elif first == "unset":
            self._unset(words[1:], sure)
        elif first in ("source", ".") and len(cmd.words) > 1:
            self._source(path, words[1], sure)
        elif first == "eval":
            self._eval(path, expander, cmd, sure, main)
        else:
            self._assign_or_launch(expander, text, cmd, words, sure, main)

    def _export(
        self, expander: Expander, text: str, cmd: Command, words: list[str], sure: bool
    ) -> None:
        for word, w in zip(words[1:], cmd.words[1:], strict=True):
            if word.startswith("-"):
                continue
            if _is_assignment(word):
                name = self.assign(expander, text, w.start, w.end, sure)
            else:
                name = word
                self.vars.setdefault(name, _Var((), known=sure))
            var = self.vars[name]
            var.exported = True
            var.known = var.known and sure

    def _unset(self, names: list[str], sure: bool) -> None:
        for name in names:
            if sure:
                self.vars.pop(name, None)
            elif name in self.vars:
                self.vars[name].known = False

    def _source(self, path: Path, argument: str, sure: bool) -> None:
        target = self.resolve(path, argument)
        if target is None:
            return
        before = dict(self.vars) if not sure else None
        self.walk(target, self.read(target), main=False)
        if before is not None:  # a conditional source: what it set may not be set
            for name, var in self.vars.items():
                if before.get(name) is not var:
                    var.known = False

    def _eval(self, path: Path, expander: Expander, cmd: Command, sure: bool, main: bool) -> None:
        """`eval WORDS`: bash runs the words joined by spaces as script text, so a static text
        is walked as commands (it may export, or start the launcher itself). A text that only
        running the script would give is not followed and leaves the variables as they are."""
        fields = [f for w in cmd.words[1:] for f in split_fields(expander.word(w.start, w.end))]
        if any(f.opaque for f in fields):
            return
        inner = " ".join(f.text for f in fields)
        before = dict(self.vars) if not sure else None
        inner_expander = Expander(inner, self.lookup)
        for inner_cmd in split_commands(inner):
            if self.done:
                break
            if not sure:
                inner_cmd.depth += 1  # a conditional eval: nothing it sets is sure
            self.command(path, inner, inner_expander, inner_cmd, main)
        if before is not None:
            for name, var in self.vars.items():
                if before.get(name) is not var:
                    var.known = False

    def _assign_or_launch(
        self,
        expander: Expander,
        text: str,
        cmd: Command,
        words: list[str],
        sure: bool,
        main: bool,
    ) -> None:
        """Only assignments: script variables. The launcher with `NAME=v` prefixes: those
        are in the command's environment only, and the walk ends there."""
        k = 0
        while k < len(words) and _is_assignment(words[k]):
            k += 1
        if k == len(words):
            for w in cmd.words:
                self.assign(expander, text, w.start, w.end, sure)
            return
        if main and self._launches(expander, cmd, k):
            self._command_env(expander, text, cmd, sure)
            self.done = True

    def _command_env(self, expander: Expander, text: str, cmd: Command, sure: bool) -> None:
        """The launcher's own environment: the `NAME=v` words before it, also those after
        `env` (`env NAME=v torchrun`: the prefix wins over any export); `env -u NAME` removes
        NAME from it."""
        words = cmd.texts(text)
        end = command_start(words)
        for word, w in zip(words[:end], cmd.words[:end], strict=True):
            if _is_assignment(word):
                name = self.assign(expander, text, w.start, w.end, sure)
                self.vars[name].exported = True
        for name in env_unsets(words[:end]):  # `env -u NAME`: not in the command's environment
            self._unset([name], sure)

    def _launches(self, expander: Expander, cmd: Command, k: int) -> bool:
        words = cmd.words[k:]
        fields = [f.text for w in words for f in split_fields(expander.word(w.start, w.end))]
        return launcher_end(fields) is not None


def effective_env(path: Path, text: str, resolve: Resolve, read: Read) -> ShellEnv:
    """The exported environment the script's launcher command starts with."""
    walker = _Walker(resolve, read)
    walker.walk(path, text, main=True)
    env: dict[str, str | None] = {}
    for name, var in walker.vars.items():
        if var.exported:
            env[name] = "".join(c.ch for c in var.value) if var.known else None
    return ShellEnv(env, walker.done)
