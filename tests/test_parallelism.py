"""What kind of job a profile shows (sharded or all-reduce data parallelism, pipeline stages,
expert parallelism), and advice that follows it: no FSDP prefetch for a DDP-style all-reduce,
the pipeline bottleneck for stages that wait on each other. Generated profiles with known truth
first, then the real jobs in ../shared/real/."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from advisor.app.diagnose import run_diagnose
from advisor.app.job import JobOptions
from advisor.app.pipeline import profile_facts
from advisor.app.suggest import SuggestOptions, run_suggest
from advisor.model import Grounds, RejectCode, Status
from tests.conftest import REAL
from tests.synth import PRESETS, write_pipeline, write_profile

CONFIG = "model:\n  model_id: qwen3\nparallel:\n  fsdp_size: {world}\n"


def _suggest(profile: Path, tmp_path: Path, world: int):
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG.format(world=world))
    job = JobOptions(profile=profile, config=config)
    return run_suggest(job, options=SuggestOptions(use_ledger=False)).suggestion


def _real(name: str) -> Path:
    folder = REAL / name
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent: ../shared is not beside the checkout")
    return folder


def test_ddp_style_allreduce_gets_allreduce_advice_not_prefetch(tmp_path: Path):
    write_profile(tmp_path / "prof", PRESETS["ddp-allreduce"])
    facts = profile_facts(tmp_path / "prof")
    assert facts.value("comm.allreduce_share") == pytest.approx(1.0)
    assert facts.value("comm.allgather_share") == 0.0
    assert facts.value("job.data_parallel") == "all-reduce"
    suggestion = _suggest(tmp_path / "prof", tmp_path, 8)
    assert suggestion.recommendation is not None
    assert suggestion.recommendation.feature == "feature.shard-gradient-allreduce"
    reasons = {r.feature: r.code for r in suggestion.rejected}
    assert reasons["feature.fsdp-forward-prefetch"] is RejectCode.not_indicated
    assert reasons["feature.fsdp-backward-prefetch"] is RejectCode.not_indicated


def test_fsdp_gathers_still_get_prefetch(tmp_path: Path):
    write_profile(tmp_path / "prof", PRESETS["comm-bound"])
    facts = profile_facts(tmp_path / "prof")
    assert facts.value("job.data_parallel") == "sharded"
    assert facts.value("comm.allgather_share") == pytest.approx(2400 / 4400, rel=1e-3)
    suggestion = _suggest(tmp_path / "prof", tmp_path, 8)
    assert suggestion.recommendation is not None
    assert suggestion.recommendation.feature == "feature.fsdp-forward-prefetch"


def test_moe_alltoall_is_expert_parallel(tmp_path: Path):
    write_profile(tmp_path / "prof", PRESETS["moe-comm-bound"])
    facts = profile_facts(tmp_path / "prof")
    assert facts.value("job.expert_parallel") is True
    assert facts.value("comm.alltoall_share") == pytest.approx(2400 / 4400, rel=1e-3)


def test_pipeline_stages_are_found_and_their_wait_is_the_pipelines(tmp_path: Path):
    base = PRESETS["healthy"].with_(comm_overlapped_us=0.0)
    written = write_pipeline(tmp_path / "prof", base, stages=2, ranks_per_stage=2, stage_factor=1.7)
    facts = profile_facts(tmp_path / "prof")
    assert facts.value("job.pipeline_parallel") is True
    assert facts.value("pipeline.stages") == 2
    assert facts.value("pipeline.stage_ranks") == [[0, 1], [2, 3]]
    fast, slow = facts.value("pipeline.stage_compute_ms")
    assert slow / fast == pytest.approx(1.7, rel=0.02)
    step_ms = facts.value("step.time_ms")
    assert facts.value("pipeline.stage_imbalance_ratio") == pytest.approx(
        (slow - fast) / step_ms, rel=1e-6
    )
    # the stages differ by design: no rank is slow against the ranks of its own stage
    assert facts.value("ranks.busy_spread_ratio") == pytest.approx(0.0, abs=0.01)
    run = run_diagnose(JobOptions(profile=tmp_path / "prof"))
    assert run.diagnosis.main is not None and run.diagnosis.main.id == "bottleneck.pipeline"
    fired = {s.id for s in run.diagnosis.symptoms}
    assert "symptom.pipeline-stage-imbalance" in fired
    assert "symptom.slow-rank" not in fired
    # ranks of different stages play different roles: the job's shares are the slowest
    # stage's (ranks 2, 3), whose send/recv is the transfers only, not the fast stage's wait
    assert "slowest pipeline stage" in facts.get("comm.p2p_ratio").note
    assert facts.value("comm.p2p_ratio") == pytest.approx(
        statistics.median(facts.value("comm.p2p_ratio", f"rank:{r}") for r in (2, 3))
    )
    assert facts.value("comm.p2p_ratio", "rank:0") > facts.value("comm.p2p_ratio")
    suggestion = _suggest(tmp_path / "prof", tmp_path, len(written))
    assert suggestion.recommendation is not None
    assert suggestion.recommendation.feature == "feature.pipeline-balance-stages"


def test_a_balanced_pipeline_gets_the_schedule_advice(tmp_path: Path):
    base = PRESETS["healthy"].with_(comm_overlapped_us=0.0)
    write_pipeline(tmp_path / "prof", base, stages=2, stage_factor=1.0, p2p_us=2000.0)
    facts = profile_facts(tmp_path / "prof")
    assert facts.value("pipeline.stages") == 1  # equal compute: the stages cannot be told apart
    suggestion = _suggest(tmp_path / "prof", tmp_path, 4)
    assert suggestion.recommendation is not None
    assert suggestion.recommendation.feature == "feature.pipeline-more-microbatches"
    reasons = {r.feature: r.code for r in suggestion.rejected}
    assert reasons["feature.pipeline-balance-stages"] is RejectCode.not_indicated


def test_a_non_pipeline_cluster_is_one_stage(tmp_path: Path):
    facts = profile_facts(Path(__file__).resolve().parents[1] / "examples/profiles/slow-rank")
    assert facts.value("job.pipeline_parallel") is False
    assert facts.value("pipeline.stages") == 1
    assert facts.value("pipeline.stage_imbalance_ratio") == 0.0


def test_level0_with_a_level1_config_asks_to_profile_again(tmp_path: Path):
    write_profile(tmp_path / "prof", PRESETS["level0"])
    config = tmp_path / "config.yaml"
    config.write_text(
        CONFIG.format(world=8) + "training:\n  profile: true\n  profile_level: level1\n"
    )
    job = JobOptions(profile=tmp_path / "prof", config=config)
    suggestion = run_suggest(job, options=SuggestOptions(use_ledger=False)).suggestion
    assert suggestion.status is Status.needs_data
    assert suggestion.recommendation is None
    assert suggestion.reason.code is Grounds.fixes_undecided
    assert "comm.allgather_share" in suggestion.reason.values["missing"]
    # the config already asks for the data: the profile predates it
    assert suggestion.reason.values["applied_collector"] == "feature.collect-level1-profile"


def test_real_ddp_job_exposes_gradient_allreduce_and_gets_no_prefetch(tmp_path: Path):
    profile = _real("ascend-ddp-2rank-text")
    facts = profile_facts(profile)
    assert facts.value("job.data_parallel") == "all-reduce"
    assert facts.value("comm.allreduce_share") == pytest.approx(1.0)
    run = run_diagnose(JobOptions(profile=profile))
    assert run.diagnosis.main is not None and run.diagnosis.main.id == "bottleneck.communication"
    assert "allreduce" in run.diagnosis.main.message
    suggestion = _suggest(profile, tmp_path, 2)
    assert suggestion.recommendation is not None
    # the step computes 8.9 ms: overlapping the 96.4 ms all-reduce can hide at most that, while
    # reducing every other micro-step saves half of it per sample
    assert suggestion.recommendation.feature == "feature.gradient-accumulation"
    assert suggestion.recommendation.ceiling_ms == pytest.approx(96.359 / 2, rel=1e-3)
    predicted = suggestion.recommendation.predicted
    assert predicted is not None and predicted.bound_ms == pytest.approx(96.359 / 2, rel=1e-3)
    assert predicted.metric != "step_time"  # accumulation changes the work per step
    reasons = {r.feature: r for r in suggestion.rejected}
    overlap = reasons["feature.shard-gradient-allreduce"]
    assert overlap.code is RejectCode.lower_ceiling
    assert overlap.values["ceiling_ratio"] == pytest.approx(8.878 / 152.346, rel=1e-3)
    # the true reason: the profile has no all-gather (not "world size 1": it has 2 ranks)
    prefetch = reasons["feature.fsdp-forward-prefetch"]
    assert prefetch.code is RejectCode.not_indicated
    assert "no all-gather" in str(prefetch.values["lacks"])


def test_real_pipeline_job_leads_with_its_stage_imbalance(tmp_path: Path):
    profile = _real("ascend-qwen3-pp2-4rank")
    facts = profile_facts(profile)
    assert facts.value("pipeline.stages") == 2
    assert facts.value("pipeline.stage_ranks") == [[0, 1], [2, 3]]
    fast, slow = facts.value("pipeline.stage_compute_ms")
    assert slow / fast == pytest.approx(1.73, abs=0.01)  # SOURCES: stage 2 computes 1.73x
    run = run_diagnose(JobOptions(profile=profile))
    assert run.diagnosis.main is not None and run.diagnosis.main.id == "bottleneck.pipeline"
    assert "symptom.slow-rank" not in {s.id for s in run.diagnosis.symptoms}
    suggestion = _suggest(profile, tmp_path, 4)
    assert suggestion.recommendation is not None
    # the last stage's extra time is mostly the unfused cross-entropy: fused first, then layers
    assert suggestion.recommendation.feature == "feature.fused-loss"
    rejected = {r.feature: r for r in suggestion.rejected}
    assert rejected["feature.pipeline-balance-stages"].code is RejectCode.after


def test_a_feature_whose_target_is_hidden_is_not_proposed(tmp_path: Path):
    # FSDP job whose all-gathers already hide under compute; the reduce-scatter is exposed
    scenario = PRESETS["healthy"].with_(
        comm_overlapped_us=2000.0, comm_exposed_us=2400.0
    )  # all-gather overlapped, reduce-scatter exposed
    write_profile(tmp_path / "prof", scenario)
    suggestion = _suggest(tmp_path / "prof", tmp_path, 8)
    rejected = {r.feature: r for r in suggestion.rejected}
    assert rejected["feature.fsdp-forward-prefetch"].code is RejectCode.below_ceiling
    assert rejected["feature.fsdp-forward-prefetch"].values["ceiling_ms"] == pytest.approx(
        0, abs=0.005
    )
    assert suggestion.recommendation is not None
    # a bf16 reduction changes the numerics: the seeds try it after every other candidate, and
    # halving the reduce-scatter bytes saves at most half its 2.4 ms
    assert suggestion.recommendation.feature != "feature.reduce-dtype-bf16"
    bf16 = rejected["feature.reduce-dtype-bf16"]
    assert bf16.code is RejectCode.numerics_last
    step_ms = profile_facts(tmp_path / "prof").value("attrib.step_ms")
    assert bf16.values["ceiling_ratio"] == pytest.approx(1.2 / step_ms, rel=1e-3)


def _pp2_megatron_script(tmp_path: Path, extra: str = "") -> Path:
    # the real Qwen3 0.6B script, laid out as the profiled job ran: 4 ranks, PP=2
    source = _real("mindspeed-llm-scripts") / "qwen3__pretrain_qwen3_0point6b_4K_ptd.sh"
    text = source.read_text()
    for old, new in (("NPUS_PER_NODE=8", "NPUS_PER_NODE=4"), ("PP=1", "PP=2")):
        assert old in text
        text = text.replace(old, new)
    text = text.replace(
        "    --padded-vocab-size 151936 \\\n", f"{extra}    --padded-vocab-size 151936 \\\n"
    )
    script = tmp_path / "pretrain.sh"
    script.write_text(text)
    return script


def test_a_megatron_script_gets_the_fused_loss_not_the_chunked_one(tmp_path: Path):
    profile = _real("ascend-qwen3-pp2-4rank")
    script = _pp2_megatron_script(tmp_path)
    job = JobOptions(profile=profile, config=script)
    suggestion = run_suggest(job, options=SuggestOptions(use_ledger=False)).suggestion
    recommendation = suggestion.recommendation
    assert recommendation is not None
    # the loss chain's time goes with a fused cross-entropy; chunking runs the same kernels per
    # chunk (a memory remedy), so it is no candidate for the pipeline at all
    assert recommendation.feature == "feature.fused-loss"
    assert "--cross-entropy-loss-fusion" in (recommendation.advice or "")
    assert "feature.mg-chunk-loss" not in {r.feature for r in suggestion.rejected}
    reasons = {r.feature: r.code for r in suggestion.rejected}
    assert reasons["feature.pipeline-balance-stages"] is RejectCode.after


def test_a_script_that_already_chunks_its_loss_is_still_told_to_fuse_it(tmp_path: Path):
    profile = _real("ascend-qwen3-pp2-4rank")
    script = _pp2_megatron_script(tmp_path, "    --loss-compute-mode chunk \\\n")
    job = JobOptions(profile=profile, config=script)
    suggestion = run_suggest(job, options=SuggestOptions(use_ledger=False)).suggestion
    assert suggestion.recommendation is not None
    assert suggestion.recommendation.feature == "feature.fused-loss"
