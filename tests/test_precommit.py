"""Code review integration end to end: the real pre-commit runs the hooks on a scratch
repository, and the README's CI recipes run as written."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.core.validation import schema_errors

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
README = ROOT / "README.md"

WORKFLOW = """\
name: ci
on: [push]
jobs:
  test:
    runs-on: ubuntu-latest
    steps: [{uses: actions/checkout@v4}, {run: make test}]
"""
PRE_COMMIT_CONFIG = """\
repos:
  - repo: local
    hooks: [{id: noop, name: noop, entry: "true", language: system}]
"""
MEGATRON_SCRIPT = """\
#!/bin/bash
export CUDA_DEVICE_MAX_CONNECTIONS=1
GPUS_PER_NODE=8
NNODES=1
TP=2
PP=2
DISTRIBUTED_ARGS="--nproc_per_node $GPUS_PER_NODE --nnodes $NNODES"
torchrun $DISTRIBUTED_ARGS pretrain_gpt.py \\
    --tensor-model-parallel-size ${TP} \\
    --pipeline-model-parallel-size ${PP} \\
    --micro-batch-size 1 \\
    --global-batch-size 64 \\
    --seq-length 4096 \\
    --num-layers 32
"""


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A training project as people keep one: configs, launch scripts, a sourced env file, a
    Megatron script, CI YAML and its own pre-commit config."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path_factory.mktemp("project")
    (repo / "configs").mkdir()
    (repo / "scripts").mkdir()
    shutil.copy(EXAMPLES / "fsdp2" / "config.yaml", repo / "configs" / "train.yaml")
    # the launch script names its config as it is found from the repository's top level
    run = (EXAMPLES / "fsdp2" / "run.sh").read_text(encoding="utf-8")
    run = run.replace("train_fsdp2.py config.yaml", "train_fsdp2.py configs/train.yaml")
    (repo / "scripts" / "run.sh").write_text(run, encoding="utf-8")
    shutil.copy(EXAMPLES / "fsdp2" / "env.sh", repo / "scripts" / "env.sh")
    shutil.copy(EXAMPLES / "mindformers" / "config.yaml", repo / "configs" / "mindformers.yaml")
    (repo / "scripts" / "pretrain_llama.sh").write_text(MEGATRON_SCRIPT, encoding="utf-8")
    (repo / ".github" / "workflows").mkdir(parents=True)
    (repo / ".github" / "workflows" / "ci.yml").write_text(WORKFLOW, encoding="utf-8")
    (repo / ".gitlab-ci.yml").write_text("test:\n  script: [make test]\n", encoding="utf-8")
    (repo / ".pre-commit-config.yaml").write_text(PRE_COMMIT_CONFIG, encoding="utf-8")
    (repo / "docker-compose.yaml").write_text("services: {web: {image: nginx}}\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "project")
    return repo


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    try:
        import pre_commit  # noqa: F401
    except ImportError:
        pytest.skip("pre-commit is not installed (it is in the dev extra)")
    return tmp_path_factory.mktemp("pre-commit-home")


def _pre_commit(repo: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def _head() -> str:
    proc = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        pytest.skip("the checkout is not a git repository: pre-commit needs a revision")
    return proc.stdout.strip()


def test_try_repo_passes_a_clean_project(scratch: Path, pre_commit_home: Path):
    """`pre-commit try-repo`, as a user tries the hook first (the checkout as it is now)."""
    clean = _pre_commit(
        scratch, pre_commit_home, "try-repo", str(ROOT), "advisor-check", "--all-files"
    )
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert re.search(
        r"advisor check \(training configs and launch scripts\)\.+Passed", clean.stdout
    )
    assert "skipped" not in clean.stdout


def test_hooks_in_a_project_config(scratch: Path, pre_commit_home: Path):
    """The README's `.pre-commit-config.yaml` form, pinned to this revision; the project's own
    CI and pre-commit YAML pass through the hooks without a word."""
    config = scratch / ".pre-commit-config.yaml"
    original_config = config.read_text(encoding="utf-8")
    config.write_text(
        f"repos:\n  - repo: {ROOT}\n    rev: {_head()}\n"
        "    hooks: [{id: advisor-check}, {id: advisor-check-launch}]\n",
        encoding="utf-8",
    )
    env_file = scratch / "scripts" / "env.sh"
    original = env_file.read_text(encoding="utf-8")
    _git(scratch, "add", "-A")
    try:
        clean = _pre_commit(scratch, pre_commit_home, "run", "--all-files")
        assert clean.returncode == 0, clean.stdout + clean.stderr
        assert clean.stdout.count("Passed") == 2

        # a real problem in the sourced env file: the finding sits on its line, both hooks fail
        env_file.write_text(original + "export ASCEND_LAUNCH_BLOCKING=1\n", encoding="utf-8")
        _git(scratch, "add", "-A")
        broken = _pre_commit(scratch, pre_commit_home, "run", "--all-files")
        line = len(original.splitlines()) + 1
        assert broken.returncode == 1, broken.stdout + broken.stderr
        finding = f"scripts/env.sh:{line}:1: error [policy.launch-blocking]"
        assert broken.stdout.count(finding) == 2, broken.stdout
        assert "unknown section" not in broken.stdout  # CI and pre-commit YAML never read
        assert "skipped" not in broken.stdout
        assert "Traceback" not in broken.stdout + broken.stderr

        # a waiver on that line, with its reason, lets the commit through
        env_file.write_text(
            original + "export ASCEND_LAUNCH_BLOCKING=1  # advisor: ignore[policy.launch-blocking] "
            "debugging a hang on node 3\n",
            encoding="utf-8",
        )
        _git(scratch, "add", "-A")
        waived = _pre_commit(scratch, pre_commit_home, "run", "--all-files")
        assert waived.returncode == 0, waived.stdout + waived.stderr
    finally:
        env_file.write_text(original, encoding="utf-8")
        config.write_text(original_config, encoding="utf-8")
        _git(scratch, "add", "-A")


def test_a_staged_sourced_file_alone_fails_the_hook(scratch: Path, pre_commit_home: Path):
    """pre-commit hands over only the staged env.sh: the hook checks it through run.sh, which
    sources it, and reports the finding on env.sh's line (the checkout as it is now)."""
    env_file = scratch / "scripts" / "env.sh"
    original = env_file.read_text(encoding="utf-8")
    env_file.write_text(original + "export ASCEND_LAUNCH_BLOCKING=1\n", encoding="utf-8")
    _git(scratch, "add", "scripts/env.sh")
    try:
        staged = _pre_commit(scratch, pre_commit_home, "try-repo", str(ROOT), "advisor-check")
        line = len(original.splitlines()) + 1
        assert staged.returncode == 1, staged.stdout + staged.stderr
        assert re.search(r"advisor check \(training configs.*\.+Failed", staged.stdout)
        assert f"scripts/env.sh:{line}:1: error [policy.launch-blocking]" in staged.stdout
        assert "run.sh:" not in staged.stdout  # only the changed file's lines
        assert "Traceback" not in staged.stdout + staged.stderr
    finally:
        env_file.write_text(original, encoding="utf-8")
        _git(scratch, "add", "-A")


