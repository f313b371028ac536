"""Every fact against the ground truth of a generated profile whose values are known by construction."""

from __future__ import annotations

import pytest

from tests.conftest import steady
from tests.synth import PRESETS
from tests.synth.timeline import NS, layer_kernels

MS = NS * 1000


def _compute_us(scenario) -> float:
    return sum(k.dur for k in layer_kernels(scenario)) * scenario.layers / NS


def test_step_model_matches_truth(make_profile):
    written, facts = make_profile("comm-bound")
    t = steady(written)[0]
    assert facts.value("step.time_ms") == pytest.approx(t.total / MS)
    assert facts.value("step.compute_ratio") == pytest.approx(t.computing / t.total)
    assert facts.value("step.comm_total_ratio") == pytest.approx(t.communication / t.total)
    assert facts.value("step.comm_exposed_ratio") == pytest.approx(t.exposed / t.total)
    assert facts.value("step.comm_overlapped_ratio") == pytest.approx(
        (t.communication - t.exposed) / t.total
    )
    assert facts.value("step.free_ratio") == pytest.approx(t.free / t.total, abs=1e-6)
    assert facts.value("step.preparing_ratio") == pytest.approx(t.preparing / t.total)
    assert facts.value("step.bubble_ratio") == 0.0
    # exposed comm is divided by step time, not by communication time
    assert facts.value("step.comm_exposed_ratio") < t.exposed / t.communication
    assert facts.value("trace.step_cross_check") == pytest.approx(0.0, abs=1e-6)
    assert "first step 1 dropped" in facts.get("step.time_ms").note


def test_profile_facts(make_profile):
    _, facts = make_profile("healthy")
    assert facts.value("profile.framework") == "torch_npu"
    assert facts.value("profile.level") == "Level1"
    assert facts.value("profile.has_communication") is True
    assert facts.value("profile.ranks") == 1
    assert facts.value("profile.steps") == 5
    assert facts.value("profile.torch_npu_version") == "2.6.0.post1"
    assert facts.value("profile.cann_version") == "8.2.RC1"
    # torch_npu records a fixed list of variables; the task queue is not among them
    assert facts.value("env.PYTORCH_NPU_ALLOC_CONF") == "expandable_segments:True"
    assert facts.value("env.TASK_QUEUE_ENABLE") is None
    assert facts.value("env.PYTORCH_NPU_ALLOC_CONF") == "expandable_segments:True"


def test_mindspore_layout(make_profile):
    _, facts = make_profile("mindspore")
    assert facts.value("profile.framework") == "mindspore"
    assert facts.value("profile.framework_version") == "2.6.0"


def test_partial_last_step_is_dropped(make_profile):
    written, facts = make_profile("partial-last-step")
    t = steady(written)[0]
    assert written.truths[-1].total < t.total / 2
    assert facts.value("step.time_ms") == pytest.approx(t.total / MS)
    assert facts.value("step.compute_ratio") == pytest.approx(t.computing / t.total)
    assert "last step 5 dropped (partial" in facts.get("step.time_ms").note


def test_host_bound_launch_gaps(make_profile):
    written, facts = make_profile("host-bound")
    t = steady(written)[0]
    assert t.launch_gap > 0
    # the late launches' gaps, once: dispatch, or the host inside a synchronisation (the
    # scenario's one 1 us aclrtSynchronizeStream per step falls in a gap)
    late = facts.value("host.launch_gap_ms_per_step") + facts.value("attrib.idle_blocked_ms")
    assert late == pytest.approx(t.launch_gap / MS)
    assert facts.value("attrib.idle_blocked_ms") == pytest.approx(0.001)
    assert facts.value("host.dispatch_bound_ratio") == pytest.approx(
        (t.launch_gap - 1000) / t.total
    )
    assert facts.value("step.free_ratio") == pytest.approx(t.free / t.total)
    assert facts.value("step.free_ratio") > 0.3


def test_healthy_has_no_launch_gap(make_profile):
    written, facts = make_profile("healthy")
    assert steady(written)[0].launch_gap == 0
    assert facts.value("host.launch_gap_ms_per_step") == 0.0
    assert facts.value("host.sync_calls_per_step") == 1


def test_sync_calls_counted_per_step(make_profile):
    _, facts = make_profile("launch-blocking")
    assert facts.value("host.sync_calls_per_step") == 400
    assert facts.value("env.ASCEND_LAUNCH_BLOCKING") == "1"


def test_dataloader(make_profile):
    written, facts = make_profile("slow-dataloader")
    t = steady(written)[0]
    assert facts.value("data.loader_ms_per_step") == pytest.approx(2.5)
    assert facts.value("data.loader_ratio") == pytest.approx(t.dataloader / t.total)
    assert facts.value("step.preparing_ratio") == pytest.approx(t.preparing / t.total)


def test_unfused_attention(make_profile):
    scenario = PRESETS["unfused-attention"]
    _, facts = make_profile(scenario)
    unfused = 3.0 * scenario.attention_us * scenario.layers  # the chain's shares sum to 3x
    compute = _compute_us(scenario)
    assert facts.value("ops.unfused_attention_share") == pytest.approx(unfused / compute, rel=1e-4)
    assert facts.value("ops.attention_share") == pytest.approx(unfused / compute, rel=1e-4)
    top_types = [row["type"] for row in facts.value("ops.top")]
    assert "BatchMatMulV2" in top_types and "FlashAttentionScore" not in top_types


def test_fused_attention_is_not_unfused(make_profile):
    scenario = PRESETS["healthy"]
    _, facts = make_profile(scenario)
    fused = 3.0 * scenario.attention_us * scenario.layers
    assert facts.value("ops.attention_share") == pytest.approx(
        fused / _compute_us(scenario), rel=1e-4
    )
    assert facts.value("ops.unfused_attention_share") == 0.0


