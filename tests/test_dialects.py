"""Config dialects are types behind one protocol: a dialect is its own module plus one registry
entry. A toy dialect registered here is detected, read, checked (declarative and structural
policies), fixed and refused as a job's config without touching any other module; and no code
outside a dialect's own package branches on a dialect's name."""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from advisor.app.check import run_check, safe_fix_changes
from advisor.dialects.base import Dialect, Probe, split_lines
from advisor.dialects.registry import (
    LABELS,
    load_document,
    load_job_config,
    registered,
    registry,
)
from advisor.engine.rule_model import PolicyRule
from advisor.engine.rules import RuleSet, load_rules
from advisor.engine.templates import render
from advisor.model import (
    Applicability,
    FileChange,
    Finding,
    InputError,
    Patch,
    PatchOp,
    PatchTarget,
)

PACKAGE = Path(__file__).resolve().parents[1] / "advisor"
TOY = "toy-config"
_LINE = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*=\s*(.*?)\s*$")


@dataclass
class ToyConfig:
    """`section.key = value` lines: the smallest dialect that is still a real one."""

    dialect_id: ClassVar[str] = TOY

    path: Path
    text: str
    lines: list[str]
    config: dict[str, object]

    @classmethod
    def load(cls, probe: Probe) -> ToyConfig:
        config: dict[str, object] = {}
        for line in split_lines(probe.text):
            m = _LINE.match(line)
            if m:
                section, _, key = m.group(1).partition(".")
                node = config.setdefault(section, {})
                assert isinstance(node, dict)
                node[key] = m.group(2)
        return cls(probe.path, probe.text, split_lines(probe.text), config)

    @property
    def policy_env(self) -> dict[str, str] | None:
        return None

    @property
    def launch(self) -> None:
        return None

    def reports_config(self, paths: Sequence[str]) -> bool:
        return True

    def config_position(self, dotted: str) -> tuple[int, int]:
        for number, line in enumerate(self.lines, start=1):
            m = _LINE.match(line)
            if m and m.group(1) == dotted:
                return number, line.index(dotted) + 1
        return 1, 1

    def env_location(self, name: str) -> tuple[Path, int, int]:
        return self.path, 1, 1

    def source_texts(self) -> Mapping[Path, str]:
        return {self.path: self.text}

    def fix_changes(self, patches: Sequence[Patch]) -> list[FileChange]:
        removed = {op.path for p in patches for op in p.ops if op.op == "remove"}
        kept = [ln for ln in self.lines if not ((m := _LINE.match(ln)) and m.group(1) in removed)]
        after = "\n".join(kept)
        return [FileChange(str(self.path), self.text, after)] if after != self.text else []


def _unknown_sections(rule: PolicyRule, doc: ToyConfig) -> Iterator[Finding]:
    """A structural check the toy dialect brings under an existing check name."""
    for section, keys in doc.config.items():
        if section in ("training", "optimization") or not isinstance(keys, dict):
            continue
        for key in keys:
            path = f"{section}.{key}"
            line, col = doc.config_position(path)
            message = render(rule.message, path=path, detail="unknown section")
            fix = Patch(rule.id, PatchTarget.config, (PatchOp("remove", path),), Applicability.safe)
            yield Finding(
                rule.id, rule.effective_severity, message, str(doc.path), line, col, path, fix
            )


TOY_DIALECT: Dialect[ToyConfig] = Dialect(
    id=TOY,
    label="toy config",
    suffixes=(".toy",),
    detects=lambda probe: probe.path.suffix == ".toy",
    load=ToyConfig.load,
    checks={"config-unknown-key": _unknown_sections},
)


def _rules_for_the_toy() -> RuleSet:
    """The built-in policies, two of them declared for the toy dialect too (as its rules
    would say in `applies_to`)."""
    rules = load_rules(kinds=("policy",))
    for rule_id in ("policy.chunk-loss-needs-pretraining", "policy.config-unknown-key"):
        rule = rules.rules[rule_id]
        assert isinstance(rule, PolicyRule)
        rules.rules[rule_id] = dataclasses.replace(rule, applies_to=(*rule.applies_to, TOY))
    return rules


TOY_TEXT = "training.stage = sft\noptimization.chunk_loss_size = 1024\nextras.colour = blue\n"


def test_a_registered_dialect_is_detected_checked_and_fixed_end_to_end(tmp_path: Path):
    (tmp_path / "job.toy").write_text(TOY_TEXT)
    rules = _rules_for_the_toy()
    with registered(TOY_DIALECT):
        result = run_check(rules, [tmp_path])  # found by the folder walk through its suffix
        assert result.dialects == {str(tmp_path / "job.toy"): TOY}
        assert LABELS[TOY] == "toy config"
        found = {(f.rule_id, f.line, f.col) for f in result.findings}
        assert found == {
            ("policy.chunk-loss-needs-pretraining", 1, 1),  # on training.stage, its location
            ("policy.config-unknown-key", 3, 1),  # the toy's own structural check
        }
        (change,) = safe_fix_changes(result)
        assert change.after == "training.stage = sft\noptimization.chunk_loss_size = 1024\n"
    # once the dialect is gone, the file is no training file any more
    assert run_check(rules, [tmp_path]).dialects == {}


def test_a_dialect_that_is_not_a_job_config_is_refused_as_one_in_one_line(tmp_path: Path):
    path = tmp_path / "job.toy"
    path.write_text(TOY_TEXT)
    with registered(TOY_DIALECT):
        assert load_document(path).dialect_id == TOY
        with pytest.raises(InputError, match="toy config cannot be a job's config"):
            load_job_config(path)
    with pytest.raises(InputError, match="not a training config advisor knows"):
        load_document(path)


def test_each_real_dialect_is_one_registry_entry_with_its_own_id():
    ids = [d.id for d in registry().dialects]
    assert sorted(ids) == [
        "fsdp2-config",
        "launch-inference",
        "launch-script",
        "megatron-inference",
        "megatron-script",
        "mindformers-config",
        "mindformers-inference",
    ]
    assert registry().default_for("mindspore") == "mindformers-config"
    assert registry().default_for("pytorch") == "fsdp2-config"


# ---------------------------------------------------------------- no branch on a dialect's name

# where each dialect's name may be written: its own package (and nowhere else in the code)
_HOME = {
    "fsdp2-config": "dialects/fsdp2/",
    "launch-script": "dialects/fsdp2/",
    "launch-inference": "dialects/fsdp2/",
    "megatron-script": "dialects/megatron/",
    "megatron-inference": "dialects/megatron/",
    "mindformers-config": "dialects/mindformers.py",
    "mindformers-inference": "dialects/mindformers.py",
}


def test_no_code_outside_a_dialects_own_package_names_it():
    assert set(_HOME) == {d.id for d in registry().dialects}
    wrong = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Constant)
                and node.value in _HOME
                and not rel.startswith(_HOME[str(node.value)])
            ):
                wrong.append(f"{rel}:{node.lineno} names {node.value}")
    assert wrong == []


def test_no_code_compares_with_a_dialects_name():
    """Even inside its package a dialect's name is its identity, never a condition."""
    branches = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
                for operand in operands:
                    for inner in ast.walk(operand):
                        if isinstance(inner, ast.Constant) and inner.value in _HOME:
                            branches.append(f"{rel}:{node.lineno}")
    assert branches == []
