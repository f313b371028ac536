"""Every millisecond of the steady step, attributed: the attrib.* parts add up to the step on
generated profiles (against the writer's truth) and on every real profile with a trace."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.app.diagnose import run_diagnose
from advisor.app.job import JobOptions
from advisor.app.pipeline import profile_facts
from advisor.facts.attrib import MEMORY_PART, PARTS
from advisor.model import FactSet
from tests.conftest import REAL
from tests.synth import PRESETS, write_profile
from tests.synth.timeline import NS

REAL_TRACES = [
    "ascend-ddp-2rank-text",
    "kineto/df_index_resolver__df_index_resolver.json.gz",
    "kineto/nccl_parser_config__nccl_data.json.gz",
    "kineto/trace_diff__control__control.json.gz",
    "kineto/trace_diff__test__test.json.gz",
    "kineto/trace_filter__sampled_rank-0.json.gz",
    "kineto/trace_filter__sampled_rank-1.json.gz",
    "kineto/amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "kineto-rocm/mi300__resnet_act_checkpoint.json.gz",
    "kineto-legacy/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
]


def _assert_adds_up(facts: FactSet, scope: str = "job") -> None:
    step = facts.value("attrib.step_ms", scope)
    parts = [facts.value(p, scope) for p in PARTS]
    assert step is not None and all(p is not None for p in parts), facts.missing
    # PyTorch traces separate memcpy/memset from compute; torch_npu's step model does not
    memory = facts.value(MEMORY_PART, scope)
    if facts.value("profile.platform") == "ascend":
        assert memory is None
    else:
        assert memory is not None
        parts.append(memory)
    assert all(p >= 0 for p in parts)
    assert sum(parts) == pytest.approx(step, rel=0.01)


@pytest.mark.parametrize("preset", ["healthy", "host-bound", "slow-dataloader", "allocator-storm"])
def test_parts_add_up_to_the_step_and_match_the_truth(tmp_path: Path, preset: str):
    written = write_profile(tmp_path / "p", PRESETS[preset])
    facts = profile_facts(tmp_path / "p")
    _assert_adds_up(facts)
    steady = written.truths[1:]
    ms = lambda field: sum(getattr(t, field) for t in steady) / len(steady) / NS / 1000.0  # noqa: E731
    assert facts.value("attrib.compute_ms") == pytest.approx(ms("computing"), rel=1e-3)
    assert facts.value("attrib.comm_exposed_ms") == pytest.approx(ms("exposed"), rel=1e-3)
    assert facts.value("attrib.idle_host_ms") == pytest.approx(ms("launch_gap"), rel=1e-3, abs=1e-6)
    loader = PRESETS[preset].dataloader_us / 1000.0
    assert facts.value("attrib.preparing_dataloader_ms") == pytest.approx(loader, rel=1e-3)
    # the rest of the preparation: host work before the first launch, and the launch itself
    other = PRESETS[preset].prep_other_us / 1000.0
    rest = sum(
        facts.value(f"attrib.preparing_{part}_ms") for part in ("allocator", "sync", "other")
    )
    assert rest == pytest.approx(other + PRESETS[preset].launch_us / 1000.0, rel=0.05, abs=0.01)
    if PRESETS[preset].prep_other_us > 0:
        # the writer records each allocator call for 1 us, all before the first launch
        calls = PRESETS[preset].malloc_calls_per_step
        assert facts.value("attrib.preparing_allocator_ms") == pytest.approx(calls / 1000.0)


def test_an_allocator_storm_is_not_blamed_on_the_data_pipeline(tmp_path: Path):
    write_profile(tmp_path / "p", PRESETS["allocator-storm"])
    run = run_diagnose(JobOptions(profile=tmp_path / "p"))
    ids = {b.id for b in run.diagnosis.bottlenecks}
    fired = {s.id for s in run.diagnosis.symptoms}
    assert "bottleneck.data-pipeline" not in ids
    assert "symptom.host-preparation-high" in fired
    assert "symptom.preparing-high" not in fired


def test_a_slow_dataloader_is(tmp_path: Path):
    write_profile(tmp_path / "p", PRESETS["slow-dataloader"])
    run = run_diagnose(JobOptions(profile=tmp_path / "p"))
    assert run.diagnosis.main is not None and run.diagnosis.main.id == "bottleneck.data-pipeline"


def test_exposed_communication_by_kind(tmp_path: Path):
    write_profile(tmp_path / "p", PRESETS["comm-bound"])
    by_kind = profile_facts(tmp_path / "p").value("attrib.comm_exposed_by_kind_ms")
    # the forward waits for an all-gather after the last kernel; the reduce-scatter hides
    assert by_kind["allgather"] == pytest.approx(2.4, rel=1e-3)
    assert by_kind["reducescatter"] == pytest.approx(0.0, abs=1e-6)


def test_without_a_trace_the_splits_are_missing_not_guessed(tmp_path: Path):
    write_profile(tmp_path / "p", PRESETS["healthy"])
    next((tmp_path / "p").rglob("trace_view.json")).unlink()
    facts = profile_facts(tmp_path / "p")
    assert facts.value("attrib.compute_ms") is not None
    missing = {m.id: m.reason for m in facts.missing}
    for part in ("attrib.idle_host_ms", "attrib.preparing_dataloader_ms"):
        assert part in missing and "trace_view.json" in missing[part]


@pytest.mark.parametrize("name", REAL_TRACES)
def test_parts_add_up_on_real_profiles(name: str):
    path = REAL / name
    if not path.exists():
        pytest.skip(f"{path} is absent: ../shared is not beside the checkout")
    facts = profile_facts(path)
    _assert_adds_up(facts)
    for scope in {f.scope for f in facts.facts if f.id == "attrib.step_ms"}:
        _assert_adds_up(facts, scope)


def test_real_ddp_exposed_time_is_gradient_allreduce():
    path = REAL / "ascend-ddp-2rank-text"
    if not path.exists():
        pytest.skip(f"{path} is absent: ../shared is not beside the checkout")
    facts = profile_facts(path)
    by_kind = facts.value("attrib.comm_exposed_by_kind_ms")
    assert set(by_kind) == {"allreduce"}
    assert by_kind["allreduce"] == pytest.approx(facts.value("attrib.comm_exposed_ms"), rel=0.02)
