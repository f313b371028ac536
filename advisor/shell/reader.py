"""A launch script's training command as bash gives it: the one reader every dialect shares.

Variables are assigned in order (`TP=8`, `GPT_ARGS="--flag v \\ ..."`, `$((...))`,
`${V:-default}`), the launcher command (torchrun, `python -m torch.distributed.run|launch`,
msrun, after `exec`/`nohup`/`env`) is expanded with unquoted groups split into fields, and its
program (`pretrain_gpt.py`, `train_fsdp2.py`, ...) and the arguments after it are kept with the
file position of every character. Pipes, redirections and `&&` end the command, so `| tee log`
or `2>&1` never become an argument; what only running the script gives (`$@`, `$(...)`) is an
opaque character, never text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from advisor.shell.commands import Command, line_of, split_commands
from advisor.shell.expand import OPAQUE, Char, Expander, Field, Value, split_fields
from advisor.shell.launcher import launcher_end
from advisor.shell.words import array_elements

_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\+?)=")
_DECLARERS = {"export", "declare", "typeset", "readonly", "local"}


@dataclass
class Variable:
    name: str
    value: Value
    line: int
    conditional: bool = False
    alternatives: tuple[Value, ...] = ()  # other values it may hold (set inside a block)
    elements: tuple[Value, ...] | None = None  # an array's elements (`value`: the first)


@dataclass
class CommandReading:
    """The script's variables and its (last) launcher command, split at the program."""

    path: Path
    text: str
    variables: dict[str, Variable] = field(default_factory=dict)
    launcher: list[Field] = field(default_factory=list)  # fields before the program
    program: str | None = None  # its file name: pretrain_gpt.py, train_fsdp2.py, ...
    program_field: Field | None = None
    arguments: list[Field] = field(default_factory=list)  # fields after the program
    command: Command | None = None
    notes: list[str] = field(default_factory=list)
    undefined: set[str] = field(default_factory=set)  # read but never set

    @property
    def command_line(self) -> int | None:
        return line_of(self.text, self.command.start) if self.command else None

    @property
    def command_end_line(self) -> int | None:
        return line_of(self.text, self.command.end) if self.command else None

    def launcher_value(self, *names: str) -> int | None:
        """A launcher option's whole-number value (`--nnodes 2`, `--nnodes=2`)."""
        texts = [f.text for f in self.launcher]
        for i, text in enumerate(texts):
            for name in names:
                value = None
                if text == name and i + 1 < len(texts):
                    value = texts[i + 1]
                elif text.startswith(name + "="):
                    value = text.split("=", 1)[1]
                if value is not None and value.isdigit():
                    return int(value)
        return None

    @property
    def world_size(self) -> int | None:
        """Processes started: torchrun's nodes x processes per node, msrun's worker count."""
        workers = self.launcher_value("--worker_num", "--worker-num")
        if workers is not None:
            return workers
        nodes = self.launcher_value("--nnodes")
        per_node = self.launcher_value("--nproc_per_node", "--nproc-per-node")
        return nodes * per_node if nodes is not None and per_node is not None else None

    @property
    def nnodes(self) -> int | None:
        return self.launcher_value("--nnodes")

    @property
    def nproc_per_node(self) -> int | None:
        return self.launcher_value("--nproc_per_node", "--nproc-per-node")


def _program_index(fields: list[Field]) -> int | None:
    """The training program among the fields after the launcher: the first `.py` path (its
    folder may be computed: `$(dirname $0)/pretrain_gpt.py`)."""
    return next((i for i, f in enumerate(fields) if f.text.endswith(".py")), None)


def _evaluated(fields: list[Field]) -> list[Field]:
    """The fields `eval` runs: its arguments joined by spaces and split again (a text only
    running the script gives is not followed: no fields). Leading assignments are dropped."""
    if any(f.opaque for f in fields):
        return []
    joined: list[Char] = []
    for f in fields:
        if joined:
            joined.append(Char(" ", None, split=True))
        joined.extend(replace(c, split=True) for c in f.chars)
    out = split_fields(tuple(joined))
    while out and _ASSIGN.match(out[0].text):
        out = out[1:]
    if out and out[0].text == "eval":
        return _evaluated(out[1:])
    return out


def _joined(elements: tuple[Value, ...]) -> Value:
    """An array's elements as one value, split where they were separate."""
    out: list[Char] = []
    for k, item in enumerate(elements):
        if k:
            out.append(Char(" ", None, split=True))
        out.extend(item)
    return tuple(out)


