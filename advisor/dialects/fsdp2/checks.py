"""Structural checks of FSDP2 files that are not one condition: keys the backend would ignore
or reject (with the safe move of a misplaced key), how its argument parser reads the launch
command's `--section.key` flags, and the sharding size against the processes started."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from advisor.core.values import get_path
from advisor.dialects.base import ConfigProblem
from advisor.dialects.fsdp2.config import FSDP2Config
from advisor.dialects.fsdp2.schema import fsdp_size
from advisor.engine.rule_model import PolicyRule
from advisor.engine.templates import render
from advisor.model import Applicability, Finding, Patch, PatchOp, PatchTarget

if TYPE_CHECKING:
    # annotations only: the launch script's reader loads when a script is read, never for a
    # YAML config's checks
    from advisor.dialects.fsdp2.launch import FSDP2LaunchScript

_WRONG_PLACE = ("not a key of", "not a section of", "unknown key", "unknown section")


def _finding(
    rule: PolicyRule,
    doc: FSDP2Config | FSDP2LaunchScript,
    message: str,
    where: tuple[int, int],
    key: str,
    patch: Patch | None = None,
) -> Finding:
    line, col = where
    return Finding(rule.id, rule.effective_severity, message, str(doc.path), line, col, key, patch)


def _reported(problems: list[ConfigProblem], invalid_values: bool) -> Iterator[ConfigProblem]:
    """A misplaced or unknown key, or else a value the backend rejects."""
    for problem in problems:
        if any(s in problem.message for s in _WRONG_PLACE) != invalid_values:
            yield problem


def _move(rule: PolicyRule, doc: FSDP2Config, problem: ConfigProblem) -> Patch | None:
    """The safe fix of a key in the wrong section, when its right place is free."""
    if not problem.moved_to or get_path(doc.config, problem.moved_to) is not None:
        return None
    value = get_path(doc.config, problem.path)
    ops = (PatchOp("remove", problem.path), PatchOp("set", problem.moved_to, value))
    title = f"move {problem.path} to {problem.moved_to}"
    return Patch(rule.id, PatchTarget.config, ops, Applicability.safe, title)


def config_keys(rule: PolicyRule, doc: FSDP2Config, invalid_values: bool) -> Iterator[Finding]:
    for problem in _reported(doc.problems, invalid_values):
        message = render(rule.message, path=problem.path, detail=problem.message)
        where = doc.config_position(problem.path)
        yield _finding(rule, doc, message, where, problem.path, _move(rule, doc, problem))


def cli_values(rule: PolicyRule, doc: FSDP2LaunchScript) -> Iterator[Finding]:
    """Invalid values the command line gives (the YAML's own are reported on the YAML; an
    unknown command-line key is the flag checks')."""
    cli = doc.cli_paths
    for problem in _reported(doc.problems, invalid_values=True):
        if problem.path in cli:
            message = render(rule.message, path=problem.path, detail=problem.message)
            yield _finding(rule, doc, message, doc.config_position(problem.path), problem.path)


def _flag_detail(
    mode: str,
    path: str,
    value: str | None,
    last: bool,
    config: object,
    keys: Mapping[str, Mapping[str, object]],
) -> str:
    """What is wrong with one `--section.key` flag in the given check mode ('' when nothing).
    `config` is the YAML the command line reads (None: unknown); `keys` the schema's."""
    section, _, key = path.partition(".")
    known = section in keys and key in keys[section]
    prefix_of = [k for k in keys.get(section, {}) if k.startswith(key) and k != key]
    if mode == "bare-last":
        # only for a real key: an unknown flag is reported as such, not told to take a value;
        # the backend re-appends only YAML keys, so a key the YAML lacks keeps the bare flag
        bare = value is None and last and known and _yaml_sets(config, section, key)
        return f"--{path}" if bare else ""
    if mode == "abbreviated":
        return "" if known else _abbreviation(path, section, prefix_of, config)
    if known or prefix_of:
        return ""
    homes = [s for s, body in keys.items() if key in body]
    hint = f" (it belongs in {homes[0]}: --{homes[0]}.{key})" if homes else ""
    return f"--{path}{hint}"


def _abbreviation(path: str, section: str, prefix_of: list[str], config: object) -> str:
    """argparse takes a unique prefix; the YAML wins only when it sets the full key, and an
    ambiguous prefix is an argparse error whatever the YAML holds."""
    if len(prefix_of) > 1:
        return f"--{path} (ambiguous: {', '.join(prefix_of)})"
    if prefix_of and _yaml_sets(config, section, prefix_of[0]):
        return f"--{path} (did you mean --{section}.{prefix_of[0]}?)"
    return ""


def _yaml_sets(config: object, section: str, key: str) -> bool:
    """The YAML the command line reads sets section.key (unknown YAML: assume it does)."""
    if config is None:
        return True
    return get_path(config, f"{section}.{key}") is not None  # type: ignore[arg-type]


def cli_flags(rule: PolicyRule, doc: FSDP2LaunchScript, mode: str) -> Iterator[Finding]:
    overrides = doc.script.overrides
    for i, override in enumerate(overrides):
        last = i == len(overrides) - 1
        detail = _flag_detail(mode, override.path, override.value, last, doc.yaml, doc.keys)
        if detail:
            message = render(rule.message, flag=detail, path=override.path)
            where = doc.flag_position(override.path)
            yield _finding(rule, doc, message, where, override.path)


def fsdp_world(rule: PolicyRule, doc: FSDP2LaunchScript) -> Iterator[Finding]:
    world = doc.script.world_size
    fsdp = fsdp_size(doc.config)
    if world is not None and fsdp is not None and fsdp != world:
        message = render(rule.message, fsdp=fsdp, world=world)
        where = doc.config_position("parallel.fsdp_size")
        yield _finding(rule, doc, message, where, "parallel.fsdp_size")
