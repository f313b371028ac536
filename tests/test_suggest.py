"""`advisor suggest`: the cases it must get right, each on a generated profile + config + script."""

from __future__ import annotations

import json
import shutil
import subprocess
import typing
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.app.job import JobOptions
from advisor.app.suggest import SuggestOptions, run_suggest
from advisor.cli import app
from advisor.model import (
    Applicability,
    Grounds,
    InputError,
    Reason,
    RejectCode,
    Rejected,
    Status,
    Suggestion,
    TrustCheck,
    TrustWarning,
)
from advisor.render.markdown import suggestion_markdown
from advisor.render.suggestion import suggestion_text
from advisor.render.words import verify_line
from tests.synth import PRESETS, write_profile
from tests.synth.scenario import UPSTREAM_ENV

runner = CliRunner()

CONFIG = """\
# test job
model:
  model_id: {model_id}
  model_name_or_path: /models/m
parallel:
  fsdp_size: 8
  ep_size: {ep_size}
{parallel_extra}training:
  stage: pt
  output_dir: ./out
{training_extra}"""

SCRIPT = """\
#!/usr/bin/env bash
{exports}
torchrun --nnodes 1 --nproc_per_node 8 train_fsdp2.py config.yaml \\
    --training.logging_steps 1{flags}
"""


def make_job(
    tmp_path: Path,
    preset: str,
    env: dict[str, str] | None = None,
    model_id: str = "qwen3_moe",
    ep_size: int = 1,
    parallel_extra: str = "",
    training_extra: str = "",
    exports: dict[str, str] | None = None,
    flags: str = "",
    **scenario: object,
) -> tuple[Path, Path, Path]:
    profile_env = dict(UPSTREAM_ENV if env is None else env)
    write_profile(tmp_path / "prof", PRESETS[preset].with_(env=profile_env, **scenario))
    config = tmp_path / "config.yaml"
    model_line = model_id if model_id else "~"
    text = CONFIG.format(
        model_id=model_line,
        ep_size=ep_size,
        parallel_extra=parallel_extra,
        training_extra=training_extra,
    )
    if not model_id:
        text = text.replace("  model_id: ~\n", "")
    config.write_text(text)
    script = tmp_path / "run.sh"
    lines = "\n".join(
        f"export {k}={v}" for k, v in (exports if exports is not None else profile_env).items()
    )
    script.write_text(SCRIPT.format(exports=lines, flags=flags))
    return tmp_path / "prof", config, script


def suggest(prof: Path, config: Path, script: Path | None):
    job = JobOptions(profile=prof, config=config, launch=script)
    return run_suggest(job, options=SuggestOptions(use_ledger=False))


def only_env(env: dict[str, str], drop: tuple[str, ...] = (), **add: str) -> dict[str, str]:
    out = {k: v for k, v in env.items() if k not in drop}
    out.update(add)
    return out


def test_outcomes_are_codes_not_sentences(tmp_path: Path):
    # the engine decides, the renderer words: a status, a rejection, a trust check is a code
    # with the values that decided it, never a str a renderer would have to parse
    hints = typing.get_type_hints(Suggestion)
    assert hints["status"] is Status and hints["reason"] is Reason
    assert typing.get_type_hints(Rejected)["code"] is RejectCode
    assert typing.get_type_hints(TrustWarning)["id"] is TrustCheck
    assert "reason" not in typing.get_type_hints(Rejected)
    env = only_env(UPSTREAM_ENV, drop=("TASK_QUEUE_ENABLE", "CPU_AFFINITY_CONF"))
    suggestion = suggest(*make_job(tmp_path, "host-bound", env=env)).suggestion
    assert isinstance(suggestion.status, Status) and not isinstance(suggestion.status, str)
    assert not isinstance(suggestion.reason.code, str)
    assert suggestion.rejected
    for rejected in suggestion.rejected:
        assert isinstance(rejected.code, RejectCode) and not isinstance(rejected.code, str)


