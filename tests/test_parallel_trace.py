"""Large traces are split between worker processes; the result must equal the sequential read."""

from __future__ import annotations

import dataclasses
import pickle
import re
from pathlib import Path

import pytest

from advisor.inputs.taxonomy import default_taxonomy
from advisor.model import InputError
from advisor.parsers.trace_view import parallel as trace_parallel
from advisor.parsers.trace_view.decode import read_trace
from advisor.parsers.traces import budget, workers
from tests.synth import PRESETS, write_profile


@pytest.fixture
def trace_file(tmp_path: Path) -> Path:
    written = write_profile(tmp_path, PRESETS["host-bound"].with_(steps=6))
    return written.directory / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"


def test_parallel_equals_sequential(trace_file: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(workers, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(workers.os, "cpu_count", lambda: 3)
    jobs = trace_parallel._plan_jobs(trace_file, default_taxonomy())
    assert len(jobs) == 3 * trace_parallel.PARTS_PER_PROCESS  # really split
    parallel = trace_parallel.start_trace(trace_file, default_taxonomy())()
    sequential = read_trace(trace_file, default_taxonomy())
    assert parallel.events == sequential.events
    assert parallel.steps == sequential.steps
    assert parallel.flow_category == sequential.flow_category == "HostToDevice"


def test_workers_cut_the_first_timestamp_s_prefix_wherever_their_range_starts(
    trace_file: Path, monkeypatch: pytest.MonkeyPatch
):
    """The second half's timestamps have another epoch prefix (the trace crosses a 1e10 us
    boundary): a worker starting there still measures from the file's first timestamp."""
    data = trace_file.read_bytes()
    half = len(data) // 2
    first = re.search(rb'"ts": "([0-9]{6})', data)
    assert first is not None
    prefix = first.group(1)
    later = str(int(prefix) + 1).encode()
    trace_file.write_bytes(
        data[:half] + data[half:].replace(b'"ts": "' + prefix, b'"ts": "' + later)
    )
    monkeypatch.setattr(workers, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(workers.os, "cpu_count", lambda: 2)
    jobs = trace_parallel._plan_jobs(trace_file, default_taxonomy())
    assert len(jobs) == 2 * trace_parallel.PARTS_PER_PROCESS
    assert all(job[5] is not None for job in jobs)
    parallel = trace_parallel.start_trace(trace_file, default_taxonomy())()
    sequential = read_trace(trace_file, default_taxonomy())
    assert parallel.steps == sequential.steps


def test_parallel_phases_equal_sequential(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # each part keeps the operator flows (async_npu) beside the launch flows it pairs: the
    # phases placed by them are the sequential read's
    written = write_profile(tmp_path, PRESETS["host-bound"].with_(steps=6, phase_ranges=True))
    path = written.directory / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    monkeypatch.setattr(workers, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(workers.os, "cpu_count", lambda: 3)
    parallel = trace_parallel.start_trace(path, default_taxonomy())()
    sequential = read_trace(path, default_taxonomy())
    assert parallel.phases is not None and sequential.phases is not None
    assert parallel.phases == sequential.phases
    assert parallel.phases.placement.by_operator > 0 == parallel.phases.placement.by_launch


def test_phases_measured_aside_equal_sequential(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A trace split between workers has its phases measured in a forked process while the
    windows are measured here; they are waited for when first read, and before the trace is
    sent to another process."""
    from advisor.parsers.traces import whole

    written = write_profile(tmp_path, PRESETS["host-bound"].with_(steps=6, phase_ranges=True))
    path = written.directory / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    monkeypatch.setattr(workers, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(workers.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(whole, "ASIDE_MIN_KERNELS", 1)
    parallel = trace_parallel.start_trace(path, default_taxonomy())()
    assert callable(vars(parallel)["_phases"])  # still being measured
    sequential = read_trace(path, default_taxonomy())
    assert not callable(vars(sequential)["_phases"])
    copied = pickle.loads(pickle.dumps(parallel))
    assert not callable(vars(parallel)["_phases"])
    assert parallel.phases is not None and parallel.phases == sequential.phases
    assert copied.phases == sequential.phases
    assert parallel.steps == sequential.steps


def test_parallel_truncated_file_reports_like_sequential(
    trace_file: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(workers, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(workers.os, "cpu_count", lambda: 2)
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
    from advisor.parsers.trace_view.accumulator import Accumulator
    from advisor.parsers.trace_view.events import ARRAY_DECODER

    def batch(*events: str) -> list:
        return ARRAY_DECODER.decode(("[" + ", ".join(events) + "]").encode())

    acc = Accumulator(default_taxonomy())
    acc.add(batch(_named(2, "Ascend Hardware"), _named(3, "HCCL"), _x(2, "MatMul", 10.0)))
    acc.add(batch(_x(3, "Notify_Wait", 11.0), _x(4, "Node@launch", 12.0), _x(2, "Add", 13.0)))
    assert list(acc.starts[4]) == [12.0]  # not named yet: kept
    acc.add(batch(_named(4, "CANN"), _x(4, "Node@launch", 14.0)))
    assert list(acc.starts[2]) == [10.0, 13.0]
    assert len(acc.starts[3]) == len(acc.starts[4]) == 0
    assert len(acc.ends[3]) == len(acc.ends[4]) == 0

    # a later part of the file names a process whose rows an earlier part kept
    later = Accumulator(default_taxonomy())
    later.add(batch(_named(5, "HCCL"), _x(2, "Mul", 20.0), _x(5, "Memcpy", 21.0)))
    early = Accumulator(default_taxonomy())
    early.add(batch(_x(5, "Memcpy", 1.0), _named(2, "Ascend Hardware"), _x(2, "Sub", 2.0)))
    early.merge(later)
    assert list(early.starts[2]) == [2.0, 20.0]
    assert len(early.starts[5]) == 0


def _flow(ph: str, cat: str, key: int | str, ts: float) -> str:
    quoted = f'"{key}"' if isinstance(key, str) else str(key)
    return f'{{"ph": "{ph}", "name": "f", "cat": "{cat}", "id": {quoted}, "pid": 1, "ts": "{ts}"}}'


def test_the_operator_flows_are_kept_once_the_best_category_pairs():
    # HostToDevice is used for the launches whenever one of its flows has both ends; async_npu
    # is still kept and recorded after that: it links each task to the operator that enqueued
    # it, which places the task in a step phase
    from advisor.parsers.trace_view.accumulator import Accumulator
    from advisor.parsers.trace_view.events import ARRAY_DECODER

    def batch(*events: str) -> list:
        return ARRAY_DECODER.decode(("[" + ", ".join(events) + "]").encode())

    acc = Accumulator(default_taxonomy())
    acc.add(batch(_flow("s", "async_npu", 1, 1.0), _flow("s", "HostToDevice", "1", 2.0)))
    assert set(acc.flows) == {"async_npu", "HostToDevice"} and not acc.best_paired
    acc.add(batch(_flow("f", "async_npu", 1, 5.0), _flow("f", "HostToDevice", "1", 5.0)))
    assert acc.best_paired and set(acc.flows) == {"HostToDevice", "async_npu"}
    acc.add(batch(_flow("s", "async_npu", 2, 6.0), _flow("f", "async_npu", 2, 9.0)))
    acc.add(batch(_flow("s", "HostToDevice", "2", 7.0), _flow("f", "HostToDevice", "2", 9.0)))
    assert list(acc.flows["async_npu"].launch_times([5.0, 9.0])[0]) == [1.0, 6.0]
    assert list(acc.flows["HostToDevice"].launch_times([5.0, 9.0])[0]) == [2.0, 7.0]
    # and through a merge of a later part of the file
    later = Accumulator(default_taxonomy())
    later.add(batch(_flow("s", "async_npu", 3, 10.0), _flow("f", "async_npu", 3, 12.0)))
    acc.merge(later)
    assert list(acc.flows["async_npu"].launch_times([12.0])[0]) == [10.0]

    # ends that never match keep both categories: the fallback is what pairs
    lone = Accumulator(default_taxonomy())
    lone.add(batch(_flow("s", "HostToDevice", "7", 1.0), _flow("f", "HostToDevice", "8", 2.0)))
    lone.add(batch(_flow("s", "async_npu", 7, 1.0), _flow("f", "async_npu", 7, 2.0)))
    assert not lone.best_paired and set(lone.flows) == {"async_npu", "HostToDevice"}

    # a later part that found a pair keeps an earlier part's operator flows at the merge
    lone.merge(acc)
    assert lone.best_paired and set(lone.flows) == {"HostToDevice", "async_npu"}
    assert list(lone.flows["async_npu"].launch_times([2.0, 12.0])[0]) == [1.0, 10.0]


def test_without_a_best_pair_the_fallback_category_links_the_kernels(tmp_path: Path):
    written = write_profile(tmp_path, PRESETS["host-bound"].with_(steps=4))
    trace = written.directory / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    baseline = read_trace(trace, default_taxonomy())
    assert baseline.flow_category == "HostToDevice"
    # HostToDevice finishes renamed: no flow of that category has both ends any more
    text = trace.read_text()
    trace.write_text(
        re.sub(
            r'("ph": "f", "name": "HostToDevice\d+", "cat": "HostToDevice", "id": ")', r"\1x", text
        )
    )
    assert trace.read_text() != text
    fallback = read_trace(trace, default_taxonomy())
    assert fallback.flow_category == "async_npu"
    # every kernel still has a launch (async_npu starts at the Python operator, not the runtime
    # call: the host gaps differ, the linking does not)
    assert all(s.launch_gap_us is not None for s in fallback.steps)
    assert [s.idle_unlinked_us for s in fallback.steps] == [
        s.idle_unlinked_us for s in baseline.steps
    ]


def test_workers_write_their_rows_out_as_they_go(trace_file: Path, monkeypatch: pytest.MonkeyPatch):
    # a worker's arrays are written to its spill file after every block once they pass the
    # threshold: the result is the same as one write at the end
    monkeypatch.setattr(workers, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(workers.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(budget, "FLUSH_BYTES", 1)
    monkeypatch.setattr(trace_parallel, "RANGE_BLOCK_BYTES", 16 * 1024)
    parallel = trace_parallel.start_trace(trace_file, default_taxonomy())()
    sequential = read_trace(trace_file, default_taxonomy())
    assert parallel == sequential


def test_rows_written_before_their_process_was_named_are_not_read_back(tmp_path: Path):
    from advisor.parsers.trace_view.accumulator import Accumulator
    from advisor.parsers.trace_view.events import ARRAY_DECODER

    def batch(*events: str) -> list:
        return ARRAY_DECODER.decode(("[" + ", ".join(events) + "]").encode())

    acc = Accumulator(default_taxonomy())
    spill = tmp_path / "part"
    with trace_parallel._SpillWriter(acc, spill) as writer:
        acc.add(batch(_named(2, "Ascend Hardware"), _x(2, "MatMul", 1.0), _x(4, "Node", 2.0)))
        writer.flush()  # pid 4 not named yet: its row is written
        acc.add(batch(_named(4, "CANN"), _x(4, "Node", 3.0), _x(2, "Add", 4.0)))
        writer.flush()
    restored = trace_parallel._restore(acc, spill)
    assert list(restored.starts[2]) == [1.0, 4.0]
    assert list(restored.ends[2]) == [2.0, 5.0]
    assert len(restored.starts[4]) == 0
    assert not spill.exists()


@pytest.mark.parametrize(
    "preset",
    [
        "host-bound",
        "comm-bound",
        "healthy",
        "slow-dataloader",
        "fragmentation",
        "ascend-blocking-sync",
    ],
)
@pytest.mark.parametrize("group_rows", [1, 40, 10_000])
def test_windows_measured_in_groups_equal_the_whole_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, preset: str, group_rows: int
):
    # above GROUP_ROWS kernels the parent measures a group of windows at a time from the
    # spill files: the same steps, to the bit, as reading everything back
    from advisor.parsers.trace_view import grouped as trace_grouped

    written = write_profile(tmp_path, PRESETS[preset].with_(steps=6))
    trace = written.directory / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    monkeypatch.setattr(workers, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(workers.os, "cpu_count", lambda: 3)
    monkeypatch.setattr(budget, "FLUSH_BYTES", 1)
    monkeypatch.setattr(trace_parallel, "RANGE_BLOCK_BYTES", 16 * 1024)
    monkeypatch.setattr(budget, "GROUP_ROWS", group_rows)
    monkeypatch.setattr(budget, "SAMPLE_EVERY", 1)  # many groups of each pass
    used = []
    real = trace_grouped.reduce_in_groups

    def spy(*args: object) -> object:
        used.append(args)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(trace_parallel, "reduce_in_groups", spy)
    window_groups: list[int] = []
    measure = trace_grouped.measure_in_groups

    def counted(groups: list[list[object]], *args: object) -> object:
        window_groups.append(len(groups))
        return measure(groups, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(trace_grouped, "measure_in_groups", counted)
    grouped = trace_parallel.start_trace(trace, default_taxonomy())()
    sequential = read_trace(trace, default_taxonomy())
    if group_rows < 10_000:
        # the kernels held a group at a time: no queue times (a whole trace's need them all)
        assert grouped.queue is None and sequential.queue is not None
        sequential = dataclasses.replace(sequential, queue=None)
    assert grouped == sequential
    assert sequential.steps and any(step.kernel_count for step in sequential.steps)
    assert used if group_rows < 10_000 else not used
    # tiny groups: the windows measured a few at a time (one window a group at group_rows 1)
    assert sum(window_groups) >= (len(sequential.steps) if group_rows == 1 else 2 if used else 0)


@pytest.mark.parametrize("group_rows", [1, 10_000])
def test_one_process_reads_a_large_trace_within_bounds_and_the_same(
    trace_file: Path, monkeypatch: pytest.MonkeyPatch, group_rows: int
):
    # without workers (one core, or a rank among many) a large trace's rows are written out
    # as they grow and reduced as the workers' are: the same steps as reading it whole

    monkeypatch.setattr(workers, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(budget, "FLUSH_BYTES", 1)
    monkeypatch.setattr(trace_parallel, "RANGE_BLOCK_BYTES", 16 * 1024)
    monkeypatch.setattr(budget, "GROUP_ROWS", group_rows)
    bounded = trace_parallel.read_trace_bounded(trace_file, default_taxonomy())
    whole = read_trace(trace_file, default_taxonomy())
    assert bounded == whole
    assert whole.steps and all(step.launch_gap_us is not None for step in whole.steps)


def test_one_process_reports_a_broken_trace_like_the_reader(
    trace_file: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(workers, "PARALLEL_MIN_BYTES", 0)
    data = trace_file.read_bytes()
    trace_file.write_bytes(data[: int(len(data) * 0.7)])
    with pytest.raises(InputError, match="truncated"):
        trace_parallel.read_trace_bounded(trace_file, default_taxonomy())
