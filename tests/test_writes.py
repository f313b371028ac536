"""Writes that cannot lose data: concurrent runs, read-only files, a full disk, a torn ledger."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from advisor.core.yamlio import load_data
from advisor.inputs.ledger import Ledger
from advisor.model import InputError

ROOT = Path(__file__).resolve().parents[1]
PROFILE = ROOT / "examples" / "profiles" / "comm-bound"  # a safe config change
CONFIG = ROOT / "examples" / "fsdp2" / "config.yaml"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "advisor", *args], capture_output=True, text=True, check=False
    )


def _job(tmp_path: Path) -> tuple[Path, Path]:
    config = tmp_path / "config.yaml"
    shutil.copy(CONFIG, config)
    launch = tmp_path / "run.sh"
    shutil.copy(CONFIG.parent / "run.sh", launch)
    shutil.copy(CONFIG.parent / "env.sh", tmp_path / "env.sh")
    return config, launch


def test_twenty_concurrent_writes_leave_a_valid_config_and_ledger(tmp_path: Path):
    config, launch = _job(tmp_path)
    args = ("suggest", str(PROFILE), str(config), "--launch", str(launch), "--write")
    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(pool.map(lambda _: _run(*args), range(20)))
    for proc in results:
        assert "Traceback" not in proc.stderr
        assert proc.returncode in (0, 2), proc.stderr
        if proc.returncode == 2:  # lost the race: refused with one line, nothing written
            lines = [line for line in proc.stderr.splitlines() if line.startswith("advisor: error")]
            assert len(lines) == 1, proc.stderr
    assert any("advisor: wrote" in proc.stderr for proc in results)
    # whichever run won, the change was made once: prefetch went 1 -> 2, not further
    assert load_data(config)["parallel"]["num_to_forward_prefetch"] in (2, 3)
    ledger_file = tmp_path / ".advisor" / "ledger.jsonl"
    for line in ledger_file.read_text(encoding="utf-8").splitlines():
        json.loads(line)  # every line whole
    assert Ledger.load(ledger_file).warnings == []
    assert isinstance(load_data(config), dict)
    assert _run("check", str(config)).returncode in (0, 1)  # still a valid config
    assert not list(tmp_path.glob(".*.tmp")), "a temp file was left behind"


def test_a_read_only_file_is_never_overwritten(tmp_path: Path):
    config, launch = _job(tmp_path)
    before = config.read_bytes()
    config.chmod(0o444)
    proc = _run("suggest", str(PROFILE), str(config), "--launch", str(launch), "--write")
    assert proc.returncode == 2
    assert "read-only" in proc.stderr and "Traceback" not in proc.stderr
    assert config.read_bytes() == before
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_torn_last_ledger_line_is_ignored_with_a_warning(tmp_path: Path):
    config, launch = _job(tmp_path)
    ledger = tmp_path / ".advisor" / "ledger.jsonl"
    ledger.parent.mkdir()
    ledger.write_text('{"event": "proposed", "feature": "feature.task-q', encoding="utf-8")
    proc = _run("suggest", str(PROFILE), str(config), "--launch", str(launch))
    assert proc.returncode == 0, proc.stderr
    assert "incomplete last line is ignored" in proc.stderr
    # a broken line in the middle is damage a person must look at
    ledger.write_text('{"event": \n{"event": "proposed", "feature": "x"}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"ledger\.jsonl:1"):
        Ledger.load(ledger)


def test_a_ledger_that_cannot_be_appended_is_one_line(tmp_path: Path):
    folder = tmp_path / "ro"
    folder.mkdir()
    ledger = Ledger.load(folder / "ledger.jsonl")
    (folder / "ledger.jsonl").mkdir()  # a directory where the file should be
    with pytest.raises(InputError, match="not a regular file"):
        ledger.append("proposed", "feature.task-queue-level2")


@pytest.fixture
def small_disk(tmp_path: Path):
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({done.stderr.decode().strip()[:80]})")
    yield mount
    subprocess.run(["umount", str(mount)], check=False)


def test_a_full_disk_leaves_the_original_intact(small_disk: Path, tmp_path: Path):
    from advisor.edit.writer import write_file

    target = small_disk / "config.yaml"
    original = CONFIG.read_text(encoding="utf-8")
    target.write_text(original, encoding="utf-8")
    filler = small_disk / "filler"
    with filler.open("wb", buffering=0) as handle, pytest.raises(OSError):
        while True:
            handle.write(b"\0" * 4096)
    with pytest.raises(InputError, match="cannot write"):
        write_file(target, original + "# more\n" * 20000)
    assert target.read_text(encoding="utf-8") == original
    assert not list(small_disk.glob(".*.tmp"))
    ledger = Ledger.load(small_disk / "ledger.jsonl")
    with pytest.raises(InputError, match="cannot append"):
        ledger.append("proposed", "feature.task-queue-level2", note="x" * 100000)


def test_a_symlinked_config_is_edited_through_the_link(tmp_path: Path):
    config, launch = _job(tmp_path)
    real = tmp_path / "real.yaml"
    config.rename(real)
    config.symlink_to(real.name)
    proc = _run("suggest", str(PROFILE), str(config), "--launch", str(launch), "--write")
    assert proc.returncode == 0, proc.stderr
    assert config.is_symlink()  # the link is kept
    assert load_data(real)["parallel"]["num_to_forward_prefetch"] == 2  # the target is edited


def test_a_hard_linked_config_is_refused(tmp_path: Path):
    config, launch = _job(tmp_path)
    (tmp_path / "other.yaml").hardlink_to(config)
    before = config.read_bytes()
    proc = _run("suggest", str(PROFILE), str(config), "--launch", str(launch), "--write")
    assert proc.returncode == 2 and "hard links" in proc.stderr
    assert config.read_bytes() == before


def _example_job(tmp_path: Path) -> tuple[Path, Path, Path]:
    root = Path(__file__).resolve().parents[1] / "examples"
    shutil.copytree(root / "fsdp2", tmp_path / "fsdp2")
    return (
        root / "profiles" / "comm-bound",
        tmp_path / "fsdp2" / "config.yaml",
        tmp_path / "fsdp2" / "run.sh",
    )


def test_a_dry_run_writes_nothing_not_even_the_ledger(tmp_path: Path):
    from tests.test_bad_input import run

    prof, config, script = _example_job(tmp_path)
    before = config.read_text()
    proc = run("suggest", str(prof), str(config), "--launch", str(script))
    assert proc.returncode == 0, proc.stderr
    assert config.read_text() == before
    assert not (config.parent / ".advisor").exists()


def test_the_ledger_records_a_change_only_once_it_is_written(tmp_path: Path):
    from tests.test_bad_input import run

    prof, config, script = _example_job(tmp_path)
    ledger = config.parent / ".advisor" / "ledger.jsonl"
    config.chmod(0o444)  # --write is refused: the ledger must not claim the change
    refused = run("suggest", str(prof), str(config), "--launch", str(script), "--write")
    assert refused.returncode == 2 and "read-only" in refused.stderr
    assert "Next change" in refused.stdout  # the suggestion itself is still shown
    assert not ledger.exists()
    config.chmod(0o644)
    done = run("suggest", str(prof), str(config), "--launch", str(script), "--write")
    assert done.returncode == 0, done.stderr
    assert "num_to_forward_prefetch: 2" in config.read_text()
    events = [json.loads(line) for line in ledger.read_text().splitlines()]
    assert [e["event"] for e in events] == ["proposed"]
