"""Checks every launch script gets, whatever backend it starts: what keeps bash from running
it as written (CRLF line endings, a training command cut off from its arguments), and what
keeps advisor from reading all of it (a sourced file or a config it cannot find)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from advisor.engine.rule_model import PolicyRule
from advisor.engine.templates import render
from advisor.model import Finding

if TYPE_CHECKING:
    # annotations only: the shell reader's import is paid when a script is read, never by a
    # check of a YAML config
    from advisor.shell.launch import LaunchScript


class ScriptDocument(Protocol):
    @property
    def path(self) -> Path: ...
    @property
    def text(self) -> str: ...
    @property
    def lines(self) -> list[str]: ...
    @property
    def launch(self) -> LaunchScript: ...


def _finding(
    rule: PolicyRule, file: Path, line: int, col: int, key: str, **params: object
) -> Finding:
    message = render(rule.message, **params)
    return Finding(rule.id, rule.effective_severity, message, str(file), line, col, key)


def _shown(doc: ScriptDocument, file: Path) -> Path:
    """A sourcing file named as the checked script was (relative stays relative)."""
    return doc.path if file.resolve() == doc.path.resolve() else file


def sources_unread(rule: PolicyRule, doc: ScriptDocument) -> Iterator[Finding]:
    """A `source` line whose file cannot be read here: its exports are unknown to the checks."""
    for file, line, why in doc.launch.unread_sources:
        yield _finding(rule, _shown(doc, file), line, 1, f"source:{why}", detail=why)


def crlf(rule: PolicyRule, doc: ScriptDocument) -> Iterator[Finding]:
    """Windows line endings: bash reads each `\\r` as part of a word (`$'\\r': command not
    found`, a `\\` continuation no longer continues)."""
    at = doc.text.find("\r\n")
    if at >= 0:
        line = doc.text.count("\n", 0, at) + 1
        count = doc.text.count("\r\n")
        yield _finding(rule, doc.path, line, 1, "crlf", count=count)


def no_arguments(rule: PolicyRule, doc: ScriptDocument) -> Iterator[Finding]:
    """The training program started with nothing after it while the next lines hold what
    looks like its arguments (a line without its `\\`)."""
    script = doc.launch
    if script.program is None or script.argument_count or script.command_end_line is None:
        return
    after = [ln.strip() for ln in doc.lines[script.command_end_line :] if ln.strip()]
    if after and after[0].startswith(("--", "$", "${")):
        yield _finding(
            rule,
            doc.path,
            script.command_end_line,
            1,
            "launch-no-arguments",
            program=script.program,
            next=after[0].split()[0],
        )


def config_missing(rule: PolicyRule, doc: ScriptDocument) -> Iterator[Finding]:
    """The config the training command names is in neither the run folder nor the script's."""
    script = doc.launch
    config = script.config_arg
    if script.config_found or config is None or not config.endswith((".yaml", ".yml")):
        return
    start = script.command_line or 1
    end = script.command_end_line or start
    line, col = start, 1
    for i in range(start - 1, min(end, len(doc.lines))):
        found = doc.lines[i].find(config)
        if found >= 0:
            line, col = i + 1, found + 1
            break
    where = f"{script.root} or " if script.root is not None else ""
    yield _finding(
        rule,
        doc.path,
        line,
        col,
        f"config:{config}",
        config=config,
        where=f"{where}{doc.path.parent}",
    )


LAUNCH_CHECKS: dict[str, Callable[[PolicyRule, ScriptDocument], Iterator[Finding]]] = {
    "launch-source-unread": sources_unread,
    "launch-crlf": crlf,
    "launch-no-arguments": no_arguments,
    "launch-config-missing": config_missing,
}
