"""Structural checks of a Megatron-backend script that are not one condition: the parallel
arithmetic, deprecated and doubled flags, and arguments the script hides from a static reading.
Each finding sits on the flag that causes it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from advisor.dialects.launch_checks import LAUNCH_CHECKS
from advisor.dialects.megatron.flags import deprecated_in, megatron_flags
from advisor.engine.rule_model import PolicyRule
from advisor.engine.templates import render
from advisor.model import Finding

if TYPE_CHECKING:
    # annotations only: the registry holds these checks, and the script's reader loads when a
    # script is read, never by a check of a YAML config
    from advisor.dialects.megatron.document import MegatronDocument as Document


def _finding(rule: PolicyRule, doc: Document, flag: str, message: str) -> Finding:
    from advisor.dialects.megatron.document import megatron_flag_position  # loaded: doc is one

    line, col = megatron_flag_position(doc, flag)
    return Finding(
        rule.id, rule.effective_severity, message, str(doc.path), line, col, f"args:{flag}"
    )


def _arithmetic(rule: PolicyRule, doc: Document) -> Iterator[Finding]:
    for flag, problem in doc.layout.problems if doc.layout else []:
        yield _finding(rule, doc, flag, render(rule.message, detail=problem, flag=f"--{flag}"))


def _deprecated(rule: PolicyRule, doc: Document) -> Iterator[Finding]:
    if doc.megatron is None:
        return
    # a deprecation is the checked repository's own when it holds MindSpeed-LLM's sources
    renamed = deprecated_in(doc.script.root)
    for flag in doc.megatron.args.parsed:
        if flag in renamed:
            detail = f"--{flag} is a deprecated spelling of --{renamed[flag]}"
            yield _finding(rule, doc, flag, render(rule.message, detail=detail, flag=f"--{flag}"))
    for group in megatron_flags().synonyms:
        given = sorted(group & set(doc.megatron.args.parsed))
        if len(given) > 1:
            detail = " and ".join(f"--{g}" for g in given) + " are one switch: keep one"
            yield _finding(
                rule, doc, given[-1], render(rule.message, detail=detail, flag=given[-1])
            )


def _doubled(rule: PolicyRule, doc: Document) -> Iterator[Finding]:
    """A valued flag given twice with different values: the last one silently wins."""
    if doc.megatron is None:
        return
    args = doc.megatron.args
    for flag in args.parsed:
        values = [o.value_text or "" for o in args.all_of(flag) if o.known and o.values]
        if len(set(values)) > 1:
            detail = (
                f"--{flag} is given {len(values)} times ({', '.join(values)}): "
                f"argparse keeps the last, {values[-1]}"
            )
            yield _finding(rule, doc, flag, render(rule.message, detail=detail, flag=f"--{flag}"))


def _hidden(rule: PolicyRule, doc: Document) -> Iterator[Finding]:
    """Arguments only running the script would show: the rules cannot judge them."""
    if doc.megatron is None:
        return
    args = doc.megatron.args
    if args.uncertain:
        flags = ", ".join(f"--{f}" for f in sorted(args.uncertain))
        detail = f"{flags} may or may not be passed (set inside a condition or computed)"
        first = sorted(args.uncertain)[0]
        yield _finding(rule, doc, first, render(rule.message, detail=detail, flag=first))
    if args.opaque:
        detail = "an unquoted command substitution may add any flag: flags not written after it are unknown"
        line = doc.megatron.command_line or 1
        yield Finding(
            rule.id,
            rule.effective_severity,
            render(rule.message, detail=detail, flag=""),
            str(doc.path),
            line,
            1,
            "args:<opaque>",
        )


MEGATRON_CHECKS: dict[str, Callable[[PolicyRule, Document], Iterator[Finding]]] = {
    "megatron-parallel-arithmetic": _arithmetic,
    "megatron-deprecated-flag": _deprecated,
    "megatron-doubled-flag": _doubled,
    "megatron-hidden-args": _hidden,
    **LAUNCH_CHECKS,
}
