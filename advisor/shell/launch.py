"""The launch script: exported environment (sourced files included) and the torchrun command.

The FSDP2 backend reads `torchrun ... train_fsdp2.py CONFIG.yaml --section.key value ...`; CLI
flags win over the YAML, and the environment is what the script exports (including files it
sources). The effective config is YAML < CLI overrides.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.core.text import read_text
from advisor.model import InputError
from advisor.shell.commands import line_of
from advisor.shell.expand import OPAQUE, ShellError
from advisor.shell.launcher import command_start, env_unsets
from advisor.shell.reader import CommandReading, read_command
from advisor.shell.words import word_end

_EXPORT = re.compile(r"^\s*(?:export|declare\s+-x|typeset\s+-x)\s+([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
_SOURCE = re.compile(r"^\s*(?:source|\.)\s+(.+?)\s*$")
# `source "$(dirname "$0")/env.sh"` and friends: the script's own folder
_SCRIPT_DIR = re.compile(
    r'^\$\(\s*dirname\s+"?\$(?:0|\{0\}|\{BASH_SOURCE\[0\]\}|BASH_SOURCE)"?\s*\)|^\$\{(?:0|BASH_SOURCE\[0\])%/\*\}'
)


@dataclass(frozen=True)
class Export:
    name: str
    value: str
    path: Path
    line: int  # 1-based
    # a plain `NAME=value` line: it changes the value only of a variable exported somewhere
    bare: bool = False
    unset: bool = False  # `env -u NAME` before the command: NAME is not in its environment


@dataclass(frozen=True)
class Override:
    path: str  # section.key
    value: str | None  # None: a bare flag with no value
    line: int
    token_index: int


@dataclass
class LaunchScript:
    path: Path
    exports: list[Export] = field(default_factory=list)
    overrides: list[Override] = field(default_factory=list)
    config_arg: str | None = None
    command_line: int | None = None
    command_end_line: int | None = None
    nnodes: int | None = None
    nproc_per_node: int | None = None
    texts: dict[Path, str] = field(default_factory=dict)  # every file read, exactly as read
    # where paths the script names are found: the folder it runs from (see run_path)
    root: Path | None = None
    # `source` lines whose file cannot be read: (file, line, why); what they export is unknown
    unread_sources: list[tuple[Path, int, str]] = field(default_factory=list)
    # exports before this index may have been changed by an unread sourced file
    blind_at: int = 0
    program: str | None = None  # the training program the launcher runs (train_fsdp2.py)
    # the command has arguments only running the script gives (`$@`, `$(...)`)
    opaque_arguments: bool = False
    argument_count: int = 0  # the fields after the program
    config_found: bool = True  # False: the config the command names cannot be found

    @property
    def env_view(self) -> EnvView:
        """The environment for policies: a variable an unread sourced file may set is unknown."""
        if not self.unread_sources:
            return EnvView(self.env, sure=True)
        after = {e.name for e in self.exports[self.blind_at :]}
        known = {k: v for k, v in self.env.items() if k in after}
        return EnvView(known, sure=False)

    @property
    def env(self) -> dict[str, str]:
        """Exported variables as the training command sees them: the last assignment before it
        wins, a plain `NAME=value` counting only for a variable that is exported."""
        exported = {e.name for e in self.exports if not e.bare}
        env: dict[str, str] = {}
        for e in self.exports:
            if e.unset:
                env.pop(e.name, None)
            elif e.name in exported:
                env[e.name] = e.value
        return env

    @property
    def world_size(self) -> int | None:
        if self.nnodes is not None and self.nproc_per_node is not None:
            return self.nnodes * self.nproc_per_node
        return None


class EnvView(Mapping[str, str]):
    """Exported variables; when not `sure`, a name it lacks is unknown (`get` gives None)
    rather than unset: a sourced file that could not be read may export it."""

    def __init__(self, known: dict[str, str], sure: bool) -> None:
        self.known = known
        self.sure = sure

    def __getitem__(self, name: str) -> str:
        return self.known[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.known)

    def __len__(self) -> int:
        return len(self.known)

    def get(self, name: str, default: object = None) -> Any:
        if name in self.known:
            return self.known[name]
        return default if self.sure else None


def _unquote(value: str) -> str:
    value = value.strip()
    if value.startswith("#"):
        return ""
    try:
        parts = shlex.split(value, comments=True)
    except ValueError:
        return value.strip("'\"")
    return parts[0] if parts else ""


_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")


_BARE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)=")


def standalone_assignment(line: str) -> tuple[str, str] | None:
    """(name, value) of a line that is only `NAME=value` (a comment or `;` may follow), not a
    prefix of a command; None otherwise."""
    m = _BARE.match(line)
    if m is None:
        return None
    end = word_end(line, m.end())
    if end is None:
        return None
    rest = line[end:].strip()
    if rest and not rest.startswith(("#", ";")):
        return None
    return m.group(1), _unquote(line[m.end() : end])


def heredoc_lines(lines: list[str]) -> set[int]:
    """Indexes (0-based) of the lines that are a heredoc's body or its closing word."""
    inside: set[int] = set()
    word: str | None = None
    for i, raw in enumerate(lines):
        if word is not None:
            inside.add(i)
            if raw.strip() == word:
                word = None
            continue
        code = raw.split("#", 1)[0]
        m = _HEREDOC.search(code)
        if m and "<<<" not in code:
            word = m.group(2)
    return inside


