"""rules/ and schemas/ ship inside the installed package and are found through one place; a
user install pulls no development tool; the README's setup, pre-commit snippet and release
convention hold."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from advisor.core.resources import rules_dir, schemas_dir

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
DEV_TOOLS = {
    "pytest",
    "mypy",
    "ruff",
    "hypothesis",
    "pillow",
    "pre-commit",
    "pytest-xdist",
    "radon",
}


def test_data_folders_are_found():
    assert (rules_dir() / "taxonomy.yaml").is_file()
    assert (schemas_dir() / "rule.schema.json").is_file()


def test_wheel_contains_rules_and_schemas(tmp_path: Path):
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        check=False,
    )
    if build.returncode != 0:
        if "Could not find a version" in build.stderr or "No matching distribution" in build.stderr:
            pytest.skip("the build backend (hatchling) cannot be downloaded here")
        pytest.fail(build.stderr)
    wheel = next(tmp_path.glob("advisor-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for rel in (
        "advisor/_data/rules/taxonomy.yaml",
        "advisor/_data/rules/features/task-queue-level2.yaml",
        "advisor/_data/schemas/rule.schema.json",
        "advisor/_data/schemas/sarif/sarif-2.1.0.json",
        "advisor/_data/schemas/config/mindspeed-fsdp2.schema.json",
    ):
        assert rel in names, rel


def _requirement_names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[ ;]", r, maxsplit=1)[0].lower() for r in requirements}


def test_a_user_install_pulls_no_development_tool():
    project = PYPROJECT["project"]
    assert _requirement_names(project["dependencies"]) & DEV_TOOLS == set()
    extras = project["optional-dependencies"]
    assert _requirement_names(extras["dev"]) >= DEV_TOOLS - {"radon"}
    for name, requirements in extras.items():
        if name != "dev":
            assert _requirement_names(requirements) & DEV_TOOLS == set(), name


def _setup_commands() -> list[str]:
    section = README.read_text(encoding="utf-8").split("## Set up", 1)[1].split("\n## ", 1)[0]
    return [line.strip() for line in section.splitlines() if line.startswith("    ")]


def test_the_readme_sets_up_users_first_and_contributors_with_the_ci_command():
    user, contributor = _setup_commands()[:2]
    assert "pip install . &&" in user and "[dev]" not in user and "advisor suggest" in user
    assert "pip install -e '.[dev]'" in contributor
    test_command = contributor.split("&&")[-1].strip()
    assert test_command == "python -m pytest"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install --quiet -e '.[dev]'" in ci
    assert ci.rstrip().splitlines()[-1] == test_command  # CI runs what the README says


def test_the_readme_pre_commit_snippet_is_a_complete_config_of_this_release(tmp_path: Path):
    from pre_commit.clientlib import load_config

    text = README.read_text(encoding="utf-8")
    block = text.split("<!-- pre-commit:config -->", 1)[1].split("```yaml", 1)[1]
    config_file = tmp_path / ".pre-commit-config.yaml"
    config_file.write_text(block.split("```", 1)[0], encoding="utf-8")
    config = load_config(str(config_file))  # pre-commit's own schema: a complete file
    (repo,) = config["repos"]
    # the release convention: the version in pyproject is tagged v<version>
    assert repo["rev"] == f"v{PYPROJECT['project']['version']}"
    offered = (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    for hook in repo["hooks"]:
        assert f"- id: {hook['id']}\n" in offered  # the repository carries the hook


def test_the_project_runs_ruff_on_every_commit():
    from pre_commit.clientlib import load_config

    config = load_config(str(ROOT / ".pre-commit-config.yaml"))
    entries = [hook["entry"] for repo in config["repos"] for hook in repo["hooks"]]
    assert any(e.startswith("ruff check") for e in entries)
    assert any(e.startswith("ruff format") for e in entries)
