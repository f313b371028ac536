"""Render check findings: text, advisor/findings@1 JSON, SARIF 2.1.0, GitHub annotations."""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor import __version__
from advisor.engine.rule_model import PolicyRule
from advisor.engine.rules import RuleSet
from advisor.model import FileChange, Finding, Severity

FINDINGS_SCHEMA = "advisor/findings@1"
SARIF_SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
LEVELS = {"error": "error", "warning": "warning", "note": "note"}


def summary(findings: list[Finding]) -> dict[str, int]:
    counted = [f for f in findings if f.counts]
    return {
        "error": sum(f.severity == "error" for f in counted),
        "warning": sum(f.severity == "warning" for f in counted),
        "note": sum(f.severity == "note" for f in counted),
        "suppressed": sum(f.suppressed is not None for f in findings),
        "baseline": sum(f.in_baseline and f.suppressed is None for f in findings),
    }


def findings_text(
    findings: list[Finding],
    files: list[str],
    dialects: dict[str, str] | None = None,
    skipped: list[tuple[str, str]] | None = None,
) -> str:
    from advisor.dialects.registry import LABELS

    lines = []
    by_file: dict[str, list[Finding]] = {}
    for f in findings:
        by_file.setdefault(f.file, []).append(f)
    # a finding may sit in a file the checked one sources (an env file's export)
    for file in [*files, *(f for f in by_file if f not in files)]:
        shown = [f for f in by_file.get(file, []) if f.counts]
        if not shown:
            continue
        kind = (dialects or {}).get(file)
        lines.append(f"{file} ({LABELS.get(kind, kind)})" if kind else file)
        for f in shown:
            fixable = " [fixable]" if f.fixable else ""
            lines.append(
                f"  {f.file}:{f.line}:{f.col}: {f.severity} [{f.rule_id}] {f.message}{fixable}"
            )
    for file, why in skipped or []:
        lines.append(f"{file}: skipped, {why}")
    s = summary(findings)
    kinds: dict[str, int] = {}
    for kind in (dialects or {}).values():
        kinds[kind] = kinds.get(kind, 0) + 1
    what = ", ".join(f"{n} {LABELS.get(k, k)}" for k, n in sorted(kinds.items()))
    lines.append(
        f"{s['error']} error(s), {s['warning']} warning(s), {s['note']} note(s) in {len(files)} file(s)"
        + (f" ({what})" if what else "")
        + f"; {s['suppressed']} waived, {s['baseline']} in the baseline"
    )
    return "\n".join(lines) + "\n"


def findings_json(
    findings: list[Finding],
    files: list[str],
    dialects: dict[str, str] | None = None,
    skipped: list[tuple[str, str]] | None = None,
    dropped: list[str] | None = None,
) -> str:
    payload = {
        "schema": FINDINGS_SCHEMA,
        "files": files,
        "dialects": dialects or {},
        "skipped": [{"file": file, "reason": why} for file, why in skipped or []],
        "fixes_left_out": list(dropped or []),
        "findings": [
            {
                "rule": f.rule_id,
                "severity": f.severity,
                "message": f.message,
                "file": f.file,
                "line": f.line,
                "column": f.col,
                "fingerprint": f.fingerprint,
                "suppressed": f.suppressed,
                "baseline": f.in_baseline,
                "fix": None
                if f.patch is None
                else {
                    "description": f.patch.title,
                    "safe": f.fixable,
                    "ops": [
                        {"op": op.op, "path": op.path, "value": op.value} for op in f.patch.ops
                    ],
                },
            }
            for f in findings
        ],
        "summary": summary(findings),
    }
    return json.dumps(payload, indent=2, ensure_ascii=False)


def _relative(path: str) -> str | None:
    """The path relative to the working folder (a repository's root in CI), if it lies below."""
    try:
        return Path(path).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return None


def _uri(path: str) -> str:
    return _relative(path) or Path(path).resolve().as_uri()


def _replacements(change: FileChange) -> list[dict[str, Any]]:
    before = change.before.replace("\r\n", "\n").splitlines(keepends=True)
    after = change.after.replace("\r\n", "\n").splitlines(keepends=True)
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=before, b=after).get_opcodes():
        if tag == "equal":
            continue
        region = {"startLine": i1 + 1, "startColumn": 1, "endLine": i2 + 1, "endColumn": 1}
        out.append({"deletedRegion": region, "insertedContent": {"text": "".join(after[j1:j2])}})
    return out


def _notifications(skipped: list[tuple[str, str]], dropped: list[str]) -> list[dict[str, object]]:
    """What the run did not judge, as SARIF tool notifications: each skipped file with its
    reason (`advisor/skipped`), each fix left out (`advisor/fix-left-out`)."""
    out: list[dict[str, object]] = []
    for file, why in skipped:
        out.append(
            {
                "descriptor": {"id": "advisor/skipped"},
                "level": "note",
                "message": {"text": f"skipped: {why}"},
                "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(file)}}}],
            }
        )
    for line in dropped:
        out.append(
            {
                "descriptor": {"id": "advisor/fix-left-out"},
                "level": "note",
                "message": {"text": line},
            }
        )
    return out