def test_small_ops(make_profile):
    scenario = PRESETS["small-ops"]
    _, facts = make_profile(scenario)
    small = scenario.small_ops_per_layer * scenario.layers
    assert facts.value("ops.small_ops_per_step") == small
    assert facts.value("ops.small_vector_ops_share") == pytest.approx(
        small * scenario.small_op_us / _compute_us(scenario), rel=1e-4
    )
    assert facts.value("ops.kernels_per_step") == len(layer_kernels(scenario)) * scenario.layers


def test_matmul_moe_aicpu_shares(make_profile):
    moe = PRESETS["moe"]
    _, facts = make_profile(moe)
    compute = _compute_us(moe)
    assert facts.value("ops.moe_gemm_share") == pytest.approx(
        2 * moe.moe_gemm_us * moe.layers / compute, rel=1e-4
    )
    assert facts.value("ops.matmul_share") == pytest.approx(
        4 * moe.matmul_us * moe.layers / compute, rel=1e-4
    )
    aicpu = PRESETS["aicpu"]
    _, facts = make_profile(aicpu)
    assert facts.value("ops.aicpu_share") == pytest.approx(
        aicpu.aicpu_us * aicpu.layers / _compute_us(aicpu), rel=1e-4
    )
    assert facts.value("ops.device_compute_ms_per_step") == pytest.approx(_compute_us(aicpu) / 1000)


def test_mte2_bound_share_and_bound_type(make_profile):
    scenario = PRESETS["mte2-bound"]
    _, facts = make_profile(scenario)
    cube_us = (4 * scenario.matmul_us + 3 * scenario.attention_us) * scenario.layers
    assert facts.value("ops.mte2_bound_share") == pytest.approx(
        cube_us / _compute_us(scenario), rel=1e-4
    )
    bounds = {row["type"]: row["bound"] for row in facts.value("ops.top")}
    assert bounds["MatMulV2"] == "memory"
    _, healthy = make_profile("healthy")
    assert healthy.value("ops.mte2_bound_share") == 0.0
    assert {row["type"]: row["bound"] for row in healthy.value("ops.top")}["MatMulV2"] == "compute"


def test_communication_facts(make_profile):
    scenario = PRESETS["comm-bound"]
    _, facts = make_profile(scenario)
    assert facts.value("comm.time_ms_by_op") == {
        scenario.overlapped_comm: pytest.approx(scenario.comm_overlapped_us / 1000),
        scenario.exposed_comm: pytest.approx(scenario.comm_exposed_us / 1000),
    }
    assert facts.value("comm.time_ms_per_step") == pytest.approx(
        (scenario.comm_overlapped_us + scenario.comm_exposed_us) / 1000
    )
    # SDMA (the copy engine's total) is not a link: only HCCS has a bandwidth
    assert facts.value("comm.bandwidth_gbps_by_link") == {"HCCS": pytest.approx(18.0)}
    assert facts.value("comm.wait_ratio") == pytest.approx(scenario.comm_wait_ratio)


def test_level0_has_no_comm_facts_and_says_why(make_profile):
    _, facts = make_profile("level0")
    assert facts.value("profile.level") == "Level0"
    assert facts.value("profile.has_communication") is False
    missing = {m.id: m.reason for m in facts.missing}
    for fact_id in ("comm.time_ms_by_op", "comm.bandwidth_gbps_by_link", "comm.wait_ratio"):
        assert fact_id not in {f.id for f in facts.facts}
        assert "Level0" in missing[fact_id]
    assert "ops.mte2_bound_share" in missing
    # the step model still works at Level0
    assert facts.value("step.comm_exposed_ratio") > 0.1


def test_memory_facts(make_profile):
    scenario = PRESETS["fragmentation"]
    _, facts = make_profile(scenario)
    mib = 1024 * 1024
    assert facts.value("memory.allocated_peak_bytes") == int(scenario.allocated_peak_mb * mib)
    assert facts.value("memory.reserved_peak_bytes") == int(scenario.reserved_peak_mb * mib)
    assert facts.value("memory.fragmentation_ratio") == pytest.approx(1 - 20000 / 32000)
    assert facts.value("memory.malloc_calls_per_step") == 40
    assert facts.value("memory.free_calls_per_step") == 30


def test_memory_missing_without_profile_memory(make_profile):
    _, facts = make_profile("healthy", with_memory=False)
    reasons = {m.id: m.reason for m in facts.missing}
    assert "profile_with_memory" in reasons["memory.reserved_peak_bytes"]


def test_kernel_details_without_step_ids(make_profile):
    scenario = PRESETS["small-ops"].with_(kernel_step_ids=False)
    _, facts = make_profile(scenario)
    assert facts.value("ops.small_ops_per_step") == scenario.small_ops_per_layer * scenario.layers
    assert "no Step Id column" in facts.get("ops.small_ops_per_step").note


def test_world_size_and_steady_step_count(make_profile):
    written, facts = make_profile("healthy", world_size=16)
    assert facts.value("profile.world_size") == 16
    assert facts.value("step.steady_steps") == len(written.truths) - 1
    assert facts.value("step.time_mad_ms") == 0.0  # identical steps


def test_step_time_mad_matches_the_jittered_truth(make_profile):
    from statistics import median

    written, facts = make_profile("healthy", steps=8, jitter=0.05)
    totals = [t.total / MS for t in steady(written)]
    center = median(totals)
    assert facts.value("step.time_ms") == pytest.approx(center)
    assert facts.value("step.time_mad_ms") == pytest.approx(median(abs(t - center) for t in totals))
    assert facts.value("step.time_mad_ms") > 0
