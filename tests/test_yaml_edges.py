"""YAML that parses in theory but not in practice: huge integers, deep block nesting, classic-Mac
line endings, a config that is a pipe. Each is one line naming the file (exit 2) or works, in
configs and in settings files alike, never an internal error or a hang."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.cli_run import run_cli

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "fsdp2"
PROFILE = str(ROOT / "examples" / "profiles" / "comm-bound")


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_bytes(text.encode())
    return path


def _base() -> str:
    return (EXAMPLE / "config.yaml").read_text()


def _nested(levels: int, indent: int = 0) -> str:
    return "".join("  " * (indent + i) + f"k{i}:\n" for i in range(levels)) + (
        "  " * (indent + levels) + "v: 1\n"
    )


BAD = {
    "digits": (lambda: _base() + "\nextra: " + "9" * 5000 + "\n", "integer of 5,000 digits"),
    "block-nesting": (lambda: _base() + "\nextra:\n" + _nested(3000, 1), "levels deep"),
    "top-nesting": (lambda: _nested(3000), "levels deep"),
}


@pytest.mark.parametrize("case", sorted(BAD))
@pytest.mark.parametrize("command", ["check", "suggest"])
def test_unreadable_yaml_is_one_line(tmp_path: Path, case: str, command: str) -> None:
    make, expected = BAD[case]
    config = _config(tmp_path, make())
    args = ["check", str(config)] if command == "check" else ["suggest", PROFILE, str(config)]
    ran = run_cli(*args, "--no-ledger") if command == "suggest" else run_cli(*args)
    assert "internal error" not in ran.output and "Traceback" not in ran.output
    if command == "check":
        # check reports a named file it cannot read as an error finding on it (exit 1)
        assert ran.exit_code == 1, ran.output
        (line,) = [ln for ln in ran.stdout.splitlines() if "policy.file-unreadable" in ln]
        assert "config.yaml:" in line and expected in line
        return
    assert ran.exit_code == 2, ran.output
    assert "config.yaml" in ran.stderr and expected in ran.stderr


@pytest.mark.parametrize("case", ["digits", "block-nesting"])
def test_unreadable_settings_file_is_one_line(
    tmp_path: Path, case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    make, expected = BAD[case]
    body = make().split("\nextra", 1)[1]
    (tmp_path / ".advisor.yaml").write_text("extra" + body)
    shutil.copy(EXAMPLE / "config.yaml", tmp_path / "config.yaml")
    monkeypatch.chdir(tmp_path)
    ran = run_cli("check", "config.yaml", "--settings", ".advisor.yaml")
    assert ran.exit_code == 2, ran.output
    assert "internal error" not in ran.output and ".advisor.yaml" in ran.stderr
    assert expected in ran.stderr


def test_cr_only_line_endings_are_edited_in_their_own_line_ending(tmp_path: Path) -> None:
    for name in ("run.sh", "env.sh"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    config = _config(tmp_path, _base().replace("\n", "\r"))
    ran = run_cli("suggest", PROFILE, str(config), "--no-ledger", "--write")
    assert ran.exit_code == 0, ran.output
    written = config.read_bytes()
    assert b"\n" not in written and written.count(b"\r") == _base().count("\n")
    assert b"num_to_forward_prefetch: 2" in written


def test_mixed_line_endings_are_refused_for_editing(tmp_path: Path) -> None:
    text = _base()
    config = _config(tmp_path, text.replace("\n", "\r", 3))
    before = config.read_bytes()
    ran = run_cli("suggest", PROFILE, str(config), "--no-ledger", "--write")
    assert ran.exit_code == 2 and "mixed line endings" in ran.stderr, ran.output
    assert config.read_bytes() == before


def test_a_fifo_config_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "config.yaml"
    os.mkfifo(fifo)
    for args in (["check", str(fifo)], ["suggest", PROFILE, str(fifo), "--no-ledger"]):
        ran = run_cli(*args)
        assert ran.exit_code == 2, ran.output
        assert "not a regular file" in ran.stderr
