"""`advisor tune` end to end on the simulated job of examples/simulated-job: the kept baseline only
improves, a change whose run dies is reverted byte for byte (comments kept) and never tried again,
a change masked by another bottleneck is tried again once that bottleneck is addressed, Ctrl-C
and a run past --run-timeout kill the run's process group and revert, and the ledger tells the
same story after each. The bar of the closed loop is checked on the example and on every other
response model in examples/simulated-job/responses."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from advisor.app.tune import TuneOptions, run_tune
from advisor.app.tune_run import failure_cause, new_profile, run_job
from advisor.core.validation import schema_errors
from advisor.core.yamlio import load_data
from advisor.engine.rules import load_rules
from advisor.engine.tuning import Stop, TuneResult, Verdict3
from advisor.inputs.ledger import Ledger
from advisor.render.tune import FORMATS, tune_json

ROOT = Path(__file__).resolve().parents[1]
JOB = ROOT / "examples" / "simulated-job"
CHANGED = "grep -q '^export TASK_QUEUE_ENABLE=2' run.sh"  # true once the first change is applied


@pytest.fixture
def job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "simulated-job"
    shutil.copytree(
        JOB, folder, ignore=shutil.ignore_patterns("profile", "output", "*.log", ".advisor")
    )
    monkeypatch.setenv("SIMJOB_PYTHON", sys.executable)
    return folder


def _response(folder: Path, monkeypatch: pytest.MonkeyPatch, **changes: dict[str, Any]) -> Path:
    """A copy of the response model with some sections' values changed (SIMJOB_RESPONSE)."""
    model = load_data(JOB / "response.yaml")
    for section, values in changes.items():
        model[section].update(values)
    path = folder / "other-response.json"  # JSON is YAML: the simulator reads it as is
    path.write_text(json.dumps(model), encoding="utf-8")
    monkeypatch.setenv("SIMJOB_RESPONSE", str(path))
    return path


def _tune(job: Path, **options: Any) -> TuneResult:
    run = options.pop("run", "bash run.sh")
    return run_tune(
        TuneOptions(config=job / "config.yaml", launch=job / "run.sh", run=run, **options)
    )


def _exhaustive_best(response: Path) -> float:
    """The best step time of the benchmark's 32-run grid over the same knobs."""
    sys.path[:0] = [str(ROOT), str(JOB)]  # the benchmark, and the simulator it runs
    from simjob.response import load_response

    from benchmarks.bench_tune import SMALL, launch_env, search

    results = search(SMALL, load_response(response), launch_env(JOB / "run.sh"))
    return min(r.step_ms for r in results if r.step_ms is not None)


def _events(ledger: Path) -> list[tuple[str, str]]:
    return [(e.event, e.feature) for e in Ledger.load(ledger).events()]


def _ledger_tells_the_changes(result: TuneResult) -> None:
    """Each change tried is in the ledger as proposed -> applied -> its verdict, in order."""
    events = _events(result.ledger)
    verdicts = {Verdict3.keep: "kept", Verdict3.revert: "reverted", Verdict3.failed: "failed"}
    at = 0
    for change in result.changes:
        wanted = [
            ("proposed", change.feature),
            ("applied", change.feature),
            (verdicts.get(change.verdict, "reverted"), change.feature),
        ]
        for event in wanted:
            assert event in events[at:], f"{event} missing after entry {at}: {events}"
            at = events.index(event, at) + 1


