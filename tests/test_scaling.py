"""Scaling efficiency across device counts (seed 003): throughput per device against the run on
the fewest devices, from two or more logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_run import run_cli

LINE = (
    " [2026-01-01 10:00:0{n}] iteration {n}/ 100 | consumed samples: {n}0 | elapsed time per "
    "iteration (ms): {ms} | {throughput} | lm loss: 5.0 |\n"
)


def _log(path: Path, throughput: str, ms: float = 1000.0, world: int | None = None) -> Path:
    dump = f"  world_size ...................................... {world}\n" if world else ""
    path.write_text(
        dump + "".join(LINE.format(n=n, ms=ms, throughput=throughput) for n in range(1, 7))
    )
    return path


def test_tflops_per_device_from_megatron_logs_with_their_world_size(tmp_path: Path) -> None:
    small = _log(tmp_path / "a.log", "throughput per GPU (TFLOP/s/GPU): 200.0", world=8)
    large = _log(tmp_path / "b.log", "throughput per GPU (TFLOP/s/GPU): 170.0", 1100.0, world=32)
    ran = run_cli("scaling", str(large), str(small), "--format", "json")
    assert ran.exit_code == 0, ran.output
    runs = json.loads(ran.stdout)["runs"]
    assert [r["world"] for r in runs] == [8, 32]
    assert runs[1]["efficiency"] == pytest.approx(0.85)
    assert runs[1]["unit"] == "TFLOP/s per device"


def test_global_tokens_per_second_divided_by_the_devices(tmp_path: Path) -> None:
    # FSDP2 logs tokens/s for all ranks: 8 devices at 8000, 16 at 12000 -> 1000 and 750 each
    small = _log(tmp_path / "a.log", "tokens/s: 8000.0")
    large = _log(tmp_path / "b.log", "tokens/s: 12000.0")
    ran = run_cli("scaling", str(small), str(large), "--world", "8", "--world", "16")
    assert ran.exit_code == 0, ran.output
    assert "75.0%" in ran.stdout and "tokens/s per device" in ran.stdout


def test_runs_that_cannot_be_compared_are_refused_in_one_line(tmp_path: Path) -> None:
    a = _log(tmp_path / "a.log", "tokens/s: 8000.0")
    b = _log(tmp_path / "b.log", "throughput per GPU (TFLOP/s/GPU): 170.0")
    mixed = run_cli("scaling", str(a), str(b), "--world", "8", "--world", "16")
    assert mixed.exit_code == 2 and "share no throughput measure" in mixed.output
    no_world = run_cli("scaling", str(a), str(a))
    assert no_world.exit_code == 2 and "pass --world" in no_world.output
    same = run_cli("scaling", str(a), str(a), "--world", "8", "--world", "8")
    assert same.exit_code == 2 and "same world size" in same.output


def _recorded_comparison(tmp_path: Path, small: Path, large: Path) -> Path:
    """A proposal, then `compare --ledger` of its two runs: the verdict records both."""
    from advisor.app.compare import Side, run_compare
    from advisor.inputs.ledger import Ledger

    ledger_path = tmp_path / ".advisor" / "ledger.jsonl"
    Ledger.load(ledger_path).append("proposed", "feature.widen-data-parallel")
    run_compare(Side(log=small), Side(log=large), ledger_path)
    return ledger_path


def test_the_runs_a_ledger_recorded_at_two_device_counts(tmp_path: Path) -> None:
    from advisor.core.validation import schema_errors

    small = _log(tmp_path / "a.log", "tokens/s: 8000.0", world=8)
    large = _log(tmp_path / "b.log", "tokens/s: 12000.0", 1400.0, world=16)
    ledger = _recorded_comparison(tmp_path, small, large)
    entry = json.loads(ledger.read_text().splitlines()[-1])
    assert entry["runs"]["baseline"]["world"] == 8
    assert entry["runs"]["candidate"]["tokens_per_s"] == 12000.0
    assert schema_errors(entry, "ledger.schema.json") == []
    ran = run_cli("scaling", "--ledger", str(ledger), "--format", "json")
    assert ran.exit_code == 0, ran.output
    runs = json.loads(ran.stdout)["runs"]
    assert [r["world"] for r in runs] == [8, 16]
    assert runs[1]["efficiency"] == pytest.approx(0.75)
    assert "ledger.jsonl:2 candidate" in runs[1]["run"]


def test_a_ledger_run_and_a_log_together(tmp_path: Path) -> None:
    small = _log(tmp_path / "a.log", "tokens/s: 8000.0", world=8)
    same = _log(tmp_path / "c.log", "tokens/s: 8100.0", 900.0, world=8)
    ledger = _recorded_comparison(tmp_path, small, same)  # both at 8: the latest counts
    large = _log(tmp_path / "b.log", "tokens/s: 14400.0", world=16)
    ran = run_cli("scaling", str(large), "--ledger", str(ledger), "--format", "json")
    assert ran.exit_code == 0, ran.output
    runs = json.loads(ran.stdout)["runs"]
    assert [r["world"] for r in runs] == [8, 16]
    assert runs[0]["per_device"] == pytest.approx(8100.0 / 8)


def test_a_ledger_without_runs_at_two_device_counts_is_one_line(tmp_path: Path) -> None:
    small = _log(tmp_path / "a.log", "tokens/s: 8000.0", world=8)
    faster = _log(tmp_path / "c.log", "tokens/s: 8100.0", 900.0, world=8)
    ledger = _recorded_comparison(tmp_path, small, faster)
    ran = run_cli("scaling", "--ledger", str(ledger))
    assert ran.exit_code == 2 and "same world size" in ran.output
    nothing = run_cli("scaling")
    assert nothing.exit_code == 2 and "--ledger" in nothing.output
