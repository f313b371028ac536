"""Bad input: one clear line naming the file and the problem, exit code 2, no traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.synth import PRESETS, write_profile

OUT = "ASCEND_PROFILER_OUTPUT"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "advisor.cli", *args], capture_output=True, text=True, check=False
    )


def assert_one_line_error(proc: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.fixture
def profile(tmp_path: Path) -> Path:
    return write_profile(tmp_path / "prof", PRESETS["healthy"].with_(steps=3)).directory


def test_missing_folder(tmp_path: Path):
    assert_one_line_error(run("facts", str(tmp_path / "nope")), "nope", "no such file or directory")


def test_file_instead_of_folder(tmp_path: Path):
    f = tmp_path / "x.json"
    f.write_text("{}")
    assert_one_line_error(run("facts", str(f)), "x.json", "expected a profile directory")


def test_empty_folder(tmp_path: Path):
    assert_one_line_error(run("facts", str(tmp_path)), str(tmp_path), "empty folder")


def test_folder_without_profile(tmp_path: Path):
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "sub").mkdir()
    assert_one_line_error(run("facts", str(tmp_path)), "no profile found")


def test_truncated_trace(profile: Path):
    trace = profile / OUT / "trace_view.json"
    data = trace.read_bytes()
    trace.write_bytes(data[: len(data) // 2])
    assert_one_line_error(run("facts", str(profile)), "trace_view.json", "truncated")


def test_truncated_trace_can_be_skipped(profile: Path):
    trace = profile / OUT / "trace_view.json"
    data = trace.read_bytes()
    trace.write_bytes(data[: len(data) // 2])
    proc = run("facts", str(profile), "--skip-bad-files", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    payload = json.loads(proc.stdout)
    assert any("trace_view.json" in w and "truncated" in w for w in payload["warnings"])
    ids = {f["id"] for f in payload["facts"]}
    assert "step.time_ms" in ids  # the CSVs still give the step model
    missing = {m["id"]: m["reason"] for m in payload["missing"]}
    assert "unreadable" in missing["host.launch_gap_ms_per_step"]


def test_invalid_json_in_trace(profile: Path):
    trace = profile / OUT / "trace_view.json"
    text = trace.read_text()
    at = text.index(', "pid"', 1000)
    trace.write_text(text[:at] + " @@@" + text[at:])
    assert_one_line_error(run("facts", str(profile)), "trace_view.json", "invalid JSON")


def test_truncated_communication_json(profile: Path):
    comm = profile / OUT / "communication.json"
    comm.write_text(comm.read_text()[:100])
    assert_one_line_error(run("facts", str(profile)), "communication.json", "truncated JSON")


def test_csv_missing_columns(profile: Path):
    step_trace = profile / OUT / "step_trace_time.csv"
    lines = step_trace.read_text().splitlines()
    header = lines[0].replace("Computing,", "")
    step_trace.write_text(
        "\n".join(
            [header] + [",".join(line.split(",")[:2] + line.split(",")[3:]) for line in lines[1:]]
        )
    )
    assert_one_line_error(
        run("facts", str(profile)), "step_trace_time.csv", "missing column(s) Computing"
    )


def test_empty_csv(profile: Path):
    (profile / OUT / "kernel_details.csv").write_text("")
    assert_one_line_error(run("facts", str(profile)), "kernel_details.csv", "empty file")


def test_trace_with_no_steps(tmp_path: Path):
    out = tmp_path / "h_1_2_ascend_pt" / OUT
    out.mkdir(parents=True)
    (out / "trace_view.json").write_text(
        '[{"ph": "X", "name": "aten::add", "pid": 1, "tid": 1, "ts": "1.0", "dur": 1.0}]'
    )
    assert_one_line_error(run("facts", str(tmp_path)), "trace_view.json", "no steps")


def test_unknown_extra_files_are_ignored(profile: Path):
    (profile / OUT / "something_new.csv").write_text("a,b\n1,2\n")
    (profile / OUT / "analysis.db").write_bytes(b"\x00\x01")
    (profile / "logs").mkdir()
    proc = run("facts", str(profile), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["schema"] == "advisor/facts@1"


def test_partial_profile_gives_what_it_can(profile: Path):
    for name in ("trace_view.json", "communication.json", "memory_record.csv", "op_statistic.csv"):
        (profile / OUT / name).unlink()
    proc = run("facts", str(profile), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    payload = json.loads(proc.stdout)
    ids = {f["id"] for f in payload["facts"]}
    assert {"step.time_ms", "ops.top"} <= ids
    assert "host.launch_gap_ms_per_step" not in ids
    missing = {m["id"] for m in payload["missing"]}
    assert {
        "host.launch_gap_ms_per_step",
        "comm.wait_ratio",
        "memory.reserved_peak_bytes",
    } <= missing


def test_bad_format_option(profile: Path):
    proc = run("facts", str(profile), "--format", "xml")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("layout", "named"),
    [
        ("PROF_000001/mindstudio_profiler_output/msprof_1.json", "msprof command-line output"),
        ("report1.nsys-rep", "Nsight Systems reports are not read"),
    ],
)
def test_formats_that_are_not_read_are_named(tmp_path: Path, layout: str, named: str):
    target = tmp_path / layout
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("[]", encoding="utf-8")
    assert_one_line_error(run("facts", str(tmp_path)), named)
    if target.suffix == ".nsys-rep":
        assert_one_line_error(run("facts", str(target)), named)


@pytest.mark.parametrize("name", ["rank0.pt.trace.json", "rank0.json"])
def test_a_renamed_torch_npu_timeline_is_named_for_what_it_is(
    tmp_path: Path, profile: Path, name: str
):
    # a trace_view.json under a PyTorch trace's name is routed to the PyTorch reader, which finds
    # no GPU kernels in it: the refusal says what the file is and what to pass instead
    renamed = tmp_path / "handed" / name
    renamed.parent.mkdir()
    renamed.write_bytes((profile / OUT / "trace_view.json").read_bytes())
    assert_one_line_error(
        run("facts", str(renamed)), str(renamed), "torch_npu's timeline", "trace_view.json"
    )
    if name.endswith(".pt.trace.json"):  # a folder is searched for PyTorch traces by name
        assert_one_line_error(run("facts", str(renamed.parent)), "torch_npu's timeline")


def test_a_pytorch_trace_without_kernels_is_still_called_cpu_only(tmp_path: Path):
    trace = tmp_path / "cpu.pt.trace.json"
    events = [
        {"ph": "X", "name": "aten::mm", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 1.0, "dur": 2.0}
    ]
    trace.write_text(json.dumps({"traceEvents": events}))
    assert_one_line_error(run("facts", str(trace)), "CPU-only")


def test_the_timeline_file_of_an_export_stands_for_its_folder(profile: Path):
    by_file = run("facts", str(profile / OUT / "trace_view.json"), "--format", "json")
    by_folder = run("facts", str(profile), "--format", "json")
    assert by_file.returncode == 0, by_file.stderr

    def step_time(out: str) -> object:
        facts = json.loads(out)["facts"]
        return next(f["value"] for f in facts if f["id"] == "step.time_ms")

    assert step_time(by_file.stdout) == step_time(by_folder.stdout)