def _bar(result: TuneResult, best_ms: float | None) -> None:
    """The issue's bar; without `best_ms`, all of it but the distance to the exhaustive best."""
    assert result.baseline is not None and result.final is not None
    base, final = result.baseline.step_ms, result.final.step_ms
    assert base is not None and final is not None
    assert final <= 0.55 * base, f"{final} ms is more than 55% of {base} ms"
    if best_ms is not None:
        assert final <= 1.15 * best_ms, f"{final} ms is not within 15% of the best {best_ms} ms"
    assert result.runs <= 10
    assert len(result.kept) >= 3
    for change in result.changes:
        assert change.predicted["source"] == "suggest", change
        assert isinstance(change.predicted["expected_ratio"], float)
    for change in result.kept:
        assert change.measured is not None and change.measured.step_ms is not None
    # the kept baseline only improves
    kept = [base, *(c.measured.step_ms for c in result.kept if c.measured)]
    assert all(b is not None and a is not None and b < a for a, b in itertools.pairwise(kept)), kept


def test_the_example_is_tuned_to_the_bar(job: Path) -> None:
    original = (job / "config.yaml").read_text(encoding="utf-8")
    result = _tune(job)
    _bar(result, _exhaustive_best(JOB / "response.yaml"))
    _ledger_tells_the_changes(result)
    features = [c.feature for c in result.kept]
    # the grouped expert GEMM is proposed for the host's launches it removes (host-dispatch
    # edge), not only for the compute bottleneck's small cost
    gemm = [c for c in result.kept if c.feature == "feature.moe-grouped-gemm"]
    assert gemm and gemm[0].bottleneck == "bottleneck.host-dispatch", features
    # every comment of the config survives the edits, and the files still parse
    comments = [line.split("#", 1)[1] for line in original.splitlines() if "#" in line]
    edited = (job / "config.yaml").read_text(encoding="utf-8")
    assert all(comment in edited for comment in comments)
    assert load_data(job / "config.yaml")["parallel"]["num_to_backward_prefetch"] == 1
    assert subprocess.run(["bash", "-n", str(job / "run.sh")], check=False).returncode == 0
    # the JSON is advisor/tune@1; every run's log is kept beside the ledger
    assert schema_errors(json.loads(tune_json(result)), "tune.schema.json") == []
    assert len(list((result.ledger.parent / "tune").glob("run-*.log"))) == result.runs
    assert "| run | feature |" in FORMATS["markdown"](result)


RESPONSES = sorted((JOB / "responses").glob("*.yaml"))


# The models on which the loop does not yet come within 15% of the exhaustive best, and why
# (measured; README's "runs to best"): the rest of the bar is asserted on them all the same.
def _no_memory_growth_right_after_out_of_memory(result: TuneResult) -> None:
    """After a run that ran out of memory, no change that holds more device memory runs until
    one that lowers the peak is kept (rules/tune.yaml memory_room)."""
    rules = load_rules()
    waiting = None
    for change in result.changes:
        rule = rules.feature(change.feature)
        memory = rule.effect.device_memory if rule is not None else None
        assert not (waiting and memory == "more"), f"{change.feature} after {waiting} ran out"
        if change.verdict is Verdict3.failed and change.reason == "out-of-memory":
            waiting = change.feature
        elif change.verdict is Verdict3.keep and memory == "less":
            waiting = None


def _exported(script: Path, name: str) -> str | None:
    found = None
    for line in script.read_text(encoding="utf-8").splitlines():
        if line.startswith(f"export {name}="):
            found = line.split("=", 1)[1].strip()
    return found


def _in_files(job: Path, target: str, path: str) -> object:
    """A setting's value in the job's files after tuning (env: the launch script's export)."""
    if target == "env":
        return _exported(job / "run.sh", path)
    value: Any = load_data(job / "config.yaml")
    for key in path.split("."):
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _comments_kept(job: Path, originals: dict[str, str]) -> None:
    for name, original in originals.items():
        edited = (job / name).read_text(encoding="utf-8")
        comments = [line.split("#", 1)[1] for line in original.splitlines() if "#" in line]
        assert all(comment in edited for comment in comments), name
    assert subprocess.run(["bash", "-n", str(job / "run.sh")], check=False).returncode == 0
    load_data(job / "config.yaml")  # still parses


