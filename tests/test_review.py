"""Code review that sees what a change really does: a sourced file named alone is checked
through the scripts that source it, standard input is read in its own dialect, and a named
file that cannot be followed is said so."""

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


MEGATRON_SCRIPT = """\
export CUDA_DEVICE_MAX_CONNECTIONS=1
DISTRIBUTED_ARGS="--nproc_per_node 8 --nnodes 1"
torchrun $DISTRIBUTED_ARGS pretrain_gpt.py \\
    --tensor-model-parallel-size 2 \\
    --micro-batch-size 1 \\
    --global-batch-size 64 \\
    --seq-length 4096 \\
    --num-layers 32
"""


def _stdin(text: str, *args: str) -> tuple[int, str]:
    """The real entry point: it maps an input error to exit 2 and one line."""
    proc = subprocess.run(
        [sys.executable, "-m", "advisor", "check", "-", *args],
        input=text,
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.returncode, proc.stdout + proc.stderr


def test_stdin_launch_script_is_checked_in_its_dialect():
    lines = (EXAMPLE / "run.sh").read_text(encoding="utf-8").splitlines(keepends=True)
    line = 6  # after the `source` line, before the command
    script = "".join([*lines[: line - 1], BLOCKING, *lines[line - 1 :]])
    code, output = _stdin(script)
    assert code == 1, output
    assert "<stdin> (FSDP2 launch script)" in output
    assert f"<stdin>:{line}:1: error [policy.launch-blocking]" in output
    assert "skipped" not in output and "/tmp" not in output
    # the sourced env.sh has no folder to be found in: said once, with its line
    assert output.count("no folder to find them in") == 1
    assert "(line 4)" in output


def test_stdin_megatron_script_without_shebang_is_checked():
    code, output = _stdin(MEGATRON_SCRIPT, "--format", "json")
    assert code == 0, output
    report = json.loads(output)
    assert report["dialects"] == {"<stdin>": "megatron-script"}
    assert report["skipped"] == []


def test_stdin_errors_name_stdin_never_a_temporary_file():
    # a document that does not parse is a finding on it (exit 1), named as given
    code, output = _stdin("training:\n  micro_batch_size: [1\n")
    assert code == 1
    assert (
        "<stdin>:3:1: error [policy.file-unreadable] cannot be read: did not find expected"
        in output
    )
    assert "tmp" not in output
    code, output = _stdin("training:\n  micro_batch_size: [1\n", "--stdin-filename", "c/t.yaml")
    assert code == 1 and "c/t.yaml:3:1:" in output and "tmp" not in output


def test_stdin_filename_suffix_decides_over_the_content():
    code, output = _stdin("model:\n  model_id: qwen3\n", "--stdin-filename", "notes.sh")
    assert code == 0 and "notes.sh: skipped" in output, output


UNREADABLE = {
    "eval": (
        "#!/bin/bash\nexport TASK_QUEUE_ENABLE=2\n"
        "eval torchrun --nproc_per_node $(nproc) train_fsdp2.py config.yaml\n",
        3,
        "runs through eval",
    ),
    "variable": (
        '#!/bin/bash\nCMD="torchrun --nproc_per_node 8 train_fsdp2.py config.yaml"\n'
        'echo "starting torchrun"\nbash -c "$CMD"\n',
        2,
        "held in CMD",
    ),
    "unparsable": (
        '#!/bin/bash\nexport A=1\ntorchrun --nproc_per_node 8 train_fsdp2.py "config.yaml\n',
        3,
        "line 3 cannot be read",
    ),
}


@pytest.mark.parametrize("case", sorted(UNREADABLE))
def test_a_named_script_that_cannot_be_followed_is_a_finding(tmp_path: Path, case: str):
    text, line, why = UNREADABLE[case]
    script = tmp_path / "run.sh"
    script.write_text(text, encoding="utf-8")
    for named in ({"configs": [script]}, {"launches": [script]}):
        result = run_check(RULES, **named)  # type: ignore[arg-type]
        assert result.skipped == []
        (finding,) = result.findings
        assert finding.rule_id == "policy.launch-unreadable"
        assert (finding.file, finding.line, finding.severity) == (str(script), line, "warning")
        assert why in finding.message and "not checked" in finding.message

    # a warning: the default --fail-on error passes, --fail-on warning fails (the hook's -q too)
    assert runner.invoke(app, ["check", "-q", str(script)]).exit_code == 0
    failed = runner.invoke(app, ["check", "-q", "--fail-on", "warning", str(script)])
    assert failed.exit_code == 1
    assert f"{script}:{line}:1: warning [policy.launch-unreadable]" in failed.output


def test_an_unreadable_launch_is_waived_like_any_finding(tmp_path: Path):
    script = tmp_path / "run.sh"
    script.write_text(
        "#!/bin/bash\n# advisor: ignore[policy.launch-unreadable] the command is built per node\n"
        "eval torchrun --nproc_per_node $(nproc) train_fsdp2.py config.yaml\n",
        encoding="utf-8",
    )
    (finding,) = run_check(RULES, configs=[script]).findings
    assert finding.suppressed == "the command is built per node"


def test_a_script_that_starts_no_training_is_skipped_not_flagged(tmp_path: Path):
    script = tmp_path / "tools.sh"
    script.write_text('#!/bin/bash\necho "use torchrun to start"\nls\n', encoding="utf-8")
    result = run_check(RULES, configs=[script])
    assert result.findings == [] and [f for f, _ in result.skipped] == [str(script)]
    # found in a folder walk rather than named: quiet as before
    assert run_check(RULES, configs=[tmp_path]).findings == []


def test_suggest_says_when_the_dialect_has_no_change_for_the_main_bottleneck(tmp_path: Path):
    """A MindSpore job bound by host dispatch: MindFormers configs have no lever for it, so the
    advice moves to the next bottleneck and says why."""
    from tests.synth.scenario import PRESETS
    from tests.synth.writer import write_profile

    write_profile(
        tmp_path / "prof", PRESETS["host-bound"].with_(framework="mindspore", steps=4, layers=2)
    )
    config = tmp_path / "config.yaml"
    shutil.copy(EXAMPLE.parent / "mindformers" / "config.yaml", config)
    out = runner.invoke(app, ["suggest", str(tmp_path / "prof"), str(config), "--no-ledger"])
    assert out.exit_code == 0, out.output
    assert (
        "note: advisor knows no change to a MindSpore Transformers config for the main "
        "bottleneck (bottleneck.host-dispatch) on ascend: the advice addresses the next one"
    ) in out.output
    assert "Ascend NPUs" not in out.output  # an Ascend profile: no platform mismatch


def test_suggest_says_when_the_profile_is_of_another_platform(tmp_path: Path):
    """A PyTorch GPU trace with an FSDP2-on-Ascend config: the main bottleneck's only GPU lever
    is off, the advice moves on, and the mismatch is named."""
    from advisor.app.job import JobOptions
    from advisor.app.suggest import SuggestOptions, run_suggest
    from advisor.engine.settings import RuleOptions
    from tests.synth.kineto_file import kineto_trace

    trace = tmp_path / "rank0.pt.trace.json"
    trace.write_text(json.dumps(kineto_trace(kernel_us=5.0, launch_us=50.0)), encoding="utf-8")
    config = tmp_path / "config.yaml"
    text = (EXAMPLE / "config.yaml").read_text(encoding="utf-8")
    config.write_text(text.replace("fsdp_size: 8", "fsdp_size: 1"), encoding="utf-8")
    settings = tmp_path / "settings.yaml"
    settings.write_text("rules:\n  feature.gpu-cuda-graphs:\n    enabled: false\n")
    run = run_suggest(
        JobOptions(profile=trace, config=config),
        RuleOptions(settings=settings),
        SuggestOptions(use_ledger=False),
    )
    assert run.diagnosis.main is not None
    assert run.diagnosis.main.id == "bottleneck.host-dispatch"
    rec = run.suggestion.recommendation
    assert rec is not None and rec.bottleneck != "bottleneck.host-dispatch"
    (note,) = [n for n in run.notes if "main bottleneck" in n]
    assert "(bottleneck.host-dispatch)" in note and f"next one ({rec.bottleneck})" in note
    assert "pytorch trace on cuda" in note and "Ascend NPUs" in note


def test_suggest_on_the_main_bottleneck_adds_no_skip_note_but_names_the_platform(tmp_path: Path):
    from advisor.app.job import JobOptions
    from advisor.app.suggest import SuggestOptions, run_suggest
    from tests.synth.kineto_file import kineto_trace

    trace = tmp_path / "rank0.pt.trace.json"
    trace.write_text(json.dumps(kineto_trace(kernel_us=5.0, launch_us=50.0)), encoding="utf-8")
    config = tmp_path / "config.yaml"
    text = (EXAMPLE / "config.yaml").read_text(encoding="utf-8")
    config.write_text(text.replace("fsdp_size: 8", "fsdp_size: 1"), encoding="utf-8")
    run = run_suggest(
        JobOptions(profile=trace, config=config), options=SuggestOptions(use_ledger=False)
    )
    rec = run.suggestion.recommendation
    assert rec is not None and rec.bottleneck == "bottleneck.host-dispatch"
    assert not [n for n in run.notes if "main bottleneck" in n]
    # the advice is on the main bottleneck, but the profile is still a GPU trace
    [other] = [n for n in run.notes if "Ascend NPUs" in n]
    assert other.startswith("the profile is a pytorch trace on cuda while a ")
    assert other.endswith("check it is this job's profile")


PROFILES = Path(__file__).resolve().parents[1] / "examples" / "profiles"


def _report_on_a_terminal(cwd: Path) -> tuple[int, str]:
    """`advisor report PROFILE` with standard output on a pseudo-terminal, as a user runs it."""
    import os
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "advisor", "report", str(PROFILES / "healthy")],
        cwd=cwd,
        stdout=follower,
        stderr=subprocess.PIPE,
        text=True,
    )
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        shown += chunk
    _, err = proc.communicate(timeout=300)
    os.close(leader)
    return proc.returncode, shown.decode("utf-8", "replace") + err