def test_host_bound_without_task_queue_sets_level2(tmp_path: Path):
    env = only_env(UPSTREAM_ENV, drop=("TASK_QUEUE_ENABLE", "CPU_AFFINITY_CONF"))
    run = suggest(*make_job(tmp_path, "host-bound", env=env))
    rec = run.suggestion.recommendation
    assert run.suggestion.status is Status.change
    assert rec.feature == "feature.task-queue-level2"
    assert rec.patch.target == "env"
    assert "+export TASK_QUEUE_ENABLE=2" in rec.diff
    reasons = {r.feature: r.code for r in run.suggestion.rejected}
    assert reasons["feature.remove-launch-blocking"] is RejectCode.applied


def test_launch_blocking_is_removed_before_anything_else(tmp_path: Path):
    env = only_env(UPSTREAM_ENV, ASCEND_LAUNCH_BLOCKING="1")
    run = suggest(*make_job(tmp_path, "host-bound", env=env))
    rec = run.suggestion.recommendation
    assert rec.feature == "feature.remove-launch-blocking"
    assert "-export ASCEND_LAUNCH_BLOCKING=1" in rec.diff
    reasons = {r.feature: r.code for r in run.suggestion.rejected}
    # every later feature is judged too: the reason shown is its own
    assert reasons["feature.task-queue-level2"] is RejectCode.applied


def test_task_queue_conflicts_while_blocking_is_set_outside_the_script(tmp_path: Path):
    # the profile recorded ASCEND_LAUNCH_BLOCKING=1 but the script does not export it
    env = only_env(UPSTREAM_ENV, ASCEND_LAUNCH_BLOCKING="1")
    prof, config, script = make_job(tmp_path, "host-bound", env=env, exports=UPSTREAM_ENV)
    run = suggest(prof, config, script)
    rec = run.suggestion.recommendation
    assert rec.feature == "feature.remove-launch-blocking"
    assert "+unset ASCEND_LAUNCH_BLOCKING" in rec.diff


def test_host_bound_with_task_queue_binds_cpus(tmp_path: Path):
    env = only_env(UPSTREAM_ENV, drop=("CPU_AFFINITY_CONF",))
    run = suggest(*make_job(tmp_path, "host-bound", env=env))
    rec = run.suggestion.recommendation
    assert rec.feature == "feature.cpu-affinity"
    assert "+export CPU_AFFINITY_CONF=2" in rec.diff  # fine-grained: what torch_npu recommends


def test_exposed_communication_raises_prefetch_one_step(tmp_path: Path):
    prof, config, script = make_job(tmp_path, "comm-bound", comm_exposed_us=3600.0)
    run = suggest(prof, config, script)
    assert run.facts.value("step.comm_exposed_ratio") == pytest.approx(0.25, abs=0.01)
    rec = run.suggestion.recommendation
    assert rec.feature == "feature.fsdp-forward-prefetch"
    assert rec.patch.target == "config"
    assert [(op.path, op.value, op.expect) for op in rec.patch.ops] == [
        ("parallel.num_to_forward_prefetch", 2, None)
    ]
    assert "+  num_to_forward_prefetch: 2" in rec.diff
    assert "step.comm_exposed_ratio should decrease" in verify_line(rec.verify[0])


def test_prefetch_at_two_on_moe_moves_to_fused_dispatcher(tmp_path: Path):
    extra = "  num_to_forward_prefetch: 2\n  num_to_backward_prefetch: 2\n"
    run = suggest(
        *make_job(tmp_path, "moe-comm-bound", model_id="gpt_oss", ep_size=4, parallel_extra=extra)
    )
    rec = run.suggestion.recommendation
    assert rec.feature == "feature.fused-dispatcher"
    assert "+  ep_dispatcher: fused" in rec.diff
    reasons = {r.feature: r.code for r in run.suggestion.rejected}
    assert reasons["feature.fsdp-forward-prefetch"] is RejectCode.applied