@pytest.mark.parametrize("response", RESPONSES, ids=lambda path: path.stem)
def test_other_responses_are_tuned_to_the_bar(
    job: Path, monkeypatch: pytest.MonkeyPatch, response: Path
) -> None:
    """The issue's bar on the other simulated jobs (examples/simulated-job/responses): 55% of the
    baseline, within 15% of the exhaustive search's best, 10 runs, 3 changes kept, a change that
    ran out of memory reverted, comments kept, every change with its prediction."""
    monkeypatch.setenv("SIMJOB_RESPONSE", str(response))
    originals = {
        name: (job / name).read_text(encoding="utf-8") for name in ("config.yaml", "run.sh")
    }
    result = _tune(job)
    _bar(result, None)
    _ledger_tells_the_changes(result)
    _comments_kept(job, originals)
    for failed in (c for c in result.changes if c.verdict is Verdict3.failed):
        for op in failed.patch.ops:  # reverted: its value is not in the files
            assert str(_in_files(job, failed.patch.target, op.path)) != str(op.value), failed
    _no_memory_growth_right_after_out_of_memory(result)
    # a retried change says why, in the ledger and the JSON
    book = Ledger.load(result.ledger)
    for entry in (e for e in book.entries if "retry" in e):
        assert schema_errors(entry, "ledger.schema.json") == []
    assert schema_errors(json.loads(tune_json(result)), "tune.schema.json") == []
    assert result.final is not None and result.final.step_ms is not None
    best = _exhaustive_best(response)
    assert result.final.step_ms <= 1.15 * best, f"{result.final.step_ms} ms, best {best:.1f} ms"


