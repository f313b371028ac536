"""PyTorch profiler traces of every generation, CUDA and ROCm, and advice that fits the platform
(../shared/real/kineto*; the tests that need it skip without it)."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from advisor.app.job import JobOptions
from advisor.app.pipeline import profile_facts
from advisor.app.rulesets import load_graph
from advisor.app.suggest import SuggestOptions, run_suggest
from advisor.model import InputError
from advisor.render.diagnosis import diagnosis_json
from tests.conftest import REAL

LEGACY = "kineto-legacy/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"
ROCM = "kineto-rocm/mi300__resnet_act_checkpoint.json.gz"
MODERN = "kineto/trace_diff__control__control.json.gz"
EXAMPLE_CONFIG = Path(__file__).resolve().parents[1] / "examples" / "fsdp2" / "config.yaml"
# PyTorch 1.8-1.10 category names for the current ones
LEGACY_NAMES = {
    "cpu_op": "Operator",
    "user_annotation": "Operator",
    "cuda_runtime": "Runtime",
    "kernel": "Kernel",
    "gpu_memcpy": "Memcpy",
    "gpu_memset": "Memset",
}


def _real(name: str) -> Path:
    path = REAL / name
    if not path.exists():
        pytest.skip(f"{path} is absent: ../shared is not beside the checkout")
    return path


def _values(path: Path) -> dict[tuple[str, str], object]:
    return {(f.id, f.scope): f.value for f in profile_facts(path).facts}


def test_legacy_categories_read_like_current_ones(tmp_path: Path):
    data = json.loads(gzip.decompress(_real(MODERN).read_bytes()))
    for event in data["traceEvents"]:
        if isinstance(event, dict) and event.get("cat") in LEGACY_NAMES:
            event["cat"] = LEGACY_NAMES[event["cat"]]
    legacy = tmp_path / "legacy.pt.trace.json"
    legacy.write_text(json.dumps(data), encoding="utf-8")
    assert _values(legacy) == _values(_real(MODERN))


def test_real_legacy_trace_has_its_steps_and_a_data_bound_diagnosis():
    facts = profile_facts(_real(LEGACY))
    assert facts.value("profile.steps") == 6  # ProfilerStep#5..10
    assert facts.value("profile.device") == "Tesla V100-DGXS-32GB"
    # the host windows are 164-181 ms; num_workers=0 loads every batch inside the step
    assert 160.0 < facts.value("step.time_ms") < 185.0
    assert facts.value("ops.device_compute_ms_per_step") < facts.value("step.time_ms")
    assert facts.value("data.loader_ratio") > 0.3
    assert facts.value("step.memory_ratio") > 0  # Memcpy/Memset are their own class


def test_rocm_trace_is_device_paced_and_names_its_collectives():
    facts = profile_facts(_real(ROCM))
    assert facts.value("profile.platform") == "rocm"
    assert facts.value("profile.device") == "AMD Instinct MI300X"
    # steps 16 and 17: the device needs 18.6-19.0 ms for each (the host ran ahead at 16 ms)
    assert facts.value("step.time_ms") == pytest.approx(18.77, abs=0.1)
    # RCCL kernels are all ncclDevKernel_Generic: the kind comes from "Collective name"
    assert set(facts.value("comm.time_ms_by_op")) <= {"allreduce", "broadcast"}
    assert facts.value("job.data_parallel") == "all-reduce"


def test_events_that_cannot_be_placed_refuse_the_trace_or_are_dropped(tmp_path: Path):
    data = json.loads(gzip.decompress(_real(MODERN).read_bytes()))
    kernels = [e for e in data["traceEvents"] if e.get("cat") == "kernel"]
    kernels[0]["ts"] = None
    kernels[1]["dur"] = float("nan")
    kernels[2]["ts"] = "abc"
    kernels[3]["args"] = ["not", "a", "mapping"]
    kernels[4]["ts"] = 1e308  # finite, but nowhere near the trace
    path = tmp_path / "bad.pt.trace.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(InputError, match=r"event #[0-9]+ .*ts=None"):
        profile_facts(path)
    facts = profile_facts(path, skip_bad_files=True)
    (warning,) = [w for w in facts.warnings if "dropped" in w]
    assert str(path) in warning and "4 row(s) or event(s)" in warning
    assert facts.value("step.time_ms") > 0


PLATFORM_FREE = ("TASK_QUEUE_ENABLE", "ASCEND", "HCCL", "profile_level", "aic_metrics", "NPU")


@pytest.mark.parametrize(
    "name", [LEGACY, ROCM, "kineto/" + "nccl_parser_config__nccl_data.json.gz"]
)
def test_gpu_traces_get_no_ascend_advice(tmp_path: Path, name: str):
    config = tmp_path / "config.yaml"
    # the bundled config's FSDP group is 8 ranks; these jobs ran on 1, 2 and 8
    text = EXAMPLE_CONFIG.read_text(encoding="utf-8")
    config.write_text(text.replace("fsdp_size: 8", "fsdp_size: 1"), encoding="utf-8")
    run = run_suggest(
        JobOptions(profile=_real(name), config=config),
        options=SuggestOptions(use_ledger=False),
    )
    graph = load_graph()
    ascend_only = {r.id for r in graph.ruleset.rules.values() if r.platforms == ("ascend",)}
    chosen = run.suggestion.recommendation
    assert chosen is not None
    assert chosen.feature not in ascend_only
    assert not ascend_only & {r.feature for r in run.suggestion.rejected}
    text = diagnosis_json(run.diagnosis)  # how the unknown facts would be collected, worded
    for word in PLATFORM_FREE:
        assert word not in text, word
    assert all(s.id not in ascend_only for s in run.diagnosis.symptoms)


def test_orders_may_be_shared_by_features_no_job_has_both():
    """Two features share a place in a bottleneck's try order only when no job can have both
    as candidates: their platforms or their config dialects are disjoint."""
    graph = load_graph()
    slots: dict[tuple[str, int], list[tuple[tuple[str, ...], tuple[str, ...]]]] = {}
    for bottleneck in ("bottleneck.host-dispatch", "bottleneck.communication"):
        for order, feature in graph.features_for(bottleneck):
            slots.setdefault((bottleneck, order), []).append(
                (feature.platforms, feature.applies_to)
            )
    shared = [p for p in slots.values() if len(p) > 1]
    assert shared  # e.g. fused-dispatcher (ascend) and gpu-device-max-connections (cuda, rocm)

    def disjoint(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
        return bool(a) and bool(b) and not set(a) & set(b)

    for features in shared:
        for i, (platforms, dialects) in enumerate(features):
            for other_platforms, other_dialects in features[i + 1 :]:
                assert disjoint(platforms, other_platforms) or disjoint(dialects, other_dialects)


def test_a_folder_of_traces_exported_under_other_names_is_found(tmp_path: Path):
    trace = _real("kineto-rocm/mi300__resnet_act_checkpoint.json.gz")
    folder = tmp_path / "prof"
    folder.mkdir()
    shutil.copy(trace, folder / trace.name)
    (folder / "notes.json").write_text('{"run": "baseline"}')  # JSON, but not a trace
    (folder / "SOURCES.txt").write_text("copied\n")
    assert _values(folder) == _values(trace)
