"""A PyTorch (Kineto) trace from GPUs is told about in its own terms: no Ascend file, profiler
key, device or library in what the facts say is missing or in what diagnose reports, on the
real traces of ../shared/real (skipped when absent)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from advisor.app.pipeline import profile_facts
from tests.cli_run import run_cli
from tests.conftest import REAL

TRACES = [
    "kineto/amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "kineto/nccl_parser_config__nccl_data.json.gz",
    "kineto-legacy/resnet50_num_workers_0",
]
# what only an Ascend profile has: its files, profiler levels and keys, device and libraries
ASCEND = re.compile(
    r"\b(NPUs?|npu_module_mem|profiler_info|profiler_metadata|PipeUtilization|"
    r"communication_matrix|memory_record|HCCL\w*|TASK_QUEUE_ENABLE|CANN|Level0|level1|"
    r"aic_metrics|component APP)\b"
)


def _trace(name: str) -> str:
    path = REAL / name
    if not path.exists():
        pytest.skip(f"{path} is absent: ../shared is not beside the checkout")
    return str(path)


@pytest.mark.parametrize("name", TRACES)
def test_what_a_gpu_trace_lacks_is_said_in_its_own_terms(name: str):
    facts = profile_facts(Path(_trace(name)))
    worded = [f"{m.id}: {m.reason}" for m in facts.missing if ASCEND.search(m.reason)]
    assert worded == []


@pytest.mark.parametrize("name", TRACES)
def test_diagnose_on_a_gpu_trace_gives_no_ascend_advice(name: str):
    path = _trace(name)
    for form in ("text", "json", "markdown"):
        ran = run_cli("diagnose", path, "--format", form)
        assert ran.exit_code == 0, ran.stderr
        said = ran.stdout if form != "json" else json.dumps(json.loads(ran.stdout))
        assert not ASCEND.search(said + ran.stderr), (form, ASCEND.search(said + ran.stderr))
        assert "torch_npu" not in said
