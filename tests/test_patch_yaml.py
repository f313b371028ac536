"""Golden config edits: before.yaml + case.yaml -> after.yaml, byte for byte.

Regenerate the expected files only on purpose: ADVISOR_UPDATE_GOLDEN=1 python -m pytest tests/test_patch_yaml.py
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

from advisor.core.yamlio import load_data
from advisor.dialects.fsdp2.schema import config_problems, load_config
from advisor.edit.yaml_text import YamlTextEditor
from advisor.model import InputError

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("ADVISOR_UPDATE_GOLDEN") == "1"
REAL = Path(__file__).resolve().parents[2] / "shared" / "real" / "mindspeed-fsdp2-configs"


def _apply(path: Path, ops: list[dict]) -> str:
    editor = YamlTextEditor(path, path.read_bytes().decode("utf-8"))
    for op in ops:
        if op["op"] == "set":
            editor.set(op["path"], op["value"])
        else:
            editor.remove(op["path"])
    return editor.result()


@pytest.mark.parametrize("case", sorted(p.name for p in GOLDEN.iterdir() if p.is_dir()))
def test_golden(case: str):
    folder = GOLDEN / case
    ops = load_data(folder / "case.yaml")["ops"]
    result = _apply(folder / "before.yaml", ops)
    after = folder / "after.yaml"
    if UPDATE:
        after.write_bytes(result.encode())
    assert result.encode() == after.read_bytes()


def test_golden_edits_touch_only_the_changed_lines():
    for folder in sorted(p for p in GOLDEN.iterdir() if p.is_dir()):
        before = (folder / "before.yaml").read_bytes().decode().splitlines(keepends=True)
        after = (folder / "after.yaml").read_bytes().decode().splitlines(keepends=True)
        ops = load_data(folder / "case.yaml")["ops"]
        changed = [line for line in difflib.ndiff(before, after) if line[:1] in "+-"]
        removed = [line for line in changed if line.startswith("-")]
        added = [line for line in changed if line.startswith("+")]
        assert len(added) <= len(ops) + 2, (
            folder.name
        )  # a new section adds a blank line and its header
        assert len(removed) <= len(ops), folder.name


def test_crlf_is_kept():
    result = _apply(
        GOLDEN / "crlf" / "before.yaml", [{"op": "set", "path": "training.seed", "value": 7}]
    )
    assert result.count("\r\n") == result.count("\n")


def test_block_scalar_and_flow_section_are_refused(tmp_path: Path):
    block = tmp_path / "block.yaml"
    block.write_text("data:\n  template: |\n    multi\n    line\n")
    with pytest.raises(InputError, match="block scalar"):
        _apply(block, [{"op": "set", "path": "data.template", "value": "x"}])
    flow = tmp_path / "flow.yaml"
    flow.write_text("parallel: {fsdp_size: 8}\n")
    with pytest.raises(InputError, match="flow style"):
        _apply(flow, [{"op": "set", "path": "parallel.ep_size", "value": 2}])


def test_real_upstream_configs_edit_with_one_line(tmp_path: Path):
    if not REAL.is_dir():
        pytest.skip(
            f"real configs not available ({REAL} is absent: ../shared is not beside the checkout)"
        )
    edited = 0
    for source in sorted(REAL.glob("*.yaml")):
        if config_problems(load_config(source)):
            continue  # the GLM-5.2 example really is invalid upstream
        copy = tmp_path / source.name
        copy.write_bytes(source.read_bytes())
        result = _apply(
            copy, [{"op": "set", "path": "parallel.num_to_forward_prefetch", "value": 3}]
        )
        diff = [
            line
            for line in difflib.unified_diff(
                source.read_text().splitlines(), result.splitlines(), lineterm="", n=0
            )
            if line[:1] in "+-" and not line.startswith(("+++", "---"))
        ]
        assert len([d for d in diff if d.startswith("+")]) in (1, 3), (source.name, diff)
        assert all("num_to_forward_prefetch" in d or d in ("+", "+parallel:") for d in diff), (
            source.name,
            diff,
        )
        edited += 1
    assert edited >= 30
