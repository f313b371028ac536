"""The exposed FSDP all-gathers split by the pass that issued them: FSDP2's FSDP::all_gather
ranges placed in their hooks' pass, paired in order with the device's all-gathers; unknown
whenever the pairing cannot be trusted. End to end, the simulated job's profile carries the
ranges FSDP2 records."""

from __future__ import annotations

import os
import subprocess
import sys
from array import array
from pathlib import Path

import pytest

from advisor.app.pipeline import profile_facts
from advisor.inputs.taxonomy import default_taxonomy
from advisor.parsers.traces.fsdp_passes import NO_FSDP_RANGES, allgather_passes
from advisor.parsers.traces.intervals import Intervals
from advisor.parsers.traces.phases import GC, NEITHER, HostRanges, RangeReader

ROOT = Path(__file__).resolve().parents[1]
JOB = ROOT / "examples" / "simulated-job"


def _reader() -> RangeReader:
    tax = default_taxonomy()
    return RangeReader(tax.phase_ranges, tax.gc_ranges, tax.fsdp_ranges)


def _ranges(*events: tuple[str, float, float]) -> HostRanges:
    reader, out = _reader(), HostRanges()
    for name, start, end in events:
        reader.add(out, name, start, end)
    return out


# forward: layer 0's own all-gather and layer 1's prefetched from layer 0's hook; backward:
# layer 1's own all-gather, then layer 0's
HOST = _ranges(
    ("FSDP::pre_forward (model.layers.0)", 0, 4),
    ("FSDP::all_gather (model.layers.0)", 1, 2),
    ("FSDP::forward_prefetch for model.layers.1", 4, 8),
    ("FSDP::all_gather (model.layers.1)", 5, 6),
    ("FSDP::pre_backward (model.layers.1)", 100, 110),
    ("FSDP::all_gather (model.layers.1)", 101, 102),
    ("FSDP::backward_prefetch for model.layers.0", 103, 106),
    ("FSDP::all_gather (model.layers.0)", 104, 105),
)
# the device runs them in issue order; each shown twice (device lane and HCCL lane)
GATHERS = [(10.0, 30.0), (30.0, 50.0), (120.0, 150.0), (150.0, 170.0)]
DEVICE = (array("d", [s for s, _ in GATHERS * 2]), array("d", [e for _, e in GATHERS * 2]))
# compute hides 10-40 of the forward's all-gathers and 160-170 of the backward's
COMPUTING = Intervals(array("d", [10.0, 160.0]), array("d", [40.0, 200.0]))


def test_fsdp_ranges_are_read_beside_the_phases_and_collections() -> None:
    reader = _reader()
    assert reader.kind("FSDP::all_gather (model.layers.3)") < GC
    assert reader.kind("FSDP::all_gather_copy_out (model.layers.3)") == NEITHER
    assert reader.kind("GC") == GC  # still a collection
    assert reader.kind("Optimizer.step#AdamW.step") >= 0  # still a phase
    assert list(HOST.fsdp_kinds) == [1, 0, 1, 0, 2, 0, 2, 0]  # forward hook, all-gather...


def test_each_pass_has_its_own_exposed_all_gathers() -> None:
    split = allgather_passes([(1, 0.0, 100.0), (2, 100.0, 200.0)], HOST, DEVICE, COMPUTING)
    assert split.absent == ""
    # a pass's first all-gather has no earlier hook to be prefetched from: the forward's
    # second (30-50) is exposed 40-50 past the compute; the backward's second (150-170) 150-160
    assert split.by_step == {
        1: {"forward": 10.0, "backward": 0.0},
        2: {"forward": 0.0, "backward": 10.0},
    }
    # the all-gather stream idles nowhere between a pass's first and last all-gather
    assert split.idle_by_step == {
        1: {"forward": 0.0, "backward": 0.0},
        2: {"forward": 0.0, "backward": 0.0},
    }


def test_no_fsdp_ranges_leave_the_split_unknown() -> None:
    split = allgather_passes([(1, 0.0, 200.0)], HostRanges(), DEVICE, COMPUTING)
    assert split.absent == NO_FSDP_RANGES and split.by_step == {}