class _Reader:
    def __init__(self, path: Path, text: str) -> None:
        self.reading = CommandReading(path, text)
        self.expander = Expander(text, self._lookup, self._elements)

    def _lookup(self, name: str) -> Value | None:
        var = self.reading.variables.get(name)
        return var.value if var is not None else None

    def _elements(self, name: str) -> tuple[Value, ...] | None:
        var = self.reading.variables.get(name)
        return var.elements if var is not None else None

    def _array(self, open_at: int) -> tuple[Value, ...]:
        """The elements of `NAME=(...)` whose `(` is at `open_at`: each word expanded, an
        unquoted expansion split into several."""
        found = array_elements(self.reading.text, open_at)
        if found is None:  # the splitter already refused an unclosed one
            return ((Char(OPAQUE, None, split=True),),)
        return tuple(f.chars for s, e in found[1] for f in split_fields(self.expander.word(s, e)))

    def _assign(self, start: int, end: int, depth: int) -> None:
        text = self.reading.text
        m = _ASSIGN.match(text, start)
        assert m is not None
        name = m.group(1)
        previous = self.reading.variables.get(name)
        elements: tuple[Value, ...] | None = None
        if text[m.end() : m.end() + 1] == "(":
            # `NAME=(a b c)`: an array; `$NAME` is its first element
            elements = self._array(m.end())
            if m.group(2) and previous is not None:
                elements = (previous.elements or (previous.value,)) + elements
            value = elements[0] if elements else ()
        else:
            value = self.expander.word(m.end(), end)
            if m.group(2) and previous is not None:
                value = previous.value + value
        line = line_of(text, start)
        if depth == 0:
            self.reading.variables[name] = Variable(name, value, line, elements=elements)
            return
        # inside a block: it may or may not run, so the value is either
        unsure = tuple(replace(c, sure=False) for c in value)
        maybe = (
            tuple(tuple(replace(c, sure=False) for c in item) for item in elements)
            if elements is not None
            else None
        )
        before = previous.elements if previous is not None else None
        alternatives = (
            (_joined(before) if before is not None else previous.value,)
            if previous is not None
            else ((),)
        )
        self.reading.variables[name] = Variable(
            name, unsure, line, True, alternatives, elements=maybe
        )

    def command(self, cmd: Command) -> None:
        text = self.reading.text
        words = cmd.texts(text)
        depth = 1 if cmd.conditional else 0
        if words[0] in _DECLARERS:
            for word, w in zip(words[1:], cmd.words[1:], strict=True):
                if _ASSIGN.match(word):
                    self._assign(w.start, w.end, depth)
            return
        if words[0] == "unset":
            for word in words[1:]:
                self.reading.variables.pop(word, None)
            return
        k = 0
        while k < len(words) and _ASSIGN.match(words[k]):
            k += 1
        if k == len(words):  # only assignments: they set script variables
            for w in cmd.words:
                self._assign(w.start, w.end, depth)
            return
        fields: list[Field] = []
        for w in cmd.words[k:]:
            fields.extend(split_fields(self.expander.word(w.start, w.end)))
        if words[k] == "eval":
            fields = _evaluated(fields[1:])
        past = launcher_end([f.text for f in fields])
        if past is not None:
            self._training_command(cmd, fields[:past], fields[past:])

    def _training_command(self, cmd: Command, launcher: list[Field], after: list[Field]) -> None:
        reading = self.reading
        program = _program_index(after)
        if program is None:
            return
        if reading.command is not None:
            reading.notes.append(
                f"line {line_of(reading.text, cmd.start)}: a second launcher command; "
                "the last is read"
            )
        reading.command = cmd
        reading.launcher = launcher + after[:program]
        reading.program_field = after[program]
        reading.program = after[program].text.rsplit("/", 1)[-1]
        arguments = after[program + 1 :]
        if cmd.depth > 0:
            arguments = [Field(tuple(replace(c, sure=False) for c in f.chars)) for f in arguments]
            reading.notes.append("the training command sits inside a block: every flag is unknown")
        reading.arguments = arguments


def read_command(path: Path, text: str) -> CommandReading:
    """The script's launcher command as bash gives it (`command` None: it starts none);
    raises ShellError where bash itself would fail to read the text."""
    reader = _Reader(path, text)
    for cmd in split_commands(text):
        reader.command(cmd)
    reader.reading.undefined = set(reader.expander.undefined)
    return reader.reading