def test_fused_dispatcher_needs_an_adapted_moe_model(tmp_path: Path):
    extra = "  num_to_forward_prefetch: 2\n  num_to_backward_prefetch: 2\n"
    run = suggest(
        *make_job(tmp_path, "moe-comm-bound", model_id="qwen3", ep_size=4, parallel_extra=extra)
    )
    reasons = {r.feature: r.code for r in run.suggestion.rejected}
    assert reasons["feature.fused-dispatcher"] is RejectCode.prerequisite_false
    assert run.suggestion.recommendation.feature != "feature.fused-dispatcher"


def test_unfused_attention_on_an_adapted_model_enables_flash_attention(tmp_path: Path):
    run = suggest(*make_job(tmp_path, "unfused-attention", model_id="gpt_oss"))
    rec = run.suggestion.recommendation
    assert rec.feature == "feature.flash-attention"
    assert "+optimization:" in rec.diff and "+  use_flash_attn: true" in rec.diff


def test_unfused_attention_without_model_id_gives_advice_not_a_patch(tmp_path: Path):
    run = suggest(*make_job(tmp_path, "unfused-attention", model_id=""))
    rec = run.suggestion.recommendation
    assert rec.feature == "feature.adapted-model-implementation"
    assert rec.patch is None and rec.diff == ""
    assert "no optimization.* fused-operator switch is read" in rec.advice
    reasons = {r.feature: r.code for r in run.suggestion.rejected}
    assert reasons["feature.flash-attention"] is RejectCode.prerequisite_false
    # advice is named by its title once, in text and in markdown
    text = suggestion_text(run.suggestion, run.notes)
    assert text.count(rec.title) == 1 and "(advice: no config key to change)" in text
    markdown = suggestion_markdown(run.suggestion, run.notes)
    assert markdown.count(rec.title) == 1 and "advice: no config key to change" in markdown


def test_flash_attention_switch_on_unsupported_model_is_rejected_with_the_reason(tmp_path: Path):
    run = suggest(*make_job(tmp_path, "unfused-attention", model_id="qwen3"))
    reasons = {r.feature: r for r in run.suggestion.rejected}
    assert reasons["feature.flash-attention"].code is RejectCode.prerequisite_false
    assert "only the gpt_oss and minimax_m27 implementations read use_flash_attn" in str(
        reasons["feature.flash-attention"].values["requirement"]
    )


def test_prefetch_set_on_the_command_line_is_edited_there(tmp_path: Path):
    prof, config, script = make_job(
        tmp_path, "comm-bound", flags=" \\\n    --parallel.num_to_forward_prefetch 1"
    )
    run = suggest(prof, config, script)
    rec = run.suggestion.recommendation
    assert rec.patch.target == "cli"
    assert rec.patch.file == str(script)
    assert "+    --parallel.num_to_forward_prefetch 2" in rec.diff
    headers = [line for line in rec.diff.splitlines() if line.startswith(("--- ", "+++ "))]
    assert headers and all(h.endswith("run.sh") for h in headers)


def test_level0_with_communication_suspected_needs_level1_data(tmp_path: Path):
    training = "  profile: true\n  profile_level: level0\n  profile_step_end: -1\n"
    run = suggest(*make_job(tmp_path, "level0", training_extra=training))
    assert run.suggestion.status is Status.needs_data
    rec = run.suggestion.recommendation
    assert rec.feature == "feature.collect-level1-profile"
    ops = {op.path: op.value for op in rec.patch.ops}
    assert ops["training.profile_level"] == "level1"
    assert ops["training.profile_step_end"] == 6
    assert "-  profile_level: level0" in rec.diff and "+  profile_level: level1" in rec.diff


def test_bounded_profile_window_is_kept(tmp_path: Path):
    training = "  profile: true\n  profile_level: level0\n  profile_step_start: 10\n  profile_step_end: 11\n"
    run = suggest(*make_job(tmp_path, "level0", training_extra=training))
    ops = {op.path for op in run.suggestion.recommendation.patch.ops}
    assert "training.profile_step_end" not in ops


