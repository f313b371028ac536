"""`advisor check`: policy rules over FSDP2 configs and launch scripts, with inline waivers.

Most policies are declarative conditions over config keys and exported variables; the structural
ones (schema problems, how the backend parses the command line) name a built-in `check`.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from advisor.engine.conditions import Context, evaluate, names
from advisor.engine.megatron_checks import MEGATRON_CHECKS
from advisor.engine.rule_model import Change, PolicyRule
from advisor.engine.rules import RuleSet
from advisor.engine.templates import render
from advisor.inputs.configs import config_problems, fsdp2_keys, mindformers_problems
from advisor.inputs.documents import Document, config_position, env_location, flag_position
from advisor.inputs.parallel import fsdp_size
from advisor.inputs.values import get_path
from advisor.model import Applicability, Finding, Patch, PatchOp, PatchTarget, Severity

_WAIVER = re.compile(r"#\s*advisor:\s*ignore\[([^\]]*)\](.*)$")


# ---------------------------------------------------------------- built-in structural checks


def _finding(
    rule: PolicyRule,
    doc: Document,
    message: str,
    line: int,
    col: int,
    key: str,
    patch: Patch | None = None,
) -> Finding:
    return Finding(rule.id, rule.effective_severity, message, str(doc.path), line, col, key, patch)


def _cli_paths(doc: Document) -> set[str]:
    return {o.path for o in doc.script.overrides} if doc.script else set()


def _check_config_keys(rule: PolicyRule, doc: Document, invalid_values: bool) -> Iterator[Finding]:
    if doc.config is None:
        return
    cli = _cli_paths(doc)
    if doc.problems is None:
        doc.problems = config_problems(doc.config)
    for problem in doc.problems:
        if doc.kind == "launch-script" and problem.path not in cli:
            continue  # the YAML's own problems are reported on the YAML file
        if doc.kind == "launch-script" and not invalid_values:
            continue  # an unknown CLI key is the CLI checks' (unknown or abbreviated flag)
        wrong_place = (
            "not a key of" in problem.message
            or "unknown key" in problem.message
            or "unknown section" in problem.message
        )
        if wrong_place == invalid_values:
            continue
        line, col = config_position(doc, problem.path)
        patch = None
        if problem.moved_to and doc.kind == "fsdp2-config":
            target_taken = get_path(doc.config, problem.moved_to) is not None
            if not target_taken:
                value = get_path(doc.config, problem.path)
                patch = Patch(
                    rule.id,
                    PatchTarget.config,
                    (PatchOp("remove", problem.path), PatchOp("set", problem.moved_to, value)),
                    Applicability.safe,
                    f"move {problem.path} to {problem.moved_to}",
                )
        message = render(rule.message, path=problem.path, detail=problem.message)
        yield _finding(rule, doc, message, line, col, problem.path, patch)


def _check_cli(rule: PolicyRule, doc: Document, mode: str) -> Iterator[Finding]:
    script = doc.script
    if script is None:
        return
    keys = fsdp2_keys()
    for i, override in enumerate(script.overrides):
        section, _, key = override.path.partition(".")
        known = section in keys and key in keys[section]
        prefix_of = [k for k in keys.get(section, {}) if k.startswith(key) and k != key]
        line, col = flag_position(doc, override.path)
        detail = ""
        if mode == "bare-last":
            # only for a real key: an unknown flag is reported as such, not told to take a value;
            # the backend re-appends only YAML keys, so a key the YAML lacks keeps the bare flag
            last = i == len(script.overrides) - 1
            if override.value is None and last and known and _yaml_sets(doc, section, key):
                detail = f"--{override.path}"
        elif mode == "abbreviated":
            # argparse takes a unique prefix; the YAML wins only when it sets the full key, and an
            # ambiguous prefix is an argparse error whatever the YAML holds
            if not known and len(prefix_of) > 1:
                detail = f"--{override.path} (ambiguous: {', '.join(prefix_of)})"
            elif not known and prefix_of and _yaml_sets(doc, section, prefix_of[0]):
                detail = f"--{override.path} (did you mean --{section}.{prefix_of[0]}?)"
        elif not known and not prefix_of:
            homes = [s for s, body in keys.items() if key in body]
            hint = f" (it belongs in {homes[0]}: --{homes[0]}.{key})" if homes else ""
            detail = f"--{override.path}{hint}"
        if detail:
            message = render(rule.message, flag=detail, path=override.path)
            yield _finding(rule, doc, message, line, col, override.path)


def _yaml_sets(doc: Document, section: str, key: str) -> bool:
    """The YAML the command line reads sets section.key (unknown YAML: assume it does)."""
    if doc.config is None:
        return True
    return get_path(doc.config, f"{section}.{key}") is not None


def _check_world(rule: PolicyRule, doc: Document) -> Iterator[Finding]:
    script = doc.script
    if script is None or script.world_size is None:
        return
    fsdp = fsdp_size(doc.config)
    if fsdp is not None and fsdp != script.world_size:
        line, col = config_position(doc, "parallel.fsdp_size")
        message = render(rule.message, fsdp=fsdp, world=script.world_size)
        yield _finding(rule, doc, message, line, col, "parallel.fsdp_size")


def _check_mindformers(rule: PolicyRule, doc: Document) -> Iterator[Finding]:
    for problem in mindformers_problems(doc.config or {}):
        line, col = config_position(doc, problem.path)
        message = render(rule.message, path=problem.path, detail=problem.message)
        yield _finding(rule, doc, message, line, col, problem.path)


def waivers(doc: Document) -> dict[int, tuple[set[str], str]]:
    """line (1-based) -> (waived rule ids, reason)."""
    out = {}
    for i, line in enumerate(doc.lines, start=1):
        m = _WAIVER.search(line)
        if m:
            ids = {x.strip() for x in m.group(1).split(",") if x.strip()}
            out[i] = (ids, m.group(2).strip())
    return out


def _file_waivers(doc: Document, path: Path) -> dict[int, tuple[set[str], str]]:
    # the script's texts are keyed by resolved paths; a finding names the file as given
    wanted = path.resolve()
    texts = doc.script.texts if doc.script else {}
    text = next((t for p, t in texts.items() if p.resolve() == wanted), None)
    if text is None:
        return {}
    return waivers(dataclasses.replace(doc, lines=text.replace("\r\n", "\n").split("\n")))


def _check_waivers(rule: PolicyRule, doc: Document) -> Iterator[Finding]:
    for line, (ids, reason) in waivers(doc).items():
        if not reason:
            message = render(rule.message, ids=", ".join(sorted(ids)) or "?")
            yield _finding(rule, doc, message, line, 1, f"waiver:{','.join(sorted(ids))}")


def _check_waiver_ids(rule: PolicyRule, doc: Document, known: set[str]) -> Iterator[Finding]:
    for line, (ids, _) in waivers(doc).items():
        for wid in sorted(ids - known - {"*"}):
            close = difflib.get_close_matches(wid, sorted(known), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            message = render(rule.message, ids=wid, detail=hint)
            yield _finding(rule, doc, message, line, 1, f"waiver-id:{wid}")


CHECKS: dict[str, Callable[[PolicyRule, Document], Iterator[Finding]]] = {
    **MEGATRON_CHECKS,
    "config-unknown-key": lambda r, d: _check_config_keys(r, d, invalid_values=False),
    "config-invalid-value": lambda r, d: _check_config_keys(r, d, invalid_values=True),
    "cli-bare-boolean-last": lambda r, d: _check_cli(r, d, "bare-last"),
    "cli-abbreviated-flag": lambda r, d: _check_cli(r, d, "abbreviated"),
    "cli-unknown-flag": lambda r, d: _check_cli(r, d, "unknown"),
    "fsdp-size-world": _check_world,
    "mindformers-config-keys": _check_mindformers,
    "waiver-without-reason": _check_waivers,
}


# ---------------------------------------------------------------- declarative policies


def _fix(rule: PolicyRule, change: Change | None) -> Patch | None:
    if change is None or change.target not in (PatchTarget.env, PatchTarget.config):
        return None
    ops = tuple(PatchOp(op.op, op.path, op.value) for op in change.ops)
    return Patch(rule.id, change.target, ops, change.applicability, rule.title)


def _conditional(rule: PolicyRule, doc: Document) -> Iterator[Finding]:
    env = doc.env if doc.kind in ("launch-script", "megatron-script") else None
    configs = names(rule.when, "config")
    if doc.kind == "launch-script" and configs and not set(configs) & _cli_paths(doc):
        return  # a config-only policy is reported on the YAML unless the command line sets the keys
    ctx = Context(facts={}, config=doc.config, env=env)
    if not evaluate(rule.when, ctx).is_true:
        return
    location = rule.location
    if location is not None and location.env:
        source, path = "env", location.env
    elif location is not None and location.config:
        source, path = "config", location.config
    else:
        envs = names(rule.when, "env")
        source, path = ("config", configs[0]) if configs else ("env", envs[0])
    file = doc.path
    if source == "env":
        file, line, col = env_location(doc, path)  # the export, in a sourced file or not
    else:
        line, col = config_position(doc, path)
    value = (doc.env or {}).get(path) if source == "env" else get_path(doc.config, path)
    if location is not None and location.value:  # the finding sits on the switch, says the cause
        value = get_path(doc.config, location.value)
    shown = "(not set)" if value is None else value
    params = {name: param.value for name, param in rule.params.items()}
    message = render(rule.message, value=shown, path=path, **params)
    finding = _finding(rule, doc, message, line, col, f"{source}:{path}", _fix(rule, rule.change))
    yield finding if file == doc.path else dataclasses.replace(finding, file=str(file))


def check_document(doc: Document, rules: RuleSet) -> list[Finding]:
    findings: list[Finding] = []
    for rule in sorted(rules.of_type(PolicyRule), key=lambda r: r.id):
        if doc.kind not in rule.applies_to:
            continue
        if rule.check == "waiver-unknown-id":
            produced = _check_waiver_ids(rule, doc, set(rules.rules))
        else:
            produced = CHECKS[rule.check](rule, doc) if rule.check else _conditional(rule, doc)
        findings.extend(produced)
    marks = {str(doc.path): waivers(doc)}
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
    return sorted(waived, key=lambda f: (f.line, f.col, f.rule_id))


def fails(findings: list[Finding], fail_on: Severity) -> bool:
    return any(f.counts and f.severity.rank >= fail_on.rank for f in findings)
