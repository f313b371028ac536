"""One window, one statistic and one definition of device compute for every per-step fact, on
every real PyTorch trace and torch_npu profile under ../shared/real (skipped when absent).

A rank's per-step time is step.time_ms (the median steady step) times the part's share of the
steady steps' time; device compute is the time a compute kernel runs in the step window (the
step model's Computing), the same in ops.* and attrib.*."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from advisor.app.pipeline import profile_facts
from advisor.model import FactSet

REAL = Path(__file__).resolve().parents[2] / "shared" / "real"
TORCH_NPU = ("ascend-ddp-2rank-text", "ascend-ddp-2rank-db", "ascend-qwen3-pp2-4rank")


def _real_inputs() -> list[Path]:
    if not REAL.is_dir():
        return []
    traces = sorted((REAL / "kineto").glob("*.json.gz")) + sorted(
        (REAL / "kineto-rocm").glob("*.json.gz")
    )
    folders = [REAL / "kineto-legacy" / "resnet50_num_workers_0"] + [REAL / n for n in TORCH_NPU]
    # a CPU-only trace has no device kernels and so no step model: nothing to check there
    return [p for p in traces + folders if p.exists() and not p.name.startswith("cpu_only")]


INPUTS = _real_inputs()
ATTRIB_PARTS = (
    "compute",
    "comm_exposed",
    "memory",
    "idle_host",
    "idle_blocked",
    "idle_dependency",
    "idle_unattributed",
    "preparing_dataloader",
    "preparing_allocator",
    "preparing_sync",
    "preparing_other",
)


@cache
def _facts(path: Path) -> FactSet:
    return profile_facts(path)


def _timed_scopes(facts: FactSet) -> list[str]:
    """The scopes (ranks and the job) whose step time is known."""
    return sorted({f.scope for f in facts.facts if f.id == "step.time_ms"})


def _stepped() -> list[Path]:
    return [p for p in INPUTS if _timed_scopes(_facts(p))]


pytestmark = pytest.mark.skipif(not INPUTS, reason="../shared/real is absent")


def _ranks(facts: FactSet) -> list[str]:
    return [s for s in _timed_scopes(facts) if s != "job"]


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.name)
def test_every_per_step_time_is_the_median_step_split_by_the_shares(path: Path):
    facts = _facts(path)
    scopes = _ranks(facts) or _timed_scopes(facts)
    if not scopes:
        pytest.skip(f"{path.name}: no step time (no step markers or no device kernels)")
    for scope in scopes:
        step = facts.value("step.time_ms", scope)
        # the attribution's step is the step model's step
        assert facts.value("attrib.step_ms", scope) == pytest.approx(step, rel=1e-12)
        # device compute: one definition, one value, in ops.* and attrib.*
        compute = step * facts.value("step.compute_ratio", scope)
        assert facts.value("attrib.compute_ms", scope) == pytest.approx(compute, rel=1e-9)
        assert facts.value("ops.device_compute_ms_per_step", scope) == pytest.approx(
            compute, rel=1e-9
        )
        # the parts add up to the step (idle and preparation whole where the trace cannot
        # split them: the step model's Free and Preparing)
        parts = [facts.value(f"attrib.{p}_ms", scope) for p in ATTRIB_PARTS]
        if facts.get("attrib.idle_host_ms", scope) is None:
            parts += [step * facts.value(f"step.{p}_ratio", scope) for p in ("free", "preparing")]
        assert sum(p for p in parts if p is not None) == pytest.approx(step, rel=1e-9)
        # a per-step time agrees with its ratio fact
        for ms, share in (
            ("host.launch_gap_ms_per_step", "host.dispatch_bound_ratio"),
            ("host.blocking_ms_per_step", "host.blocking_ratio"),
            ("data.loader_ms_per_step", "data.loader_ratio"),
        ):
            if facts.get(ms, scope) is not None and facts.get(share, scope) is not None:
                expected = step * facts.value(share, scope)
                assert facts.value(ms, scope) == pytest.approx(expected, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.name)
def test_the_jobs_compute_figures_come_from_one_rank(path: Path):
    facts = _facts(path)
    if facts.get("attrib.compute_ms") is None:
        pytest.skip(f"{path.name}: no attribution")
    assert facts.value("ops.device_compute_ms_per_step") == facts.value("attrib.compute_ms")


def test_the_uneven_torchrec_steps_agree():
    # steps of 107-141 ms: the mean (121.8 ms) and the median (113.1 ms) used to be reported
    # side by side, and compute 86.2 ms (kernels by launching step) beside 89.5 ms (window)
    facts = _facts(REAL / "kineto" / "trace_diff__test__test.json.gz")
    assert facts.value("step.time_ms") == pytest.approx(113.065)
    assert facts.value("attrib.step_ms") == pytest.approx(113.065)
    compute = 113.065 * facts.value("step.compute_ratio")
    assert facts.value("attrib.compute_ms") == pytest.approx(compute)
    assert facts.value("ops.device_compute_ms_per_step") == pytest.approx(compute)