def _recipe(marker: str) -> list[str]:
    """The advisor command lines of a README CI recipe, as documented."""
    text = README.read_text(encoding="utf-8")
    block = text.split(f"<!-- ci:{marker} -->", 1)[1].split("```yaml", 1)[1].split("```", 1)[0]
    lines = [re.sub(r"^\s*-\s*(run:\s*)?", "", line) for line in block.splitlines()]
    return [line for line in lines if line.startswith("advisor check")]


def _run_recipe(repo: Path, command: str) -> subprocess.CompletedProcess[str]:
    venv_bin = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": venv_bin + os.pathsep + os.environ.get("PATH", "")}
    return subprocess.run(
        ["bash", "-c", command], cwd=repo, env=env, capture_output=True, text=True, timeout=300
    )


def test_github_recipe_writes_valid_sarif_on_findings(scratch: Path):
    (command,) = _recipe("github")
    env_file = scratch / "scripts" / "env.sh"
    original = env_file.read_text(encoding="utf-8")
    env_file.write_text(original + "export ASCEND_LAUNCH_BLOCKING=1\n", encoding="utf-8")
    try:
        proc = _run_recipe(scratch, command)
        assert proc.returncode == 0, proc.stderr  # findings (exit 1) keep the report
        sarif = json.loads((scratch / "advisor.sarif").read_text(encoding="utf-8"))
        assert schema_errors(sarif, "sarif/sarif-2.1.0.json") == []
        results = sarif["runs"][0]["results"]
        hit = [r for r in results if r["ruleId"] == "policy.launch-blocking"]
        assert hit
        location = hit[0]["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uri"] == "scripts/env.sh"
        assert location["region"]["startLine"] == len(original.splitlines()) + 1
        # no finding about files that are not training files
        uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results}
        assert not uris & {".gitlab-ci.yml", ".pre-commit-config.yaml", "docker-compose.yaml"}
    finally:
        env_file.write_text(original, encoding="utf-8")
        (scratch / "advisor.sarif").unlink(missing_ok=True)


def test_gitlab_recipe_writes_a_code_quality_report(scratch: Path):
    (command,) = _recipe("gitlab")
    proc = _run_recipe(scratch, command)
    assert proc.returncode == 0, proc.stderr
    report_file = scratch / "gl-code-quality-report.json"
    try:
        issues = json.loads(report_file.read_text(encoding="utf-8"))
        assert isinstance(issues, list) and issues  # the env.sh note at least
        for issue in issues:
            assert set(issue) == {
                "description",
                "check_name",
                "fingerprint",
                "severity",
                "location",
            }
            assert issue["severity"] in {"info", "minor", "major", "critical", "blocker"}
            assert not issue["location"]["path"].startswith("/")
            assert issue["location"]["lines"]["begin"] >= 1
        assert len({i["fingerprint"] for i in issues}) == len(issues)
    finally:
        report_file.unlink(missing_ok=True)


def test_recipe_reports_the_repository_around_a_broken_file(scratch: Path):
    """One YAML that does not parse never stops the report: found in the walk it is skipped
    with its reason and the SARIF is written; named, it is an error finding (exit 1). A usage
    error (exit 2) is not swallowed by the recipe's `|| [ $? -eq 1 ]`."""
    (command,) = _recipe("github")
    broken = scratch / "configs" / "broken.yaml"
    broken.write_text("training:\n  micro_batch_size: [1\n", encoding="utf-8")
    try:
        proc = _run_recipe(scratch, command)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr
        sarif = json.loads((scratch / "advisor.sarif").read_text(encoding="utf-8"))
        assert sarif["runs"][0]["results"]  # the rest of the repository is reported
        named = _run_recipe(scratch, "advisor check configs/broken.yaml")
        assert named.returncode == 1
        assert "configs/broken.yaml:3:1: error [policy.file-unreadable]" in named.stdout
        usage = _run_recipe(scratch, command.replace("check .", "check . --fail-on nothing"))
        assert usage.returncode != 0  # the job fails
    finally:
        broken.unlink()
        (scratch / "advisor.sarif").unlink(missing_ok=True)
        (scratch / "advisor.sarif").unlink(missing_ok=True)
