"""`advisor check` end to end: load documents, run policies, apply the baseline, fix."""

from __future__ import annotations

import dataclasses
import json
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from advisor.core.text import read_text
from advisor.core.yamlio import locate
from advisor.dialects.base import SHELL_SUFFIXES, Document, Probe, split_lines
from advisor.dialects.registry import LABELS, read_checked, read_document, registry
from advisor.edit.writer import write_file
from advisor.engine.policy import check_document, waivers
from advisor.engine.rule_model import PolicyRule
from advisor.engine.rules import RuleSet
from advisor.engine.targets import Target, repository_target
from advisor.engine.templates import render
from advisor.model import Applicability, FileChange, Finding, InputError, Patch
from advisor.shell.commands import line_of
from advisor.shell.expand import ShellError
from advisor.shell.reader import read_command

BASELINE_SCHEMA = "advisor/baseline@1"


@dataclass
class CheckResult:
    # the documents whose findings carry a fix (what --fix and SARIF edit); the others are not
    # kept, so a run's memory does not grow with the files it checks
    documents: list[Document]
    findings: list[Finding]
    skipped: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (file, why)
    # the document each finding with a fix came from (a sourced file's finding: the script
    # that sources it); None for a finding without a fix
    origins: list[Document | None] = dataclasses.field(default_factory=list)
    # a named file checked only through the scripts that source it: file -> those scripts
    through: dict[str, list[str]] = dataclasses.field(default_factory=dict)

    # the named scripts whose command could not be read (their findings have no document)
    unreadable: list[str] = dataclasses.field(default_factory=list)
    # every checked file -> its dialect
    dialects: dict[str, str] = dataclasses.field(default_factory=dict)

    def origin(self, index: int) -> Document | None:
        return self.origins[index] if index < len(self.origins) else None


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


def _unreadable_findings(rules: RuleSet, found: list[Unreadable]) -> list[Finding]:
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


def load_baseline(path: Path) -> set[str]:
    if not path.exists():
        return set()
    try:
        data = json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise InputError(str(path), f"invalid JSON at line {exc.lineno}: {exc.msg}") from None
    except RecursionError:
        raise InputError(str(path), "JSON nested too deeply") from None
    if (
        not isinstance(data, dict)
        or data.get("schema") != BASELINE_SCHEMA
        or not isinstance(data.get("fingerprints"), list)
    ):
        raise InputError(str(path), f"not an advisor baseline (expected schema {BASELINE_SCHEMA})")
    return {str(f) for f in data["fingerprints"]}


def write_baseline(path: Path, findings: list[Finding]) -> None:
    accepted = sorted({f.fingerprint for f in findings if f.suppressed is None})
    write_file(
        path, json.dumps({"schema": BASELINE_SCHEMA, "fingerprints": accepted}, indent=2) + "\n"
    )


def run_check(
    rules: RuleSet,
    configs: list[Path] | tuple[Path, ...] = (),
    launches: list[Path] | tuple[Path, ...] = (),
    baseline: Path | None = None,
    root: Path | None = None,
    target: Target | None = None,
) -> CheckResult:
    """Check the files; `target` (product -> release, `--target`) decides the rules whose
    claim depends on the release, else each file's repository says its release."""
    accepted = load_baseline(baseline) if baseline else set()
    findings: list[Finding] = []
    origins: list[Document | None] = []
    targets: dict[Path, Target] = {}

    def target_of(doc: Document) -> Target:
        folder = root_of(doc.path, root)
        if folder not in targets:
            targets[folder] = repository_target(folder)
        return {**targets[folder], **(target or {})}

    def visit(doc: Document) -> None:
        checks = registry().of(doc.dialect_id).checks
        for finding in check_document(doc, rules, checks, target_of(doc)):
            findings.append(finding)
            # a document is kept only for a finding that carries a fix (--fix, SARIF)
            origins.append(doc if finding.patch is not None else None)

    loaded = load_documents(configs, launches, visit, root)
    # a sourced file named alone: what the scripts sourcing it find on its own lines (the
    # scripts' other findings are not about this change); one finding per place, however many
    # scripts source it
    seen: set[tuple[str, str, int, int, str]] = set()
    for named, scripts in loaded.through.items():
        sourced = named.resolve()
        for doc in scripts:
            checks = registry().of(doc.dialect_id).checks
            for finding in check_document(doc, rules, checks, target_of(doc)):
                place = (finding.rule_id, finding.file, finding.line, finding.col, finding.message)
                if Path(finding.file).resolve() != sourced or place in seen:
                    continue
                seen.add(place)
                findings.append(finding)
                origins.append(doc if finding.patch is not None else None)
    findings, kept = aggregated(rules, findings, origins)
    findings = [dataclasses.replace(f, in_baseline=f.fingerprint in accepted) for f in findings]
    sources = {str(p): [str(d.path) for d in scripts] for p, scripts in loaded.through.items()}
    documents = list({id(d): d for d in kept if d is not None}.values())
    result = CheckResult(documents, findings, loaded.skipped, kept, sources, [], loaded.dialects)
    for finding in _unreadable_findings(rules, loaded.unreadable):
        in_baseline = finding.fingerprint in accepted
        result.findings.append(dataclasses.replace(finding, in_baseline=in_baseline))
        result.unreadable.append(finding.file)
    return result


