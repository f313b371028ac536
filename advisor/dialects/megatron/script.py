"""A MindSpeed-LLM Megatron-backend launch script read as its training arguments.

The script is the config: knob variables (`TP=8`), flag groups (`GPT_ARGS="--flag v \\ ..."`)
and the launcher command (`torchrun $DISTRIBUTED_ARGS pretrain_gpt.py $GPT_ARGS ...`). The
arguments are computed as bash and argparse would: variables expanded in order, unquoted groups
split into fields, the last valued occurrence of a flag wins, a store_true flag is on when
present. Every argument keeps the file position of each character, which is what edits use.

What the script alone cannot tell is unknown, never guessed: a flag that comes from `$(...)` or
from a variable set inside an `if` is unknown (present or not, its value), and so is every flag
not seen after an opaque argument (it might be in there).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from advisor.model import InputError
from advisor.shell.commands import Command, line_of, split_commands
from advisor.shell.expand import (
    OPAQUE,
    Char,
    Expander,
    Field,
    ShellError,
    Value,
    split_fields,
)
from advisor.shell.launch import cli_value
from advisor.shell.launcher import launcher_end

_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\+?)=")
_DECLARERS = {"export", "declare", "typeset", "readonly", "local"}


@dataclass(frozen=True)
class Occurrence:
    """One `--flag [value...]` on the training command, in command order."""

    flag: str  # without the leading dashes
    flag_field: Field
    values: tuple[Field, ...]
    index: int  # position among the training fields

    @property
    def value_text(self) -> str | None:
        if not self.values:
            return None
        return " ".join(v.text for v in self.values)

    @property
    def known(self) -> bool:
        return self.flag_field.sure and all(v.sure and not v.opaque for v in self.values)


class MegatronArgs(Mapping[str, object]):
    """flag name -> value (True for a store_true flag), three-valued: a flag whose presence or
    value the script cannot tell maps to None, which conditions read as unknown."""

    def __init__(
        self, occurrences: list[Occurrence], opaque_at: int | None, uncertain: set[str]
    ) -> None:
        self.occurrences = occurrences
        self.opaque_at = opaque_at  # index of the last opaque field that may hold flags
        self.uncertain = set(uncertain)
        self.parsed: dict[str, object] = {}
        for occ in occurrences:
            if not occ.known or (opaque_at is not None and occ.index < opaque_at):
                self.uncertain.add(occ.flag)
            text = occ.value_text
            self.parsed[occ.flag] = True if text is None else cli_value(text)
        for occ in occurrences:  # a later known occurrence settles it
            last = self.last(occ.flag)
            if last is not None and last.known and (opaque_at is None or last.index > opaque_at):
                self.uncertain.discard(occ.flag)

    def last(self, flag: str) -> Occurrence | None:
        found = [o for o in self.occurrences if o.flag == flag]
        return found[-1] if found else None

    def all_of(self, flag: str) -> list[Occurrence]:
        return [o for o in self.occurrences if o.flag == flag]

    @property
    def opaque(self) -> bool:
        return self.opaque_at is not None

    def __getitem__(self, flag: str) -> object:
        if flag in self.uncertain:
            return None
        if flag in self.parsed:
            return self.parsed[flag]
        if self.opaque:
            return None
        raise KeyError(flag)

    def __contains__(self, flag: object) -> bool:
        return flag in self.parsed or flag in self.uncertain or self.opaque

    def __iter__(self) -> Iterator[str]:
        return iter(self.parsed)

    def __len__(self) -> int:
        return len(self.parsed)

    def known_values(self) -> dict[str, object]:
        """What can be compared between two readings of a script: known flags and the unknown
        ones marked as such."""
        out: dict[str, object] = {k: v for k, v in self.parsed.items() if k not in self.uncertain}
        out.update({k: "<unknown>" for k in self.uncertain})
        if self.opaque:
            out["<opaque>"] = True
        return out


@dataclass
class Variable:
    name: str
    value: Value
    line: int
    conditional: bool = False
    alternatives: tuple[Value, ...] = ()  # other values it may hold (set inside a block)


@dataclass
class MegatronScript:
    path: Path
    text: str
    variables: dict[str, Variable] = field(default_factory=dict)
    launcher: list[Field] = field(default_factory=list)  # fields before the training program
    program: str | None = None  # pretrain_gpt.py, posttrain_gpt.py, ...
    args: MegatronArgs = field(default_factory=lambda: MegatronArgs([], None, set()))
    command: Command | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def command_line(self) -> int | None:
        return line_of(self.text, self.command.start) if self.command else None

    def launcher_value(self, *names: str) -> int | None:
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
        nodes = self.launcher_value("--nnodes")
        per_node = self.launcher_value("--nproc_per_node", "--nproc-per-node")
        return nodes * per_node if nodes is not None and per_node is not None else None


def _unquoted_opaque(f: Field) -> bool:
    """An unquoted `$(...)` or the like: its output is split into any number of arguments."""
    return any(c.ch == OPAQUE and c.split for c in f.chars)


def _occurrences(fields: list[Field]) -> tuple[list[Occurrence], int | None]:
    occurrences: list[Occurrence] = []
    opaque_at = None
    i = 0
    while i < len(fields):
        f = fields[i]
        text = f.text
        if _unquoted_opaque(f) and not text.startswith("--"):
            opaque_at = i  # any flag may be in it
            i += 1
            continue
        if not text.startswith("--") or text == "--":
            i += 1  # a stray value: argparse would reject it; nothing to attach it to
            continue
        if "=" in text:
            name = text[2:].partition("=")[0]
            eq = len(name) + 3
            value = Field(f.chars[eq:])
            occurrences.append(Occurrence(name, Field(f.chars[: eq - 1]), (value,), i))
            if _unquoted_opaque(value):
                opaque_at = i
            i += 1
            continue
        j = i + 1
        while j < len(fields) and not _is_flag(fields[j]):
            j += 1
            if _unquoted_opaque(fields[j - 1]):
                opaque_at = j - 1
                break
        occurrences.append(Occurrence(text[2:], f, tuple(fields[i + 1 : j]), i))
        i = j
    return occurrences, opaque_at


def _is_flag(f: Field) -> bool:
    return f.text.startswith("--") and len(f.text) > 2


class _Reader:
    def __init__(self, path: Path, text: str) -> None:
        self.script = MegatronScript(path, text)
        self.expander = Expander(text, self._lookup)

    def _lookup(self, name: str) -> Value | None:
        var = self.script.variables.get(name)
        return var.value if var is not None else None

    def _assign(self, text: str, start: int, end: int, depth: int) -> None:
        m = _ASSIGN.match(text, start)
        assert m is not None
        name = m.group(1)
        value = self.expander.word(m.end(), end)
        previous = self.script.variables.get(name)
        if m.group(2) and previous is not None:
            value = previous.value + value
        line = line_of(text, start)
        if depth == 0:
            self.script.variables[name] = Variable(name, value, line)
            return
        # inside a block: it may or may not run, so the value is either
        unsure = tuple(replace(c, sure=False) for c in value)
        alternatives = (previous.value,) if previous is not None else ((),)
        self.script.variables[name] = Variable(name, unsure, line, True, alternatives)

    def command(self, cmd: Command) -> None:
        text = self.script.text
        words = cmd.texts(text)
        first = words[0]
        if first in _DECLARERS:
            for word, w in zip(words[1:], cmd.words[1:], strict=True):
                if _ASSIGN.match(word):
                    self._assign(text, w.start, w.end, 1 if cmd.conditional else 0)
            return
        if first == "unset":
            for word in words[1:]:
                self.script.variables.pop(word, None)
            return
        k = 0
        while k < len(words) and _ASSIGN.match(words[k]):
            k += 1
        if k == len(words):  # only assignments: they set script variables
            for w in cmd.words:
                self._assign(text, w.start, w.end, 1 if cmd.conditional else 0)
            return
        fields: list[Field] = []
        for w in cmd.words[k:]:
            fields.extend(split_fields(self.expander.word(w.start, w.end)))
        past = launcher_end([f.text for f in fields])
        if past is not None:
            self._training_command(cmd, fields[past:])

    def _training_command(self, cmd: Command, fields: list[Field]) -> None:
        script = self.script
        program = next((i for i, f in enumerate(fields) if f.text.endswith(".py")), None)
        if program is None:
            return
        if script.command is not None:
            script.notes.append(
                f"line {line_of(script.text, cmd.start)}: a second launcher command; the last is read"
            )
        script.command = cmd
        script.launcher = fields[:program]
        script.program = fields[program].text.rsplit("/", 1)[-1]
        training = fields[program + 1 :]
        if cmd.depth > 0:
            training = [Field(tuple(replace(c, sure=False) for c in f.chars)) for f in training]
            script.notes.append("the training command sits inside a block: every flag is unknown")
        occurrences, opaque_at = _occurrences(training)
        script.args = MegatronArgs(occurrences, opaque_at, self._uncertain_flags(training))

    def _uncertain_flags(self, training: list[Field]) -> set[str]:
        """Flags a conditionally assigned variable might add: those of its other values."""
        used = {c.var for f in training for c in f.chars if c.var is not None and not c.sure}
        flags: set[str] = set()
        for name in used:
            var = self.script.variables.get(name)
            for alternative in var.alternatives if var else ():
                for f in split_fields(tuple(replace(c, split=True) for c in alternative)):
                    if f.text.startswith("--"):
                        flags.add(f.text[2:].partition("=")[0])
        return flags


def read_megatron(path: Path, text: str) -> MegatronScript:
    reader = _Reader(path, text)
    try:
        for cmd in split_commands(text):
            reader.command(cmd)
    except ShellError as exc:
        raise InputError(f"{path}:{line_of(text, exc.offset)}", str(exc)) from None
    script = reader.script
    if script.command is None:
        raise InputError(str(path), "no torchrun / torch.distributed training command found")
    if reader.expander.undefined:
        names = ", ".join(sorted(reader.expander.undefined))
        script.notes.append(f"read but never set (bash expands them to nothing): {names}")
    return script


def expanded(chars: Value) -> str:
    return "".join(c.ch for c in chars)


__all__ = ["Char", "MegatronArgs", "MegatronScript", "Occurrence", "expanded", "read_megatron"]
