"""Three-valued conditions: missing facts are UNKNOWN, never silently false."""

from __future__ import annotations

from advisor.engine.conditions import Context, Outcome, Truth, compile_condition

PARAMS = {"limit": 0.03}


def evaluate(cond: dict, ctx: Context) -> Outcome:
    """Compile as the rule loader does (params bound), then evaluate."""
    return compile_condition(cond, PARAMS.__getitem__).evaluate(ctx)


CTX = Context(
    facts={"step.free_ratio": 0.05, "profile.level": "Level1"},
    config={
        "model": {"model_id": "gpt_oss"},
        "parallel": {"ep_size": 8},
        "optimization": {"use_flash_attn": "true"},
    },
    env={"TASK_QUEUE_ENABLE": "2"},
)


def truth(cond: dict) -> Truth:
    return evaluate(cond, CTX).truth


def test_leaves():
    assert truth({"fact": "step.free_ratio", "op": "gt", "value": {"param": "limit"}}) is Truth.TRUE
    assert (
        truth({"config": "model.model_id", "op": "in", "value": ["gpt_oss", "minimax_m27"]})
        is Truth.TRUE
    )
    assert truth({"config": "parallel.ep_size", "op": "gt", "value": 1}) is Truth.TRUE
    assert truth({"config": "optimization.use_flash_attn", "op": "eq", "value": True}) is Truth.TRUE
    assert truth({"env": "TASK_QUEUE_ENABLE", "op": "eq", "value": 2}) is Truth.TRUE
    assert truth({"env": "ASCEND_LAUNCH_BLOCKING", "op": "absent"}) is Truth.TRUE
    assert truth({"env": "ASCEND_LAUNCH_BLOCKING", "op": "eq", "value": "1"}) is Truth.FALSE
    assert truth({"config": "parallel.cp_size", "op": "eq", "value": 1, "default": 1}) is Truth.TRUE
    assert truth({"fact": "profile.level", "op": "matches", "value": "^Level[12]"}) is Truth.TRUE


def test_missing_fact_is_unknown_and_named():
    outcome = evaluate({"fact": "comm.wait_ratio", "op": "gt", "value": 0.2}, CTX)
    assert outcome.truth is Truth.UNKNOWN
    assert outcome.missing == ("fact:comm.wait_ratio",)


def test_unknown_config_source_is_unknown():
    no_config = Context(facts={}, config=None, env=None)
    assert evaluate({"config": "model.model_id", "op": "exists"}, no_config).truth is Truth.UNKNOWN
    assert (
        evaluate({"env": "TASK_QUEUE_ENABLE", "op": "eq", "value": "2"}, no_config).truth
        is Truth.UNKNOWN
    )


def test_kleene_combinators():
    unknown = {"fact": "comm.wait_ratio", "op": "gt", "value": 0.2}
    true = {"fact": "step.free_ratio", "op": "gt", "value": 0.01}
    false = {"fact": "step.free_ratio", "op": "gt", "value": 0.5}
    assert truth({"all": [true, unknown]}) is Truth.UNKNOWN
    assert truth({"all": [false, unknown]}) is Truth.FALSE
    assert truth({"any": [true, unknown]}) is Truth.TRUE
    assert truth({"any": [false, unknown]}) is Truth.UNKNOWN
    assert truth({"not": unknown}) is Truth.UNKNOWN
    assert truth({"not": false}) is Truth.TRUE


def test_comparing_two_config_keys():
    ctx = Context(facts={}, config={"parallel_config": {"pipeline_stage": 4, "micro_batch_num": 2}})
    below = {
        "config": "parallel_config.micro_batch_num",
        "op": "lt",
        "value": {"config": "parallel_config.pipeline_stage"},
    }
    assert evaluate(below, ctx).truth is Truth.TRUE
    missing = {
        "config": "parallel_config.micro_batch_num",
        "op": "lt",
        "value": {"config": "parallel_config.nope"},
    }
    assert evaluate(missing, ctx).truth is Truth.UNKNOWN


def test_release_versions_compare_as_releases():
    ctx = Context(facts={"profile.cann_version": "8.3.RC1", "profile.torch_npu_version": "2.7.1"})

    def on(cond: dict) -> Truth:
        return evaluate(cond, ctx).truth

    cann = {"fact": "profile.cann_version"}
    assert on({**cann, "op": "version_lt", "value": "8.3.0"}) is Truth.TRUE  # RC before release
    assert on({**cann, "op": "version_ge", "value": "8.0.RC2"}) is Truth.TRUE
    assert on({**cann, "op": "version_lt", "value": "8.0.RC2"}) is Truth.FALSE
    npu = {"fact": "profile.torch_npu_version"}
    assert on({**npu, "op": "version_ge", "value": "26.2"}) is Truth.FALSE
    # an unreadable version decides nothing; a missing one is unknown
    assert on({**npu, "op": "version_lt", "value": "master"}) is Truth.FALSE
    missing = {"fact": "profile.framework_version", "op": "version_lt", "value": "2.3"}
    assert on(missing) is Truth.UNKNOWN


def test_a_fact_default_is_what_an_unmeasured_fact_counts_as():
    cond = {"fact": "ops.fp16_matmul_share", "op": "gt", "value": 0, "default": 1}
    # unmeasured: the rule's stated default decides
    assert truth(cond) is Truth.TRUE
    # measured: the measurement decides, the default is never used
    measured = Context(facts={"ops.fp16_matmul_share": 0.0})
    assert evaluate(cond, measured).truth is Truth.FALSE
    # without a default an unmeasured fact stays unknown
    plain = {"fact": "ops.fp16_matmul_share", "op": "gt", "value": 0}
    assert truth(plain) is Truth.UNKNOWN