def test_report_on_a_terminal_writes_report_html(tmp_path: Path):
    code, output = _report_on_a_terminal(tmp_path)
    assert code == 0, output
    assert "<html" not in output.lower()
    assert "wrote report.html (standard output is a terminal" in output
    assert "<title>advisor report" in (tmp_path / "report.html").read_text(encoding="utf-8")


def test_report_on_a_terminal_never_replaces_another_report_html(tmp_path: Path):
    mine = tmp_path / "report.html"
    mine.write_text("my notes\n", encoding="utf-8")
    code, output = _report_on_a_terminal(tmp_path)
    assert code == 2 and "not an advisor report" in output
    assert "<html" not in output.lower()
    assert mine.read_text(encoding="utf-8") == "my notes\n"


def test_diff_paths_outside_the_working_folder_have_no_dotdot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from advisor.edit.patch import unified_diff
    from advisor.model import FileChange

    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    diff = unified_diff([FileChange("../config.yaml", "a: 1\n", "a: 2\n")])
    whole = (tmp_path / "config.yaml").resolve().as_posix().lstrip("/")
    assert f"--- a/{whole}\n+++ b/{whole}\n" in diff
    assert ".." not in diff
    # below the working folder: relative, as git apply takes it
    inside = unified_diff([FileChange(str(tmp_path / "work" / "c.yaml"), "a: 1\n", "a: 2\n")])
    assert "--- a/c.yaml\n+++ b/c.yaml\n" in inside


