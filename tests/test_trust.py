"""The trust gate: failed profile invariants are warnings with ids, and a main bottleneck that
rests on one gets a request for data instead of a change."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from advisor.app.rulesets import load_graph
from advisor.cli import app
from advisor.core.validation import schema_errors
from advisor.engine.conditions import Context
from advisor.engine.diagnose import diagnose
from advisor.engine.loop import History
from advisor.engine.planner import plan
from advisor.model import Grounds, Reason, Status, TrustCheck

GRAPH = load_graph()
FSDP = {"parallel": {"fsdp_size": 8, "num_to_forward_prefetch": 1}, "model": {"model_id": "qwen3"}}


def _plan(facts: dict[str, object]):
    facts = {"comm.wait_ratio": 0.05, "step.comm_total_ratio": 0.2, **facts}
    ctx = Context(facts=facts, config=FSDP, env={})
    return plan(GRAPH, diagnose(GRAPH, ctx), ctx, History(), [])


def test_multi_rank_job_without_collectives_cannot_be_diagnosed_as_communication():
    suggestion = _plan(
        {
            "step.comm_exposed_ratio": 0.30,
            "profile.world_size": 8,
            "comm.time_ms_per_step": 0.0,
            "step.steady_steps": 4,
        }
    )
    assert suggestion.status is Status.needs_data
    assert suggestion.reason == Reason(
        Grounds.trust_failed,
        {"bottleneck": "bottleneck.communication", "check": "trust.no-collectives"},
    )
    assert [w.id for w in suggestion.warnings] == [TrustCheck.no_collectives]
    assert suggestion.warnings[0].values == {"world_size": 8}


def test_single_step_profile_is_a_warning_not_a_refusal():
    suggestion = _plan(
        {
            "step.comm_exposed_ratio": 0.30,
            "comm.allgather_share": 0.6,
            "attrib.comm_exposed_by_kind_ms": {"allgather": 3.0},
            "attrib.step_ms": 10.0,
            "step.steady_steps": 1,
        }
    )
    assert suggestion.status is Status.change
    assert [w.id for w in suggestion.warnings] == [TrustCheck.single_step]


def test_parts_that_do_not_add_up_are_flagged():
    facts: dict[str, object] = {
        "attrib.step_ms": 10.0,
        "attrib.compute_ms": 5.0,
        "attrib.comm_exposed_ms": 1.0,
        "attrib.idle_host_ms": 0.0,
        "attrib.idle_blocked_ms": 0.0,
        "attrib.idle_dependency_ms": 0.0,
        "attrib.idle_unattributed_ms": 0.0,
        "attrib.preparing_dataloader_ms": 0.0,
        "attrib.preparing_allocator_ms": 0.0,
        "attrib.preparing_sync_ms": 0.0,
        "attrib.preparing_other_ms": 0.0,
        "step.steady_steps": 3,
    }
    warnings = _plan(facts).warnings
    assert [w.id for w in warnings] == [TrustCheck.parts_do_not_add_up]
    assert warnings[0].values == {"total_ms": 6.0, "step_ms": 10.0}


def test_warnings_are_in_the_json_contract():
    profile = Path(__file__).resolve().parents[1] / "examples" / "profiles" / "comm-bound"
    config = profile.parents[1] / "fsdp2" / "config.yaml"
    result = CliRunner().invoke(
        app, ["suggest", str(profile), str(config), "--no-ledger", "--format", "json"]
    )
    payload = json.loads(result.output)
    assert schema_errors(payload, "suggestion.schema.json") == []
    assert isinstance(payload["warnings"], list)
    for warning in payload["warnings"]:
        assert TrustCheck(warning["id"]) and warning["message"]


def _comm_change(extra: dict[str, object]):
    return _plan(
        {
            "step.comm_exposed_ratio": 0.30,
            "comm.allgather_share": 0.6,
            "attrib.comm_exposed_by_kind_ms": {"allgather": 3.0},
            "attrib.step_ms": 10.0,
            "step.steady_steps": 4,
            **extra,
        }
    )


def test_a_bottleneck_resting_on_data_the_level_lacks_gets_a_request_for_data():
    assert _comm_change({"profile.level": "Level1"}).status is Status.change
    suggestion = _comm_change({"profile.level": "Level0"})
    assert suggestion.status is Status.needs_data and suggestion.recommendation is None
    assert [w.id for w in suggestion.warnings] == [TrustCheck.level_below_need]
    assert suggestion.warnings[0].values == {
        "level": "Level0",
        "bottlenecks": ("bottleneck.communication",),
        "wanted": "Level1",
    }


def test_the_level_matters_only_for_bottlenecks_that_need_it():
    facts = {
        "profile.level": "Level0",
        "host.dispatch_bound_ratio": 0.4,
        "attrib.idle_host_ms": 4.0,
        "attrib.step_ms": 10.0,
        "step.free_ratio": 0.45,
        "step.steady_steps": 4,
    }
    ctx = Context(facts=facts, config=FSDP, env={})
    diagnosis = diagnose(GRAPH, ctx)
    assert diagnosis.main is not None and diagnosis.main.id == "bottleneck.host-dispatch"
    suggestion = plan(GRAPH, diagnosis, ctx, History(), [])
    assert TrustCheck.level_below_need not in [w.id for w in suggestion.warnings]


def test_a_profiler_version_outside_the_known_range_is_flagged():
    known = _comm_change({"profile.torch_npu_version": "2.7.1", "profile.cann_version": "8.3.RC1"})
    assert known.warnings == ()
    newer = _comm_change({"profile.torch_npu_version": "3.0.0", "profile.cann_version": "8.3.RC1"})
    assert [w.id for w in newer.warnings] == [TrustCheck.unknown_profiler_version]
    assert newer.warnings[0].values["tool"] == "torch_npu"
    assert newer.warnings[0].values["version"] == "3.0.0"
    assert newer.warnings[0].values["side"] == "newer"
    assert newer.status is Status.change  # a warning: the facts name their sources to check
    older = _comm_change({"profile.cann_version": "6.3.RC2"})
    assert (older.warnings[0].values["tool"], older.warnings[0].values["side"]) == ("cann", "older")
    unrecorded = _comm_change({})
    assert unrecorded.warnings == ()
