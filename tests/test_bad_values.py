"""Every hostile case found by the mutation runs, one regression test each: a one-line error
naming file, row and value (exit 2), or under --skip-bad-files the row dropped with a warning —
never a traceback and never a number averaged from data that cannot be right."""

from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path

import pytest

from advisor.app.pipeline import profile_facts
from advisor.model import InputError
from tests.fuzz.harness import insane
from tests.synth import PRESETS, write_profile
from tests.synth.kineto_file import kineto_trace
from tests.test_bad_input import assert_one_line_error, run

OUT = "ASCEND_PROFILER_OUTPUT"


@pytest.fixture
def profile(tmp_path: Path) -> Path:
    scenario = PRESETS["comm-bound"].with_(steps=4, layers=2)
    return write_profile(tmp_path / "prof", scenario).directory


def _set_cell(path: Path, column: str, value: str, row: int = 2) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    header = lines[0].split(",")
    cells = lines[row - 1].split(",")
    cells[header.index(column)] = value
    lines[row - 1] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize(
    ("name", "column", "value"),
    [
        ("kernel_details.csv", "Duration(us)", "inf"),
        ("kernel_details.csv", "Duration(us)", "nan"),
        ("kernel_details.csv", "Duration(us)", "1e308"),
        ("kernel_details.csv", "Duration(us)", "-3"),
        ("step_trace_time.csv", "Computing", "1e308"),
        ("step_trace_time.csv", "Computing", "1e400"),
        ("step_trace_time.csv", "Free", "-12.5"),
        ("step_trace_time.csv", "Free", "NaN"),
        ("step_trace_time.csv", "Communication", "abc"),
    ],
)
def test_impossible_cells_are_refused_or_dropped(profile: Path, name: str, column: str, value: str):
    path = profile / OUT / name
    _set_cell(path, column, value)
    assert_one_line_error(run("facts", str(profile)), name, "row 2", column, repr(value))
    facts = profile_facts(profile, skip_bad_files=True)
    assert insane(facts) is None
    (warning,) = [w for w in facts.warnings if "dropped" in w]
    assert name in warning and "1 row(s)" in warning and repr(value) in warning
    # the facts read from that file say so in their notes
    noted = [f for f in facts.facts if name in f.source and f"1 row(s) of {name} dropped" in f.note]
    assert noted


