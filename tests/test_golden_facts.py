"""The facts of every real profile under ../shared/real and every bundled example, byte for byte.

A restructuring of the readers or the derivers must leave these unchanged; a change made on
purpose (a defect fixed) regenerates them with ADVISOR_UPDATE_GOLDEN=1 and says which in the
commit. Real profiles are read from ../shared/real (skipped with the reason when it is absent),
with that folder as the working directory so the recorded input paths do not depend on the clone.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.cli_run import run_cli
from tests.conftest import REAL

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden_facts"
EXAMPLES = ROOT / "examples" / "profiles"

# one entry per profile as a user would pass it: a job folder, or one trace file
REAL_INPUTS = [
    "ascend-ddp-2rank-text",
    "ascend-ddp-2rank-db",
    "ascend-qwen3-pp2-4rank",
    "kineto/trace_filter__sampled_rank-0.json.gz",
    "kineto/trace_filter__sampled_rank-1.json.gz",
    "kineto/critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz",
    "kineto/amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "kineto/trace_diff__test__test.json.gz",
    "kineto/trace_diff__control__control.json.gz",
    "kineto/df_index_resolver__df_index_resolver.json.gz",
    "kineto/cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    "kineto/nccl_parser_config__nccl_data.json.gz",
    "kineto-legacy/resnet50_num_workers_0",
    "kineto-rocm/mi300__resnet_act_checkpoint.json.gz",
]
# a CPU-only trace has no device operations to build a step model from: a one-line error
REFUSED = {"kineto/cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"}
EXAMPLE_INPUTS = sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir())


def _golden_name(source: str) -> str:
    return source.replace("/", "__").removesuffix(".gz").removesuffix(".json") + ".out"


def _facts(path: str) -> str:
    ran = run_cli("facts", path, "--format", "json")
    return f"$ advisor facts {path} --format json\nexit {ran.exit_code}\n{ran.stdout}{ran.stderr}"


def _check(name: str, got: str) -> None:
    path = GOLDEN / name
    if os.environ.get("ADVISOR_UPDATE_GOLDEN") == "1":
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(got, encoding="utf-8")
    assert path.is_file(), f"{path} missing: run with ADVISOR_UPDATE_GOLDEN=1 to create it"
    assert got == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("source", REAL_INPUTS)
def test_real_profile_facts_are_unchanged(source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if not (REAL / source).exists():
        pytest.skip(f"real data not available ({REAL / source} is absent)")
    monkeypatch.chdir(REAL)
    got = _facts(source)
    assert ("\nexit 2\n" if source in REFUSED else "\nexit 0\n") in got, got[:2000]
    _check("real__" + _golden_name(source), got)


@pytest.mark.parametrize("example", EXAMPLE_INPUTS)
def test_example_profile_facts_are_unchanged(example: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    got = _facts(f"examples/profiles/{example}")
    assert "\nexit 0\n" in got, got[:2000]
    _check("example__" + _golden_name(example), got)
