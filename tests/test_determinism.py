"""The same input gives byte-identical JSON, whatever the hash seed, for every command —
including cluster profiles and traces split between worker processes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.app.pipeline import profile_facts
from advisor.parsers.traces import workers

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "examples"
CONFIG = EX / "fsdp2" / "config.yaml"
LAUNCH = EX / "fsdp2" / "run.sh"
COMMANDS = {
    "facts-cluster": ["facts", str(EX / "profiles" / "slow-rank"), "--format", "json"],
    "diagnose": ["diagnose", str(EX / "profiles" / "comm-bound"), "--format", "json"],
    "suggest": [
        "suggest",
        str(EX / "profiles" / "comm-bound"),
        str(CONFIG),
        "--launch",
        str(LAUNCH),
        "--no-ledger",
        "--format",
        "json",
    ],
    "check": ["check", str(CONFIG), "--launch", str(LAUNCH), "--format", "json"],
    "compare": [
        "compare",
        str(EX / "profiles" / "comm-bound"),
        str(EX / "profiles" / "healthy"),
        "--format",
        "json",
    ],
    "estimate": [
        "estimate",
        "--model-config",
        str(EX / "models" / "qwen3-8b.json"),
        "--config",
        str(CONFIG),
        "--format",
        "json",
    ],
    "rules": ["rules", "graph"],
}


def _run(args: list[str], seed: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    return subprocess.run(
        [sys.executable, "-m", "advisor", *args], capture_output=True, text=True, env=env
    )


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_two_runs_with_different_hash_seeds_print_the_same_bytes(name: str):
    first, second = _run(COMMANDS[name], "1"), _run(COMMANDS[name], "4242")
    assert first.returncode == second.returncode and first.returncode in (0, 1), first.stderr
    assert first.stdout == second.stdout
    if "--format" in COMMANDS[name]:
        json.loads(first.stdout)  # and it is JSON


def test_a_trace_split_between_workers_gives_the_facts_of_one_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):

    shutil.copytree(EX / "profiles" / "host-bound", tmp_path / "p")
    one = [f.to_json() for f in profile_facts(tmp_path / "p").facts]
    monkeypatch.setattr(workers, "PARALLEL_MIN_BYTES", 1)
    split = [f.to_json() for f in profile_facts(tmp_path / "p").facts]
    assert split == one
