"""advisor check: every policy on a failing and a passing example, output formats, waivers,
baseline, autofix, and the real upstream configs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.app.check import run_check
from advisor.app.rulesets import load_graph
from advisor.cli import app
from advisor.core.validation import schema_errors
from advisor.core.yamlio import load_data
from advisor.engine.targets import parse_target

runner = CliRunner()
CASES = load_data(Path(__file__).parent / "cases" / "policies.yaml")
RULES = load_graph().ruleset
REAL = Path(__file__).resolve().parents[2] / "shared" / "real" / "mindspeed-fsdp2-configs"


def test_every_policy_has_cases():
    assert set(CASES) == {r.id for r in RULES.of_kind("policy")}


def megatron_script(spec: str | dict) -> str:
    """A Megatron-backend script around the given flags (see tests/cases/policies.yaml)."""
    if isinstance(spec, str):
        spec = {"flags": spec}
    if "script" in spec:
        return spec["script"]
    exports = spec.get("exports", "export CUDA_DEVICE_MAX_CONNECTIONS=1")
    parts = spec["flags"].split(" --")
    flags = "".join(f"    {flag} \\\n" for flag in [parts[0], *("--" + p for p in parts[1:])])
    return (
        f"#!/bin/bash\n{exports}\nNPUS_PER_NODE=8\nNNODES=1\n"
        'DISTRIBUTED_ARGS="--nproc_per_node $NPUS_PER_NODE --nnodes $NNODES"\n'
        f"{spec.get('before', '')}\n"
        f'GPT_ARGS="\n{flags}"\n'
        "torchrun $DISTRIBUTED_ARGS pretrain_gpt.py $GPT_ARGS --bf16\n"
    )


def _run(tmp_path: Path, case: dict, text: str | dict) -> list[str]:
    # a case of a rule whose claim depends on the release names it: `target: product@version`
    target = dict([parse_target(case["target"])]) if "target" in case else None
    if case["kind"] == "megatron":
        path = tmp_path / "pretrain.sh"
        path.write_text(megatron_script(text))
        result = run_check(RULES, configs=[path], target=target)
        assert result.dialects == {str(path): "megatron-script"}
        return [f.rule_id for f in result.findings if f.counts]
    if case["kind"] == "config":
        path = tmp_path / "config.yaml"
        path.write_text(text)
        result = run_check(RULES, configs=[path], target=target)
    else:
        (tmp_path / "config.yaml").write_text(case.get("config", "model:\n  model_id: gpt_oss\n"))
        path = tmp_path / "run.sh"
        path.write_text(text)
        result = run_check(RULES, launches=[path])
    return [f.rule_id for f in result.findings if f.counts]


@pytest.mark.parametrize("policy", sorted(CASES))
def test_policy_fails_and_passes(tmp_path: Path, policy: str):
    case = CASES[policy]
    assert policy in _run(tmp_path, case, case["fail"]), f"{policy} did not fire"
    assert policy not in _run(tmp_path, case, case["pass"]), (
        f"{policy} fired on the passing example"
    )


def test_text_format_and_exit_codes(tmp_path: Path):
    config = tmp_path / "c.yaml"
    config.write_text(
        "training:\n  profile: true\n  profile_step_end: 6\n  profile_ranks: [0]\n  profile_with_memory: true\n"
    )
    note_only = runner.invoke(app, ["check", str(config)])
    assert note_only.exit_code == 0  # default --fail-on error
    assert f"{config}:2:3: note [policy.profile-deep-dive-options]" in note_only.output
    assert "0 error(s), 0 warning(s), 1 note(s)" in note_only.output
    assert runner.invoke(app, ["check", str(config), "--fail-on", "note"]).exit_code == 1
    config.write_text("parallel:\n  ep_dispatcher: turbo\n")
    assert runner.invoke(app, ["check", str(config)]).exit_code == 1
    # a named file that does not parse is a finding on it: the report is written, exit 1
    config.write_text("parallel: [unclosed\n")
    broken = subprocess.run(
        [sys.executable, "-m", "advisor.cli", "check", str(config)], capture_output=True, text=True
    )
    assert broken.returncode == 1 and "Traceback" not in broken.stderr
    assert f"{config}:2:1: error [policy.file-unreadable] cannot be read" in broken.stdout


def test_json_and_github_formats(tmp_path: Path):
    config = tmp_path / "c.yaml"
    config.write_text("optimization:\n  indexer_loss_coeff: 0.01\n")
    result = runner.invoke(app, ["check", str(config), "--format", "json"])
    payload = json.loads(result.output)
    assert schema_errors(payload, "findings.schema.json") == []
    assert payload["findings"][0]["fix"]["ops"][1] == {
        "op": "set",
        "path": "training.indexer_loss_coeff",
        "value": 0.01,
    }
    github = runner.invoke(app, ["check", str(config), "--format", "github"])
    assert github.output.startswith(
        f"::error file={config},line=2,col=3,title=policy.config-unknown-key::"
    )


def test_sarif_validates_against_the_official_schema(tmp_path: Path):
    config = tmp_path / "c.yaml"
    config.write_text(
        "# team config\noptimization:\n  indexer_loss_coeff: 0.01\ntraining:\n"
        "  profile: true  # advisor: ignore[policy.profile-unbounded] full-run trace on purpose\n  profile_ranks: [0]\n"
    )
    script = tmp_path / "run.sh"
    script.write_text(
        "export ASCEND_LAUNCH_BLOCKING=1\ntorchrun --nproc_per_node 8 train_fsdp2.py c.yaml\n"
    )
    result = runner.invoke(
        app, ["check", str(config), "--launch", str(script), "--format", "sarif"]
    )
    sarif = json.loads(result.output)
    assert schema_errors(sarif, "sarif/sarif-2.1.0.json") == []
    run = sarif["runs"][0]
    rule_ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert len(rule_ids) == len(set(rule_ids))  # deduplicated
    by_rule = {
        (r["ruleId"]): r
        for r in run["results"]
        if r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith(
            ("c.yaml", "run.sh")
        )
    }
    assert len(run["results"]) == len(by_rule)  # no finding reported twice
    moved = by_rule["policy.config-unknown-key"]
    replacements = moved["fixes"][0]["artifactChanges"][0]["replacements"]
    assert any("indexer_loss_coeff" in r["insertedContent"]["text"] for r in replacements)
    assert (
        by_rule["policy.profile-unbounded"]["suppressions"][0]["justification"]
        == "full-run trace on purpose"
    )
    assert (
        by_rule["policy.launch-blocking"]["locations"][0]["physicalLocation"]["region"]["startLine"]
        == 1
    )


def test_waiver_without_reason_is_a_finding_and_suppresses_nothing(tmp_path: Path):
    config = tmp_path / "c.yaml"
    config.write_text(
        "training:\n  # advisor: ignore[policy.profile-unbounded]\n  profile: true\n  profile_ranks: [0]\n"
    )
    ids = [f.rule_id for f in run_check(RULES, configs=[config]).findings if f.counts]
    assert "policy.waiver-without-reason" in ids and "policy.profile-unbounded" in ids


def test_baseline_only_new_findings_fail(tmp_path: Path):
    config = tmp_path / "c.yaml"
    config.write_text("optimization:\n  indexer_loss_coeff: 0.01\n")
    baseline = tmp_path / ".advisor-baseline.json"
    assert (
        runner.invoke(
            app, ["check", str(config), "--baseline", str(baseline), "--update-baseline"]
        ).exit_code
        == 0
    )
    assert runner.invoke(app, ["check", str(config), "--baseline", str(baseline)]).exit_code == 0
    config.write_text(
        "optimization:\n  indexer_loss_coeff: 0.01\nparallel:\n  ep_dispatcher: turbo\n"
    )
    again = runner.invoke(app, ["check", str(config), "--baseline", str(baseline)])
    assert (
        again.exit_code == 1
        and "ep_dispatcher" in again.output
        and "1 in the baseline" in again.output
    )


def test_fix_moves_the_key_and_keeps_comments(tmp_path: Path):
    config = tmp_path / "c.yaml"
    config.write_text(
        "# GLM job\noptimization:\n  use_fused_rmsnorm: True   # fused norm\n  indexer_loss_coeff: 0.01\n"
        "training:\n  stage: pt\n"
    )
    script = tmp_path / "run.sh"
    script.write_text(
        "export TRAINING_BACKEND=mindspeed_fsdp\nexport ASCEND_LAUNCH_BLOCKING=1\ntorchrun train_fsdp2.py c.yaml\n"
    )
    result = runner.invoke(app, ["check", str(config), "--launch", str(script), "--fix"])
    assert (
        "-  indexer_loss_coeff: 0.01" in result.output
        and "+  indexer_loss_coeff: 0.01" in result.output
    )
    text = config.read_text()
    assert text.startswith("# GLM job\n") and "use_fused_rmsnorm: True   # fused norm" in text
    assert "training:\n  stage: pt\n  indexer_loss_coeff: 0.01\n" in text
    assert "ASCEND_LAUNCH_BLOCKING" not in script.read_text()
    after = runner.invoke(app, ["check", str(config), "--launch", str(script)])
    assert "config-unknown-key" not in after.output and "launch-blocking" not in after.output


def test_real_upstream_configs(tmp_path: Path):
    if not REAL.is_dir():
        pytest.skip(
            f"real configs not available ({REAL} is absent: ../shared is not beside the checkout)"
        )
    current = sorted(REAL.glob("*.yaml"))
    historical = sorted((REAL / "historical").glob("*.yaml"))
    result = run_check(RULES, configs=current + historical)
    errors = [(Path(f.file).name, f.key) for f in result.findings if f.severity == "error"]
    glm = "glm52__glm52_744b_4k_fsdp2_A3.yaml"
    assert (glm, "optimization.indexer_loss_coeff") in errors
    assert [e for e in errors if e[0] in {p.name for p in current}] == [
        (glm, "optimization.indexer_loss_coeff")
    ]
    for path in historical:
        text = path.read_text()
        for switch in (
            "use_flash_attn",
            "use_fused_rmsnorm",
            "moe_grouped_gemm",
            "use_fused_rotary_pos_emb",
            "chunk_loss_size",
        ):
            if f"  {switch}:" in text:
                assert (path.name, f"training.{switch}") in errors
    # the current upstream files produce no warnings either: every warning-level policy is specific
    # enough not to fire on them (an ep option with ep_size left to the command line is not reported)
    assert [
        f for f in result.findings if f.severity == "warning" and Path(f.file).parent == REAL
    ] == []
    # the fix moves GLM's key, and the file then checks clean
    copy = tmp_path / glm
    shutil.copy(REAL / glm, copy)
    copy.chmod(0o444)  # as copied from the read-only share: --fix honours the protection
    refused = runner.invoke(app, ["check", str(copy), "--fix"])
    assert refused.exit_code != 0 and "read-only" in str(refused.exception)
    copy.chmod(0o644)
    assert runner.invoke(app, ["check", str(copy), "--fix"]).exit_code == 0
    assert "training" in load_data(copy) and "indexer_loss_coeff" in load_data(copy)["training"]


def test_pre_commit_hook_definition():
    hooks = load_data(Path(__file__).resolve().parents[1] / ".pre-commit-hooks.yaml")
    assert hooks[0]["id"] == "advisor-check" and hooks[0]["entry"].startswith("advisor check")


def test_exit_codes_through_the_real_entry_point(tmp_path: Path):
    """The console script must exit 1 on findings and 2 on broken rules (not only CliRunner)."""
    config = tmp_path / "c.yaml"
    config.write_text("parallel:\n  ep_dispatcher: turbo\n")

    def run(*args: str) -> int:
        return subprocess.run(
            [sys.executable, "-m", "advisor.cli", *args], capture_output=True, text=True
        ).returncode

    assert run("check", str(config)) == 1
    config.write_text("parallel:\n  ep_dispatcher: fused\n  ep_size: 8\n")
    assert run("check", str(config)) == 0
    broken = tmp_path / "rules"
    broken.mkdir()
    (broken / "bad.yaml").write_text("id: feature.bad\nkind: feature\n")
    assert run("rules", "lint", str(broken)) == 2


def test_mindformers_config(tmp_path: Path):
    real = REAL.parent / "mindformers-configs" / "pretrain_qwen3_32b_4k.yaml"
    if not real.is_file():
        pytest.skip(f"real MindFormers config not available ({real} is absent)")
    # the upstream reference config is clean, and FSDP2 policies do not apply to it
    assert [f for f in run_check(RULES, configs=[real]).findings if f.counts] == []


def test_no_two_findings_contradict_each_other(tmp_path: Path):
    """A flag or key reported as unknown gets no other advice about its value, on the real
    configs and scripts and on the golden bad inputs."""
    shared = Path(__file__).resolve().parents[2] / "shared" / "real"
    golden = Path(__file__).resolve().parent / "golden_cli" / "inputs"
    paths = [*golden.glob("*.yaml"), *golden.glob("*.sh")]
    if shared.is_dir():
        paths += sorted(shared.glob("mindspeed-fsdp2-configs/*.yaml"))
        paths += sorted(shared.glob("mindspeed-llm-scripts/*.sh"))
        paths += sorted(shared.glob("mindformers-configs/*.yaml"))
    result = run_check(RULES, configs=paths)
    unknown = {"policy.cli-unknown-flag", "policy.config-unknown-key", "policy.mf-config-keys"}
    by_key: dict[tuple[str, str], set[str]] = {}
    for f in result.findings:
        by_key.setdefault((f.file, f.key.rpartition(":")[2]), set()).add(f.rule_id)
    for (file, key), rules in by_key.items():
        if rules & unknown:
            assert len(rules) == 1, (file, key, rules)