def findings_sarif(
    findings: list[Finding],
    rules: RuleSet,
    fixes: list[list[FileChange]],
    skipped: list[tuple[str, str]] | None = None,
    dropped: list[str] | None = None,
) -> str:
    """SARIF 2.1.0; `fixes` holds each finding's own file edits, aligned with `findings`; the
    files skipped and the fixes left out are the invocation's tool notifications."""
    used = sorted({f.rule_id for f in findings})
    index = {rule_id: i for i, rule_id in enumerate(used)}
    descriptors = []
    for rule_id in used:
        rule = rules[rule_id]
        docs = rule.docs
        level = rule.severity if isinstance(rule, PolicyRule) else Severity.warning
        descriptors.append(
            {
                "id": rule_id,
                "name": rule_id.split(".", 1)[1].replace("-", " ").title().replace(" ", ""),
                "shortDescription": {"text": rule.title},
                "fullDescription": {"text": docs.why},
                "help": {
                    "text": f"{docs.why}\nBefore: {docs.example.before}\nAfter: {docs.example.after}"
                },
                "defaultConfiguration": {"level": LEVELS[level]},
                "properties": {"tags": list(rule.tags)},
            }
        )
    results = []
    for f, changes in zip(findings, fixes, strict=True):
        result: dict[str, object] = {
            "ruleId": f.rule_id,
            "ruleIndex": index[f.rule_id],
            "level": LEVELS[f.severity],
            "message": {"text": f.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": _uri(f.file)},
                        "region": {"startLine": f.line, "startColumn": f.col},
                    }
                }
            ],
            "partialFingerprints": {"advisorFinding/v1": f.fingerprint},
            "baselineState": "unchanged" if f.in_baseline else "new",
        }
        if f.suppressed is not None:
            result["suppressions"] = [{"kind": "inSource", "justification": f.suppressed}]
        if changes:
            result["fixes"] = [
                {
                    "description": {"text": f.patch.title if f.patch else ""},
                    "artifactChanges": [
                        {
                            "artifactLocation": {"uri": _uri(c.path)},
                            "replacements": _replacements(c),
                        }
                        for c in changes
                    ],
                }
            ]
        results.append(result)
    sarif = {
        "$schema": SARIF_SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {"name": "advisor", "version": __version__, "rules": descriptors}
                },
                "invocations": [
                    {
                        "executionSuccessful": True,
                        "toolExecutionNotifications": _notifications(skipped or [], dropped or []),
                    }
                ],
                "results": results,
            }
        ],
    }
    return json.dumps(sarif, indent=2, ensure_ascii=False)


def findings_github(findings: list[Finding]) -> str:
    kinds = {"error": "error", "warning": "warning", "note": "notice"}
    lines = []
    for f in findings:
        if not f.counts:
            continue
        message = f.message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        lines.append(
            f"::{kinds[f.severity]} file={f.file},line={f.line},col={f.col},title={f.rule_id}::{message}"
        )
    return "\n".join(lines) + ("\n" if lines else "")


# GitLab's Code Quality severities (the Code Climate format it reads)
GITLAB_SEVERITY = {"error": "critical", "warning": "major", "note": "info"}


def findings_gitlab(findings: list[Finding]) -> str:
    """GitLab Code Quality report: a JSON array of issues (waived and baselined ones left out,
    as the merge request widget shows what still needs doing)."""
    issues = [
        {
            "description": f.message,
            "check_name": f.rule_id,
            "fingerprint": f.fingerprint,
            "severity": GITLAB_SEVERITY[f.severity],
            "location": {
                "path": _relative(f.file) or Path(f.file).as_posix(),
                "lines": {"begin": f.line},
            },
        }
        for f in findings
        if f.counts
    ]
    return json.dumps(issues, indent=2, ensure_ascii=False)


@dataclass(frozen=True)
class CheckReport:
    """A check's findings and files, as every output format renders them."""

    findings: list[Finding]
    files: list[str]
    rules: RuleSet
    fixes: Callable[[], list[list[FileChange]]]  # each finding's edit; only SARIF asks
    dialects: dict[str, str] | None = None  # file -> dialect
    skipped: list[tuple[str, str]] | None = None  # (file, why it is not a training file)
    dropped: list[str] | None = None  # fixes left out because they cannot be built, and why


FORMATS: dict[str, Callable[[CheckReport], str]] = {
    "text": lambda r: findings_text(r.findings, r.files, r.dialects, r.skipped),
    "json": lambda r: findings_json(r.findings, r.files, r.dialects, r.skipped, r.dropped) + "\n",
    "sarif": lambda r: findings_sarif(r.findings, r.rules, r.fixes(), r.skipped, r.dropped) + "\n",
    "github": lambda r: findings_github(r.findings),
    "gitlab": lambda r: findings_gitlab(r.findings) + "\n",
}