def test_a_masked_change_is_tried_again_once_the_host_is_ahead(
    job: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Forward prefetch on a host-bound step shows nothing (the device waits for launches
    instead); once a kept change makes launches cheaper it is proposed again, says why, and
    is kept. The trace carries no FSDP ranges here, so advisor cannot see beforehand that the
    host paces the forward pass (with them, host.forward_device_lag_ms bounds the change and it
    waits instead of taking a run)."""
    monkeypatch.setenv("SIMJOB_RESPONSE", str(JOB / "responses" / "slow-loader.yaml"))
    monkeypatch.setenv("SIMJOB_FSDP_RANGES", "0")
    result = _tune(job)
    prefetch = [c for c in result.changes if c.feature == "feature.fsdp-forward-prefetch"]
    first, again = prefetch[0], prefetch[-1]
    assert first.verdict is Verdict3.revert and first.reason == "below-min-effect"
    assert again.retry is not None and again.retry.code.value == "masking-relieved"
    assert again.retry.values["masked_by"] == "bottleneck.host-dispatch"
    assert again.verdict is Verdict3.keep
    book = Ledger.load(result.ledger)
    reverted = next(
        e for e in book.entries if e["event"] == "reverted" and e["feature"] == first.feature
    )
    assert reverted["masked_by"]["bottleneck"] == "bottleneck.host-dispatch"
    proposal = [e for e in book.entries if e["event"] == "proposed" and e.get("retry")]
    assert [e["feature"] for e in proposal] == [first.feature]
    assert "(retry)" in FORMATS["text"](result)
    assert "went to host-dispatch" in json.dumps(json.loads(tune_json(result))["changes"])


def test_an_oom_change_is_reverted_byte_exact_and_memory_is_freed_next(
    job: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 0.4 GiB above the baseline's reservation: the level-2 task queue (0.6 GiB more) dies of
    # out-of-memory in the simulator
    _response(job, monkeypatch, job={"usable_memory_gib": 48})
    original = (job / "run.sh").read_bytes()
    result = _tune(job, max_changes=2)
    failed, then = result.changes[:2]
    assert failed.feature == "feature.task-queue-level2"
    assert failed.verdict is Verdict3.failed and failed.reason == "out-of-memory"
    assert then.feature != failed.feature  # not tried again before memory is freed
    # a change that lowers the memory peak comes first (rules/tune.yaml memory_room)
    assert then.feature == "feature.expandable-segments"
    if not any(c.patch.file == failed.patch.file for c in result.kept):
        assert (job / "run.sh").read_bytes() == original
    book = Ledger.load(result.ledger)
    assert book.status(failed.feature) == "failed"
    record = next(e for e in book.entries if e["event"] == "failed")
    assert record["failure"] == "out-of-memory" and "predicted" in record
    _ledger_tells_the_changes(result)


def test_two_failed_runs_in_a_row_stop_with_every_file_restored(job: Path) -> None:
    for name in ("config.yaml", "run.sh"):
        shutil.copy(job / name, job / f"{name}.orig")
    before = {name: (job / name).read_bytes() for name in ("config.yaml", "run.sh")}
    # any edit makes the job die of out-of-memory
    run = (
        "if cmp -s config.yaml config.yaml.orig && cmp -s run.sh run.sh.orig; then bash run.sh; "
        "else echo 'RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB'; exit 1; fi"
    )
    result = _tune(job, run=run)
    assert result.stopped is Stop.failed_runs and result.runs == 3
    assert [c.verdict for c in result.changes] == [Verdict3.failed, Verdict3.failed]
    assert len({c.feature for c in result.changes}) == 2
    for name, data in before.items():
        assert (job / name).read_bytes() == data, f"{name} not restored byte for byte"
    _ledger_tells_the_changes(result)


def test_a_profile_level_the_advice_needs_is_collected_without_counting(job: Path) -> None:
    config = job / "config.yaml"
    config.write_text(
        config.read_text(encoding="utf-8").replace(
            "profile_level: level1", "profile_level: level0"
        ),
        encoding="utf-8",
    )
    result = _tune(job, max_changes=2)
    verdicts = [c.verdict for c in result.changes]
    assert Verdict3.collect in verdicts
    collected = result.changes[verdicts.index(Verdict3.collect)]
    assert collected.feature == "feature.collect-level1-profile"
    assert collected.predicted["source"] == "none"
    assert load_data(config)["training"]["profile_level"] == "level1"
    assert len([v for v in verdicts if v is not Verdict3.collect]) == 2  # --max-changes 2
    assert result.stopped is Stop.max_changes


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state == "Z"  # killed, waiting to be reaped by init


def test_ctrl_c_reverts_the_change_under_test(job: Path) -> None:
    original = (job / "run.sh").read_bytes()
    # the first changed run presses Ctrl-C on advisor (its parent) and waits in a child
    run = f"if {CHANGED}; then sleep 300 & echo $! > sleep.pid; kill -INT $PPID; wait; fi; bash run.sh"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "advisor",
            "tune",
            "config.yaml",
            "--launch",
            "run.sh",
            "--run",
            run,
            "-f",
            "json",
        ],
        cwd=job,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 130, done.stderr
    payload = json.loads(done.stdout)
    assert payload["stopped"] == "interrupted"
    assert payload["changes"][-1]["verdict"] == "interrupted"
    assert (job / "run.sh").read_bytes() == original
    assert _gone(int((job / "sleep.pid").read_text()))
    events = _events(job / ".advisor" / "ledger.jsonl")
    assert events[-2:] == [
        ("applied", "feature.task-queue-level2"),
        ("reverted", "feature.task-queue-level2"),
    ]
    assert Ledger.load(job / ".advisor" / "ledger.jsonl").entries[-1]["note"] == "interrupted"


def test_a_run_past_the_timeout_is_killed_and_reverted(job: Path) -> None:
    original = (job / "run.sh").read_bytes()
    run = f"if {CHANGED}; then sleep 300 & echo $! > sleep.pid; wait; fi; bash run.sh"
    result = _tune(job, run=run, run_timeout=15)
    assert result.stopped is Stop.timeout
    assert result.changes[-1].verdict is Verdict3.failed and result.changes[-1].reason == "timeout"
    assert (job / "run.sh").read_bytes() == original
    assert _gone(int((job / "sleep.pid").read_text()))
    assert _events(result.ledger)[-1] == ("failed", "feature.task-queue-level2")


def test_dry_run_runs_and_edits_nothing(job: Path) -> None:
    before = {p: p.read_bytes() for p in job.rglob("*") if p.is_file()}
    result = _tune(job, run="touch ran", dry_run=True)
    assert result.stopped is Stop.dry_run and result.runs == 0
    assert not (job / "ran").exists() and not (job / ".advisor").exists()
    assert {p: p.read_bytes() for p in job.rglob("*") if p.is_file()} == before
    text = FORMATS["text"](result)
    assert "touch ran" in text and str(job / "profile") in text


def test_failure_causes_are_read_from_the_log() -> None:
    assert (
        failure_cause("RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB")
        == "out-of-memory"
    )
    assert (
        failure_cause("EI0002: The wait execution of the Notify register times out.")
        == "hccl-timeout"
    )
    assert failure_cause("iteration 3 | lm loss: nan | grad norm: 1.0") == "nan"
    assert failure_cause("Traceback: KeyError") is None


def test_a_failed_run_is_named_and_a_clean_one_is_not(tmp_path: Path) -> None:
    oom = run_job(
        "echo 'NPU out of memory. Tried to allocate 1 GiB'; exit 1",
        tmp_path,
        tmp_path / "a.log",
        0,
        None,
    )
    assert oom.failed and oom.failure == "out-of-memory" and oom.exit_code == 1
    crash = run_job("exit 3", tmp_path, tmp_path / "b.log", 1, None)
    assert crash.failure == "crashed"
    clean = run_job("echo fine", tmp_path, tmp_path / "c.log", 2, None)
    assert not clean.failed and (tmp_path / "c.log").read_text() == "fine\n"


def test_only_the_rank_folders_this_run_wrote_are_read(tmp_path: Path) -> None:
    old = tmp_path / "prof" / "host_1_20260101_ascend_pt"
    (old / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True)
    os.utime(old, ns=(1, 1))
    assert new_profile(tmp_path / "prof", 10, tmp_path / "links") is None
    new = [tmp_path / "prof" / f"host_{i}_20260102_ascend_pt" for i in (2, 3)]
    for folder in new:
        (folder / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True)
    found = new_profile(tmp_path / "prof", 10, tmp_path / "links")
    assert found == tmp_path / "links"
    assert sorted(p.resolve() for p in found.iterdir()) == sorted(p.resolve() for p in new)


def test_compare_failed_marks_the_change_failed_and_it_is_not_proposed_again(
    tmp_path: Path,
) -> None:
    from advisor.engine.loop import History
    from tests.cli_run import run_cli

    ledger = tmp_path / "ledger.jsonl"
    Ledger.load(ledger).append("proposed", "feature.fsdp-backward-prefetch")
    Ledger.load(ledger).append("applied", "feature.fsdp-backward-prefetch")
    oom = tmp_path / "oom.log"
    oom.write_text("RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB\n")
    # a log of a run that died before its first step is recognised without --failed
    ran = run_cli("compare", "--candidate-log", str(oom), "--ledger", str(ledger), "-f", "json")
    assert ran.exit_code == 1, ran.output
    payload = json.loads(ran.stdout)
    assert payload["verdict"] == "failed" and payload["reason"]["code"] == "out-of-memory"
    assert schema_errors(payload, "failed-run.schema.json") == []
    book = Ledger.load(ledger)
    assert book.entries[-1]["event"] == "failed" and book.entries[-1]["failure"] == "out-of-memory"
    assert "feature.fsdp-backward-prefetch" in History.of(book.events()).rejected
    # marked once: a second --failed finds nothing awaiting a verdict
    again = run_cli("compare", "--failed", "--ledger", str(ledger))
    assert again.exit_code == 1 and "not marked" in again.stdout
    assert len(Ledger.load(ledger).entries) == 3
