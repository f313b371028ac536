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