def _logical_lines(text: str) -> list[tuple[int, int, str]]:
    """Join backslash continuations: (first physical line, last physical line, text), 1-based.
    A heredoc's body is data, not commands: its lines are left out."""
    out: list[tuple[int, int, str]] = []
    buffer, start = "", 0
    number = 0
    heredoc: str | None = None  # the word that ends the heredoc being skipped
    for number, raw in enumerate(text.splitlines(), start=1):
        if heredoc is not None:
            if raw.strip() == heredoc:
                heredoc = None
            continue
        if not buffer:
            start = number
        quoted = raw.split("#", 1)[0]
        m = _HEREDOC.search(quoted)
        if m and "<<<" not in quoted:
            heredoc = m.group(2)
        if raw.rstrip().endswith("\\"):
            buffer += raw.rstrip()[:-1] + " "
            continue
        out.append((start, number, buffer + raw))
        buffer = ""
    if buffer:
        out.append((start, number, buffer))
    return out


def _overrides(arguments: list[str], line: int) -> list[Override]:
    """`--section.key value...`, `--section.key=value` and bare `--section.key` (other flags
    are the training script's own)."""
    found = []
    i = 0
    while i < len(arguments):
        token = arguments[i]
        if not (token.startswith("--") and "." in token):
            i += 1
            continue
        key, eq, value = token[2:].partition("=")
        if eq:
            found.append(Override(key, value, line, i))
            i += 1
            continue
        j = i + 1
        while j < len(arguments) and not arguments[j].startswith("--"):
            j += 1
        values = arguments[i + 1 : j]
        found.append(Override(key, " ".join(values) if values else None, line, i))
        i = j
    return found


def _command_prefixes(script: LaunchScript, reading: CommandReading, line: int) -> None:
    """`NAME=v torchrun ...` and `env NAME=v torchrun ...`: the command's own environment, which
    wins over every export, so the checks read it as the last export before the command."""
    assert reading.command is not None
    words = reading.command.texts(reading.text)
    prefix = words[: command_start(words)]
    for word in prefix:
        if _ASSIGNMENT.match(word):
            name, _, value = word.partition("=")
            script.exports.append(Export(name, _unquote(value), script.path, line))
    for name in env_unsets(prefix):
        script.exports.append(Export(name, "", script.path, line, unset=True))