@pytest.mark.parametrize(
    ("framework", "config", "named"),
    [
        ("pytorch", "mindformers", "torch_npu, which does not run a MindSpore Transformers"),
        ("mindspore", "fsdp2", "mindspore, which does not run a MindSpeed-LLM FSDP2"),
        ("mindspore", "mindformers", None),
        ("pytorch", "fsdp2", None),
    ],
)
def test_suggest_names_a_profile_of_another_framework(
    tmp_path: Path, framework: str, config: str, named: str | None
):
    from advisor.app.job import JobOptions
    from advisor.app.suggest import SuggestOptions, run_suggest
    from tests.synth.scenario import PRESETS
    from tests.synth.writer import write_profile

    scenario = PRESETS["comm-bound"].with_(framework=framework, steps=4, layers=2)
    write_profile(tmp_path / "prof", scenario)
    source = (
        EXAMPLE / "config.yaml"
        if config == "fsdp2"
        else EXAMPLE.parent / "mindformers" / "config.yaml"
    )
    shutil.copy(source, tmp_path / "config.yaml")
    run = run_suggest(
        JobOptions(profile=tmp_path / "prof", config=tmp_path / "config.yaml"),
        options=SuggestOptions(use_ledger=False),
    )
    notes = [n for n in run.notes if "this job's profile" in n]
    if named is None:
        assert notes == []
    else:
        assert len(notes) == 1 and f"the profile was recorded by {named}" in notes[0]
