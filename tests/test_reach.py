"""Ceilings a remedy can reach: the time its mechanism can remove, not the whole bottleneck, and
the remedies ordered by that reachable gain (issue cases: a 2-rank DDP job whose step computes
8.9 ms, an FSDP2 MoE job with prefetch already raised)."""

from __future__ import annotations

import pytest

from advisor.app.rulesets import load_graph
from advisor.engine.changes import reach_of
from advisor.engine.conditions import Context
from advisor.engine.loop import History
from advisor.engine.planner import _walk
from advisor.engine.rule_model import FeatureRule
from advisor.model import RejectCode

GRAPH = load_graph()
COMM = "bottleneck.communication"


def _feature(feature_id: str) -> FeatureRule:
    rule = GRAPH.ruleset.feature(feature_id)
    assert rule is not None
    return rule


def _moe_context() -> Context:
    """FSDP2 MoE job, prefetch already at 2; exposed: all-gather 8, all-to-all 4,
    reduce-scatter 4 ms of a 49.2 ms step (32.5% exposed communication)."""
    facts = {
        "profile.platform": "ascend",
        "attrib.step_ms": 49.2,
        "attrib.compute_ms": 30.0,
        "attrib.comm_exposed_ms": 16.0,
        "attrib.comm_exposed_by_kind_ms": {"allgather": 8.0, "alltoall": 4.0, "reducescatter": 4.0},
        "comm.allgather_share": 0.5,
        "comm.alltoall_share": 0.25,
        "comm.reducescatter_share": 0.25,
        "comm.allreduce_share": 0.0,
    }
    config = {
        "model": {"model_id": "qwen3_moe"},
        "parallel": {
            "fsdp_size": 16,
            "ep_size": 8,
            "num_to_forward_prefetch": 2,
            "num_to_backward_prefetch": 2,
        },
    }
    return Context(facts=facts, config=config, env={}, dialect="fsdp2-config")


def test_a_bf16_reduction_reaches_half_the_reduce_scatter_not_all_communication():
    reach = reach_of(_feature("feature.reduce-dtype-bf16"), _moe_context())
    assert reach is not None
    assert reach.ms == pytest.approx(2.0)  # half the 4 ms reduce-scatter, not 16 ms
    assert reach.limit == "share"
    assert reach.target_ms == pytest.approx(4.0)


def test_the_fused_dispatcher_comes_before_a_bf16_reduction_on_the_moe_job():
    walk = _walk(GRAPH, COMM, _moe_context(), History())
    assert walk.chosen is not None
    assert walk.chosen.id == "feature.fused-dispatcher"
    reasons = {r.feature: r for r in walk.rejected}
    assert reasons["feature.reduce-dtype-bf16"].code is RejectCode.numerics_last
    assert reasons["feature.fsdp-forward-prefetch"].code is RejectCode.applied


def test_an_overlap_hides_at_most_the_compute_it_runs_under():
    ctx = Context(
        facts={
            "attrib.step_ms": 152.3,
            "attrib.compute_ms": 8.9,
            "attrib.comm_exposed_by_kind_ms": {"allreduce": 96.4},
        }
    )
    reach = reach_of(_feature("feature.shard-gradient-allreduce"), ctx)
    assert reach is not None
    assert reach.ms == pytest.approx(8.9)
    assert reach.limit == "hides-under"
    assert reach.target_ms == pytest.approx(96.4)
    # compute unknown: the target alone bounds it (unknown is not zero)
    unknown = Context(facts={k: v for k, v in ctx.facts.items() if k != "attrib.compute_ms"})
    bounded = reach_of(_feature("feature.shard-gradient-allreduce"), unknown)
    assert bounded is not None and bounded.ms == pytest.approx(96.4)


def test_every_overlap_names_the_compute_it_hides_under_and_every_bound_its_source():
    for rule in GRAPH.ruleset.of_type(FeatureRule):
        if rule.ceiling is None:
            continue
        assert rule.ceiling.source.strip(), rule.id
        if rule.ceiling.mechanism == "overlap":
            assert rule.ceiling.hides_under, rule.id


def test_a_prefetch_step_is_bounded_by_its_own_pass_when_the_trace_says_which():
    ctx = _moe_context()
    ctx.facts["comm.exposed_allgather_forward_ms"] = 1.5
    ctx.facts["comm.exposed_allgather_backward_ms"] = 6.5
    forward = reach_of(_feature("feature.fsdp-forward-prefetch"), ctx)
    backward = reach_of(_feature("feature.fsdp-backward-prefetch"), ctx)
    assert forward is not None and forward.ms == pytest.approx(1.5)
    assert backward is not None and backward.ms == pytest.approx(6.5)
    # a pass the host paces gains only what its device work lags behind the last launch
    ctx.facts["host.forward_device_lag_ms"] = 0.2
    paced = reach_of(_feature("feature.fsdp-forward-prefetch"), ctx)
    assert paced is not None and paced.ms == pytest.approx(0.2)
    # the pass unknown: every exposed all-gather, as before
    unknown = reach_of(_feature("feature.fsdp-forward-prefetch"), _moe_context())
    assert unknown is not None and unknown.ms == pytest.approx(8.0)


def test_a_fusion_reaches_the_sequence_the_profile_shows_and_is_unknown_without_it():
    facts = {"attrib.step_ms": 50.0, "ops.fusion_reach_ms": {"rmsnorm": 2.5}}
    rmsnorm = reach_of(_feature("feature.fused-rmsnorm"), Context(facts=facts))
    assert rmsnorm is not None and rmsnorm.ms == pytest.approx(2.5)
    assert rmsnorm.mechanism == "removes"
    # no RoPE sequence found: unknown (the prediction falls back to the bottleneck's cost),
    # not zero (which would reject it as below its ceiling)
    assert reach_of(_feature("feature.fused-rope"), Context(facts=facts)) is None
