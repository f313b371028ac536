"""`advisor check`: policy rules over FSDP2 configs and launch scripts, with inline waivers.

Most policies are declarative conditions over config keys and exported variables; the structural
ones (schema problems, how the backend parses the command line) name a built-in `check`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.engine.conditions import Context, evaluate, referenced
from advisor.engine.rules import Rule, RuleSet
from advisor.inputs.configs import (
    ConfigProblem,
    LaunchScript,
    config_problems,
    effective_config,
    fsdp2_keys,
    parse_launch,
)
from advisor.inputs.yamlio import LocatedDocument, locate
from advisor.model import InputError

SEVERITY_RANK = {"note": 0, "warning": 1, "error": 2}
_WAIVER = re.compile(r"#\s*advisor:\s*ignore\[([^\]]*)\](.*)$")


@dataclass(frozen=True)
class Fix:
    """An autofix as abstract edits; applying them is patch.py's job."""

    target: str  # "config" | "env"
    ops: tuple[tuple[str, str, Any], ...]  # (op, path, value): set / remove
    safe: bool
    description: str


@dataclass
class Finding:
    rule_id: str
    severity: str
    message: str
    file: str
    line: int
    col: int
    key: str  # what the finding is about (config path, variable, flag): part of the fingerprint
    fix: Fix | None = None
    suppressed: str | None = None  # the waiver's reason
    in_baseline: bool = False

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(
            f"{self.rule_id}|{Path(self.file).name}|{self.key}".encode()
        ).hexdigest()[:20]

    @property
    def counts(self) -> bool:
        return self.suppressed is None and not self.in_baseline


@dataclass
class Document:
    path: Path
    kind: str  # "fsdp2-config" | "launch-script"
    lines: list[str]
    located: LocatedDocument | None = None
    script: LaunchScript | None = None
    config: dict[str, Any] | None = None
    env: dict[str, str] | None = None
    findings: list[Finding] = field(default_factory=list)
    problems: list[ConfigProblem] | None = None  # schema problems, computed once


