"""The FSDP2 key schema follows the checked repository's own argument dataclasses
(`mindspeed_llm/fsdp2/utils/arguments.py`, read with ast): the same config is right in a
repository before the fused-op switches moved to `optimization` and wrong after, whatever
setup.py's version says. The real before/after files come from the MindSpeed-LLM mirror when it
is on this machine (skipped otherwise)."""

from __future__ import annotations

import ast
import os
import subprocess
from pathlib import Path

import pytest

from advisor.app.check import run_check, safe_fix_changes
from advisor.app.rulesets import load_graph
from advisor.dialects.fsdp2.repository_schema import (
    ARGUMENTS,
    annotation_schema,
    bundled_schema,
    repository_schema,
    sections,
)

RULES = load_graph().ruleset

_HEAD = """from dataclasses import dataclass, field
from typing import ClassVar, List, Literal, Optional


@dataclass
class ModelArguments:
    model_id: Optional[Literal["qwen3", "qwen3_moe"]] = field(default=None)


@dataclass
class ParallelArguments:
    fsdp_size: int = field(default=1)


"""
# before 7e46b9b1: the fused-op switches are training's
BEFORE = (
    _HEAD
    + """@dataclass
class TrainingArguments:
    lr: float = 1e-5
    use_fused_rmsnorm: bool = field(default=False, metadata={"help": "Use fused rmsnorm."})
    internal: ClassVar[int] = 3
    derived: int = field(default=0, init=False)
"""
)
# after: a section of their own
AFTER = (
    _HEAD
    + """@dataclass
class TrainingArguments:
    lr: float = 1e-5


@dataclass
class OptimizationArguments:
    use_fused_rmsnorm: bool = field(default=False, metadata={"help": "Use fused rmsnorm."})
"""
)
SETUP = "__version__ = '26.0.0dev0'\n__package_name__ = 'mindspeed_llm'\n"
IN_TRAINING = "model:\n  model_id: qwen3\ntraining:\n  lr: 1e-5\n  use_fused_rmsnorm: true\n"
IN_OPTIMIZATION = (
    "model:\n  model_id: qwen3\ntraining:\n  lr: 1e-5\noptimization:\n  use_fused_rmsnorm: true\n"
)
LAUNCH = (
    "export TRAINING_BACKEND=fsdp2\n"
    "torchrun --nproc_per_node 8 train_fsdp2.py cfg.yaml --training.use_fused_rmsnorm true\n"
)


def _repository(root: Path, arguments: str | None, config: str) -> Path:
    (root / ".git").mkdir(parents=True)
    (root / "setup.py").write_text(SETUP, encoding="utf-8")
    if arguments is not None:
        (root / ARGUMENTS).parent.mkdir(parents=True)
        (root / ARGUMENTS).write_text(arguments, encoding="utf-8")
    (root / "cfg.yaml").write_text(config, encoding="utf-8")
    (root / "run.sh").write_text(LAUNCH, encoding="utf-8")
    return root


def _misplaced(root: Path, file: str = "cfg.yaml") -> list[str]:
    result = run_check(RULES, configs=[root / file], root=root)
    return [f.message for f in result.findings if f.counts and "belongs in" in f.message]


def test_the_same_config_is_right_before_the_move_and_wrong_after(tmp_path: Path):
    before = _repository(tmp_path / "before", BEFORE, IN_TRAINING)
    after = _repository(tmp_path / "after", AFTER, IN_TRAINING)
    assert _misplaced(before) == []
    (message,) = _misplaced(after)
    assert "training.use_fused_rmsnorm" in message and "belongs in optimization" in message
    assert ARGUMENTS in message  # says whose schema judged it


def test_an_optimization_section_is_wrong_before_the_move_and_moved_back(tmp_path: Path):
    before = _repository(tmp_path / "before", BEFORE, IN_OPTIMIZATION)
    after = _repository(tmp_path / "after", AFTER, IN_OPTIMIZATION)
    assert _misplaced(after) == []
    (message,) = _misplaced(before)
    assert "optimization.use_fused_rmsnorm" in message and "belongs in training" in message
    # the safe fix moves it where this repository's backend reads it
    result = run_check(RULES, configs=[before / "cfg.yaml"], root=before)
    (change,) = safe_fix_changes(result)
    assert "use_fused_rmsnorm: true" in change.after.split("training:")[1]
    assert "optimization:\n  use_fused_rmsnorm" not in change.after


def test_launch_flags_are_judged_by_the_repositorys_schema(tmp_path: Path):
    before = _repository(tmp_path / "before", BEFORE, IN_TRAINING)
    after = _repository(tmp_path / "after", AFTER, IN_OPTIMIZATION)
    flags_before = _misplaced(before, "run.sh")
    flags_after = _misplaced(after, "run.sh")
    assert flags_before == []
    assert flags_after and "--optimization.use_fused_rmsnorm" in flags_after[0]


