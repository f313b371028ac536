"""The simulated FSDP2 job of examples/simulated-job: it runs from its launch script (the torchrun
stand-in on PATH), writes a profile and a log advisor reads, responds to each setting in the
direction the domain notes give, dies of OOM where its response model says, and is
deterministic for a seed."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_run import run_cli

JOB = Path(__file__).resolve().parents[1] / "examples" / "simulated-job"
sys.path.insert(0, str(JOB))

from simjob.job import Outcome, simulate  # noqa: E402
from simjob.profile import RECORDED_ENV  # noqa: E402
from simjob.response import load_response  # noqa: E402
from simjob.settings import read_settings  # noqa: E402

MODEL = load_response(JOB / "response.yaml")
BASE_ENV = {"WORLD_SIZE": "8", "TRAINING_BACKEND": "mindspeed_fsdp", "TASK_QUEUE_ENABLE": "0"}
STEP_MS = re.compile(r"elapsed time per iteration \(ms\): ([0-9.]+)")


def _outcome(env: dict[str, str] | None = None, /, **keys: object) -> Outcome:
    argv = [str(JOB / "config.yaml"), "--training.max_steps", "5"]
    for key, value in keys.items():
        argv += [f"--{key.replace('__', '.')}", str(value)]
    return simulate(read_settings(argv, {**BASE_ENV, **(env or {})}, JOB), MODEL)


def _step(env: dict[str, str] | None = None, /, **keys: object) -> float:
    step = _outcome(env, **keys).steady_step_ms
    assert step is not None, "the run ran out of memory"
    return step


def _run(folder: Path, seed: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SIMJOB_PYTHON": sys.executable}
    if seed is not None:
        env["SIMJOB_SEED"] = seed
    return subprocess.run(
        ["bash", "run.sh"], cwd=folder, env=env, capture_output=True, text=True, check=False
    )


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """The example run once from its launch script: (job folder, rank folder, log)."""
    folder = tmp_path_factory.mktemp("job") / "simulated-job"
    shutil.copytree(JOB, folder, ignore=shutil.ignore_patterns("profile", "output", "*.log"))
    ran = _run(folder)
    assert ran.returncode == 0, ran.stderr
    log = folder / "train.log"
    log.write_text(ran.stdout, encoding="utf-8")
    ranks = sorted((folder / "profile").glob("*_ascend_pt"))
    assert len(ranks) == 1, "profile_ranks [0]: one rank folder"
    return folder, ranks[0], log


def test_run_script_writes_the_text_export_and_the_log(baseline: tuple[Path, Path, Path]) -> None:
    _, rank, log = baseline
    output = rank / "ASCEND_PROFILER_OUTPUT"
    for name in (
        "trace_view.json",
        "kernel_details.csv",
        "op_statistic.csv",
        "step_trace_time.csv",
        "communication.json",
        "communication_matrix.json",
        "memory_record.csv",
    ):
        assert (output / name).is_file(), name
    assert (rank / "profiler_info_0.json").is_file()
    steps = (output / "step_trace_time.csv").read_text().splitlines()[1:]
    assert [line.split(",")[0] for line in steps] == ["5", "6", "7", "8"]  # profile steps [4, 8)
    lines = [line for line in log.read_text().splitlines() if "iteration" in line]
    assert len(lines) == 10 and all("tokens/s:" in line and "lm loss:" in line for line in lines)


def test_metadata_records_torch_npus_fixed_list_not_the_launch_environment(
    baseline: tuple[Path, Path, Path],
) -> None:
    _, rank, _ = baseline
    meta = json.loads((rank / "profiler_metadata.json").read_text())
    assert tuple(meta["ENV_VARIABLES"]) == RECORDED_ENV
    assert "TASK_QUEUE_ENABLE" not in meta["ENV_VARIABLES"]  # run.sh exports it: not recorded
    assert meta["distributed_args"]["world_size"] == 8


def test_advisor_reads_the_profile_without_warnings(baseline: tuple[Path, Path, Path]) -> None:
    _, rank, log = baseline
    ran = run_cli("facts", str(rank.parent), "--log", str(log), "--format", "json")
    assert ran.exit_code == 0, ran.output
    facts = json.loads(ran.stdout)
    assert facts["warnings"] == []
    values = {f["id"]: f["value"] for f in facts["facts"] if f["scope"] == "job"}
    # the profile's steady step and the log's agree (the log's includes no profiler overhead)
    assert values["step.time_ms"] == pytest.approx(values["log.step_time_ms"], rel=0.05)
    assert values["host.dispatch_bound_ratio"] > 0.1  # task queue off: the device waits
    assert values["comm.allgather_share"] > 0.5  # FSDP all-gathers, no prefetch
    assert values["memory.malloc_calls_per_step"] > 5  # no expandable segments


def test_advisor_suggests_the_task_queue_first(baseline: tuple[Path, Path, Path]) -> None:
    folder, rank, log = baseline
    ran = run_cli(
        "suggest",
        str(rank.parent),
        str(folder / "config.yaml"),
        "--launch",
        str(folder / "run.sh"),
        "--log",
        str(log),
        "--no-ledger",
        "--format",
        "json",
    )
    assert ran.exit_code == 0, ran.output
    answer = json.loads(ran.stdout)
    assert answer["status"] == "change"
    assert answer["recommendation"]["feature"] == "feature.task-queue-level2"
    assert answer["warnings"] == []


TUNED_ENV = {"TASK_QUEUE_ENABLE": "2", "PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True"}
TUNED: dict[str, object] = {
    "optimization__use_fused_rmsnorm": "true",
    "optimization__use_fused_rotary_pos_emb": "true",
    "optimization__moe_grouped_gemm": "true",
    "parallel__num_to_forward_prefetch": 1,
    "parallel__num_to_backward_prefetch": 1,
    "training__dataloader_num_workers": 2,
}


def test_each_knob_moves_the_step_the_documented_way() -> None:
    base = _step()
    assert _step({"TASK_QUEUE_ENABLE": "2"}) < _step({"TASK_QUEUE_ENABLE": "1"}) < base
    # every other fix shows once the others are in (a host-bound step hides them)
    tuned = _step(TUNED_ENV, **TUNED)
    assert tuned < 0.5 * base
    for key, off in (
        ("optimization__use_fused_rmsnorm", "false"),
        ("optimization__use_fused_rotary_pos_emb", "false"),
        ("optimization__moe_grouped_gemm", "false"),
        ("parallel__num_to_forward_prefetch", 0),
        ("parallel__num_to_backward_prefetch", 0),
        ("training__dataloader_num_workers", 0),
    ):
        assert _step(TUNED_ENV, **{**TUNED, key: off}) > 1.01 * tuned, key
    assert _step({"TASK_QUEUE_ENABLE": "2"}, **TUNED) > 1.01 * tuned  # allocator calls
    # recompute trades time for memory
    recompute = _outcome(TUNED_ENV, **TUNED, parallel__recompute="true")
    assert recompute.steady_step_ms is not None and recompute.steady_step_ms > tuned
    allocated = _outcome(TUNED_ENV, **TUNED).recipe.memory.allocated_gib
    assert recompute.recipe.memory.allocated_gib < allocated


def test_launch_blocking_voids_the_task_queue() -> None:
    blocking = {"ASCEND_LAUNCH_BLOCKING": "1"}
    assert _step({**blocking, "TASK_QUEUE_ENABLE": "2"}) == _step(blocking)
    assert _step(blocking) > _step()


def test_knobs_interact() -> None:
    fused = {
        "optimization__use_fused_rmsnorm": "true",
        "optimization__use_fused_rotary_pos_emb": "true",
        "optimization__moe_grouped_gemm": "true",
    }
    queue = {"TASK_QUEUE_ENABLE": "2"}
    # fewer launches leave less for the task queue to win
    assert _step(**fused) - _step(queue, **fused) < _step() - _step(queue)
    # loader workers beyond the free cores slow the dispatch threads, unless they are bound
    crowd = {"training__dataloader_num_workers": 12}
    assert _step(**crowd) > _step(training__dataloader_num_workers=4)
    assert _step({"CPU_AFFINITY_CONF": "1"}, **crowd) < _step(**crowd)


def test_more_prefetch_dies_of_oom_unless_segments_expand(tmp_path: Path) -> None:
    prefetch = {"parallel__num_to_forward_prefetch": 1, "parallel__num_to_backward_prefetch": 2}
    assert _outcome(**prefetch).plans is None
    assert _outcome({"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True"}, **prefetch).plans
    folder = tmp_path / "job"
    shutil.copytree(JOB, folder, ignore=shutil.ignore_patterns("profile", "output", "*.log"))
    config = folder / "config.yaml"
    text = config.read_text().replace("num_to_forward_prefetch: 0", "num_to_forward_prefetch: 1")
    config.write_text(text.replace("num_to_backward_prefetch: 0", "num_to_backward_prefetch: 2"))
    ran = _run(folder)
    assert ran.returncode == 1
    assert "RuntimeError: NPU out of memory." in ran.stdout
    assert not (folder / "profile").exists()


def test_deterministic_for_a_seed(baseline: tuple[Path, Path, Path], tmp_path: Path) -> None:
    folder, rank, log = baseline
    again = tmp_path / "again"
    shutil.copytree(folder, again, ignore=shutil.ignore_patterns("profile", "*.log"))
    ran = _run(again)
    assert ran.returncode == 0, ran.stderr
    assert STEP_MS.findall(ran.stdout) == STEP_MS.findall(log.read_text())
    rerun = next((again / "profile").glob("*_ascend_pt")) / "ASCEND_PROFILER_OUTPUT"
    first = rank / "ASCEND_PROFILER_OUTPUT"
    for name in ("step_trace_time.csv", "op_statistic.csv"):
        assert (rerun / name).read_bytes() == (first / name).read_bytes(), name
    # another seed: other noise, the same job
    other = _step({"SIMJOB_SEED": "7"})
    assert other != _step() and other == pytest.approx(_step(), rel=0.05)