def aggregated(
    rules: RuleSet, findings: list[Finding], origins: list[Document | None]
) -> tuple[list[Finding], list[Document | None]]:
    """A rule marked `aggregate` gives one finding per distinct message, at its first place,
    saying how many places share it (a note repeated over a repository is read once)."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i, finding in enumerate(findings):
        rule = rules.rules.get(finding.rule_id)
        if isinstance(rule, PolicyRule) and rule.aggregate and finding.suppressed is None:
            groups.setdefault((finding.rule_id, finding.message), []).append(i)
    if not groups:
        return findings, origins
    dropped = {i for places in groups.values() for i in places[1:]}
    out, kept = [], []
    for i, finding in enumerate(findings):
        if i in dropped:
            continue
        places = groups.get((finding.rule_id, finding.message), [])
        if len(places) > 1 and places[0] == i:
            files = len({findings[j].file for j in places})
            more = f" ({len(places)} places in {files} file(s); the first is shown)"
            finding = dataclasses.replace(finding, message=finding.message + more)
        out.append(finding)
        kept.append(origins[i])
    return out, kept


STDIN = "<stdin>"
# a `source FILE` / `. FILE` line (as the launch-script reader recognises one)
_SOURCE_LINE = re.compile(r"^\s*(?:source|\.)\s+\S")


def stdin_suffix(text: str, label: str) -> str:
    """How text read from standard input is read: as the suffix of the name given for it, else
    as its content shows (a shebang or anything that is no YAML mapping: a shell script)."""
    suffix = Path(label).suffix
    if suffix in registry().suffixes:
        return suffix
    first = text.lstrip().split("\n", 1)[0]
    if first.startswith("#!"):
        return SHELL_SUFFIXES[0] if "sh" in first else ".yaml"
    try:
        data = locate(text.replace("\r\n", "\n"), label).data
    except InputError:
        # a broken YAML (its error is worth more than "skipped") or a script (`"$@"`)
        return ".yaml" if _YAML_KEY.match(_first_statement(text)) else SHELL_SUFFIXES[0]
    return ".yaml" if isinstance(data, dict) or not text.strip() else SHELL_SUFFIXES[0]


_YAML_KEY = re.compile(r"^[A-Za-z_][\w.-]*\s*:(\s|$)")


def _first_statement(text: str) -> str:
    return next((ln for ln in text.splitlines() if ln.strip() and ln[:1] != "#"), "")


@dataclass
class TextCheck:
    result: CheckResult
    # the lines that source a file: text read from standard input has no folder to find it in
    unresolved_sources: list[int]


def check_text(rules: RuleSet, text: str, label: str = STDIN) -> TextCheck:
    """Check a document given as text (standard input), reported under `label`: errors and
    findings name the label, never the temporary file it is read from."""
    suffix = stdin_suffix(text, label)
    lines = text.split("\n")
    sources: list[int] = []
    if suffix in SHELL_SUFFIXES:
        # the sourced files cannot be found: read the script without them (the line stays, as
        # a comment, so every position is the same)
        for i, line in enumerate(lines):
            if _SOURCE_LINE.match(line):
                sources.append(i + 1)
                lines[i] = "# " + line
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"stdin{suffix}"
        path.write_text("\n".join(lines), encoding="utf-8")
        try:
            result = run_check(rules, configs=[path])
        except InputError as exc:
            named = exc.path.replace(str(path), label)
            raise InputError(named, exc.problem.replace(str(path), label)) from None
    # a config the command names has no folder to be found in either: not "missing"
    result.findings = [
        dataclasses.replace(f, file=label) for f in result.findings if f.rule_id != CONFIG_MISSING
    ]
    result.skipped = [(label, why) for _, why in result.skipped]
    return TextCheck(result, sources)


def _fixes(findings: list[Finding], safe_only: bool) -> list[Patch]:
    return [
        f.patch
        for f in findings
        if f.patch is not None
        and f.counts
        and (f.patch.applicability is Applicability.safe or not safe_only)
    ]


def safe_fix_changes(result: CheckResult) -> list[FileChange]:
    """`check --fix`: every safe fix of each document, applied in order."""
    changes: list[FileChange] = []
    # the scripts a named sourced file was checked through are fixed too (by identity: a
    # document need not be hashable)
    docs = list({id(d): d for d in [*result.documents, *result.origins] if d is not None}.values())
    for doc in docs:
        mine = [f for i, f in enumerate(result.findings) if result.origin(i) is doc]
        changes.extend(doc.fix_changes(_fixes(mine, safe_only=True)))
    return changes


def finding_changes(result: CheckResult) -> list[list[FileChange]]:
    """Each finding's own edit (SARIF `fixes`), aligned with `result.findings`. A fix that
    cannot be built is left out; the finding is still reported."""
    out: list[list[FileChange]] = []
    for i, finding in enumerate(result.findings):
        doc = result.origin(i)
        changes: list[FileChange] = []
        if finding.patch is not None and doc is not None:
            try:
                changes = doc.fix_changes(_fixes([finding], safe_only=False))
            except InputError:
                changes = []
        out.append(changes)
    return out
