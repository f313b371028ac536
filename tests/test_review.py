"""Code review that sees what a change really does: a sourced file named alone is checked
through the scripts that source it, standard input is read in its own dialect, and a named
file that cannot be followed is said so."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.app.check import run_check
from advisor.app.rulesets import load_graph
from advisor.cli import app

runner = CliRunner()
RULES = load_graph().ruleset
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "fsdp2"
BLOCKING = "export ASCEND_LAUNCH_BLOCKING=1\n"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """examples/fsdp2 in a repository (a `.git` folder is what marks its root), run from it."""
    (tmp_path / ".git").mkdir()
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    for name in ("config.yaml", "run.sh", "env.sh"):
        shutil.copy(EXAMPLE / name, scripts / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_sourced_file_named_alone_is_checked_through_its_scripts(project: Path):
    env = Path("scripts/env.sh")
    line = len(env.read_text(encoding="utf-8").splitlines()) + 1
    with env.open("a", encoding="utf-8") as f:
        f.write(BLOCKING)
    result = run_check(RULES, configs=[env])
    assert result.skipped == []
    assert result.through == {"scripts/env.sh": ["scripts/run.sh"]}
    hits = [f for f in result.findings if f.rule_id == "policy.launch-blocking"]
    assert [(f.file, f.line) for f in hits] == [("scripts/env.sh", line)]
    # only the named file's lines: run.sh's own findings are not about this change
    assert {f.file for f in result.findings} == {"scripts/env.sh"}

    out = runner.invoke(app, ["check", "scripts/env.sh"])
    assert out.exit_code == 1, out.output
    assert f"scripts/env.sh:{line}:1: error [policy.launch-blocking]" in out.output
    assert "skipped" not in out.output and "in 1 file(s)" in out.output


def test_a_sourced_file_sourced_twice_gives_one_finding_and_is_fixed(project: Path):
    shutil.copy("scripts/run.sh", "scripts/run_two_nodes.sh")
    with open("scripts/env.sh", "a", encoding="utf-8") as f:
        f.write(BLOCKING)
    result = run_check(RULES, configs=[Path("scripts/env.sh")])
    assert [f.rule_id for f in result.findings].count("policy.launch-blocking") == 1

    fixed = runner.invoke(app, ["check", "--fix", "scripts/env.sh"])
    assert "ASCEND_LAUNCH_BLOCKING" in fixed.output, fixed.output
    again = run_check(RULES, configs=[Path("scripts/env.sh")])
    assert "policy.launch-blocking" not in {f.rule_id for f in again.findings if f.counts}


def test_a_file_no_script_sources_is_still_skipped_with_its_reason(project: Path):
    Path("scripts/other.sh").write_text("export FOO=1\n", encoding="utf-8")
    result = run_check(RULES, configs=[Path("scripts/other.sh")])
    assert [file for file, _ in result.skipped] == ["scripts/other.sh"]
    assert result.findings == []


def test_outside_a_repository_no_search_is_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    for name in ("config.yaml", "run.sh", "env.sh"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    if any((parent / ".git").exists() for parent in tmp_path.resolve().parents):
        pytest.skip("the temporary folder lies inside a repository")
    result = run_check(RULES, configs=[Path("env.sh")])
    assert [file for file, _ in result.skipped] == ["env.sh"]