def load_config_document(path: Path) -> Document:
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise InputError(str(path), f"cannot read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise InputError(str(path), "not UTF-8 text") from None
    located = locate(text.replace("\r\n", "\n"), str(path))
    if not isinstance(located.data, dict):
        raise InputError(str(path), "a training config must be a YAML mapping")
    kind = "mindformers-config" if is_mindformers(located.data) else "fsdp2-config"
    lines = text.replace("\r\n", "\n").split("\n")
    return Document(path, kind, lines, located, config=located.data)


def is_mindformers(data: dict[str, Any]) -> bool:
    """MindSpore Transformers configs have parallel_config / runner_config at the top level."""
    return "parallel_config" in data or "runner_config" in data


def load_script_document(path: Path) -> Document:
    script = parse_launch(path)
    config: dict[str, Any] = {}
    if script.config_arg:
        for base in (path.parent, Path.cwd()):
            candidate = base / script.config_arg
            if candidate.is_file():
                loaded = locate(candidate.read_text(encoding="utf-8"), str(candidate)).data
                config = loaded if isinstance(loaded, dict) else {}
                break
    lines = path.read_text(encoding="utf-8").replace("\r\n", "\n").split("\n")
    return Document(
        path,
        "launch-script",
        lines,
        script=script,
        config=effective_config(config, script),
        env=script.env,
    )


# ---------------------------------------------------------------- locating what a finding is about


def _scan_position(lines: list[str], section: str, key: str) -> tuple[int, int] | None:
    """Block-style YAML: the `section:` line at column 0, then its `  key:` line. No parse."""
    head = re.compile(rf"^{re.escape(section)}\s*:")
    entry = re.compile(rf"^(\s+){re.escape(key)}\s*:") if key else None
    for i, line in enumerate(lines):
        if head.match(line):
            if entry is None:
                return i + 1, 1
            for j in range(i + 1, len(lines)):
                text = lines[j]
                if text.strip() and not text[:1].isspace() and not text.lstrip().startswith("#"):
                    break  # the next section
                m = entry.match(text)
                if m:
                    return j + 1, len(m.group(1)) + 1
            return i + 1, 1
    return None


def _config_position(doc: Document, dotted: str) -> tuple[int, int]:
    if doc.located is not None:
        section, _, key = dotted.partition(".")
        quick = _scan_position(doc.lines, section, key)
        if quick is not None:
            return quick
        section, _, key = dotted.partition(".")
        entry = doc.located.entry(section, key) if key else doc.located.entry(section)
        if entry is None and key:
            entry = doc.located.entry(section)
        if entry is not None:
            return entry.key_line + 1, entry.key_col + 1
    if doc.script is not None:
        for override in doc.script.overrides:
            if override.path == dotted:
                return _flag_position(doc, dotted)
        return doc.script.command_line or 1, 1
    return 1, 1


def _flag_position(doc: Document, dotted: str) -> tuple[int, int]:
    start = (doc.script.command_line or 1) if doc.script else 1
    end = (doc.script.command_end_line or start) if doc.script else start
    for i in range(start - 1, min(end, len(doc.lines))):
        col = doc.lines[i].find(f"--{dotted}")
        if col >= 0:
            return i + 1, col + 1
    return start, 1


def _env_position(doc: Document, name: str) -> tuple[int, int]:
    if doc.script is not None:
        for export in reversed(doc.script.exports):
            if export.name == name and export.path == doc.path:
                return export.line, 1
        return doc.script.command_line or 1, 1
    return 1, 1


# ---------------------------------------------------------------- built-in structural checks


def _finding(
    rule: Rule, doc: Document, message: str, line: int, col: int, key: str, fix: Fix | None = None
) -> Finding:
    severity = rule.severity or str(rule.data["severity"])
    return Finding(rule.id, severity, message, str(doc.path), line, col, key, fix)


def _cli_paths(doc: Document) -> set[str]:
    return {o.path for o in doc.script.overrides} if doc.script else set()


def _check_config_keys(rule: Rule, doc: Document, invalid_values: bool) -> Iterator[Finding]:
    if doc.config is None:
        return
    cli = _cli_paths(doc)
    if doc.problems is None:
        doc.problems = config_problems(doc.config)
    for problem in doc.problems:
        if doc.kind == "launch-script" and problem.path not in cli:
            continue  # the YAML's own problems are reported on the YAML file
        wrong_place = (
            "not a key of" in problem.message
            or "unknown key" in problem.message
            or "unknown section" in problem.message
        )
        if wrong_place == invalid_values:
            continue
        line, col = _config_position(doc, problem.path)
        fix = None
        if problem.moved_to and doc.kind == "fsdp2-config":
            section, key = problem.moved_to.split(".", 1)
            target_taken = isinstance(doc.config.get(section), dict) and key in doc.config[section]
            if not target_taken:
                value = doc.config[problem.path.split(".")[0]][key]
                fix = Fix(
                    "config",
                    (("remove", problem.path, None), ("set", problem.moved_to, value)),
                    True,
                    f"move {problem.path} to {problem.moved_to}",
                )
        message = str(rule.data["message"]).format(path=problem.path, detail=problem.message)
        yield _finding(rule, doc, message, line, col, problem.path, fix)


def _check_cli(rule: Rule, doc: Document, mode: str) -> Iterator[Finding]:
    script = doc.script
    if script is None:
        return
    keys = fsdp2_keys()
    for i, override in enumerate(script.overrides):
        section, _, key = override.path.partition(".")
        known = section in keys and key in keys[section]
        prefix_of = [k for k in keys.get(section, {}) if k.startswith(key) and k != key]
        line, col = _flag_position(doc, override.path)
        detail = ""
        if mode == "bare-last":
            if override.value is None and i == len(script.overrides) - 1:
                detail = f"--{override.path}"
        elif mode == "abbreviated":
            if not known and prefix_of:
                detail = f"--{override.path} (did you mean --{section}.{prefix_of[0]}?)"
        elif not known and not prefix_of:
            detail = f"--{override.path}"
        if detail:
            message = str(rule.data["message"]).format(flag=detail, path=override.path)
            yield _finding(rule, doc, message, line, col, override.path)


def _check_world(rule: Rule, doc: Document) -> Iterator[Finding]:
    script, config = doc.script, doc.config or {}
    if script is None or script.world_size is None:
        return
    parallel = config.get("parallel") if isinstance(config.get("parallel"), dict) else {}
    fsdp = parallel.get("fsdp_size") if isinstance(parallel, dict) else None
    if isinstance(fsdp, int) and fsdp != script.world_size:
        line, col = _config_position(doc, "parallel.fsdp_size")
        message = str(rule.data["message"]).format(fsdp=fsdp, world=script.world_size)
        yield _finding(rule, doc, message, line, col, "parallel.fsdp_size")


def waivers(doc: Document) -> dict[int, tuple[set[str], str]]:
    """line (1-based) -> (waived rule ids, reason)."""
    out = {}
    for i, line in enumerate(doc.lines, start=1):
        m = _WAIVER.search(line)
        if m:
            ids = {x.strip() for x in m.group(1).split(",") if x.strip()}
            out[i] = (ids, m.group(2).strip())
    return out


def _check_waivers(rule: Rule, doc: Document) -> Iterator[Finding]:
    for line, (ids, reason) in waivers(doc).items():
        if not reason:
            message = str(rule.data["message"]).format(ids=", ".join(sorted(ids)) or "?")
            yield _finding(rule, doc, message, line, 1, f"waiver:{','.join(sorted(ids))}")


CHECKS: dict[str, Callable[[Rule, Document], Iterator[Finding]]] = {
    "config-unknown-key": lambda r, d: _check_config_keys(r, d, invalid_values=False),
    "config-invalid-value": lambda r, d: _check_config_keys(r, d, invalid_values=True),
    "cli-bare-boolean-last": lambda r, d: _check_cli(r, d, "bare-last"),
    "cli-abbreviated-flag": lambda r, d: _check_cli(r, d, "abbreviated"),
    "cli-unknown-flag": lambda r, d: _check_cli(r, d, "unknown"),
    "fsdp-size-world": _check_world,
    "waiver-without-reason": _check_waivers,
}


# ---------------------------------------------------------------- declarative policies


def _lookup(doc: Document, source: str, path: str) -> Any:
    if source == "env":
        return (doc.env or {}).get(path)
    node: Any = doc.config or {}
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _conditional(rule: Rule, doc: Document) -> Iterator[Finding]:
    env = doc.env if doc.kind == "launch-script" else None
    configs = referenced(rule.data["when"], "config")
    if doc.kind == "launch-script" and configs and not set(configs) & _cli_paths(doc):
        return  # a config-only policy is reported on the YAML unless the command line sets the keys
    ctx = Context(facts={}, config=doc.config, env=env, params=rule.params)
    if not evaluate(rule.data["when"], ctx).is_true:
        return
    location = rule.data.get("location") or {}
    if "env" in location:
        source, path = "env", str(location["env"])
    elif "config" in location:
        source, path = "config", str(location["config"])
    else:
        configs = referenced(rule.data["when"], "config")
        envs = referenced(rule.data["when"], "env")
        source, path = ("config", configs[0]) if configs else ("env", envs[0])
    line, col = _env_position(doc, path) if source == "env" else _config_position(doc, path)
    value = _lookup(doc, source, path)
    shown = "(not set)" if value is None else value
    message = str(rule.data["message"]).format(value=shown, path=path, **dict(rule.params.items()))
    fix = None
    change = rule.data.get("change")
    if change and change["target"] in ("env", "config"):
        ops = tuple((op["op"], op["path"], op.get("value")) for op in change.get("ops", []))
        fix = Fix(change["target"], ops, change["applicability"] == "safe", str(rule.title))
    yield _finding(rule, doc, message, line, col, f"{source}:{path}", fix)


def check_document(doc: Document, rules: RuleSet) -> list[Finding]:
    findings: list[Finding] = []
    for rule in sorted(rules.of_kind("policy"), key=lambda r: r.id):
        if doc.kind not in rule.data["applies_to"]:
            continue
        check = rule.data.get("check")
        produced = CHECKS[str(check)](rule, doc) if check else _conditional(rule, doc)
        findings.extend(produced)
    marks = waivers(doc)
    for finding in findings:
        for line in (finding.line, finding.line - 1):
            ids, reason = marks.get(line, (set(), ""))
            if (
                (finding.rule_id in ids or "*" in ids)
                and reason
                and finding.rule_id != "policy.waiver-without-reason"
            ):
                finding.suppressed = reason
    return sorted(findings, key=lambda f: (f.line, f.col, f.rule_id))


def fails(findings: list[Finding], fail_on: str) -> bool:
    return any(f.counts and SEVERITY_RANK[f.severity] >= SEVERITY_RANK[fail_on] for f in findings)
