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


def _x(pid: int, name: str, ts: float) -> str:
    return f'{{"ph": "X", "name": "{name}", "pid": {pid}, "ts": "{ts}", "dur": 1.0}}'


def _named(pid: int, name: str) -> str:
    return f'{{"ph": "M", "name": "process_name", "pid": {pid}, "args": {{"name": "{name}"}}}}'


def test_only_the_device_lane_rows_are_kept():
    # HCCL tasks and CANN nodes are half the complete events of a real trace and no step
    # measure uses them: a process named otherwise keeps no rows, whether its name comes
    # before its events or after them
    from advisor.parsers.trace import _ARRAY_DECODER, _Accumulator

    def batch(*events: str) -> list:
        return _ARRAY_DECODER.decode(("[" + ", ".join(events) + "]").encode())

    acc = _Accumulator(default_taxonomy())
    acc.add(batch(_named(2, "Ascend Hardware"), _named(3, "HCCL"), _x(2, "MatMul", 10.0)))
    acc.add(batch(_x(3, "Notify_Wait", 11.0), _x(4, "Node@launch", 12.0), _x(2, "Add", 13.0)))
    assert list(acc.starts[4]) == [12.0]  # not named yet: kept
    acc.add(batch(_named(4, "CANN"), _x(4, "Node@launch", 14.0)))
    assert list(acc.starts[2]) == [10.0, 13.0]
    assert len(acc.starts[3]) == len(acc.starts[4]) == 0
    assert len(acc.ends[3]) == len(acc.ends[4]) == 0

    # a later part of the file names a process whose rows an earlier part kept
    later = _Accumulator(default_taxonomy())
    later.add(batch(_named(5, "HCCL"), _x(2, "Mul", 20.0), _x(5, "Memcpy", 21.0)))
    early = _Accumulator(default_taxonomy())
    early.add(batch(_x(5, "Memcpy", 1.0), _named(2, "Ascend Hardware"), _x(2, "Sub", 2.0)))
    early.merge(later)
    assert list(early.starts[2]) == [2.0, 20.0]
    assert len(early.starts[5]) == 0
