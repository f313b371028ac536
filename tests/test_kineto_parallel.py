"""A large plain PyTorch trace decoded by worker processes in byte ranges reads exactly as the
sequential reader reads it; anything unusual goes back to the sequential reader."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from advisor.inputs.taxonomy import default_taxonomy
from advisor.model import InputError
from advisor.parsers.kineto import parallel as kineto_parallel
from advisor.parsers.kineto.reader import read_kineto
from advisor.parsers.traces import workers
from tests.synth.kineto_file import kineto_trace


@pytest.fixture(autouse=True)
def _split_small_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(workers.os, "cpu_count", lambda: 4)


def _trace(tmp_path: Path, mutate: Any = None) -> Path:
    data = kineto_trace(steps=12, kernels_per_step=30)
    events = data.pop("traceEvents")
    for event in events:
        if event["name"].startswith("ncclDevKernel"):
            event["args"].update(
                {
                    "Collective name": "allreduce",
                    "Process Group Name": "1",
                    "Process Group Description": "dp",
                    "Process Group Ranks": "[0, 1]",
                }
            )
    # a few device operations out of time order, as profilers write them
    kernels = [i for i, e in enumerate(events) if e["cat"] == "kernel"]
    for a, b in zip(kernels[5::40], kernels[9::40], strict=False):
        events[a], events[b] = events[b], events[a]
    if mutate:
        mutate(events)
    # keys on both sides of the events, some read from after them
    device = data.pop("deviceProperties")
    text = (
        json.dumps(data)[:-1]
        + ', "traceEvents": [\n'
        + ",\n".join(json.dumps(e) for e in events)
        + '\n], "deviceProperties": '
        + json.dumps(device)
        + ', "traceName": "x]y"}'
    )
    path = tmp_path / "rank0.pt.trace.json"
    path.write_text(text)
    return path


def test_byte_ranges_read_like_one_stream(tmp_path: Path) -> None:
    path = _trace(tmp_path)
    taxonomy = default_taxonomy()
    split = kineto_parallel.extract_in_parallel(path, taxonomy, tmp_path)
    assert split is not None, "the trace was not split"
    assert split[1]["deviceProperties"][0]["name"] == "NVIDIA Test GPU"
    assert split[1]["traceName"] == "x]y"
    parallel = read_kineto(path, taxonomy, split=True)
    sequential = read_kineto(path, taxonomy, split=False)
    assert parallel == sequential
    assert parallel.device == "NVIDIA Test GPU" and parallel.process_groups["1"].ranks == (0, 1)


def test_a_bad_event_is_reported_by_the_sequential_reader(tmp_path: Path) -> None:
    def corrupt(events: list[dict[str, Any]]) -> None:
        kernel = [e for e in events if e["cat"] == "kernel"][-3]
        kernel["ts"] = "soon"

    path = _trace(tmp_path, corrupt)
    taxonomy = default_taxonomy()
    assert kineto_parallel.extract_in_parallel(path, taxonomy, tmp_path) is None
    with pytest.raises(InputError, match=r"event #\d+ .*'soon'"):
        read_kineto(path, taxonomy)
    skipped = read_kineto(path, taxonomy, skip_bad=True)
    assert skipped.dropped == {path.name: 1}


def test_a_gzipped_or_bare_trace_is_read_as_one_stream(tmp_path: Path) -> None:
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(kineto_trace(steps=3)["traceEvents"]))
    assert kineto_parallel.extract_in_parallel(bare, default_taxonomy(), tmp_path) is None


def test_a_cut_inside_an_event_falls_back_to_one_stream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def with_text(events: list[dict[str, Any]]) -> None:
        events[len(events) // 2]["args"]["note"] = "a string holding x}, {y like a boundary"

    path = _trace(tmp_path, with_text)
    text = path.read_bytes()
    inside = text.index(b"x}, {y") + 4  # the '{' in the string: not an event's start
    real_split = kineto_parallel.split_points

    def split_in_the_string(path: Path, begin: int, end: int, parts: int) -> list[int]:
        return [real_split(path, begin, end, parts)[0], inside]

    monkeypatch.setattr(kineto_parallel, "split_points", split_in_the_string)
    taxonomy = default_taxonomy()
    assert kineto_parallel.extract_in_parallel(path, taxonomy, tmp_path) is None
    assert read_kineto(path, taxonomy, split=True) == read_kineto(path, taxonomy, split=False)


def test_string_correlation_ids_go_back_to_one_stream(tmp_path: Path) -> None:
    def as_text(events: list[dict[str, Any]]) -> None:
        for event in events[len(events) // 2 :]:
            correlation = event.get("args", {}).get("correlation")
            if isinstance(correlation, int):
                event["args"]["correlation"] = f"c{correlation}"

    path = _trace(tmp_path, as_text)
    taxonomy = default_taxonomy()
    assert kineto_parallel.extract_in_parallel(path, taxonomy, tmp_path) is None
    sequential = read_kineto(path, taxonomy, split=False)
    assert read_kineto(path, taxonomy, split=True) == sequential
    assert sequential.trace is not None and sequential.trace.flow_category == "correlation"
