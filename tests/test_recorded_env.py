"""Unknown is not unset: a variable the profiler does not record is never a difference between
the profiled run and the launch script (no "stale" verdict that profiling again cannot clear)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from advisor.engine.recorded_env import recorded_environment, recorders
from tests.cli_run import run_cli
from tests.conftest import REAL

ROOT = Path(__file__).resolve().parents[1]
DDP = REAL / "ascend-ddp-2rank-text"


def test_the_table_says_what_torch_npu_records() -> None:
    torch_npu = recorders()["torch_npu"]
    assert "ASCEND_LAUNCH_BLOCKING" in torch_npu.records_env
    assert "TASK_QUEUE_ENABLE" not in torch_npu.records_env
    assert "CPU_AFFINITY_CONF" not in torch_npu.records_env
    assert recorders()["pytorch"].records_env == frozenset()


def test_only_listed_variables_are_recorded_and_empty_means_unset() -> None:
    facts = {
        "profile.framework": "torch_npu",
        "env.ASCEND_LAUNCH_BLOCKING": "",
        "env.PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True",
        "env.TASK_QUEUE_ENABLE": "2",  # not a variable torch_npu records: not trusted as recorded
    }
    recorded = recorded_environment(facts)
    assert recorded.values == {
        "ASCEND_LAUNCH_BLOCKING": "",
        "PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True",
    }
    assert recorded.knows("ASCEND_LAUNCH_BLOCKING")
    assert recorded.unknown(["TASK_QUEUE_ENABLE", "HCCL_ALGO"]) == [
        "TASK_QUEUE_ENABLE",
        "HCCL_ALGO",
    ]
    assert recorded_environment({"profile.framework": "pytorch", "env.X": "1"}).values == {}


@pytest.fixture
def real_ddp() -> Path:
    if not DDP.is_dir():
        pytest.skip(f"real data not available ({DDP} is absent)")
    return DDP


def _launch(tmp_path: Path, exports: str) -> tuple[Path, Path]:
    config = tmp_path / "config.yaml"
    shutil.copy(ROOT / "examples" / "fsdp2" / "config.yaml", config)
    text = (ROOT / "examples" / "fsdp2" / "run.sh").read_text()
    text = text.replace('source "$(dirname "$0")/env.sh"\n', exports)
    text = text.replace("--nproc_per_node 8", "--nproc_per_node 2")
    script = tmp_path / "run.sh"
    script.write_text(text)
    # the real job ran on 2 ranks
    config.write_text(config.read_text().replace("fsdp_size: 8", "fsdp_size: 2"))
    return config, script


def test_real_metadata_and_a_script_exporting_the_task_queue_is_not_stale(
    tmp_path: Path, real_ddp: Path
) -> None:
    meta = json.loads((real_ddp / "rank0_ascend_pt" / "profiler_metadata.json").read_text())
    assert "TASK_QUEUE_ENABLE" not in meta["ENV_VARIABLES"]  # what real torch_npu writes
    config, script = _launch(tmp_path, "export TASK_QUEUE_ENABLE=2\nexport CPU_AFFINITY_CONF=2\n")
    ran = run_cli(
        "suggest",
        str(real_ddp),
        str(config),
        "--launch",
        str(script),
        "--no-ledger",
        "--format",
        "json",
    )
    assert ran.exit_code == 0, ran.output
    out = json.loads(ran.stdout)
    assert out["status"] != "stale", out


def test_a_recorded_difference_is_still_stale(tmp_path: Path, real_ddp: Path) -> None:
    """torch_npu records ASCEND_LAUNCH_BLOCKING ("" in the real file: unset); a script that
    turns it on now differs from the profiled run in a way the profile can tell."""
    meta = json.loads((real_ddp / "rank0_ascend_pt" / "profiler_metadata.json").read_text())
    assert meta["ENV_VARIABLES"]["ASCEND_LAUNCH_BLOCKING"] == ""
    recorded = recorded_environment(
        {
            "profile.framework": "torch_npu",
            **{f"env.{k}": v for k, v in meta["ENV_VARIABLES"].items()},
        }
    )
    assert recorded.knows("ASCEND_LAUNCH_BLOCKING") and not recorded.knows("TASK_QUEUE_ENABLE")


def test_the_host_bound_example_says_what_it_cannot_tell() -> None:
    ran = run_cli(
        "suggest",
        str(ROOT / "examples" / "profiles" / "host-bound"),
        str(ROOT / "examples" / "fsdp2" / "config.yaml"),
        "--launch",
        str(ROOT / "examples" / "fsdp2" / "run.sh"),
        "--no-ledger",
    )
    assert ran.exit_code == 0, ran.output
    assert "stale" not in ran.stdout
    assert "cannot tell whether" in ran.output and "TASK_QUEUE_ENABLE=2" in ran.output
