"""`advisor check` end to end: load documents, run policies, apply the baseline, fix."""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from pathlib import Path

from advisor.app.check_files import (
    CONFIG_MISSING,
    load_documents,
    root_of,
    unreadable_findings,
)
from advisor.core.text import read_text
from advisor.core.yamlio import locate
from advisor.dialects.base import SHELL_SUFFIXES, Document
from advisor.dialects.registry import registry
from advisor.edit.writer import write_file
from advisor.engine.policy import check_document
from advisor.engine.rule_model import PolicyRule
from advisor.engine.rules import RuleSet
from advisor.engine.targets import Target, repository_target
from advisor.model import Applicability, FileChange, Finding, InputError, Patch

BASELINE_SCHEMA = "advisor/baseline@1"


@dataclass(frozen=True)
class DroppedFix:
    """A finding whose fix cannot be built (a multi-line value to move, an export the editor
    cannot rewrite): reported, its fix left out, and why."""

    finding: Finding
    why: str

    def __str__(self) -> str:
        f = self.finding
        title = f.patch.title if f.patch is not None else "the fix"
        return (
            f"{f.file}:{f.line}: [{f.rule_id}] {title}: left out, it cannot be built ({self.why})"
        )


@dataclass
class CheckResult:
    """What a check found: the findings, the files skipped and why, and the documents the fixes edit."""

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
    # fixes that could not be built: the finding is reported without its fix
    dropped: list[DroppedFix] = dataclasses.field(default_factory=list)

    def origin(self, index: int) -> Document | None:
        return self.origins[index] if index < len(self.origins) else None


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
    for finding in unreadable_findings(rules, loaded.unreadable):
        in_baseline = finding.fingerprint in accepted
        result.findings.append(dataclasses.replace(finding, in_baseline=in_baseline))
        result.unreadable.append(finding.file)
    return result


def aggregated(
    rules: RuleSet, findings: list[Finding], origins: list[Document | None]
) -> tuple[list[Finding], list[Document | None]]:
    """One finding per place (a file sourced by many scripts), and a rule marked `aggregate`
    gives one finding per distinct message, at its first place, saying how many places share
    it (a note repeated over a repository is read once)."""
    # one finding per place: an env file sourced by many scripts is reported once
    seen: set[tuple[str, str, int, int, str]] = set()
    unique: list[int] = []
    for i, f in enumerate(findings):
        place = (f.rule_id, f.file, f.line, f.col, f.message)
        if place not in seen:
            seen.add(place)
            unique.append(i)
    findings = [findings[i] for i in unique]
    origins = [origins[i] for i in unique]
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
    """A check of standard input's text: its result, and the lines whose sourced files it cannot find."""

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
    import tempfile  # standard input only: tempfile (and random under it) cost ~1.5 ms to import

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


def _buildable(
    doc: Document, fixes: list[tuple[Finding, Patch]]
) -> tuple[list[FileChange], list[DroppedFix]]:
    """The edits of the fixes that can be built together, in order, and the fixes left out: one
    that cannot be built (alone, or after the ones before it) is dropped, the others kept."""
    try:
        return doc.fix_changes([p for _, p in fixes]), []
    except InputError:
        pass
    kept: list[Patch] = []
    dropped: list[DroppedFix] = []
    for finding, patch in fixes:
        try:
            doc.fix_changes([*kept, patch])
        except InputError as exc:
            dropped.append(DroppedFix(finding, exc.problem))
            continue
        kept.append(patch)
    return (doc.fix_changes(kept) if kept else []), dropped


def safe_fix_changes(result: CheckResult) -> list[FileChange]:
    """`check --fix`: every safe fix of each document, applied in order; a fix that cannot be
    built is left out (`result.dropped` says which and why), never the others."""
    changes: list[FileChange] = []
    # the scripts a named sourced file was checked through are fixed too (by identity: a
    # document need not be hashable)
    docs = list({id(d): d for d in [*result.documents, *result.origins] if d is not None}.values())
    for doc in docs:
        mine = [f for i, f in enumerate(result.findings) if result.origin(i) is doc]
        fixes = [(f, p) for f in mine for p in _fixes([f], safe_only=True)]
        if fixes:
            built, dropped = _buildable(doc, fixes)
            changes.extend(built)
            result.dropped.extend(dropped)
    return changes


def finding_changes(result: CheckResult) -> list[list[FileChange]]:
    """Each finding's own edit (SARIF `fixes`), aligned with `result.findings`. A fix that
    cannot be built is taken off its finding (reported, with no fix) and recorded in
    `result.dropped`; the finding is still reported."""
    out: list[list[FileChange]] = []
    noted = {id(d.finding) for d in result.dropped}
    for i, finding in enumerate(result.findings):
        doc = result.origin(i)
        changes: list[FileChange] = []
        patches = _fixes([finding], safe_only=False)
        if patches and doc is not None:
            try:
                changes = doc.fix_changes(patches)
            except InputError as exc:
                if id(finding) not in noted:
                    result.dropped.append(DroppedFix(finding, exc.problem))
                result.findings[i] = dataclasses.replace(finding, patch=None)
        out.append(changes)
    return out
