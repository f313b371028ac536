"""The ledger survives anything that can happen to a file: a torn last line (a killed writer, an
editor, a torn copy), a record appended onto one by an older writer, a folder that is a file, a
FIFO. No whole record is ever lost, and an edit is never applied without being recorded."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from advisor.inputs.ledger import Ledger, torn_path
from advisor.model import InputError
from tests.cli_run import run_cli

ROOT = Path(__file__).resolve().parents[1]
PROFILES = ROOT / "examples" / "profiles"

ENTRY = {"schema": "advisor/ledger@1", "event": "proposed", "feature": "feature.task-queue-level2"}


def _job(tmp_path: Path) -> tuple[Path, Path]:
    for name in ("config.yaml", "run.sh", "env.sh"):
        shutil.copy(ROOT / "examples" / "fsdp2" / name, tmp_path / name)
    return tmp_path / "config.yaml", tmp_path / "run.sh"


def _torn_ledger(folder: Path) -> Path:
    ledger = folder / ".advisor" / "ledger.jsonl"
    ledger.parent.mkdir(parents=True)
    ledger.write_text(json.dumps(ENTRY) + '\n{"schema": "advisor/ledger@1", "event": "appl')
    return ledger


def _records(ledger: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in ledger.read_text().splitlines()]


def test_an_append_after_a_torn_tail_starts_a_new_line_and_keeps_the_torn_bytes(tmp_path: Path):
    ledger_file = _torn_ledger(tmp_path)
    ledger = Ledger.load(ledger_file)
    assert [e["event"] for e in ledger.entries] == ["proposed"]
    assert any("incomplete last line" in w for w in ledger.warnings)
    ledger.append("kept", "feature.task-queue-level2")
    # every line is a whole record again: the earlier one and the new one
    assert [r["event"] for r in _records(ledger_file)] == ["proposed", "kept"]
    assert torn_path(ledger_file).read_text() == '{"schema": "advisor/ledger@1", "event": "appl\n'
    assert any("moved to" in w and ".torn" in w for w in ledger.warnings)
    assert Ledger.load(ledger_file).warnings == []


def test_a_record_appended_onto_a_torn_line_is_recovered(tmp_path: Path):
    ledger_file = tmp_path / "ledger.jsonl"
    ledger_file.write_text(
        json.dumps(ENTRY)
        + '\n{"schema": "advisor/le'
        + json.dumps({**ENTRY, "event": "kept"})
        + "\n"
    )
    ledger = Ledger.load(ledger_file)
    assert [e["event"] for e in ledger.entries] == ["proposed", "kept"]
    assert any(":2:" in w and "incomplete entry" in w for w in ledger.warnings)


def test_mark_on_a_torn_ledger_leaves_it_readable(tmp_path: Path):
    ledger_file = _torn_ledger(tmp_path)
    ran = run_cli(
        "ledger", "--ledger", str(ledger_file), "--mark", "feature.task-queue-level2=kept"
    )
    assert ran.exit_code == 0, ran.output
    assert ".torn" in ran.stderr
    again = run_cli("ledger", "--ledger", str(ledger_file))
    assert again.exit_code == 0 and "warning" not in again.stderr, again.output
    assert [r["event"] for r in _records(ledger_file)] == ["proposed", "kept"]


def test_compare_on_a_torn_ledger_records_the_verdict_on_its_own_line(tmp_path: Path):
    ledger_file = _torn_ledger(tmp_path)
    ran = run_cli(
        "compare",
        str(PROFILES / "comm-bound"),
        str(PROFILES / "healthy"),
        "--ledger",
        str(ledger_file),
    )
    assert ran.exit_code in (0, 1, 3), ran.output
    records = _records(ledger_file)  # every line parses
    assert records[0]["event"] == "proposed" and len(records) == 2
    assert Ledger.load(ledger_file).warnings == []


def test_a_file_where_the_ledger_folder_goes_refuses_the_write_before_the_config_changes(
    tmp_path: Path,
):
    config, launch = _job(tmp_path)
    (tmp_path / ".advisor").write_text("not a folder\n")
    before = config.read_bytes()
    ran = run_cli(
        "suggest", str(PROFILES / "comm-bound"), str(config), "--launch", str(launch), "--write"
    )
    assert ran.exit_code == 2, ran.output
    assert ".advisor" in ran.stderr and "not a folder" in ran.stderr
    assert "Traceback" not in ran.output
    assert config.read_bytes() == before  # the edit was not applied unrecorded


def test_a_fifo_as_the_ledger_is_refused_not_waited_on(tmp_path: Path):
    fifo = tmp_path / "ledger.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        Ledger.load(fifo)
    ran = run_cli("ledger", "--ledger", str(fifo))
    assert ran.exit_code == 2 and "not a regular file" in ran.stderr


def test_a_ledger_in_an_unwritable_folder_is_refused_before_writing(tmp_path: Path):
    if os.geteuid() == 0:
        pytest.skip("root writes anywhere: permissions cannot be tested")
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    with pytest.raises(InputError, match="permission denied"):
        Ledger(folder / ".advisor" / "ledger.jsonl", []).check_writable()


def _repo_with_ledger(tmp_path: Path, *jobs: str) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    for job in jobs:
        ledger = repo / job / ".advisor" / "ledger.jsonl"
        ledger.parent.mkdir(parents=True)
        ledger.write_text(json.dumps(ENTRY) + "\n")
    return repo


def test_ledger_at_the_repository_root_finds_the_ledger_of_the_job_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo_with_ledger(tmp_path, "examples/fsdp2")
    monkeypatch.chdir(repo)
    ran = run_cli("ledger")
    assert ran.exit_code == 0, ran.output
    assert "examples/fsdp2/.advisor/ledger.jsonl" in ran.stderr
    assert "feature.task-queue-level2" in ran.stdout


def test_ledger_below_a_job_folder_finds_the_ledger_above(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo_with_ledger(tmp_path, "examples/fsdp2")
    (repo / "examples" / "fsdp2" / "logs").mkdir()
    monkeypatch.chdir(repo / "examples" / "fsdp2" / "logs")
    ran = run_cli("ledger")
    assert ran.exit_code == 0 and "feature.task-queue-level2" in ran.stdout, ran.output


def test_several_ledgers_below_ask_the_user_to_choose(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo_with_ledger(tmp_path, "jobs/a", "jobs/b")
    monkeypatch.chdir(repo)
    ran = run_cli("ledger")
    assert ran.exit_code == 2, ran.output
    assert "jobs/a/.advisor/ledger.jsonl" in ran.stderr and "--ledger" in ran.stderr


def test_settings_in_the_current_folder_are_read_and_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config, _ = _job(tmp_path)
    (tmp_path / ".git").mkdir()
    text = config.read_text().replace("optimization:", "optimization:\n  chunk_loss_size: 1024", 1)
    lines = [
        "  model_id: gpt_oss" if line.strip().startswith("model_id:") else line
        for line in text.splitlines()
    ]
    config.write_text("\n".join(lines) + "\n")
    monkeypatch.chdir(tmp_path)
    before = run_cli("check", "config.yaml", "--format", "json")
    assert "policy." in before.stdout
    rules = {f["rule"] for f in json.loads(before.stdout)["findings"]}
    (tmp_path / ".advisor.yaml").write_text(
        "rules:\n" + "".join(f"  {rule}: {{enabled: false}}\n" for rule in sorted(rules))
    )
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    after = run_cli("check", "../config.yaml", "--format", "json")
    assert json.loads(after.stdout)["findings"] == [], after.output
    assert ".advisor.yaml" in after.stderr