def test_an_all_gather_that_is_not_fsdps_leaves_the_split_unknown() -> None:
    extra = (array("d", [*DEVICE[0], 180.0]), array("d", [*DEVICE[1], 190.0]))
    split = allgather_passes([(1, 0.0, 200.0)], HOST, extra, COMPUTING)
    assert "5 all-gathers on the device, 4 FSDP::all_gather ranges" in split.absent


def test_an_all_gather_outside_fsdps_hooks_leaves_the_split_unknown() -> None:
    host = _ranges(
        ("FSDP::pre_forward (model.layers.0)", 0, 4),
        ("FSDP::all_gather (model.layers.0)", 1, 2),
        ("FSDP::all_gather (model.layers.1)", 50, 51),  # a manual unshard(), say
    )
    device = (array("d", [10.0, 60.0]), array("d", [20.0, 70.0]))
    split = allgather_passes([(1, 0.0, 200.0)], host, device, COMPUTING)
    assert "sits in none of FSDP's hooks" in split.absent


@pytest.fixture(scope="module")
def simulated_facts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """Facts of one simulated run with forward prefetch on and backward prefetch off."""
    folder = tmp_path_factory.mktemp("sim")
    env = {**os.environ, "WORLD_SIZE": "8", "TASK_QUEUE_ENABLE": "2"}
    overrides = ["--parallel.num_to_forward_prefetch", "1"]
    overrides += ["--training.profile_save_path", str(folder / "profile")]
    subprocess.run(
        [sys.executable, str(JOB / "train_fsdp2.py"), str(JOB / "config.yaml"), *overrides],
        cwd=JOB,
        env=env,
        check=True,
        capture_output=True,
    )
    facts = profile_facts(folder / "profile")
    return {f.id: f.value for f in facts.facts}


def test_the_simulated_job_records_the_passes_fsdp2_records(
    simulated_facts: dict[str, object],
) -> None:
    forward = simulated_facts["comm.exposed_allgather_forward_ms"]
    backward = simulated_facts["comm.exposed_allgather_backward_ms"]
    by_kind = simulated_facts["attrib.comm_exposed_by_kind_ms"]
    assert isinstance(forward, float) and isinstance(backward, float)
    assert isinstance(by_kind, dict)
    # every all-gather is FSDP's: the two passes' prefetchable ones are part of the all-gathers'
    # exposed time (each pass's first is not prefetchable)
    assert 0.0 < forward + backward <= by_kind["allgather"] + 0.01
    # forward prefetch hides the forward pass's; the backward pass's wait in the open
    assert forward < 0.5 * backward
    # the backward pass's device work runs behind the host's launches
    lag = simulated_facts["host.backward_device_lag_ms"]
    assert isinstance(lag, float) and lag > 1.0


def test_each_pass_lags_the_host_by_what_its_device_work_runs_past_the_last_launch() -> None:
    # window 1: forward launches at 1, 2 (kernels end 3, 4), the backward hook at 100, backward
    # launches at 101, 102 whose kernels end 150 and 180: the forward kept up with the host
    # (2 us behind its last launch), the backward ran 78 us past it
    starts = array("d", [2.0, 3.0, 120.0, 150.0])
    ends = array("d", [3.0, 4.0, 150.0, 180.0])
    launches = array("d", [1.0, 2.0, 101.0, 102.0])
    split = allgather_passes([(1, 0.0, 200.0)], HOST, DEVICE, COMPUTING, (starts, ends, launches))
    assert split.lag_by_step == {1: {"forward": 2.0, "backward": 78.0}}


def test_without_a_backward_hook_the_lags_are_unknown() -> None:
    host = _ranges(
        ("FSDP::pre_forward (model.layers.0)", 0, 4),
        ("FSDP::all_gather (model.layers.0)", 1, 2),
    )
    device = (array("d", [10.0]), array("d", [20.0]))
    kernels = (array("d", [20.0]), array("d", [30.0]), array("d", [5.0]))
    split = allgather_passes([(1, 0.0, 200.0)], host, device, COMPUTING, kernels)
    assert split.absent == "" and split.lag_by_step == {}


def test_a_job_without_all_gathers_has_none_exposed_not_an_unknown_split() -> None:
    split = allgather_passes([(1, 0.0, 200.0)], HostRanges(), None, COMPUTING)
    assert split.absent == ""
    assert split.by_step == {1: {"forward": 0.0, "backward": 0.0}}
    assert split.lag_by_step == {}
