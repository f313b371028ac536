"""A PyTorch trace whose rows were spilled while decoding and reduced in groups (launch-id
ranges, start-time groups, window groups) reads exactly as the whole-trace reduction reads it.

The group sizes are made tiny here so that traces of a few thousand events take every path:
many spill segments, many launch tables, many groups of each pass."""

from __future__ import annotations

import dataclasses
import json
import random
from array import array
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import pytest

from advisor.inputs.taxonomy import default_taxonomy
from advisor.parsers.bounds import BadValues
from advisor.parsers.kineto import extract as kineto_extract
from advisor.parsers.kineto import grouped as kineto_grouped
from advisor.parsers.kineto import spill as kineto_spill
from advisor.parsers.kineto import start_groups
from advisor.parsers.kineto.columns import Signatures
from advisor.parsers.kineto.reader import read_kineto
from advisor.parsers.profile_data import RankProfile
from advisor.parsers.traces import budget, ordered, workers
from tests.synth.kineto_file import kineto_trace

REAL = Path(__file__).resolve().parents[2] / "shared" / "real"


class Passes:
    def __init__(self) -> None:
        self.grouped = 0
        self.tables = 0
        self.start_groups = 0
        self.window_groups = 0
        self.pieces = 0  # pieces of windows measured a piece at a time


def _tiny_groups(monkeypatch: pytest.MonkeyPatch) -> Passes:
    """Groups of ~60 operations, launch tables of ~80, a spill segment every ~150 rows;
    counts what the reduction did."""
    monkeypatch.setattr(budget, "FLUSH_BYTES", 4096)
    monkeypatch.setattr(budget, "SAMPLE_EVERY", 8)
    monkeypatch.setattr(budget, "GROUP_ROWS", 60)
    monkeypatch.setattr(kineto_grouped, "LAUNCH_ROWS", 80)
    passes = Passes()
    reduce, load = kineto_grouped.reduce_in_groups, kineto_grouped._Tables._load
    cuts, windows = kineto_grouped._cuts, kineto_grouped.window_groups

    def counted_reduce(*args: Any) -> None:
        passes.grouped += 1
        reduce(*args)

    def counted_load(self: Any, bucket: int) -> Any:
        passes.tables += 1
        return load(self, bucket)

    def counted_cuts(parts: Any) -> list[float]:
        found = cuts(parts)
        passes.start_groups += len(found) + 1
        return found

    def counted_windows(*args: Any) -> Any:
        found = windows(*args)
        passes.window_groups += len(found)
        return found

    def counted_pieces(self: Any, *args: Any) -> Any:
        for piece in pieces(self, *args):
            passes.pieces += 1
            yield piece

    pieces = ordered.OverlapReader.pieces
    monkeypatch.setattr(ordered.OverlapReader, "pieces", counted_pieces)
    monkeypatch.setattr(kineto_grouped, "reduce_in_groups", counted_reduce)
    monkeypatch.setattr(kineto_grouped._Tables, "_load", counted_load)
    monkeypatch.setattr(kineto_grouped, "_cuts", counted_cuts)
    monkeypatch.setattr(kineto_grouped, "window_groups", counted_windows)
    return passes