def test_without_arguments_py_the_bundled_schema_judges(tmp_path: Path):
    plain = _repository(tmp_path / "plain", None, IN_TRAINING)
    (message,) = _misplaced(plain)
    assert "belongs in optimization" in message and ARGUMENTS not in message
    assert repository_schema(plain) is None
    broken = _repository(tmp_path / "broken", "class (:\n", IN_TRAINING)
    assert repository_schema(broken) is None


def test_class_variables_and_init_false_fields_are_no_keys(tmp_path: Path):
    keys = sections(ast.parse(BEFORE))
    assert set(keys) == {"model", "parallel", "training"}
    assert set(keys["training"]) == {"lr", "use_fused_rmsnorm"}
    assert keys["training"]["use_fused_rmsnorm"]["default"] is False
    assert keys["model"]["model_id"]["anyOf"][0] == {"enum": ["qwen3", "qwen3_moe"]}


def test_annotations_become_the_values_argparse_accepts():
    def schema(text: str) -> dict[str, object]:
        return annotation_schema(ast.parse(text, mode="eval").body)

    assert schema("int | None") == {"anyOf": [{"$ref": "#/$defs/int"}, {"type": "null"}]}
    assert schema("List[str]") == {
        "anyOf": [{"type": "array", "items": {"$ref": "#/$defs/str"}}, {"$ref": "#/$defs/str"}]
    }
    assert schema("'Optional[float]'")["anyOf"][0] == {"$ref": "#/$defs/float"}
    assert schema("SomethingElse") == {}  # unknown type: anything goes, never an error
    assert schema("Union[Dict[str, Any], str]") == {
        "anyOf": [{"type": "object"}, {"$ref": "#/$defs/str"}]
    }


def test_an_edited_arguments_py_is_read_again(tmp_path: Path):
    root = _repository(tmp_path / "repo", BEFORE, IN_TRAINING)
    assert "optimization" not in repository_schema(root).keys  # type: ignore[union-attr]
    path = root / ARGUMENTS
    path.write_text(AFTER + "\n# edited\n", encoding="utf-8")
    assert "optimization" in repository_schema(root).keys  # type: ignore[union-attr]


# ---------------------------------------------------------------- the real files, when present

MIRROR = Path(os.environ.get("ADVISOR_CORPUS_MIRROR", "/work/.mirror")) / "Ascend+MindSpeed-LLM"
MOVE = "7e46b9b1"
QWEN3 = "examples/fsdp2/qwen3/pretrain_qwen3_32b_4k_fsdp2_A3.yaml"


def _show(revision: str, path: str) -> str:
    git_dir = next((d for d in (MIRROR / "repo", MIRROR) if (d / "HEAD").is_file()), None)
    if git_dir is None:
        pytest.skip(f"no MindSpeed-LLM mirror at {MIRROR}")
    try:
        return subprocess.run(
            ["git", f"--git-dir={git_dir}", "show", f"{revision}:{path}"],
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
        ).stdout
    except subprocess.CalledProcessError:
        pytest.skip(f"the mirror lacks {revision}:{path}")


def test_the_real_move_judges_each_config_by_its_own_commit(tmp_path: Path):
    revisions = {"before": f"{MOVE}^", "after": MOVE}
    roots = {}
    for name, revision in revisions.items():
        root = _repository(tmp_path / name, _show(revision, ARGUMENTS), _show(revision, QWEN3))
        roots[name] = root
    assert _misplaced(roots["before"]) == [] and _misplaced(roots["after"]) == []
    # each commit's config in the other commit's repository: the three switches misplaced
    (roots["before"] / "swapped.yaml").write_text(_show(MOVE, QWEN3), encoding="utf-8")
    (roots["after"] / "swapped.yaml").write_text(_show(f"{MOVE}^", QWEN3), encoding="utf-8")
    old_repo = _misplaced(roots["before"], "swapped.yaml")
    new_repo = _misplaced(roots["after"], "swapped.yaml")
    assert len(old_repo) == 3 and all("belongs in training" in m for m in old_repo)
    assert len(new_repo) == 3 and all("belongs in optimization" in m for m in new_repo)


def test_the_bundled_schema_is_what_its_upstream_commit_defines():
    """The bundled schema was written from MindSpeed-LLM c77308a1: read from that file, the
    repository schema has the same sections (plus inference), keys and value rules."""
    read = sections(ast.parse(_show("c77308a1", ARGUMENTS)))
    bundled = bundled_schema().keys
    assert set(read) - set(bundled) == {"inference"}
    for section, keys in bundled.items():
        assert set(read[section]) == set(keys), section
        for key, spec in keys.items():
            mine = {k: v for k, v in read[section][key].items() if k != "description"}
            assert mine == {k: v for k, v in spec.items() if k != "description"}, key
