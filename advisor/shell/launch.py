"""The launch script: exported environment (sourced files included) and the torchrun command.

The FSDP2 backend reads `torchrun ... train_fsdp2.py CONFIG.yaml --section.key value ...`; CLI
flags win over the YAML, and the environment is what the script exports (including files it
sources). The effective config is YAML < CLI overrides.
"""

from __future__ import annotations

import copy
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from advisor.core.text import read_text
from advisor.core.values import bool_word
from advisor.model import InputError
from advisor.shell.launcher import PREFIXES, launcher_end
from advisor.shell.words import word_end

_EXPORT = re.compile(r"^\s*(?:export|declare\s+-x|typeset\s+-x)\s+([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
_SOURCE = re.compile(r"^\s*(?:source|\.)\s+(.+?)\s*$")
# `source "$(dirname "$0")/env.sh"` and friends: the script's own folder
_SCRIPT_DIR = re.compile(
    r'^\$\(\s*dirname\s+"?\$(?:0|\{0\}|\{BASH_SOURCE\[0\]\}|BASH_SOURCE)"?\s*\)|^\$\{(?:0|BASH_SOURCE\[0\])%/\*\}'
)
_LAUNCHERS = ("torchrun", "torch.distributed.run", "torch.distributed.launch")


@dataclass(frozen=True)
class Export:
    name: str
    value: str
    path: Path
    line: int  # 1-based
    # a plain `NAME=value` line: it changes the value only of a variable exported somewhere
    bare: bool = False


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

    @property
    def env(self) -> dict[str, str]:
        """Exported variables as the training command sees them: the last assignment before it
        wins, a plain `NAME=value` counting only for a variable that is exported."""
        exported = {e.name for e in self.exports if not e.bare}
        return {e.name: e.value for e in self.exports if e.name in exported}

    @property
    def world_size(self) -> int | None:
        if self.nnodes is not None and self.nproc_per_node is not None:
            return self.nnodes * self.nproc_per_node
        return None


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


_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def command_words(line: str) -> list[str]:
    """The words of a command line, those of an `eval`'s text when it is run through eval
    (bash joins eval's arguments with spaces and reads them again); ValueError when a quote
    is not closed."""
    words = shlex.split(line, comments=True)
    while words and words[0] == "eval":
        words = shlex.split(" ".join(words[1:]), comments=True)
    return words


def _launches(line: str) -> bool:
    """Whether the line runs a launcher as its command (not in a comment, an echo or a string):
    after leading assignments and exec/nohup/env (and through eval), the command word is
    torchrun, or python with -m torch.distributed.run / launch."""
    try:
        words = command_words(line)
    except ValueError:
        return False
    return launcher_end(words) is not None


_SIZE_FLAGS = (
    ("--nnodes", "nnodes"),
    ("--nproc_per_node", "nproc_per_node"),
    ("--nproc-per-node", "nproc_per_node"),
)


def _flag_value(tokens: list[str], i: int, flag: str) -> str | None:
    """The value of `flag` when token i is `flag value` or `flag=value`."""
    token = tokens[i]
    if token == flag and i + 1 < len(tokens):
        return tokens[i + 1]
    if token.startswith(flag + "="):
        return token.split("=", 1)[1]
    return None


def _launcher_sizes(script: LaunchScript, tokens: list[str]) -> None:
    """--nnodes and --nproc_per_node, when written as whole numbers."""
    for i in range(len(tokens)):
        for flag, attr in _SIZE_FLAGS:
            value = _flag_value(tokens, i, flag)
            if value is not None and value.isdigit():
                setattr(script, attr, int(value))


def _overrides(rest: list[str], line: int) -> list[Override]:
    """`--section.key value...`, `--section.key=value` and bare `--section.key` after the
    config argument (other flags are the training script's own)."""
    found = []
    i = 0
    while i < len(rest):
        token = rest[i]
        if not (token.startswith("--") and "." in token):
            i += 1
            continue
        key, eq, value = token[2:].partition("=")
        if eq:
            found.append(Override(key, value, line, i))
            i += 1
            continue
        j = i + 1
        while j < len(rest) and not rest[j].startswith("--"):
            j += 1
        values = rest[i + 1 : j]
        found.append(Override(key, " ".join(values) if values else None, line, i))
        i = j
    return found


def _command_prefixes(script: LaunchScript, line: int, tokens: list[str]) -> None:
    """`NAME=v torchrun ...` and `env NAME=v torchrun ...`: the command's own environment, which
    wins over every export, so the checks read it as the last export before the command."""
    for token in tokens:
        if _ASSIGNMENT.match(token):
            name, _, value = token.partition("=")
            script.exports.append(Export(name, value, script.path, line))
        elif token.rsplit("/", 1)[-1] not in PREFIXES:
            return


def _parse_command(script: LaunchScript, line: int, text: str) -> None:
    try:
        tokens = command_words(text)
    except ValueError as exc:
        raise InputError(
            f"{script.path}:{line}", f"cannot parse the launch command: {exc}"
        ) from None
    script.command_line = line
    _command_prefixes(script, line, tokens)
    _launcher_sizes(script, tokens)
    script_index = next((i for i, t in enumerate(tokens) if t.endswith(".py")), None)
    if script_index is None:
        return
    rest = tokens[script_index + 1 :]
    if rest and not rest[0].startswith("-"):
        script.config_arg = rest[0]
        rest = rest[1:]
    script.overrides.extend(_overrides(rest, line))


def resolve_source(path: Path, written: str, where: str) -> Path:
    """The file a `source ARG` line of `path` reads (ARG as written, quotes and all)."""
    argument = written.split(" #", 1)[0].strip()
    if argument[:1] in "\"'" and argument[-1:] == argument[:1]:
        argument = argument[1:-1]
    argument = _SCRIPT_DIR.sub(".", argument)
    if "$" in argument:
        raise InputError(
            where,
            f"cannot resolve the sourced path {written} (variables other than the script's folder)",
        )
    target = (path.parent / argument).resolve()
    if not target.is_file():
        raise InputError(where, f"sourced file {written} not found")
    return target


def _read_exports(path: Path, script: LaunchScript, seen: set[Path]) -> None:
    if path in seen:
        return
    seen.add(path)
    text = read_text(path)
    script.texts[path] = text
    for number, last, line in _logical_lines(text):
        after_command = path == script.path and script.command_line is not None
        m = _EXPORT.match(line)
        if m:
            if not after_command:  # an export after the command does not reach it
                script.exports.append(Export(m.group(1), _unquote(m.group(2)), path, number))
            continue
        bare = standalone_assignment(line)
        if bare is not None:
            if not after_command:
                script.exports.append(Export(bare[0], bare[1], path, number, bare=True))
            continue
        s = _SOURCE.match(line)
        if s:
            target = resolve_source(path, s.group(1), f"{path}:{number}")
            _read_exports(target, script, seen)
            continue
        if path == script.path and _launches(line):
            _parse_command(script, number, line)
            script.command_end_line = last


def parse_launch(path: Path) -> LaunchScript:
    script = LaunchScript(path=path)
    _read_exports(path, script, set())
    if script.command_line is None:
        raise InputError(str(path), "no torchrun (torch.distributed.run) training command found")
    return script


def cli_value(text: str | None) -> object:
    """Turn a CLI token into the value argparse would produce for the common key types."""
    if text is None:
        return None
    word = bool_word(text, on_off=False)
    if word is not None:
        return word
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def effective_config(
    config: Mapping[str, object], launch: LaunchScript | None
) -> dict[str, object]:
    merged = copy.deepcopy(dict(config))
    if launch is None:
        return merged
    for override in launch.overrides:
        if override.value is None:
            continue  # a bare flag is not recognised as an override by the backend
        section, _, key = override.path.partition(".")
        node = merged.setdefault(section, {})
        if isinstance(node, dict):
            node[key] = cli_value(override.value)
    return merged
