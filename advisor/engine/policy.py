"""`advisor check`: policy rules over training configs and launch scripts, with inline waivers.

Most policies are declarative conditions over config keys and exported variables; the structural
ones (schema problems, how the backend parses the command line) name a built-in `check`, which
the document's dialect provides (`checks`). The engine knows no dialect: it sees a document
through `PolicyDocument`, which every dialect's document implements.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol

from advisor.core.values import get_path
from advisor.engine.conditions import Context, evaluate, names
from advisor.engine.rule_model import Change, PolicyRule
from advisor.engine.rules import RuleSet
from advisor.engine.targets import Target, holds
from advisor.engine.templates import render
from advisor.model import Finding, Patch, PatchOp, PatchTarget, Severity

_WAIVER = re.compile(r"#\s*advisor:\s*ignore\[([^\]]*)\](.*)$")


class PolicyDocument(Protocol):
    """What policies read of a checked file, whatever its dialect."""

    dialect_id: ClassVar[str]

    @property
    def path(self) -> Path: ...
    @property
    def lines(self) -> list[str]: ...
    @property
    def config(self) -> Mapping[str, object] | None: ...
    @property
    def policy_env(self) -> Mapping[str, str] | None: ...
    def reports_config(self, paths: Sequence[str]) -> bool: ...
    def config_position(self, dotted: str) -> tuple[int, int]: ...
    def env_location(self, name: str) -> tuple[Path, int, int]: ...
    def source_texts(self) -> Mapping[Path, str]: ...


# check name (a rule's `check`) -> its findings on one document
Checks = Mapping[str, Callable[[PolicyRule, Any], Iterator[Finding]]]


def _finding(
    rule: PolicyRule,
    doc: PolicyDocument,
    message: str,
    line: int,
    col: int,
    key: str,
    patch: Patch | None = None,
) -> Finding:
    return Finding(rule.id, rule.effective_severity, message, str(doc.path), line, col, key, patch)


def waivers(lines: list[str]) -> dict[int, tuple[set[str], str]]:
    """line (1-based) -> (waived rule ids, reason)."""
    out = {}
    for i, line in enumerate(lines, start=1):
        m = _WAIVER.search(line)
        if m:
            ids = {x.strip() for x in m.group(1).split(",") if x.strip()}
            out[i] = (ids, m.group(2).strip())
    return out


def _file_waivers(doc: PolicyDocument, path: Path) -> dict[int, tuple[set[str], str]]:
    # the script's texts are keyed by resolved paths; a finding names the file as given
    wanted = path.resolve()
    text = next((t for p, t in doc.source_texts().items() if p.resolve() == wanted), None)
    if text is None:
        return {}
    return waivers(text.replace("\r\n", "\n").split("\n"))


def _check_waivers(rule: PolicyRule, doc: PolicyDocument) -> Iterator[Finding]:
    for line, (ids, reason) in waivers(doc.lines).items():
        if not reason:
            message = render(rule.message, ids=", ".join(sorted(ids)) or "?")
            yield _finding(rule, doc, message, line, 1, f"waiver:{','.join(sorted(ids))}")


def _check_waiver_ids(rule: PolicyRule, doc: PolicyDocument, known: set[str]) -> Iterator[Finding]:
    for line, (ids, _) in waivers(doc.lines).items():
        for wid in sorted(ids - known - {"*"}):
            close = difflib.get_close_matches(wid, sorted(known), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            message = render(rule.message, ids=wid, detail=hint)
            yield _finding(rule, doc, message, line, 1, f"waiver-id:{wid}")


# ---------------------------------------------------------------- declarative policies


def _fix(rule: PolicyRule, change: Change | None) -> Patch | None:
    if change is None or change.target not in (PatchTarget.env, PatchTarget.config):
        return None
    ops = tuple(PatchOp(op.op, op.path, op.value) for op in change.ops)
    return Patch(rule.id, change.target, ops, change.applicability, rule.title)


def _subject(rule: PolicyRule, configs: list[str]) -> tuple[str, str]:
    """(source, name) a finding sits on: the rule's location, else the first key it reads."""
    location = rule.location
    if location is not None and location.env:
        return "env", location.env
    if location is not None and location.config:
        return "config", location.config
    return ("config", configs[0]) if configs else ("env", names(rule.when, "env")[0])


def _conditional(rule: PolicyRule, doc: PolicyDocument) -> Iterator[Finding]:
    configs = names(rule.when, "config")
    if configs and not doc.reports_config(configs):
        return
    ctx = Context(facts={}, config=doc.config, env=doc.policy_env)
    if not evaluate(rule.when, ctx).is_true:
        return
    source, path = _subject(rule, configs)
    file = doc.path
    value: object
    if source == "env":
        file, line, col = doc.env_location(path)  # the export, in a sourced file or not
        value = (doc.policy_env or {}).get(path)
    else:
        line, col = doc.config_position(path)
        value = get_path(doc.config, path)
    if rule.location is not None and rule.location.value:  # the finding sits on the switch
        value = get_path(doc.config, rule.location.value)
    shown = "(not set)" if value is None else value
    params = {name: param.value for name, param in rule.params.items()}
    message = render(rule.message, value=shown, path=path, **params)
    finding = _finding(rule, doc, message, line, col, f"{source}:{path}", _fix(rule, rule.change))
    yield finding if file == doc.path else dataclasses.replace(finding, file=str(file))


def _produced(
    rule: PolicyRule, doc: PolicyDocument, checks: Checks, rules: RuleSet
) -> Iterator[Finding]:
    if rule.check is None:
        return _conditional(rule, doc)
    if rule.check == "waiver-unknown-id":
        return _check_waiver_ids(rule, doc, set(rules.rules))
    if rule.check == "waiver-without-reason":
        return _check_waivers(rule, doc)
    check = checks.get(rule.check)
    return check(rule, doc) if check is not None else iter(())


def _waived(doc: PolicyDocument, findings: list[Finding]) -> list[Finding]:
    """Findings with the reason of the waiver comment on their line or the line above."""
    marks = {str(doc.path): waivers(doc.lines)}
    waived = []
    for finding in findings:
        if finding.file not in marks:  # a sourced file's export: its own waiver comments
            marks[finding.file] = _file_waivers(doc, Path(finding.file))
        for line in (finding.line, finding.line - 1):
            ids, reason = marks[finding.file].get(line, (set(), ""))
            if (
                (finding.rule_id in ids or "*" in ids)
                and reason
                and finding.rule_id != "policy.waiver-without-reason"
            ):
                finding = dataclasses.replace(finding, suppressed=reason)
        waived.append(finding)
    return waived


def check_document(
    doc: PolicyDocument, rules: RuleSet, checks: Checks, target: Target | None = None
) -> list[Finding]:
    """Every policy of the document's dialect; `checks` are the dialect's structural ones.
    A rule whose claim depends on the release (`targets`) runs only when it holds for the
    release the file is written for (unknown: the newest)."""
    findings: list[Finding] = []
    for rule in sorted(rules.of_type(PolicyRule), key=lambda r: r.id):
        if rule.targets and not holds(rule.targets, target or {}):
            continue
        if doc.dialect_id in rule.applies_to:
            findings.extend(_produced(rule, doc, checks, rules))
    return sorted(_waived(doc, findings), key=lambda f: (f.line, f.col, f.rule_id))


def fails(findings: list[Finding], fail_on: Severity) -> bool:
    return any(f.counts and f.severity.rank >= fail_on.rank for f in findings)
