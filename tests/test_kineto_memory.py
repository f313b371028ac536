"""Memory from a PyTorch trace recorded with profile_memory=True: the device allocator's
`[memory]` instant events give the same memory facts as torch_npu's memory_record.csv, read in
the ProfilerStep windows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from advisor.app.pipeline import profile_facts
from advisor.inputs.taxonomy import default_taxonomy
from advisor.parsers.kineto.reader import read_kineto
from tests.synth.kineto_file import kineto_trace

GIB = 1024**3


def _with_memory(data: dict[str, Any]) -> dict[str, Any]:
    """A resident 4 GiB from before the first step; each step raises 6 GiB (its first one 2
    GiB more) and frees it; the host allocator (Device Type 0) and a CPU event are noise."""
    steps = sorted(
        (e for e in data["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#")),
        key=lambda e: e["ts"],
    )

    def sample(ts: float, allocated: float, device_type: int = 1) -> dict[str, Any]:
        args = {"Device Type": device_type, "Device Id": 0, "Bytes": 512}
        args |= {"Total Allocated": allocated * GIB, "Total Reserved": 12 * GIB}
        return {
            "ph": "i",
            "cat": "cpu_instant_event",
            "s": "t",
            "name": "[memory]",
            "pid": 1,
            "tid": 1,
            "ts": ts,
            "args": args,
        }

    first = steps[0]["ts"]
    events = [sample(first - 500.0, 0.5)]  # loading, before any step
    for i, step in enumerate(steps):
        start, dur = step["ts"], step["dur"]
        rise = 8.0 if i == 0 else 6.0
        events += [
            sample(start + 0.1 * dur, 4.0),
            sample(start + 0.5 * dur, 4.0 + rise),
            sample(start + 0.9 * dur, 4.0),
            sample(start + 0.5 * dur, 50.0, device_type=0),  # the host's allocator
        ]
    data["traceEvents"].extend(events)
    return data


def _write(path: Path) -> Path:
    path.write_text(json.dumps(_with_memory(kineto_trace(steps=4, kernels_per_step=10))))
    return path


@pytest.mark.parametrize("split", [False, True])
def test_memory_events_summarised_per_step(
    tmp_path: Path, split: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read in one pass and by byte-range workers (their parts merged)."""
    from advisor.parsers.traces import workers

    monkeypatch.setattr(workers, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(workers.os, "cpu_count", lambda: 2)
    rank = read_kineto(_write(tmp_path / "rank0.pt.trace.json"), default_taxonomy(), split=split)
    mem = rank.memory
    assert mem is not None and mem.recorded_in == "bytes"
    assert mem.allocated_peak_mb == 12 * 1024  # the warm-up step's; the host's 50 GiB left out
    assert mem.reserved_peak_mb == 12 * 1024
    assert mem.allocated_floor_mb == 4 * 1024  # not the loading's 0.5 GiB
    assert mem.step_rise_mb == 6 * 1024
    assert mem.window_steps == (2, 3, 4)


def test_the_memory_facts_of_a_trace(tmp_path: Path) -> None:
    facts = profile_facts(_write(tmp_path / "rank0.pt.trace.json"))
    assert facts.value("memory.allocated_peak_bytes") == 12 * GIB
    assert facts.value("memory.static_bytes") == 4 * GIB
    assert facts.value("memory.dynamic_bytes") == 6 * GIB
    assert facts.value("memory.fragmentation_ratio") == pytest.approx(0.0)
    assert "MiB" not in (facts.get("memory.allocated_peak_bytes") or ()).note


def test_a_trace_without_memory_events_says_how_to_record_them(tmp_path: Path) -> None:
    path = tmp_path / "rank0.pt.trace.json"
    path.write_text(json.dumps(kineto_trace(steps=3, kernels_per_step=5)))
    facts = profile_facts(path)
    missing = {m.id: m.reason for m in facts.missing}
    assert "profile_memory=True" in missing["memory.allocated_peak_bytes"]


def test_a_real_v100_trace_recorded_with_profile_memory() -> None:
    """df_index_resolver (HTA's test data): 26,770 device [memory] events on a V100 32 GB,
    a device without bf16 (Volta): the fp16 -> bf16 remedy is closed there."""
    real = Path("../shared/real/kineto/df_index_resolver__df_index_resolver.json.gz")
    if not real.is_file():
        pytest.skip("../shared/real is not beside the repository")
    from advisor.app.job import JobOptions, load_job

    facts = load_job(JobOptions(profile=real)).facts
    assert facts.value("profile.device_bf16") is False
    assert facts.value("memory.device_bytes") == 32 * GIB
    assert facts.value("memory.reserved_peak_bytes") == pytest.approx(12190 * 2**20, rel=1e-3)
    assert 0.3 < facts.value("memory.pressure_ratio") < 0.45
    assert "steps 3-6" in (facts.get("memory.static_bytes") or ()).note
