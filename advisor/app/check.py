"""`advisor check` end to end: load documents, run policies, apply the baseline, fix."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from advisor.edit.launch_text import LaunchTextEditor
from advisor.edit.yaml_text import YamlTextEditor
from advisor.engine.policy import (
    Document,
    Finding,
    check_document,
    load_config_document,
    load_script_document,
)
from advisor.engine.rules import RuleSet
from advisor.model import FileChange, InputError

BASELINE_SCHEMA = "advisor/baseline@1"


@dataclass
class CheckResult:
    documents: list[Document]
    findings: list[Finding]


def load_baseline(path: Path) -> set[str]:
    if not path.exists():
        return set()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(str(path), f"invalid JSON at line {exc.lineno}: {exc.msg}") from None
    if (
        not isinstance(data, dict)
        or data.get("schema") != BASELINE_SCHEMA
        or not isinstance(data.get("fingerprints"), list)
    ):
        raise InputError(str(path), f"not an advisor baseline (expected schema {BASELINE_SCHEMA})")
    return {str(f) for f in data["fingerprints"]}


def write_baseline(path: Path, findings: list[Finding]) -> None:
    accepted = sorted({f.fingerprint for f in findings if f.suppressed is None})
    path.write_text(
        json.dumps({"schema": BASELINE_SCHEMA, "fingerprints": accepted}, indent=2) + "\n",
        encoding="utf-8",
    )


def run_check(
    configs: list[Path], launches: list[Path], rules: RuleSet, baseline: Path | None = None
) -> CheckResult:
    documents = [load_config_document(p) for p in configs] + [
        load_script_document(p) for p in launches
    ]
    accepted = load_baseline(baseline) if baseline else set()
    findings = []
    for doc in documents:
        doc.findings = check_document(doc, rules)
        for finding in doc.findings:
            finding.in_baseline = finding.fingerprint in accepted
        findings.extend(doc.findings)
    return CheckResult(documents, findings)


def fix_changes(doc: Document, findings: list[Finding], safe_only: bool) -> list[FileChange]:
    """The file edits of a document's autofixes (applied in order on one editor)."""
    fixes = [
        f.fix for f in findings if f.fix is not None and f.counts and (f.fix.safe or not safe_only)
    ]
    if not fixes:
        return []
    if doc.kind == "fsdp2-config":
        editor = YamlTextEditor(doc.path)
        for fix in fixes:
            for op, path, value in fix.ops:
                if op == "remove":
                    editor.remove(path)
                else:
                    editor.set(path, value)
        after = editor.result()
        return (
            [FileChange(str(doc.path), editor.original, after)] if after != editor.original else []
        )
    assert doc.script is not None
    launch = LaunchTextEditor(doc.script)
    for fix in fixes:
        for op, path, value in fix.ops:
            if fix.target == "env":
                if op == "remove":
                    launch.remove_env(path)
                else:
                    launch.set_env(path, value)
    return [FileChange(str(p), a, b) for p, (a, b) in launch.results().items()]