_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _take_command(script: LaunchScript, reading: CommandReading) -> None:
    """The launcher command the shell reader found: its line, sizes, config and overrides.
    An argument only running the script gives (`$@`) is left out, never glued to a value."""
    line = reading.command_line
    script.command_line = line
    script.command_end_line = reading.command_end_line
    script.program = reading.program
    script.nnodes = reading.nnodes
    script.nproc_per_node = reading.nproc_per_node
    if reading.world_size is not None and reading.nnodes is None:
        script.nnodes, script.nproc_per_node = 1, reading.world_size  # msrun's worker count
    script.argument_count = len(reading.arguments)
    texts = []
    for f in reading.arguments:
        if OPAQUE in f.text:
            script.opaque_arguments = True
            continue
        texts.append(f.text)
    first = reading.arguments[0].text if reading.arguments else OPAQUE
    if OPAQUE not in first and not first.startswith("-"):
        script.config_arg = texts.pop(0)
    script.overrides.extend(_overrides(texts, line or 1))


def run_path(script: Path, written: str, root: Path | None) -> Path | None:
    """The file a path the script names (a sourced file, a config) is when the script runs
    from `root` (bash resolves a relative path against the working folder), else beside the
    script; None when it is in neither."""
    path = Path(written)
    if path.is_absolute():
        return path if path.is_file() else None
    for base in (root, script.parent):
        if base is not None and (base / path).is_file():
            return (base / path).resolve()
    return None


def sourced_file(path: Path, written: str, root: Path | None) -> tuple[Path | None, str]:
    """The file a `source ARG` line of `path` reads (ARG as written, quotes and all), or None
    with why it cannot be known here."""
    argument = written.split(" #", 1)[0].strip()
    if argument[:1] in "\"'" and argument[-1:] == argument[:1]:
        argument = argument[1:-1]
    own = _SCRIPT_DIR.match(argument)
    if own is not None:  # the script's own folder, wherever it runs from
        argument = argument[own.end() :].lstrip("/")
    if "$" in argument or "`" in argument:
        return None, f"{written} is a path only running the script gives"
    target = run_path(path, argument, None if own else root)
    if target is None:
        where = f"from {root} or " if root is not None else ""
        return None, f"{written} is not found ({where}beside the script)"
    return target, ""


def resolve_source(path: Path, written: str, where: str, root: Path | None = None) -> Path:
    """The file a `source ARG` line of `path` reads; InputError when it cannot be found."""
    target, why = sourced_file(path, written, root)
    if target is None:
        raise InputError(where, f"sourced file {why}")
    return target


def _read_exports(
    path: Path, script: LaunchScript, seen: set[Path], text: str | None = None
) -> None:
    if path in seen:
        return
    seen.add(path)
    text = read_text(path) if text is None else text
    script.texts[path] = text
    for number, _last, line in _logical_lines(text):
        main = path == script.path
        if main and script.command_line is not None and number >= script.command_line:
            return  # an export after the command does not reach it
        m = _EXPORT.match(line)
        if m:
            script.exports.append(Export(m.group(1), _unquote(m.group(2)), path, number))
            continue
        bare = standalone_assignment(line)
        if bare is not None:
            script.exports.append(Export(bare[0], bare[1], path, number, bare=True))
            continue
        s = _SOURCE.match(line)
        if s:
            target, why = sourced_file(path, s.group(1), script.root)
            if target is None:
                script.unread_sources.append((path, number, why))
                script.blind_at = len(script.exports)
                continue
            _read_exports(target, script, seen)


def parse_launch(
    path: Path, root: Path | None = None, reading: CommandReading | None = None
) -> LaunchScript:
    """The script's environment and launcher command; paths it names are found from `root`
    (the folder it runs from). `reading`: the command as the shell reader already read it."""
    script = LaunchScript(path=path, root=root)
    if reading is None:
        text = read_text(path)
        try:
            reading = read_command(path, text)
        except ShellError as exc:
            raise InputError(
                f"{path}:{line_of(text, exc.offset)}", f"cannot parse the launch command: {exc}"
            ) from None
    if reading.command is None:
        raise InputError(str(path), "no torchrun (torch.distributed.run) training command found")
    _take_command(script, reading)
    _read_exports(path, script, set(), reading.text)
    assert reading.command is not None and script.command_line is not None
    _command_prefixes(script, reading, script.command_line)
    return script