def _write(tmp_path: Path, data: dict[str, Any], name: str = "rank0.pt.trace.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def _busy_trace(**changes: Any) -> dict[str, Any]:
    """Twelve steps of forty kernels launched more slowly than they run, collectives overlapping compute on their own stream,
    kernels written out of time order, launches missing for a few kernels, zero-length
    kernels, work launched before the first step and a last step that launches nothing."""
    data = kineto_trace(steps=12, kernels_per_step=40, kernel_us=20.0, launch_us=30.0)
    events = data["traceEvents"]
    rng = random.Random(7)
    for event in events:
        if event["name"].startswith("ncclDevKernel"):
            event["ts"] -= 900.0  # under the step's last kernels
    kernels = [i for i, e in enumerate(events) if e["cat"] == "kernel"]
    for a, b in zip(kernels[3::17], kernels[11::17], strict=False):
        events[a], events[b] = events[b], events[a]
    for i in rng.sample(kernels, 12):
        events[i]["args"].pop("correlation")  # follows the kernel before it on its stream
    for i in kernels[20::97]:
        events[i]["dur"] = 0.0
    first = min(e["ts"] for e in events)
    early = {"ph": "X", "cat": "kernel", "name": "warmup", "pid": 0, "tid": "stream 7"}
    events.append({**early, "ts": first - 400.0, "dur": 600.0, "args": {"correlation": 0}})
    last = max(e["ts"] + e.get("dur", 0) for e in events)
    step = {"ph": "X", "cat": "user_annotation", "pid": 100, "tid": 100, "args": {}}
    events.append({**step, "name": "ProfilerStep#13", "ts": last + 100.0, "dur": 50.0})
    data.update(changes)
    return data


def _whole_then_tiny(
    path: Path, monkeypatch: pytest.MonkeyPatch, skip_bad: bool = False
) -> tuple[RankProfile, Passes]:
    """The trace read at the default sizes, then the tiny groups switched on."""
    whole = read_kineto(path, default_taxonomy(), skip_bad=skip_bad, split=False)
    return whole, _tiny_groups(monkeypatch)


def _read(path: Path, split: bool = False, skip_bad: bool = False) -> RankProfile:
    return read_kineto(path, default_taxonomy(), skip_bad=skip_bad, split=split)


def _equal(whole: RankProfile, grouped: RankProfile) -> None:
    assert whole.trace is not None and whole.step_rows
    assert any(s.launch_gap_us for s in whole.trace.steps), "no launch gap measured"
    assert whole.kernels is not None and whole.kernels.rows > 0
    assert grouped == whole


def test_a_busy_trace_reads_the_same_in_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path, _busy_trace())
    whole, passes = _whole_then_tiny(path, monkeypatch)
    grouped = _read(path)
    _equal(whole, grouped)
    assert any("13 launched no device work" in w for w in grouped.warnings)
    assert passes.grouped == 1
    assert passes.tables > 5 and passes.start_groups > 5 and passes.window_groups > 3


def test_sparse_correlation_ids_read_the_same_in_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _busy_trace()
    for event in data["traceEvents"]:
        args = event.get("args") or {}
        if isinstance(args.get("correlation"), int):
            args["correlation"] = args["correlation"] * 7919 + 3
    path = _write(tmp_path, data)
    whole, passes = _whole_then_tiny(path, monkeypatch)
    _equal(whole, _read(path))
    assert passes.grouped == 1 and passes.tables > 5


def test_a_stepless_trace_reads_the_same_in_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _busy_trace()
    data["traceEvents"] = [
        e for e in data["traceEvents"] if not e["name"].startswith("ProfilerStep")
    ]
    path = _write(tmp_path, data)
    whole, passes = _whole_then_tiny(path, monkeypatch)
    grouped = _read(path)
    assert grouped.stepless and grouped == whole
    # the one window measured ~60 operations at a time
    assert passes.grouped == 1 and passes.window_groups == 1 and passes.pieces > 5