def test_a_duplicated_column_is_refused(profile: Path):
    path = profile / OUT / "step_trace_time.csv"
    lines = path.read_text(encoding="utf-8").splitlines()
    lines = [line + (",Computing" if i == 0 else ",999999") for i, line in enumerate(lines)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert_one_line_error(run("facts", str(profile)), "column Computing appears twice")


@pytest.mark.parametrize(
    "record",
    [
        {"Communication Time Info": {"Elapse Time(ms)": -1.0, "Wait Time(ms)": 0.1}},
        {"Communication Time Info": {"Elapse Time(ms)": 1e308, "Wait Time(ms)": 0.1}},
        {"Communication Time Info": "not an object"},
        {"Communication Bandwidth Info": ["not", "an", "object"]},
    ],
)
def test_communication_records_of_the_wrong_shape_or_value(profile: Path, record: dict):
    path = profile / OUT / "communication.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    step = next(iter(data.values()))
    bucket = next(iter(step.values()))
    bucket[next(iter(bucket))] = record
    path.write_text(json.dumps(data), encoding="utf-8")
    proc = run("facts", str(profile))
    assert proc.returncode in (0, 2) and "Traceback" not in proc.stderr
    if proc.returncode == 2:
        assert_one_line_error(proc, "communication.json")
    facts = profile_facts(profile, skip_bad_files=True)
    assert insane(facts) is None


@pytest.mark.parametrize("name", ["communication.json", "trace_view.json", "profiler_info_0.json"])
def test_deeply_nested_json_is_one_line(profile: Path, name: str):
    path = profile / name if name.startswith("profiler_info") else profile / OUT / name
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    proc = run("facts", str(profile))
    assert proc.returncode in (0, 2) and "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("world", [0, -4])
def test_an_impossible_world_size_is_refused(profile: Path, world: int):
    path = profile / "profiler_metadata.json"
    meta = json.loads(path.read_text(encoding="utf-8"))
    meta["distributed_args"]["world_size"] = world
    path.write_text(json.dumps(meta), encoding="utf-8")
    assert_one_line_error(run("facts", str(profile)), "world_size", str(world))


def _trace(tmp_path: Path, change) -> Path:
    data = kineto_trace()
    change(data["traceEvents"])
    path = tmp_path / "rank0.pt.trace.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _kernel(events: list[dict]) -> dict:
    return next(e for e in events if e.get("cat") == "kernel")


@pytest.mark.parametrize(
    "change",
    [
        lambda ev: _kernel(ev).update(ts=None),
        lambda ev: _kernel(ev).update(ts="abc"),
        lambda ev: _kernel(ev).update(dur=float("nan")),
        lambda ev: _kernel(ev).update(ts=float("inf")),
        lambda ev: _kernel(ev).update(dur=-5),
        lambda ev: next(e for e in ev if "ProfilerStep" in e["name"]).update(dur=-100.0),
    ],
    ids=["null-ts", "text-ts", "nan-dur", "inf-ts", "negative-dur", "negative-step"],
)
def test_pytorch_events_that_cannot_be_placed(tmp_path: Path, change):
    path = _trace(tmp_path, change)
    assert_one_line_error(run("facts", str(path)), str(path), "event #")
    facts = profile_facts(path, skip_bad_files=True)
    assert insane(facts) is None


def test_pytorch_events_with_list_args_still_read(tmp_path: Path):
    path = _trace(tmp_path, lambda ev: _kernel(ev).update(args=["a", "b"]))
    facts = profile_facts(path)
    assert insane(facts) is None and facts.value("step.time_ms") > 0


def test_latin1_bytes_in_a_trace_and_a_truncated_gzip(tmp_path: Path):
    raw = json.dumps(kineto_trace()).encode()
    latin = tmp_path / "latin.pt.trace.json"
    latin.write_bytes(raw.replace(b"aten::add", b"aten::add\xe9\xff"))
    assert_one_line_error(run("facts", str(latin)), "latin.pt.trace.json")
    cut = tmp_path / "cut.pt.trace.json.gz"
    cut.write_bytes(gzip.compress(raw)[:500])
    assert_one_line_error(run("facts", str(cut)), "cut.pt.trace.json.gz")


def test_yaml_bombs_are_refused_quickly(tmp_path: Path):
    bomb = 'a: &a ["x","x","x","x","x","x","x","x","x","x"]\n'
    previous = "a"
    for name in "bcdefghi":
        bomb += f"{name}: &{name} [" + ",".join([f"*{previous}"] * 10) + "]\n"
        previous = name
    path = tmp_path / "bomb.yaml"
    path.write_text(bomb + f"training:\n  profile_ranks: *{previous}\n", encoding="utf-8")
    _unreadable_finding(run("check", str(path)), "alias bomb")
    deep = tmp_path / "deep.yaml"
    deep.write_text("training:\n  x: " + "[\n" * 50_000 + "]\n" * 50_000, encoding="utf-8")
    _unreadable_finding(run("check", str(deep)), "nested 50,000 levels deep")
    tag = tmp_path / "tag.yaml"
    tag.write_text('training: !!python/object/apply:os.system ["touch PWNED"]\n', encoding="utf-8")
    _unreadable_finding(run("check", str(tag)), "python/object")
    assert not (tmp_path / "PWNED").exists()


def _unreadable_finding(proc: subprocess.CompletedProcess[str], fragment: str) -> None:
    """check reports a named file it cannot read as one error finding on it (exit 1), the
    report written, never a traceback."""
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    (line,) = [ln for ln in proc.stdout.splitlines() if "policy.file-unreadable" in ln]
    assert fragment in line


def test_a_non_utf8_launch_script_is_one_line(tmp_path: Path):
    script = tmp_path / "run.sh"
    script.write_bytes(b"export TASK_QUEUE_ENABLE=1\n\xff\xfe torchrun train.py\n")
    config = Path(__file__).resolve().parents[1] / "examples" / "fsdp2" / "config.yaml"
    assert_one_line_error(run("check", str(config), "--launch", str(script)), "run.sh", "UTF-8")


def test_limits_can_be_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from advisor.core.yamlio import load_data

    path = tmp_path / "deep.yaml"
    path.write_text("x: " + "[" * 80 + "]" * 80 + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="ADVISOR_YAML_MAX_DEPTH"):
        load_data(path)
    monkeypatch.setenv("ADVISOR_YAML_MAX_DEPTH", "200")
    assert isinstance(load_data(path)["x"], list)


def test_a_gzip_bomb_is_refused_without_inflating_it(tmp_path: Path):
    """Refused by its expansion ratio, in bounded memory (timings belong in benchmarks/: a
    loaded machine makes a wall-clock bound flaky)."""
    import resource

    path = tmp_path / "bomb.pt.trace.json.gz"
    # written in pieces: a forked child's peak memory counts the parent's resident pages
    with gzip.open(path, "wb", compresslevel=9) as handle:
        handle.write(b'{"traceEvents": [')
        block = b" " * (1024 * 1024)
        for _ in range(300):
            handle.write(block)
        handle.write(b"]}")
    proc = run("facts", str(path))
    assert_one_line_error(proc, "gzip bomb")
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    assert peak_kb < 400 * 1024


@pytest.mark.parametrize("body", [b"\0" * (3 << 20), b'{"name": "' + b"x" * (3 << 20) + b'"}]'])
def test_a_trace_without_event_boundaries_is_refused_fast(
    profile: Path, body: bytes, monkeypatch: pytest.MonkeyPatch
):
    # the limit lowered so the test stays small; the default (16 MB) behaves the same
    monkeypatch.setenv("ADVISOR_MAX_EVENT_BYTES", str(1 << 20))
    (profile / OUT / "trace_view.json").write_bytes(b"[" + body)
    assert_one_line_error(run("facts", str(profile)), "trace_view.json", "no event ends within")


def test_an_event_whose_args_nest_too_deep_is_one_line(profile: Path):
    path = profile / OUT / "trace_view.json"
    text = path.read_text(encoding="utf-8")
    first = text.index("{", 1)
    deep = '"args": {"x": ' + "[" * 200_000 + "]" * 200_000 + "}, "
    path.write_text(text[: first + 1] + deep + text[first + 1 :], encoding="utf-8")
    assert_one_line_error(run("facts", str(profile)), "trace_view.json", "nested too deeply")


def test_a_ledger_line_or_baseline_nested_too_deep_is_one_line(tmp_path: Path):
    deep = "[" * 100_000 + "]" * 100_000
    baseline = tmp_path / "baseline.json"
    baseline.write_text(deep, encoding="utf-8")
    config = tmp_path / "config.yaml"
    config.write_text("model:\n  model_id: qwen3\n", encoding="utf-8")
    proc = run("check", str(config), "--baseline", str(baseline))
    assert_one_line_error(proc, "baseline.json", "nested too deeply")
    ledger = tmp_path / "ledger.jsonl"
    ledger.write_text(deep + "\n", encoding="utf-8")
    assert_one_line_error(
        run("ledger", "--ledger", str(ledger)), "ledger.jsonl:1", "nested too deeply"
    )


def test_a_trace_past_the_size_limit_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = tmp_path / "rank0.pt.trace.json"
    path.write_text(json.dumps(kineto_trace(steps=20)))
    size = path.stat().st_size
    monkeypatch.setenv("ADVISOR_MAX_TRACE_BYTES", str(size // 2))
    assert_one_line_error(run("facts", str(path)), str(path), "ADVISOR_MAX_TRACE_BYTES")
    monkeypatch.setenv("ADVISOR_MAX_TRACE_BYTES", str(size))
    assert run("facts", str(path)).returncode == 0
