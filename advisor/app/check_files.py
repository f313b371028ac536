"""Which files `advisor check` reads and how: folders walked, each file read as its dialect
(or skipped with the reason), sourced env files checked through the scripts that source them,
and what cannot be read turned into a finding or a skip, never an abort."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from advisor.core.text import read_text
from advisor.dialects.base import SHELL_SUFFIXES, Document, Probe, split_lines
from advisor.dialects.registry import LABELS, read_checked, read_document, registry
from advisor.engine.policy import waivers
from advisor.engine.rule_model import PolicyRule
from advisor.engine.rules import RuleSet
from advisor.engine.templates import render
from advisor.model import Finding, InputError

_NOT_SOURCES = {"node_modules", "__pycache__", "venv"}


def _not_training() -> str:
    return "not a training config or launch script (" + ", ".join(LABELS.values()) + ")"


def expand_paths(paths: list[Path] | tuple[Path, ...]) -> tuple[list[Path], set[Path]]:
    """Files as given, folders recursed (YAML and shell files; hidden and tool folders left
    out); the set holds the files found in folders, which are skipped quietly when they are
    no training file."""
    files: list[Path] = []
    found: set[Path] = set()
    suffixes = registry().suffixes
    for path in paths:
        if not path.is_dir():
            files.append(path)
            continue
        for item in sorted(path.rglob("*")):
            parts = item.relative_to(path).parts
            if any(p in _NOT_SOURCES or p.startswith(".") for p in parts[:-1]):
                continue
            if item.suffix in suffixes and item.is_file():
                files.append(item)
                found.add(item)
    return files, found


def _repository(path: Path) -> Path | None:
    """The root of the git repository holding the file (None: it is in none)."""
    for folder in path.resolve().parents:
        if (folder / ".git").exists():
            return folder
    return None


def _as_named(path: Path) -> Path:
    """A path found by a search, relative to the working folder when below it (as a user, or
    pre-commit at the repository's root, names files)."""
    try:
        return path.relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def sourcing_scripts(path: Path, walked: dict[Path, list[Path]] | None = None) -> list[Document]:
    """The launch scripts of the file's repository that source it: a sourced env file changed
    alone (pre-commit hands over only the staged file) is checked through the scripts that run
    it. `walked` keeps each repository's shell files for the next file of the same run."""
    root = _repository(path)
    if root is None or path.suffix not in SHELL_SUFFIXES:
        return []
    walked = {} if walked is None else walked
    if root not in walked:
        files, _ = expand_paths([root])
        walked[root] = [f for f in files if f.suffix in SHELL_SUFFIXES]
    target = path.resolve()
    found = []
    for candidate in walked[root]:
        if candidate.resolve() == target:
            continue
        try:
            # only a script that names the file can source it; the rest are not parsed
            if target.name not in read_text(candidate):
                continue
            doc = read_document(_as_named(candidate))
        except InputError:
            continue  # another script's own problem is not this file's
        if doc is not None and target in {p.resolve() for p in doc.source_texts()}:
            found.append(doc)
    return found


UNREADABLE = "policy.launch-unreadable"
FILE_UNREADABLE = "policy.file-unreadable"
CONFIG_MISSING = "policy.launch-config-missing"
# a launcher as a word of the line (not part of a path or another name)
_LAUNCHER = re.compile(
    r"(?<![\w./-])(?:torchrun|msrun|torch\.distributed\.(?:run|launch))(?![\w-])"
)
_NOT_RUN = ("#", "echo ", "printf ", "log ")
_HOLDS = re.compile(r"^\s*(?:export\s+|local\s+|declare\s+\S+\s+)?([A-Za-z_]\w*)=")


def _is_shell(path: Path, text: str) -> bool:
    return Probe(path, text).is_shell


def _runs_launcher(line: str) -> bool:
    """The launcher is the command of one of the line's pipeline parts (or of an eval, or the
    value a variable holds), not an argument of another command (`grep torchrun`)."""
    for part in re.split(r"\|\|?|&&|;", line.split(" #", 1)[0]):
        match = _LAUNCHER.search(part)
        if match is None:
            continue
        before = part[: match.start()].replace('"', " ").replace("'", " ").split()
        if all(
            w in ("eval", "exec", "nohup", "time", "env")
            or "=" in w
            or w.startswith(("-", "python"))
            for w in before
        ):
            return True
    return False


def unreadable_launch(path: Path, named: bool = True) -> tuple[int, str] | None:
    """Where and why a shell script writes a training command that cannot be read (None: it
    writes none, as an env file). A script found in a folder walk is reported only for what
    surely runs a launcher: a line that does not parse, or an eval of a computed command."""
    text = read_text(path)
    if not _is_shell(path, text):
        return None
    # the shell reader loads for a shell file only: a check of YAML configs never needs it
    from advisor.shell.commands import line_of
    from advisor.shell.expand import ShellError
    from advisor.shell.reader import read_command

    try:
        if read_command(path, text).command is not None:
            return None  # a launcher command that is read: its program decides, not this
    except ShellError as exc:
        # the reader names the line it stopped at when a line does not parse
        at = line_of(text, exc.offset)
        return at, f"line {at} cannot be read ({exc})"
    for number, line in enumerate(split_lines(text), start=1):
        stripped = line.lstrip()
        if stripped.startswith(_NOT_RUN) or not _runs_launcher(line):
            continue  # a comment or a message naming the launcher does not run it
        if stripped.split(maxsplit=1)[0] == "eval":
            return number, "the training command runs through eval (a command built at run time)"
        if not named:
            continue
        held = _HOLDS.match(line)
        if held:
            return number, f"the training command is held in {held.group(1)} and run elsewhere"
        return number, "the training command on this line cannot be followed"
    return None


@dataclass(frozen=True)
class Unreadable:
    """A file that could not be read (a script's training command, a file that does not
    parse): where, why, and the policy that reports it."""

    path: Path
    line: int
    why: str
    rule: str = UNREADABLE


def unreadable_findings(rules: RuleSet, found: list[Unreadable]) -> list[Finding]:
    findings = []
    for item in found:
        rule = rules.rules.get(item.rule)
        if not isinstance(rule, PolicyRule) or not rule.enabled:
            continue
        message = render(rule.message, detail=item.why)
        finding = Finding(
            rule.id, rule.effective_severity, message, str(item.path), item.line, 1, "launch"
        )
        marks = waivers(split_lines(read_text(item.path)))
        for line in (item.line, item.line - 1):
            ids, reason = marks.get(line, (set(), ""))
            if (rule.id in ids or "*" in ids) and reason:
                finding = dataclasses.replace(finding, suppressed=reason)
        findings.append(finding)
    return findings


def root_of(path: Path, root: Path | None) -> Path:
    """The folder a file's scripts run from: `--root` when given, else the top level of the
    file's git repository, else the working folder."""
    return root or _repository(path) or Path.cwd()


def _line_of(exc: InputError, path: Path) -> tuple[int, str]:
    """The line an error names (`file:12`, or `at line 12` in the problem) and the problem."""
    where = exc.path[len(str(path)) :].lstrip(":")
    if where.isdigit():
        return int(where), exc.problem
    m = re.search(r"at line (\d+)", exc.problem)
    return (int(m.group(1)) if m else 1), exc.problem


def _unreadable(path: Path, exc: InputError, named: bool) -> Unreadable | tuple[str, str]:
    """A file whose reading failed: a launch script whose command cannot be followed is that
    finding; another named file is a finding that it cannot be read; a file found in a folder
    walk is skipped with the reason (nothing says it is a training file)."""
    place = None if ":" in exc.path[len(str(path)) :] else _quietly(path)
    if place is not None:
        return Unreadable(path, *place)
    if named:
        line, problem = _line_of(exc, path)
        return Unreadable(path, line, problem, FILE_UNREADABLE)
    return str(path), f"cannot be read: {exc.problem}"


@dataclass
class Loaded:
    """The files of one check, each read as its dialect, skipped, checked through another, or
    unreadable."""

    dialects: dict[str, str]  # every document read -> its dialect (each went to `visit`)
    skipped: list[tuple[str, str]]
    # a named file that is no training file but that launch scripts of its repository source
    through: dict[Path, list[Document]]
    # files that could not be read, reported as findings
    unreadable: list[Unreadable]


def load_documents(
    paths: list[Path] | tuple[Path, ...],
    launches: list[Path] | tuple[Path, ...],
    visit: Callable[[Document], None],
    root: Path | None = None,
) -> Loaded:
    """Each file as the dialect its content shows; files of no known dialect are skipped (a
    repository's CI or tool YAML, a sourced env file) with the reason when they were named.
    A named file that is no training file but that launch scripts of its repository source is
    checked through them. No file stops the others: one that cannot be read is a finding, or
    a skip with its reason. Each document goes to `visit` as it is read and is not kept."""
    dialects: dict[str, str] = {}
    sourced: set[Path] = set()
    unread: list[Path] = []
    files, found = expand_paths([*paths, *launches])
    unreadable: list[Unreadable] = []
    skipped: list[tuple[str, str]] = []
    for path in files:
        try:
            doc, why = read_checked(path, root_of(path, root))
        except InputError as exc:
            outcome = _unreadable(path, exc, path not in found)
            if isinstance(outcome, Unreadable):
                unreadable.append(outcome)
            else:
                skipped.append(outcome)
            continue
        if doc is not None:
            visit(doc)
            dialects[str(doc.path)] = doc.dialect_id
            # a file a checked script sources is checked through it (its exports, on its lines)
            sourced.update(p.resolve() for p in doc.source_texts())
        elif why is not None:
            skipped.append((str(path), why))
        elif path not in found:
            unread.append(path)
        elif path.suffix in SHELL_SUFFIXES:
            # a script found in a folder whose training command cannot be followed (eval of a
            # computed text): a finding, never a quiet skip
            place = _quietly(path, named=False)
            if place is not None:
                unreadable.append(Unreadable(path, *place))
    through: dict[Path, list[Document]] = {}
    walked: dict[Path, list[Path]] = {}
    for path in unread:
        if path.resolve() in sourced:
            continue
        scripts = sourcing_scripts(path, walked)
        place = None if scripts else _quietly(path)
        if scripts:
            through[path] = scripts
        elif place is not None:
            # a launch script that cannot be followed: a finding, never a quiet skip
            unreadable.append(Unreadable(path, *place))
        else:
            skipped.append((str(path), _not_training()))
    return Loaded(dialects, skipped, through, unreadable)


def _quietly(path: Path, named: bool = True) -> tuple[int, str] | None:
    """unreadable_launch, for a file already read once: a failure to read it again is None."""
    try:
        return unreadable_launch(path, named)
    except InputError:
        return None
