"""The launches and kernels the extractor appends without its general path (a shape seen
before: name, category, process and thread) fill the columns exactly as the general path does,
odd values of the same shapes included."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import msgspec
import pytest

from advisor.inputs.taxonomy import default_taxonomy
from advisor.parsers.bounds import BadValues
from advisor.parsers.kineto.decoded import KinetoEvents
from advisor.parsers.kineto.events import Extractor
from advisor.parsers.kineto.extract import extract
from advisor.parsers.kineto.stream import KinetoEvent
from tests.synth.kineto_file import kineto_trace


def _odd_events(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Copies of the trace's launches and kernels with values the general path must judge."""
    launch = next(e for e in events if e["cat"] == "cuda_runtime")
    kernel = next(e for e in events if e["cat"] == "kernel")
    odd = []
    for base in (launch, kernel):
        for change in (
            {"ts": int(base["ts"])},  # an integer time
            {"dur": 3},  # an integer duration
            {"dur": -1.0},  # dropped
            {"ts": base["ts"] + 200e9},  # a day away: dropped
            {"args": {"correlation": "77"}},  # a correlation id as text
            {"args": {"correlation": -5}},
            {"args": {"correlation": 1 << 63}},
            {"args": {}},  # no correlation
            {"name": 1},
            {"name": True},
            {"cat": ["kernel"]},
            {"pid": [0]},  # unhashable
            {"ph": "i"},
        ):
            event = copy.deepcopy(base)
            event.update(change)
            odd.append(event)
    return odd


def _events(real: bool) -> list[Any]:
    data = kineto_trace(steps=6, kernels_per_step=12, comm_us=50.0)
    events: list[dict[str, Any]] = data["traceEvents"]
    memcpy = {
        "ph": "X",
        "cat": "gpu_memcpy",
        "name": "Memcpy DtoH (Device -> Pageable)",
        "pid": 0,
        "tid": "stream 7",
        "dur": 2.0,
    }
    # blocking copies repeat too: each must still be recorded as one
    copies = [
        {**memcpy, "ts": events[-1]["ts"] + i, "args": {"correlation": 9000 + i, "bytes": 4}}
        for i in range(3)
    ]
    sample = {
        "ph": "i",
        "cat": "cpu_instant_event",
        "name": "[memory]",
        "pid": 0,
        "tid": 0,
        "ts": events[-1]["ts"],
        "args": {"Device Type": 1, "Total Allocated": 1024, "Total Reserved": 2048},
    }
    mixed = [*events, *_odd_events(events), *copies, sample, *events[:40]]
    decoded = msgspec.json.decode(msgspec.json.encode(mixed), type=list[Any])
    return [msgspec.convert(e, KinetoEvent, from_attributes=False) if real else e for e in decoded]


def _columns(out: KinetoEvents) -> dict[str, Any]:
    ops = out.ops
    return {
        "ops": (list(ops.start), list(ops.end), list(ops.signature), list(ops.correlation)),
        "signatures": (list(ops.signatures.name), list(ops.signatures.stream)),
        "launches": (list(out.launch_keys), list(out.launch_ts)),
        "strings": out.strings.values,
        "events": (out.events, out.dropped),
        "odd": out.odd_correlations,
        "copies": out.blocking.pageable,
        "collectives": out.launch_collectives,
        "memory": (list(out.memory.ts), list(out.memory.allocated), list(out.memory.reserved)),
    }


def _read(monkeypatch: pytest.MonkeyPatch, plain: bool) -> tuple[dict[str, Any], int]:
    general_calls = 0
    general = Extractor._event

    def counted(self: Extractor, event: Any, center: float, index: int) -> int:
        nonlocal general_calls
        general_calls += 1
        return general(self, event, center, index)

    with monkeypatch.context() as patch:
        patch.setattr(Extractor, "_event", counted)
        if not plain:
            patch.setattr(Extractor, "_plain", lambda self, event, row: None)
        events = _events(real=True)
        blocks = [events[i : i + 50] for i in range(0, len(events), 50)]
        out = extract(blocks, default_taxonomy(), Path("t.json"), BadValues(skip=True))
    return _columns(out), general_calls


def test_plain_shapes_fill_the_columns_as_the_general_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fast, fast_calls = _read(monkeypatch, plain=True)
    slow, slow_calls = _read(monkeypatch, plain=False)
    assert fast == slow
    assert slow_calls == len(_events(real=True))
    # most events took the plain path, and the odd ones did not
    assert fast_calls < slow_calls / 2
    assert fast["events"][1] > 0  # the dropped events were judged
    assert fast["odd"]  # the text correlation id was numbered apart
    assert len(fast["copies"]) == 3


def test_an_event_the_typed_decoder_refuses_keeps_every_argument() -> None:
    """A block read as plain JSON (an event whose args are not an object...) keeps a copy's
    size and a memory sample's totals, as the typed decoder does."""

    def read(real: bool) -> dict[str, Any]:
        events = _events(real)
        out = extract([events], default_taxonomy(), Path("t.json"), BadValues(skip=True))
        return _columns(out)

    typed = read(True)
    assert typed == read(False)
    assert {size for _, size in typed["copies"].values()} == {4}
    assert typed["memory"][1:] == ([1024.0], [2048.0])
