"""CLI habits of the linters people know: -q/-v, help without type noise, choices listed,
progress on a terminal only, wrapped prose on a terminal and whole lines when piped, crashes
that a CI cannot mistake for findings."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from advisor.app.pipeline import profile_facts
from advisor.app.read_ranks import ReadOptions
from advisor.cli import command
from advisor.cli.console import wrap_for_terminal
from advisor.inputs import progress
from tests.cli_run import run_cli

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
COMMANDS = (
    "facts",
    "diagnose",
    "suggest",
    "report",
    "check",
    "compare",
    "estimate",
    "watch",
    "ledger",
)


@pytest.mark.parametrize("name", COMMANDS)
def test_help_has_no_type_noise_and_every_option_explained(name: str):
    result = run_cli(name, "-h")
    assert result.exit_code == 0
    text = result.stdout
    for noise in ("<bool>", "<list[", "<path>", "<text"):
        assert noise not in text, f"{name} -h shows {noise}"
    group = command()
    for param in group.commands[name].params:
        if param.opts[0].startswith("-"):
            assert param.help, f"{name} {param.opts[0]} has no help text"


def test_a_choice_is_listed_in_help_and_a_bad_one_gets_the_list():
    # the help is wrapped to the width: compare its words, not its lines
    words = " ".join(run_cli("check", "-h").stdout.split())
    assert "(one of: text, json, sarif, github, gitlab)" in words
    assert "(one of: error, warning, note)" in words
    bad = run_cli("check", "--format", "xml", str(EXAMPLES / "fsdp2" / "config.yaml"))
    assert bad.exit_code == 2
    assert "invalid choice: 'xml' (choose from text, json, sarif, github, gitlab)" in bad.stderr
    assert "Value error" not in bad.stderr


def test_quiet_silences_warnings_and_verbose_lists_inputs(tmp_path: Path):
    work = tmp_path / "job"
    shutil.copytree(EXAMPLES / "fsdp2", work)
    profile = str(EXAMPLES / "profiles" / "comm-bound")
    noisy = run_cli("check", str(work), str(ROOT / ".pre-commit-hooks.yaml"))
    assert "skipped" in noisy.stdout
    quiet = run_cli("check", "-q", str(work), str(ROOT / ".pre-commit-hooks.yaml"))
    assert "skipped" not in quiet.stdout and "policy.multi-stream" in quiet.stdout
    verbose = run_cli("facts", profile, "-v")
    assert "advisor: read 9 file(s):" in verbose.stderr
    assert "step_trace_time.csv" in verbose.stderr and "done in" in verbose.stderr
    written = run_cli("suggest", profile, str(work / "config.yaml"), "--write", "-q")
    assert written.exit_code == 0 and written.stderr == ""
    # the next run is back to normal verbosity
    assert "advisor: wrote" in run_cli("report", profile, "-o", str(tmp_path / "r.html")).stderr


def test_root_options_and_python_m(tmp_path: Path):
    assert run_cli("--version").stdout.startswith("advisor ")
    assert run_cli("-q", "facts", str(EXAMPLES / "profiles" / "healthy")).exit_code == 0


def test_prose_wraps_on_a_terminal_and_tables_and_diffs_stay_whole():
    text = (
        "Why: " + "communication costs a lot of the step " * 5 + "\n"
        "  step.time_ms                     7.84 ms                  step_trace_time.csv and more\n"
        "--- a/config.yaml\n+++ b/config.yaml\n"
        "-  num_to_forward_prefetch: 1               # FSDP all-gather prefetch (default 1) long\n"
    )
    wrapped = wrap_for_terminal(text, 60)
    lines = wrapped.split("\n")
    assert lines[0].startswith("Why: ") and len(lines[0]) <= 60
    assert lines[1].startswith("    ")  # hanging indent
    assert "  step.time_ms                     7.84 ms" in wrapped  # table row whole
    assert text.split("--- a/", 1)[1] in wrapped  # diff whole


def test_piped_output_is_never_wrapped(tmp_path: Path):
    result = run_cli(
        "suggest",
        str(EXAMPLES / "profiles" / "comm-bound"),
        str(EXAMPLES / "fsdp2" / "config.yaml"),
    )
    assert any(len(line) > 120 for line in result.stdout.splitlines())


class _Task:
    def __init__(self, label: str, total: float, unit: str) -> None:
        self.label, self.total, self.unit, self.done = label, total, unit, 0.0

    def advance(self, amount: float = 1.0) -> None:
        self.done += amount

    def close(self) -> None:
        pass


class _Recorder:
    def __init__(self) -> None:
        self.tasks: list[_Task] = []

    def open(self, label: str, total: float, unit: str) -> _Task:
        self.tasks.append(_Task(label, total, unit))
        return self.tasks[-1]


def test_cluster_reads_report_ranks_done():
    recorder = _Recorder()
    with progress.reporting(recorder):
        profile_facts(EXAMPLES / "profiles" / "slow-rank", reading=ReadOptions(jobs=1))
    ranks = [t for t in recorder.tasks if t.unit == "ranks"]
    assert ranks and ranks[0].total == ranks[0].done >= 2
    traces = [t for t in recorder.tasks if t.unit == "MiB"]
    assert traces  # each rank's trace_view.json decoding is reported too


def test_pytorch_traces_report_the_bytes_decoded(tmp_path: Path):
    import gzip

    from tests.synth.kineto_file import kineto_trace

    data = json.dumps(kineto_trace(steps=40, kernels_per_step=200)).encode()
    plain = tmp_path / "plain" / "rank0.pt.trace.json"
    packed = tmp_path / "packed" / "rank0.pt.trace.json.gz"
    for path, body in ((plain, data), (packed, gzip.compress(data))):
        path.parent.mkdir()
        path.write_bytes(body)
        recorder = _Recorder()
        with progress.reporting(recorder):
            profile_facts(path)
        decoded = [t for t in recorder.tasks if t.unit == "MiB"]
        assert decoded, path.name
        # the whole file, compressed bytes for a .gz
        assert decoded[0].done == pytest.approx(path.stat().st_size / 2**20, rel=1e-6)


def test_no_progress_is_drawn_when_stderr_is_not_a_terminal():
    result = run_cli("facts", str(EXAMPLES / "profiles" / "slow-rank"))
    assert "━" not in result.stderr and "\r" not in result.stderr


def test_a_crash_is_one_line_and_exit_2(monkeypatch: pytest.MonkeyPatch):
    import advisor.app.pipeline as pipeline

    def boom(*_: object, **__: object) -> None:
        raise KeyError("scripts/env.sh")

    monkeypatch.setattr(pipeline, "profile_facts", boom)
    result = run_cli("facts", str(EXAMPLES / "profiles" / "healthy"))
    assert result.exit_code == 2  # never 1: a CI recipe takes 1 for findings
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("advisor: internal error: KeyError")
    verbose = run_cli("facts", str(EXAMPLES / "profiles" / "healthy"), "-v")
    assert "Traceback" in verbose.stderr


def test_gitlab_code_quality_format(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    work = tmp_path / "job"
    shutil.copytree(EXAMPLES / "fsdp2", work)
    (work / "env.sh").write_text(
        (work / "env.sh").read_text() + "export ASCEND_LAUNCH_BLOCKING=1\n", encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    result = run_cli("check", "job", "--format", "gitlab")
    assert result.exit_code == 1
    issues = json.loads(result.stdout)
    blocking = [i for i in issues if i["check_name"] == "policy.launch-blocking"]
    assert blocking and blocking[0]["severity"] == "critical"
    assert blocking[0]["location"] == {"path": "job/env.sh", "lines": {"begin": 6}}


def test_sourced_file_findings_have_sarif_fixes_and_relative_waivers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Regressions: a finding in a sourced env file broke SARIF (KeyError) and --fix skipped
    it; its waiver did nothing when the script was named by a relative path."""
    work = tmp_path / "job"
    shutil.copytree(EXAMPLES / "fsdp2", work)
    env = work / "env.sh"
    original = env.read_text(encoding="utf-8")
    env.write_text(original + "export ASCEND_LAUNCH_BLOCKING=1\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    sarif = run_cli("check", "job/run.sh", "--format", "sarif")
    assert sarif.exit_code == 1, sarif.stderr
    results = json.loads(sarif.stdout)["runs"][0]["results"]
    fixed = [r for r in results if r["ruleId"] == "policy.launch-blocking"]
    assert fixed[0]["fixes"][0]["artifactChanges"][0]["artifactLocation"]["uri"] == "job/env.sh"
    assert run_cli("check", "job/run.sh", "--fix").exit_code == 0
    assert env.read_text(encoding="utf-8") == original
    env.write_text(
        original + "export ASCEND_LAUNCH_BLOCKING=1  # advisor: ignore[policy.launch-blocking] "
        "hang hunt\n",
        encoding="utf-8",
    )
    waived = run_cli("check", "job/run.sh")
    assert waived.exit_code == 0 and "1 waived" in waived.stdout
