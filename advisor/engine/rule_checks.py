"""Rule data is data: what a rule file may put into a message, a script or a config.

Message templates name only their kind's fields (see templates.py); an environment change
names a variable (`^[A-Za-z_][A-Za-z0-9_]*$`), a CLI change a flag (`^--[a-z0-9][a-z0-9._-]*$`),
a config change a dotted path of plain keys. A rule that breaks one of these is rejected when it
is loaded, so `rules lint` reports it and nothing from it reaches a file or a shell.
"""

from __future__ import annotations

import re

from advisor.engine.rule_model import (
    BottleneckRule,
    Change,
    FeatureRule,
    PolicyRule,
    Rule,
    SymptomRule,
)
from advisor.engine.templates import template_errors
from advisor.model import DataError, PatchTarget

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
CLI_FLAG = re.compile(r"--[a-z0-9][a-z0-9._-]*")
# keys after the first may hold hyphens: a Megatron script's `args.use-flash-attn`
CONFIG_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_-]*)*")
# the fields each kind's message is formatted with (policy checks pass what they found)
SYMPTOM_FIELDS = {"value", "threshold", "fine", "level", "facts"}
BOTTLENECK_FIELDS = {"cost", "evidence", "facts"}
NOTES_FIELDS = {"facts"}
POLICY_FIELDS = {
    "path",
    "detail",
    "flag",
    "fsdp",
    "world",
    "ids",
    "value",
    "config",
    "where",
    "count",
    "program",
    "next",
}


def check_rule_data(rule: Rule) -> Rule:
    """The rule, or a DataError naming its file and the first problem."""
    problems = rule_data_errors(rule)
    if problems:
        raise DataError(f"{rule.path}: {rule.id}: {problems[0]}")
    return rule


def rule_data_errors(rule: Rule) -> list[str]:
    errors: list[str] = []
    if isinstance(rule, SymptomRule | BottleneckRule):
        # facts are known to the graph's rules only (check loads policies, never the catalogue)
        from advisor.facts.catalogue import is_known
    if isinstance(rule, SymptomRule):
        errors += template_errors(rule.message, SYMPTOM_FIELDS, is_known)
    elif isinstance(rule, BottleneckRule):
        errors += template_errors(rule.message, BOTTLENECK_FIELDS, is_known)
        if rule.docs.notes:
            errors += template_errors(rule.docs.notes, NOTES_FIELDS, is_known)
    elif isinstance(rule, PolicyRule):
        errors += template_errors(rule.message, POLICY_FIELDS | set(rule.params))
        if rule.change is not None:
            errors += change_errors(rule.change)
    if isinstance(rule, FeatureRule):
        errors += change_errors(rule.change)
        if rule.change.advice:
            from advisor.facts.catalogue import is_known

            errors += template_errors(rule.change.advice, NOTES_FIELDS, is_known)
    return errors


def change_errors(change: Change) -> list[str]:
    pattern = {
        PatchTarget.env: (ENV_NAME, "an environment variable name"),
        PatchTarget.cli: (CLI_FLAG, "a command-line flag (--lower-case.words)"),
        PatchTarget.config: (CONFIG_PATH, "a dotted path of config keys"),
    }.get(change.target)
    if pattern is None:
        return []
    regex, what = pattern
    errors = [
        f"change path {op.path!r} is not {what}"
        for op in change.ops
        if not regex.fullmatch(op.path)
    ]
    errors += [
        f"near flag {name!r} is not a flag name (lower-case words and hyphens)"
        for op in change.ops
        for name in op.near
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", name)
    ]
    return errors
