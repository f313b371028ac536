"""Clusters read in parallel: a pure per-rank function on a local process pool or a Dask
cluster gives the sequential facts; a bad rank is skipped or named; large clusters in two tiers."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pytest

from advisor.app.executors import choose_executor
from advisor.app.pipeline import profile_facts
from advisor.app.read_ranks import ReadOptions
from advisor.model import FactSet, InputError
from advisor.render.facts import facts_json
from tests.cli_run import run_cli
from tests.synth import PRESETS
from tests.synth.writer import write_cluster, write_pipeline


def _json(facts: FactSet) -> str:
    return facts_json(facts)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Path:
    parent = tmp_path_factory.mktemp("cluster")
    write_cluster(parent, PRESETS["healthy"].with_(steps=3), ranks=6, slow_rank=4)
    return parent


def test_a_process_pool_gives_the_sequential_facts(cluster: Path):
    sequential = profile_facts(cluster, reading=ReadOptions(jobs=1))
    pooled = profile_facts(cluster, reading=ReadOptions(jobs=3))
    assert _json(pooled) == _json(sequential)
    assert sequential.value("ranks.slowest") == 4
    assert sequential.value("profile.ranks") == 6


def test_jobs_below_one_is_refused():
    with pytest.raises(InputError, match="at least 1"):
        choose_executor(0, None, 4)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_scheduler_is_one_line_within_the_timeout(
    cluster: Path, monkeypatch: pytest.MonkeyPatch
):
    pytest.importorskip("distributed", reason="the dask extra is not installed")
    monkeypatch.setenv("ADVISOR_SCHEDULER_TIMEOUT", "2")
    address = f"tcp://127.0.0.1:{_free_port()}"
    # the message names the timeout it waited for (no wall-clock bound: flaky under load)
    result = run_cli("facts", str(cluster), "--scheduler", address)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot reach the Dask scheduler within 2 s" in lines[0]


def test_a_dask_cluster_gives_the_local_facts(cluster: Path):
    distributed = pytest.importorskip("distributed", reason="the dask extra is not installed")
    local = profile_facts(cluster, reading=ReadOptions(jobs=2))
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        silence_logs=50,
    ) as dask_cluster:
        remote = profile_facts(
            cluster, reading=ReadOptions(scheduler=dask_cluster.scheduler_address)
        )
    assert _json(remote) == _json(local)


def _break_rank(cluster: Path, copy_to: Path, index: int) -> Path:
    shutil.copytree(cluster, copy_to)
    rank_dir = sorted(p for p in copy_to.iterdir() if p.is_dir())[index]
    step_trace = rank_dir / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv"
    step_trace.write_text("Step,Computing\n1,not-a-number\n", encoding="utf-8")
    (rank_dir / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").write_text("[{", encoding="utf-8")
    return rank_dir


def test_a_failed_rank_is_named_or_skipped_with_the_coverage(cluster: Path, tmp_path: Path):
    broken = _break_rank(cluster, tmp_path / "job", 2)
    strict = run_cli("facts", str(tmp_path / "job"), "-j", "2")
    assert strict.exit_code == 2
    assert broken.name in strict.stderr and "--skip-bad-files" in strict.stderr
    assert len(strict.stderr.strip().splitlines()) == 1
    facts = profile_facts(tmp_path / "job", skip_bad_files=True, reading=ReadOptions(jobs=2))
    assert facts.value("profile.ranks") == 5
    note = facts.get("profile.ranks").note
    assert f"5 of 6 ranks: 1 could not be read ({broken.name})" in note
    assert any(broken.name in w and "rank directory skipped" in w for w in facts.warnings)
    assert facts.value("ranks.slowest") == 4  # the others still find the slow rank


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    parent = tmp_path_factory.mktemp("pipeline")
    write_pipeline(parent, PRESETS["healthy"].with_(steps=3), stages=2, ranks_per_stage=4)
    return parent


def test_two_tiers_read_every_step_model_and_the_ranks_that_matter_in_full(pipeline: Path):
    full = profile_facts(pipeline, reading=ReadOptions(deep="all", jobs=2))
    tiered = profile_facts(pipeline, reading=ReadOptions(deep="3", jobs=2))
    # the slow-rank, stage and bubble facts use every rank
    for fact_id in ("ranks.count", "pipeline.stages", "pipeline.stage_ranks", "ranks.slowest"):
        assert tiered.value(fact_id) == full.value(fact_id), fact_id
    assert tiered.value("step.time_ms") == pytest.approx(full.value("step.time_ms"))
    # attribution rests on the ranks read in full: present, and the same job (identical ranks)
    assert tiered.value("attrib.step_ms") == pytest.approx(full.value("attrib.step_ms"), rel=0.02)
    assert tiered.value("ops.kernels_per_step") == full.value("ops.kernels_per_step")
    note = tiered.get("profile.ranks").note
    assert "two tiers: the step model of all 8 ranks, the full profile of 4" in note
    deep_scopes = {f.scope for f in tiered.facts if f.id == "ops.kernels_per_step"}
    assert len(deep_scopes - {"job"}) == 4  # two stages x (slowest, fastest)
    # nothing of the operators is missing that a full read of every rank has
    missing_in_full = {m.id for m in full.missing}
    assert not [
        m for m in tiered.missing if m.id.startswith("ops.") and m.id not in missing_in_full
    ]


def test_deep_zero_reads_the_step_models_and_communication_summaries(pipeline: Path):
    full = profile_facts(pipeline, reading=ReadOptions(deep="all", jobs=2))
    scan = profile_facts(pipeline, reading=ReadOptions(deep="0", jobs=2))
    assert scan.value("ranks.count") == full.value("ranks.count") == 8
    assert scan.value("step.time_ms") == pytest.approx(full.value("step.time_ms"))
    assert scan.value("ranks.step_time_spread_ratio") is not None
    # communication.json holds the send/recv that tells the stages apart: as a full read
    assert full.value("pipeline.stages") == 2
    for fact_id in ("pipeline.stages", "pipeline.stage_ranks", "comm.p2p_ratio"):
        assert scan.value(fact_id) == full.value(fact_id), fact_id
    assert scan.value("profile.ranks_in_full") == 0
    note = scan.get("profile.ranks").note
    assert "step models and communication summaries only (--deep 0)" in note
    assert not [f for f in scan.facts if f.id.startswith(("ops.", "attrib."))]
    assert "profile.ranks_in_full" not in {f.id for f in full.facts}
    # what a full read would give is missing for that reason, not for want of a file
    result = run_cli("diagnose", str(pipeline), "--deep", "0", "--format", "json")
    unknown = json.loads(result.stdout)["unknown"]
    hints = {u["how_to_collect"] for u in unknown if u["rule"].startswith("symptom.")}
    assert hints and all("--deep auto or all" in h for h in hints)


def test_deep_zero_without_communication_files_never_says_one_stage(pipeline: Path, tmp_path: Path):
    copy = tmp_path / "job"
    shutil.copytree(pipeline, copy)
    for name in ("communication.json", "communication_matrix.json"):
        for path in copy.rglob(name):
            path.unlink()
    scan = profile_facts(copy, reading=ReadOptions(deep="0", jobs=2))
    assert scan.value("ranks.count") == 8
    # stages rest on send/recv, which step models do not hold: missing, never "one stage"
    stages = [m for m in scan.missing if m.id == "pipeline.stages"]
    assert stages and "--deep 0" in stages[0].reason


@pytest.mark.parametrize("value", ["-1", "some", ""])
def test_a_bad_deep_value_is_one_line(pipeline: Path, value: str):
    result = run_cli("facts", str(pipeline), "--deep", value)
    assert result.exit_code == 2
    assert "--deep: expected all, auto or a number of ranks >= 0" in result.stderr


def test_auto_reads_small_clusters_in_full(pipeline: Path):
    facts = profile_facts(pipeline, reading=ReadOptions(jobs=2))
    assert "two tiers" not in facts.get("profile.ranks").note
    assert len({f.scope for f in facts.facts if f.id == "ops.kernels_per_step"} - {"job"}) == 8


def test_a_single_rank_is_read_in_this_process(tmp_path: Path):
    write_cluster(tmp_path, PRESETS["healthy"].with_(steps=3), ranks=1)
    facts = profile_facts(tmp_path, reading=ReadOptions(jobs=4))
    assert facts.value("profile.ranks") == 1
    assert json.loads(_json(facts))["schema"] == "advisor/facts@1"


def test_a_small_profile_is_read_in_this_process_unless_jobs_are_asked_for():
    from advisor.app.executors import InProcess, LocalPool

    assert isinstance(choose_executor(None, None, 4, size_bytes=1_000_000), InProcess)
    assert isinstance(choose_executor(None, None, 4, size_bytes=10**9), LocalPool)
    assert isinstance(choose_executor(2, None, 4, size_bytes=1_000_000), LocalPool)


def test_deep_zero_on_pytorch_traces_reads_them_in_full_and_says_so(tmp_path: Path):
    from tests.synth.kineto_file import write_kineto

    trace = write_kineto(tmp_path / "rank0.pt.trace.json", steps=4)
    facts = profile_facts(trace, reading=ReadOptions(deep="0"))
    assert "--deep 0 ignored" in facts.get("profile.ranks").note
    assert facts.value("ops.kernels_per_step") is not None


def test_deep_zero_charges_the_pipeline_wait_once_on_the_real_pp2_job():
    """Qwen3 PP2: the receive wait of the slowest stage (send/recv, 9.1% of the step) sits in
    its exposed communication. The cheap tier splits it off as a full read does, so the
    communication bottleneck's cost leaves it to the pipeline bottleneck on every tier."""
    from advisor.app.diagnose import run_diagnose
    from advisor.app.job import JobOptions
    from tests.conftest import REAL

    real = REAL / "ascend-qwen3-pp2-4rank"
    if not real.is_dir():
        pytest.skip(f"{real} is absent: ../shared is not beside the checkout")
    costs = {}
    for deep in ("all", "0"):
        run = run_diagnose(JobOptions(profile=real, reading=ReadOptions(deep=deep, jobs=1)))
        facts = run.facts
        wait = facts.value("step.pipeline_wait_ratio")
        assert wait == pytest.approx(0.0911, abs=1e-3), deep
        assert facts.value("step.comm_exposed_collective_ratio") == pytest.approx(
            facts.value("step.comm_exposed_ratio") - wait
        )
        costs[deep] = {b.id: b.cost_ratio for b in run.diagnosis.bottlenecks}
    assert costs["0"]["bottleneck.communication"] == pytest.approx(
        costs["all"]["bottleneck.communication"]
    )
    assert costs["0"]["bottleneck.pipeline"] == pytest.approx(costs["all"]["bottleneck.pipeline"])
