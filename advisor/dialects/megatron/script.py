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

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from advisor.model import InputError
from advisor.shell.commands import Command, line_of
from advisor.shell.expand import OPAQUE, Char, Field, ShellError, Value, split_fields
from advisor.shell.overrides import cli_value
from advisor.shell.reader import CommandReading, Variable, read_command


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
class MegatronScript:
    """The script's training command (`reading`) and the Megatron arguments it passes."""

    reading: CommandReading
    args: MegatronArgs = field(default_factory=lambda: MegatronArgs([], None, set()))

    @property
    def path(self) -> Path:
        return self.reading.path

    @property
    def text(self) -> str:
        return self.reading.text

    @property
    def variables(self) -> dict[str, Variable]:
        return self.reading.variables

    @property
    def program(self) -> str | None:
        return self.reading.program

    @property
    def command(self) -> Command | None:
        return self.reading.command

    @property
    def notes(self) -> list[str]:
        return self.reading.notes

    @property
    def command_line(self) -> int | None:
        return self.reading.command_line

    @property
    def world_size(self) -> int | None:
        return self.reading.world_size


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


def _uncertain_flags(reading: CommandReading) -> set[str]:
    """Flags a conditionally assigned variable might add: those of its other values."""
    used = {c.var for f in reading.arguments for c in f.chars if c.var is not None and not c.sure}
    flags: set[str] = set()
    for name in used:
        var = reading.variables.get(name)
        for alternative in var.alternatives if var else ():
            for f in split_fields(tuple(replace(c, split=True) for c in alternative)):
                if f.text.startswith("--"):
                    flags.add(f.text[2:].partition("=")[0])
    return flags


def megatron_args(reading: CommandReading) -> MegatronArgs:
    occurrences, opaque_at = _occurrences(reading.arguments)
    return MegatronArgs(occurrences, opaque_at, _uncertain_flags(reading))


def read_megatron(path: Path, text: str) -> MegatronScript:
    try:
        reading = read_command(path, text)
    except ShellError as exc:
        raise InputError(f"{path}:{line_of(text, exc.offset)}", str(exc)) from None
    if reading.command is None:
        raise InputError(str(path), "no torchrun / torch.distributed training command found")
    if reading.undefined:
        names = ", ".join(sorted(reading.undefined))
        reading.notes.append(f"read but never set (bash expands them to nothing): {names}")
    return MegatronScript(reading, megatron_args(reading))


def expanded(chars: Value) -> str:
    return "".join(c.ch for c in chars)


__all__ = ["Char", "MegatronArgs", "MegatronScript", "Occurrence", "expanded", "read_megatron"]
