"""The trace_view reader decides once per name whether an event asks for anything
(trace_view/names.py); the decision must be exactly what the general path does with the event.
An event the names call "nothing" must leave the accumulator as it was and read none of its
times (a bad time is refused wherever one is read); one they keep must do something."""

from __future__ import annotations

import copy
import json

import pytest

from advisor.inputs.taxonomy import default_taxonomy
from advisor.parsers.trace_view.accumulator import Accumulator
from advisor.parsers.trace_view.events import TraceEvent
from advisor.parsers.trace_view.names import EventNames
from tests.conftest import REAL

# names of every kind the reader keeps or drops, beside those of the real traces
HOST = [
    ("cpu_op", "ProfilerStep#3"),
    ("cpu_op", "ProfilerStep#x"),
    ("cpu_op", "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"),
    ("cpu_op", "dataset_prepare"),
    ("cpu_op", "aten::item"),
    ("cpu_op", "aten::_local_scalar_dense"),
    ("cpu_op", "aten::itemsize_like"),
    ("user_annotation", "## log_loss ##"),
    ("cpu_op", "## forward ##"),
    ("cpu_op", "Optimizer.step#AdamW.step"),
    ("cpu_op", "autograd::engine::evaluate_function: MulBackward0"),
    ("cpu_op", "nn.Module: Linear_0"),
    ("cpu_op", "DistributedDataParallel.forward"),
    ("cpu_op", "GC"),
    ("python_function", "<built-in method collect of module object at 0x7f>"),
    ("cpu_op", "aten::empty"),
    ("cpu_op", "aten::mm"),
    ("python_function", "torch/nn/modules/module.py(1520): _call_impl"),
]
RUNTIME = [
    "AscendCL@aclrtSynchronizeStream",
    "AscendCL@aclrtSynchronizeStreamWithTimeout",
    "AscendCL@aclrtMemcpy",
    "AscendCL@aclrtMemcpyAsync",
    "AscendCL@aclrtMalloc",
    "AscendCL@aclrtFree",
    "AscendCL@aclnnMatmul",
    "AscendCL@aclopCompileAndExecute",
]


def _real_names() -> tuple[set[tuple[str, str]], set[str]]:
    host: set[tuple[str, str]] = set()
    runtime: set[str] = set()
    for path in sorted(REAL.glob("*/*/ASCEND_PROFILER_OUTPUT/trace_view.json")):
        events = json.loads(path.read_text(encoding="utf-8"))
        events = events["traceEvents"] if isinstance(events, dict) else events
        for event in events:
            name, cat = str(event.get("name", "")), event.get("cat")
            if event.get("ph") != "X":
                continue
            if cat:
                host.add((str(cat), name))
            elif name.startswith("AscendCL@"):
                runtime.add(name)
    return host, runtime


def _state(acc: Accumulator) -> object:
    """Everything the general path may change, as plain data."""
    return (
        copy.deepcopy(acc.steps),
        {k: list(v) for k, v in acc.columns().items()},
        copy.deepcopy(acc.blocking),
    )


def _does_something(acc: Accumulator, event: TraceEvent, runtime: bool) -> bool:
    """Whether the general path keeps the event or reads a time of it (its times are not
    times here, so reading one raises)."""
    before = _state(acc)
    try:
        if runtime:
            acc._runtime_call(event, event.name)
        else:
            acc._host_side(event, event.name)
    except ValueError:
        return True
    return _state(acc) != before


@pytest.fixture(scope="module")
def names() -> tuple[set[tuple[str, str]], set[str]]:
    host, runtime = _real_names()
    return host | set(HOST), runtime | set(RUNTIME)


def test_real_traces_give_names_of_every_kind(names: tuple[set[tuple[str, str]], set[str]]):
    if not REAL.is_dir():
        pytest.skip(f"real data not available ({REAL} is absent)")
    host, runtime = names
    assert len(host) > len(HOST) and len(runtime) > len(RUNTIME)


def test_host_names_kept_exactly_when_the_general_path_acts(
    names: tuple[set[tuple[str, str]], set[str]],
):
    taxonomy = default_taxonomy()
    decided = EventNames(taxonomy)
    wrong = []
    for cat, name in sorted(names[0]):
        event = TraceEvent(ph="X", name=name, cat=cat, ts="not a time", dur="not a time")
        acts = _does_something(Accumulator(taxonomy), event, runtime=False)
        if decided.learn_host(cat, name) != acts:
            wrong.append((cat, name, acts))
    assert wrong == []


def test_runtime_names_kept_exactly_when_the_general_path_acts(
    names: tuple[set[tuple[str, str]], set[str]],
):
    taxonomy = default_taxonomy()
    decided = EventNames(taxonomy)
    wrong = []
    for name in sorted(names[1]):
        event = TraceEvent(ph="X", name=name, ts="not a time", dur="not a time")
        acts = _does_something(Accumulator(taxonomy), event, runtime=True)
        if decided.learn_runtime(name) != acts:
            wrong.append((name, acts))
    assert wrong == []


def test_kept_names_are_remembered_and_bounded():
    decided = EventNames(default_taxonomy())
    assert decided.learn_host("cpu_op", "aten::item") is True
    assert decided.learn_host("cpu_op", "aten::empty") is False
    assert decided.host["cpu_op"] == {"aten::item": True, "aten::empty": False}
    decided.host["cpu_op"].update({f"op{i}": False for i in range(1 << 16)})
    decided.learn_host("cpu_op", "aten::mm")
    assert "aten::mm" not in decided.host["cpu_op"]
