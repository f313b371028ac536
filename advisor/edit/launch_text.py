"""Minimal text edits of a launch script: export lines and torchrun flags.

An environment change edits the export where the variable is set (the script or a file it
sources) or adds one export before the training command; a config key that the command overrides
with `--section.key value` is changed there, because editing the YAML would have no effect.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

from advisor.core.text import read_text
from advisor.model import InputError
from advisor.shell.env import effective_env
from advisor.shell.expand import ShellError
from advisor.shell.launch import (
    LaunchScript,
    heredoc_lines,
    resolve_source,
    standalone_assignment,
)
from advisor.shell.words import block_depths, is_static, value_of, word_end

_SAFE_SHELL = re.compile(r"^[A-Za-z0-9_./:,=+@%-]+$")


def shell_value(value: object) -> str:
    text = str(value).lower() if isinstance(value, bool) else str(value)
    return text if _SAFE_SHELL.match(text) else shlex.quote(text)


_PLAIN = re.compile(r"^\s*[A-Za-z_][A-Za-z0-9_]*=")


def _with_export_value(line: str, name: str, value: object, where: str) -> str:
    m = re.match(rf"^\s*(?:(?:export|declare\s+-x|typeset\s+-x)\s+)?(?={re.escape(name)}=)", line)
    if m is None:
        raise InputError(where, f"cannot edit the export of {name}")
    return _with_assignment_value(line, m.end(), name, value, where)


def _with_assignment_value(line: str, at: int, name: str, value: object, where: str) -> str:
    """The line with the value word of the `NAME=` at `at` replaced whole (its quoting kept);
    refused when the old value is computed (`$(...)`, `$VAR`): it cannot be known here."""
    start = at + len(name) + 1
    end = word_end(line, start)
    if end is None:
        raise InputError(where, f"cannot edit {name} (an unclosed quote or substitution)")
    old = line[start:end]
    if old and not is_static(old):
        raise InputError(
            where, f"{name}={old} is computed when the script runs: not edited (set it by hand)"
        )
    text = str(value).lower() if isinstance(value, bool) else str(value)
    quote = old[:1] if old[:1] in "\"'" and old.endswith(old[:1]) and len(old) > 1 else ""
    new = f"{quote}{text}{quote}" if quote and quote not in text else shell_value(value)
    edited = line[:start] + new + line[end:]
    check = word_end(edited, start)
    if check is None or value_of(edited[start:check]) != text:
        raise InputError(where, f"the edited value of {name} would not read back as {text!r}")
    return edited


def _prefix_words(name: str) -> re.Pattern[str]:
    """The words of a command before its `name=`: other assignments and exec/nohup/time/env."""
    word = r"(?:[A-Za-z_][A-Za-z0-9_]*=\S*|(?:\S*/)?(?:env|exec|nohup|time))"
    return re.compile(rf"^\s*(?:{word}\s+)*?(?={re.escape(name)}=)")


class _File:
    def __init__(self, path: Path, raw: str) -> None:
        self.path = path
        self.original = raw
        self.newline = "\r\n" if "\r\n" in raw else "\n"
        text = raw.replace("\r\n", "\n")
        self.final_newline = text.endswith("\n")
        self.lines = text.split("\n")
        if self.final_newline:
            self.lines.pop()

    def text(self) -> str:
        body = "\n".join(self.lines) + ("\n" if self.final_newline else "")
        return body.replace("\n", self.newline) if self.newline != "\n" else body


class LaunchTextEditor:
    def __init__(self, script: LaunchScript) -> None:
        self.script = script
        self.files: dict[Path, _File] = {}
        self.inserted = 0  # lines added to the main script above the command
        self.intended: dict[str, str | None] = {}  # env edits: name -> value (None: removed)

    def _file(self, path: Path) -> _File:
        if path not in self.files:
            text = self.script.texts.get(path)
            self.files[path] = _File(path, text if text is not None else read_text(path))
        return self.files[path]

    def _export_lines(self, name: str) -> list[tuple[_File, int]]:
        pattern = re.compile(rf"^\s*(?:(?:export|declare\s+-x|typeset\s+-x)\s+)?{re.escape(name)}=")
        found: list[tuple[_File, int]] = []
        if not any(e.name == name and not e.bare for e in self.script.exports):
            return found  # never exported: a plain assignment does not reach the command
        for export in self.script.exports:
            if export.name == name:
                f = self._file(export.path)
                # exports were recorded before earlier edits; find the line again by content
                body = heredoc_lines(f.lines)  # text a heredoc feeds a command: not an export
                # in the script itself, only what runs before the command reaches it
                stop = len(f.lines)
                if f.path == self.script.path and self.script.command_line is not None:
                    stop = self.script.command_line - 1 + self.inserted
                for i, line in enumerate(f.lines[:stop]):
                    plain = _PLAIN.match(line) is not None
                    if plain and standalone_assignment(line) is None:
                        continue  # `NAME=v other-command`: a prefix of another command
                    if i not in body and pattern.match(line) and (f, i) not in found:
                        found.append((f, i))
        return found

    def set_env(self, name: str, value: object) -> None:
        self.intended[name] = str(value).lower() if isinstance(value, bool) else str(value)
        if self._set_command_prefix(name, value):
            return  # `NAME=v torchrun ...`: what the command sees is its own prefix
        found = self._export_lines(name)
        if found:
            f, i = found[-1]
            f.lines[i] = _with_export_value(f.lines[i], name, value, f"{f.path}:{i + 1}")
            return
        main = self._file(self.script.path)
        command = (self.script.command_line or 1) - 1 + self.inserted
        exports = [e.line for e in self.script.exports if e.path == self.script.path]
        depths = block_depths(main.lines)
        at = command
        if exports:
            after = max(exports) + self.inserted
            # beside the other exports only when that is top level and before the command;
            # else just before the command, in whatever block the command itself runs
            if after <= command and depths[min(after, len(depths) - 1)] == 0:
                at = after
        main.lines.insert(at, f"export {name}={shell_value(value)}")
        self.inserted += 1

    def _set_command_prefix(self, name: str, value: object) -> bool:
        if self.script.command_line is None:
            return False
        found = self._command_prefix(name)
        if found is None:
            return False
        main, i, m = found
        where = f"{main.path}:{i + 1}"
        main.lines[i] = _with_assignment_value(main.lines[i], m.end(), name, value, where)
        return True

    def _command_prefix(self, name: str) -> tuple[_File, int, re.Match[str]] | None:
        """Where the training command sets `name` itself: `NAME=v torchrun ...` or `env NAME=v
        torchrun ...` (also after exec/nohup/time); that assignment wins over every export."""
        if self.script.command_line is None:
            return None
        main = self._file(self.script.path)
        i = self.script.command_line - 1 + self.inserted
        m = _prefix_words(name).match(main.lines[i])
        return (main, i, m) if m is not None else None

    def _remove_command_prefix(self, name: str) -> bool:
        found = self._command_prefix(name)
        if found is None:
            return False
        main, i, m = found
        line = main.lines[i]
        end = word_end(line, m.end() + len(name) + 1)
        if end is None:
            raise InputError(f"{main.path}:{i + 1}", f"cannot edit {name} (an unclosed quote)")
        rest = line[end:].lstrip(" \t")
        main.lines[i] = line[: m.end()] + rest
        return True

    def remove_env(self, name: str) -> None:
        self.intended[name] = None
        # the command's own `NAME=v` / `env NAME=v` goes too: it would set the variable again
        prefixed = self._remove_command_prefix(name)
        found = self._export_lines(name)
        for f, i in sorted(found, key=lambda fi: -fi[1]):
            del f.lines[i]
            if (
                f.path == self.script.path
                and self.script.command_line
                and i < self.script.command_line
            ):
                self.inserted -= 1
        if not found and not prefixed:
            # set outside the script (the calling shell): unset it before the command runs
            main = self._file(self.script.path)
            at = (self.script.command_line or 1) - 1 + self.inserted
            main.lines.insert(at, f"unset {name}")
            self.inserted += 1

    def _command_span(self) -> tuple[_File, int, int]:
        main = self._file(self.script.path)
        if self.script.command_line is None or self.script.command_end_line is None:
            raise InputError(str(self.script.path), "no torchrun command to edit")
        start = self.script.command_line - 1 + self.inserted
        end = self.script.command_end_line - 1 + self.inserted
        return main, start, end

    def set_flag(self, dotted: str, value: object) -> None:
        main, start, end = self._command_span()
        token = json.dumps(value) if isinstance(value, dict) else shell_value(value)
        flag = re.compile(rf"(--{re.escape(dotted)})(=|\s+)([^\s\\]+)")
        for i in range(start, end + 1):
            m = flag.search(main.lines[i])
            if m:
                main.lines[i] = main.lines[i][: m.start(3)] + token + main.lines[i][m.end(3) :]
                return
        last = main.lines[end].rstrip()
        main.lines[end] = f"{last} --{dotted} {token}"

    def results(self) -> dict[Path, tuple[str, str]]:
        """path -> (original text, new text) for every file that changed; an edit bash itself
        would not parse is refused."""
        out = {}
        for path, f in self.files.items():
            new = f.text()
            if new != f.original:
                bash_accepts(path, new)
                out[path] = (f.original, new)
        if self.intended and out:
            self._verify_env({p: new for p, (_, new) in out.items()})
        return out

    def _verify_env(self, edited: dict[Path, str]) -> None:
        """Read the whole script again, independently of the edit: the training command must
        start with exactly the intended variables changed and every other one as it was."""

        def read_before(p: Path) -> str:
            text = self.script.texts.get(p)
            return text if text is not None else read_text(p)

        def read_after(p: Path) -> str:
            return edited.get(p, read_before(p))

        def resolve(p: Path, written: str) -> Path | None:
            try:
                return resolve_source(p, written, str(p))
            except InputError:
                return None  # a path bash would compute: its exports stay unknown

        main = self.script.path
        try:
            before = effective_env(main, read_before(main), resolve, read_before)
            after = effective_env(main, read_after(main), resolve, read_after)
        except ShellError as exc:
            # an edit that cannot be checked to reach the command is not made
            raise InputError(
                str(main),
                f"cannot follow how the training command starts ({exc}): environment not edited",
            ) from None
        if not before.found_launcher or not after.found_launcher:
            raise InputError(
                str(main),
                "the training command is not started directly (eval, a variable or a function "
                "runs it): the environment it sees cannot be checked, not edited",
            )
        expected = dict(before.env)
        for name, value in self.intended.items():
            if value is None:
                expected.pop(name, None)
            else:
                expected[name] = value
        if after.env != expected:
            wrong = sorted(
                n
                for n in set(after.env) | set(expected)
                if after.env.get(n, "") != expected.get(n, "")
            )
            shown = ", ".join(f"{n}={after.env.get(n)!r}" for n in wrong[:3])
            raise InputError(
                str(main),
                f"the edited script would start the training command with {shown} instead of "
                "the intended value: not edited",
            )


def bash_accepts(path: Path, text: str) -> None:
    """`bash -n` on the edited text when bash is installed (the check is skipped without it)."""
    bash = shutil.which("bash")
    if bash is None:
        return
    try:
        done = subprocess.run(
            [bash, "-n"], input=text, capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["syntax error"])[0]
        raise InputError(str(path), f"the edited script fails bash -n ({first}): not written")