def test_worker_parts_read_the_same_in_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Byte ranges decoded by workers, each with its own signature numbering, then grouped."""
    path = _write(tmp_path, _busy_trace())
    whole = _read(path)
    monkeypatch.setattr(workers, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(workers.os, "cpu_count", lambda: 4)
    assert _read(path, split=True) == whole  # spilled, read back at once
    passes = _tiny_groups(monkeypatch)
    _equal(whole, _read(path, split=True))
    assert passes.grouped == 1


def test_decoding_writes_its_rows_out_as_they_grow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path, _busy_trace())
    monkeypatch.setattr(budget, "FLUSH_BYTES", 4096)
    trace = json.loads(path.read_text())["traceEvents"]
    small = [trace[i : i + 50] for i in range(0, len(trace), 50)]
    events = kineto_extract.extract(
        small, default_taxonomy(), path, BadValues(), spill=tmp_path / "rows"
    )
    assert not len(events.ops) and not events.launch_keys  # none held in memory
    segments = events.spilled[0].segments
    assert len(segments) > 5
    assert sum(s.ops for s in segments) == sum(
        1 for e in trace if e["cat"] in ("kernel", "gpu_memcpy")
    )
    # a small trace never writes: its rows stay in memory and no file is left
    few = kineto_extract.extract(small[:2], default_taxonomy(), path, spill=tmp_path / "few")
    assert not few.spilled and not (tmp_path / "few").exists()


@pytest.mark.skipif(not REAL.is_dir(), reason="../shared/real is not beside the checkout")
@pytest.mark.parametrize(
    "name",
    [
        "kineto/trace_diff__test__test.json.gz",
        "kineto/nccl_parser_config__nccl_data.json.gz",
        "kineto-legacy/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
        "kineto-rocm/mi300__resnet_act_checkpoint.json.gz",
    ],
)
def test_real_traces_read_the_same_in_groups(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = REAL / name
    whole, passes = _whole_then_tiny(path, monkeypatch, skip_bad=True)
    grouped = _read(path, skip_bad=True)
    # the step phases are measured on a trace held whole only: read in groups, they are absent
    # and say why (these traces all have phase ranges)
    assert whole.trace is not None and whole.trace.phases and whole.trace.phases.steps
    assert grouped.trace is not None and grouped.trace.phases
    assert "read in groups" in grouped.trace.phases.absent and not grouped.trace.phases.steps
    assert _without_phases(grouped) == _without_phases(whole)
    assert passes.grouped == 1 and passes.start_groups > 5


def _without_phases(rank: RankProfile) -> RankProfile:
    assert rank.trace is not None
    return dataclasses.replace(rank, trace=dataclasses.replace(rank.trace, phases=None))


def test_no_room_for_scratch_files_reads_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path, _busy_trace())
    whole, passes = _whole_then_tiny(path, monkeypatch)

    def disk_full(self: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(kineto_spill.SpillWriter, "flush", disk_full)
    assert _read(path) == whole
    assert passes.grouped == 0


def test_a_segment_s_rows_in_a_start_range_are_picked_in_file_order() -> None:
    rng = random.Random(3)
    for _ in range(200):
        starts = array("d", sorted(float(rng.randint(0, 30)) for _ in range(rng.randint(0, 20))))
        if starts and rng.random() < 0.5:  # a late row: the mask path
            starts[rng.randrange(len(starts))] = float(rng.randint(0, 30))
        lo, hi = sorted(float(rng.randint(0, 30)) for _ in range(2))
        keep = kineto_grouped._starting_in(starts, lo, hi)
        picked = (
            list(starts[keep])
            if isinstance(keep, slice)
            else [s for s, k in zip(starts, keep, strict=True) if k]
        )
        assert picked == [s for s in starts if lo <= s < hi]


@pytest.mark.parametrize(
    ("missing_launches", "redo"), [(False, False), (True, False), (True, True)]
)
def test_start_groups_sorted_by_workers_merge_as_one_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, missing_launches: bool, redo: bool
) -> None:
    """Pass 2 in worker processes: steps shared by two runs summed on from the later run's
    rows; a run that needed a stream's last step from the run before it is redone in order."""
    data = _busy_trace()
    if not missing_launches:
        for event in data["traceEvents"]:
            if event["cat"] == "kernel" and "correlation" not in event["args"]:
                event["args"]["correlation"] = 0  # the warm-up kernel's launch
    path = _write(tmp_path, data)
    whole = _read(path)
    monkeypatch.setattr(workers, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(workers.os, "cpu_count", lambda: 4)
    _tiny_groups(monkeypatch)
    calls = {"merge": 0, "resum": 0}
    merge, resum = start_groups.GroupSorter._merge, start_groups.GroupSorter._resum

    def counted(name: str, real: Any) -> Any:
        def call(*args: Any) -> Any:
            calls[name] += 1
            return real(*args)

        return call

    monkeypatch.setattr(start_groups.GroupSorter, "_merge", counted("merge", merge))
    monkeypatch.setattr(start_groups.GroupSorter, "_resum", counted("resum", resum))
    if redo:  # every lookup of a stream's last step as if an earlier run had set it
        lookup = start_groups._Carry.get

        def missed(self: Any, key: int, default: Any = None) -> Any:
            self.missed.add(key)
            return lookup(self, key, default)

        monkeypatch.setattr(start_groups._Carry, "get", missed)
    _equal(whole, _read(path))
    assert calls["merge"] == (0 if redo else 4)
    assert redo or calls["resum"] >= 1


def test_signatures_a_later_run_created_take_the_ids_one_pass_gives_them(tmp_path: Path) -> None:
    sigs = Signatures()
    sigs.id(0, 0, 1, -1, 2)
    sigs.id(3, 1, 1, -1, 2)
    sorter = start_groups.GroupSorter(lambda lo, hi: (None, None), sigs, [], [0], {}, None)  # type: ignore[arg-type]
    renamed_a, renamed_b = (3, 1, 1, -1, 5), (3, 1, 1, -1, 6)
    assert sorter._renumbering(2, [renamed_a]) is None  # the first run's ids are one pass's
    ids = sorter._renumbering(2, [renamed_b, renamed_a])  # the second run met b first
    assert ids is not None and list(ids) == [0, 1, 3, 2]
    piece = tmp_path / "piece"
    rows = ordered.Rows(array("d", [1, 2, 3]), array("d", [2, 3, 4]), array("i", [1, 2, 3]))
    rows.launch_at.extend([0.5, 1.5, 2.5])
    writer = ordered.OrderedWriter(piece)
    writer.append(rows)
    writer.close()
    merged = ordered.OrderedWriter(tmp_path / "merged")
    start_groups._append_piece(merged, piece, writer.runs, ids)
    merged.close()
    with (tmp_path / "merged").open("rb") as handle:
        read = start_groups._read_rows(handle, 3)
    assert list(read.tag) == [1, 3, 2] and list(read.start) == [1, 2, 3]


def test_a_stepless_trace_sorts_its_groups_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One step every run would share: not handed to workers to be summed again."""
    data = _busy_trace()
    data["traceEvents"] = [
        e for e in data["traceEvents"] if not e["name"].startswith("ProfilerStep")
    ]
    path = _write(tmp_path, data)
    whole = _read(path)
    monkeypatch.setattr(workers, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(workers.os, "cpu_count", lambda: 4)
    _tiny_groups(monkeypatch)
    forked: list[str] = []
    in_workers = workers.in_forked_workers

    def counted(label: str, *args: Any) -> Any:
        forked.append(label)
        return in_workers(label, *args)

    monkeypatch.setattr(workers, "in_forked_workers", counted)
    assert _read(path) == whole
    assert "sorting operations" not in forked


def test_a_sorting_worker_that_dies_leaves_the_groups_to_be_sorted_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path, _busy_trace())
    whole = _read(path)
    monkeypatch.setattr(workers, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(workers.os, "cpu_count", lambda: 4)
    _tiny_groups(monkeypatch)
    in_workers = workers.in_forked_workers

    def killed(label: str, *args: Any) -> Any:
        if label == "sorting operations":
            raise BrokenProcessPool("a worker was killed")
        return in_workers(label, *args)

    monkeypatch.setattr(workers, "in_forked_workers", killed)
    _equal(whole, _read(path))
