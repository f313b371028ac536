"""Large traces are split between worker processes; the result must equal the sequential read."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.inputs.taxonomy import default_taxonomy
from advisor.model import InputError
from advisor.parsers import trace_parallel
from advisor.parsers.trace import read_trace
from tests.synth import PRESETS, write_profile


@pytest.fixture
def trace_file(tmp_path: Path) -> Path:
    written = write_profile(tmp_path, PRESETS["host-bound"].with_(steps=6))
    return written.directory / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"


def test_parallel_equals_sequential(trace_file: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(trace_parallel, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(trace_parallel.os, "cpu_count", lambda: 3)
    jobs = trace_parallel._plan_jobs(trace_file, default_taxonomy())
    assert len(jobs) == 3  # really split
    parallel = trace_parallel.start_trace(trace_file, default_taxonomy())()
    sequential = read_trace(trace_file, default_taxonomy())
    assert parallel.events == sequential.events
    assert parallel.steps == sequential.steps
    assert parallel.flow_category == sequential.flow_category == "HostToDevice"


def test_parallel_truncated_file_reports_like_sequential(
    trace_file: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(trace_parallel, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(trace_parallel.os, "cpu_count", lambda: 2)
    data = trace_file.read_bytes()
    trace_file.write_bytes(data[: int(len(data) * 0.8)])
    with pytest.raises(InputError, match="truncated"):
        trace_parallel.start_trace(trace_file, default_taxonomy())()