def test_healthy_profile_is_healthy(tmp_path: Path):
    result = runner.invoke(
        app,
        [
            "suggest",
            *map(str, make_job(tmp_path, "healthy")[:2]),
            "--no-ledger",
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert payload["status"] == "healthy" and payload["recommendation"] is None


def test_without_launch_env_changes_are_lines_to_add(tmp_path: Path):
    env = only_env(UPSTREAM_ENV, drop=("TASK_QUEUE_ENABLE",))
    prof, config, _ = make_job(tmp_path, "host-bound", env=env)
    run = suggest(prof, config, None)
    rec = run.suggestion.recommendation
    assert rec.patch.file is None and rec.patch.lines_to_add == ("export TASK_QUEUE_ENABLE=2",)


def test_diff_applies_with_git(tmp_path: Path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    prof, config, script = make_job(tmp_path, "comm-bound")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    result = runner.invoke(
        app,
        [
            "suggest",
            str(prof),
            str(config),
            "--launch",
            str(script),
            "--format",
            "diff",
            "--no-ledger",
        ],
    )
    assert result.exit_code == 0
    patch = tmp_path / "change.patch"
    patch.write_text(
        result.output.replace(f"a/{str(tmp_path).lstrip('/')}/", "a/").replace(
            f"b/{str(tmp_path).lstrip('/')}/", "b/"
        )
    )
    check = subprocess.run(
        ["git", "apply", "--check", str(patch)], cwd=tmp_path, capture_output=True, text=True
    )
    assert check.returncode == 0, check.stderr + patch.read_text()


def test_write_edits_safe_changes_and_refuses_review(tmp_path: Path):
    prof, config, script = make_job(tmp_path, "comm-bound")
    before = config.read_text()
    dry = runner.invoke(
        app, ["suggest", str(prof), str(config), "--launch", str(script), "--no-ledger"]
    )
    assert dry.exit_code == 0 and config.read_text() == before  # dry run by default
    wrote = runner.invoke(
        app, ["suggest", str(prof), str(config), "--launch", str(script), "--no-ledger", "--write"]
    )
    assert wrote.exit_code == 0, wrote.output
    assert "num_to_forward_prefetch: 2" in config.read_text()
    assert config.read_text().startswith("# test job\n")  # comments kept
    # a change that needs review is shown, never written
    from dataclasses import replace

    from advisor.edit.writer import write_patch as write_changes

    patch = run_suggest(
        JobOptions(profile=prof, config=config, launch=script),
        options=SuggestOptions(use_ledger=False),
    ).suggestion.recommendation.patch
    with pytest.raises(InputError, match="not written automatically"):
        write_changes(replace(patch, applicability=Applicability.review))


def test_ledger_moves_on_after_apply_and_never_repeats_a_rejection(tmp_path: Path):
    prof, config, script = make_job(tmp_path, "comm-bound")
    ledger = tmp_path / "ledger.jsonl"
    first = run_suggest(
        JobOptions(profile=prof, config=config, launch=script),
        options=SuggestOptions(ledger=ledger),
    )
    assert first.suggestion.recommendation.feature == "feature.fsdp-forward-prefetch"
    from advisor.edit.writer import write_patch as write_changes

    write_changes(first.suggestion.recommendation.patch)
    waiting = run_suggest(
        JobOptions(profile=prof, config=config, launch=script),
        options=SuggestOptions(ledger=ledger),
    )
    # one change, then measure: the same profile cannot say whether the change helped
    assert any("now applied" in n for n in waiting.notes)
    assert waiting.suggestion.status is Status.awaiting_measurement
    assert waiting.suggestion.recommendation is None
    assert waiting.suggestion.reason == Reason(
        Grounds.awaiting_measurement, {"feature": "feature.fsdp-forward-prefetch"}
    )
    prof = tmp_path / "prof2"  # the new profile, taken with the change applied
    write_profile(prof, PRESETS["comm-bound"].with_(env=dict(UPSTREAM_ENV)))
    second = run_suggest(
        JobOptions(profile=prof, config=config, launch=script),
        options=SuggestOptions(ledger=ledger),
    )
    assert second.suggestion.recommendation.feature == "feature.fsdp-backward-prefetch"
    result = runner.invoke(
        app,
        ["ledger", "--ledger", str(ledger), "--mark", "feature.fsdp-backward-prefetch=rejected"],
    )
    assert result.exit_code == 0
    third = run_suggest(
        JobOptions(profile=prof, config=config, launch=script),
        options=SuggestOptions(ledger=ledger),
    )
    reasons = {r.feature: r.code for r in third.suggestion.rejected}
    assert reasons["feature.fsdp-backward-prefetch"] is RejectCode.rejected_before
    events = [json.loads(line)["event"] for line in ledger.read_text().splitlines()]
    assert events[:3] == ["proposed", "applied", "proposed"]
    history = runner.invoke(app, ["ledger", "--ledger", str(ledger)])
    assert "feature.fsdp-forward-prefetch" in history.output and "rejected" in history.output


@pytest.mark.parametrize(
    ("config_text", "fragment"),
    [
        ("model: [unclosed\n", "config.yaml"),
        ("- just\n- a list\n", "must be a YAML mapping"),
        ("parallel:\n  ep_dispatcher: turbo\n", "is not a valid"),
        ("optimization:\n  indexer_loss_coeff: 1.0\n", "belongs in training"),
        ("parallel:\n  fsdp_size: 16\n", "world size 8"),
    ],
)
def test_bad_config_is_refused(tmp_path: Path, config_text: str, fragment: str):
    prof, config, script = make_job(tmp_path, "comm-bound")
    config.write_text(config_text)
    with pytest.raises(InputError, match=fragment):
        suggest(prof, config, script)
    result = runner.invoke(app, ["suggest", str(prof), str(config), "--no-ledger"])
    assert result.exit_code != 0


def test_launch_script_without_torchrun_is_refused(tmp_path: Path):
    prof, config, script = make_job(tmp_path, "comm-bound")
    script.write_text("export A=1\npython train.py\n")
    with pytest.raises(InputError, match="no torchrun"):
        suggest(prof, config, script)


def test_launch_world_size_must_match_the_profile(tmp_path: Path):
    prof, config, script = make_job(tmp_path, "comm-bound")
    script.write_text(script.read_text().replace("--nproc_per_node 8", "--nproc_per_node 16"))
    with pytest.raises(InputError, match="16 processes"):
        suggest(prof, config, script)


@pytest.mark.parametrize("preset", ["comm-bound", "level0", "healthy", "unfused-attention"])
def test_suggestion_json_validates(tmp_path: Path, preset: str):
    from advisor.core.validation import schema_errors

    prof, config, script = make_job(
        tmp_path, preset, model_id="" if preset == "unfused-attention" else "qwen3_moe"
    )
    result = runner.invoke(
        app,
        [
            "suggest",
            str(prof),
            str(config),
            "--launch",
            str(script),
            "--no-ledger",
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert schema_errors(json.loads(result.output), "suggestion.schema.json") == []


def test_a_profile_older_than_the_launch_script_is_stale(tmp_path: Path):
    # the profiled run had launch blocking on (torch_npu records it); the launch script turns
    # it off now: the profile no longer describes the job
    env = only_env(UPSTREAM_ENV, ASCEND_LAUNCH_BLOCKING="1")
    prof, config, script = make_job(
        tmp_path, "host-bound", env=env, exports={**env, "ASCEND_LAUNCH_BLOCKING": "0"}
    )
    run = suggest(prof, config, script)
    assert run.suggestion.status is Status.stale
    assert run.suggestion.recommendation is None
    assert run.suggestion.reason.code is Grounds.stale_environment
    values = run.suggestion.reason.values
    assert values["names"] == ("ASCEND_LAUNCH_BLOCKING",) and values["now"] == ("0",)
    assert values["ran"] == ("1",)
    # without the launch script the recorded environment is all there is: the fix is proposed
    run = suggest(prof, config, None)
    assert run.suggestion.recommendation.feature == "feature.remove-launch-blocking"
