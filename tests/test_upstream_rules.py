"""Every rule agrees with upstream: one test per row of the upstream fact-check (W1-W3 wrong,
P1-P21 partly wrong), the upstream levers added from its section 3, and the references every rule
must carry (a public upstream source, and for a threshold either upstream's number or the
statement that the number is advisor's own choice)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from advisor.app.check import run_check
from advisor.app.rulesets import load_graph
from advisor.core.resources import rules_dir
from advisor.core.yamlio import load_data
from advisor.dialects.registry import load_document
from advisor.engine.conditions import Context, Truth, evaluate, version_key
from advisor.engine.rule_model import FeatureRule, PolicyRule, SymptomRule
from advisor.render.suggestion import suggestion_json, suggestion_text
from advisor.render.words import rejection
from tests.test_check import megatron_script
from tests.test_megatron_suggest import profile, script
from tests.test_megatron_suggest import suggest as megatron_suggest

RULES = load_graph().ruleset
MOE_FSDP2 = {"model": {"model_id": "qwen3_moe"}, "parallel": {"ep_size": 8}}


def feature(rule_id: str) -> FeatureRule:
    rule = RULES.feature(rule_id)
    assert rule is not None, rule_id
    return rule


def ctx(
    config: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    facts: dict[str, object] | None = None,
) -> Context:
    return Context(facts=facts or {}, config=config or {}, env=env or {})


def unmet(rule_id: str, context: Context) -> list[str]:
    """Reasons of the prerequisites known to be false."""
    return [
        r.reason
        for r in feature(rule_id).requires
        if evaluate(r.condition, context).truth is Truth.FALSE
    ]


def conflicting(rule_id: str, context: Context) -> list[str]:
    return [
        c.reason
        for c in feature(rule_id).conflicts
        if c.condition is not None and evaluate(c.condition, context).is_true
    ]


def megatron_config(tmp_path: Path, flags: str, exports: str | None = None) -> dict[str, Any]:
    path = tmp_path / "pretrain_cfg.sh"
    spec: dict[str, str] = {"flags": flags}
    if exports is not None:
        spec["exports"] = exports
    path.write_text(megatron_script(spec))
    config = load_document(path).config
    assert config is not None
    return config


def check_megatron(tmp_path: Path, flags: str, exports: str | None = None) -> dict[str, str]:
    """rule id -> severity of each finding `check` reports on a Megatron script."""
    path = tmp_path / "pretrain.sh"
    spec: dict[str, str] = {"flags": flags}
    if exports is not None:
        spec["exports"] = exports
    path.write_text(megatron_script(spec))
    result = run_check(RULES, configs=[path])
    return {f.rule_id: f.severity.value for f in result.findings if f.counts}


def check_launch(tmp_path: Path, script_text: str, config: str) -> dict[str, str]:
    (tmp_path / "config.yaml").write_text(config)
    path = tmp_path / "run.sh"
    path.write_text(script_text)
    result = run_check(RULES, launches=[path])
    return {f.rule_id: f.severity.value for f in result.findings if f.counts}


def launch(exports: str = "", flags: str = "") -> str:
    return (
        f"export TRAINING_BACKEND=mindspeed_fsdp\n{exports}"
        f"torchrun --nnodes 1 --nproc_per_node 8 train_fsdp2.py config.yaml{flags}\n"
    )


# ---------------------------------------------------------------- W1-W3


@pytest.mark.parametrize("rule_id", ["feature.fused-dispatcher", "feature.ep-mc2"])
def test_w1_ep_dispatchers_are_model_agnostic(rule_id: str):
    with_gmm = {**MOE_FSDP2, "optimization": {"moe_grouped_gemm": True}}
    assert unmet(rule_id, ctx(with_gmm)) == []
    for model in ("deepseek_v4", "qwen3_next", "longcat_flash_ngram", "gpt_oss", "glm52"):
        config = {"model": {"model_id": model}, "parallel": {"ep_size": 8}}
        assert unmet(rule_id, ctx(config)) == [], model
    # qwen3_moe builds the fused-experts module only with grouped GEMM on: the change turns it on
    from advisor.engine.changes import abstract_ops

    assert unmet(rule_id, ctx(MOE_FSDP2)) == []
    ops = {op.path: op.value for op in abstract_ops(feature(rule_id), ctx(MOE_FSDP2))}
    assert ops["optimization.moe_grouped_gemm"] is True
    ops = {op.path: op.value for op in abstract_ops(feature(rule_id), ctx(with_gmm))}
    assert "optimization.moe_grouped_gemm" not in ops
    dense = {"model": {"model_id": "qwen3"}, "parallel": {"ep_size": 8}}
    assert unmet(rule_id, ctx(dense))
    assert unmet(rule_id, ctx({**with_gmm, "parallel": {"ep_size": 1}}))


def test_w1_fused_dispatcher_effect_is_worded_as_upstream():
    gain = feature("feature.fused-dispatcher").effect.gain
    assert "around an ordinary all-to-all" in gain and "fused with the all-to-all" not in gain


def test_w1_qwen3_moe_is_proposed_the_fused_dispatcher(tmp_path: Path):
    from tests.test_suggest import make_job
    from tests.test_suggest import suggest as fsdp2_suggest

    extra = "  num_to_forward_prefetch: 2\n  num_to_backward_prefetch: 2\n"
    job = make_job(
        tmp_path, "moe-comm-bound", model_id="qwen3_moe", ep_size=4, parallel_extra=extra
    )
    rec = fsdp2_suggest(*job).suggestion.recommendation
    assert rec is not None and rec.feature == "feature.fused-dispatcher"
    assert "+  ep_dispatcher: fused" in rec.diff and "moe_grouped_gemm: true" in rec.diff.lower()


def test_w2_moe_grouped_gemm_with_mc2_is_a_check_error(tmp_path: Path):
    flags = "--num-experts 8 --moe-grouped-gemm --tensor-model-parallel-size 2 --sequence-parallel"
    found = check_megatron(tmp_path, f"{flags} --use-ascend-mc2")
    assert found.get("policy.mg-mc2-with-moe-grouped-gemm") == "error"
    assert "policy.mg-mc2-with-moe-grouped-gemm" not in check_megatron(tmp_path, flags)


def test_w2_neither_half_of_the_pair_is_proposed_next_to_the_other(tmp_path: Path):
    moe_gmm = megatron_config(
        tmp_path,
        "--num-experts 8 --moe-grouped-gemm --tensor-model-parallel-size 2 --sequence-parallel",
    )
    assert conflicting("feature.mg-ascend-mc2", ctx(moe_gmm))
    moe_mc2 = megatron_config(
        tmp_path,
        "--num-experts 8 --tensor-model-parallel-size 2 --sequence-parallel --use-ascend-mc2",
    )
    assert conflicting("feature.mg-moe-grouped-gemm", ctx(moe_mc2))
    dense = megatron_config(tmp_path, "--tensor-model-parallel-size 2 --sequence-parallel")
    assert conflicting("feature.mg-ascend-mc2", ctx(dense)) == []


def test_w2_suggest_never_proposes_mc2_on_a_moe_script(tmp_path: Path):
    moe = ["--num-experts 8", "--moe-router-topk 2", "--expert-model-parallel-size 4"]
    flags = [*moe, "--moe-grouped-gemm", "--sequence-parallel"]
    run = megatron_suggest(profile(tmp_path, "tp-allreduce"), script(tmp_path, *flags, tp=2))
    rec = run.suggestion.recommendation
    assert rec is None or rec.feature != "feature.mg-ascend-mc2"
    reasons = {r.feature: rejection(r) for r in run.suggestion.rejected}
    assert "MoE" in reasons["feature.mg-ascend-mc2"]


@pytest.mark.parametrize("model", ["minimax_m27", "step35", "mamba3", "longcat_flash_ngram"])
def test_w3_ulysses_is_refused_for_models_without_cp(model: str):
    config = {"model": {"model_id": model}, "parallel": {"fsdp_size": 8}}
    assert unmet("feature.context-parallel-ulysses", ctx(config))


def test_w3_ulysses_stays_open_for_qwen3_next():
    config = {"model": {"model_id": "qwen3_next"}, "parallel": {"fsdp_size": 8}}
    assert unmet("feature.context-parallel-ulysses", ctx(config)) == []


# ---------------------------------------------------------------- P1-P21


def test_p1_page_size_with_expandable_segments_is_valid(tmp_path: Path):
    valid = launch("export PYTORCH_NPU_ALLOC_CONF=expandable_segments:True,page_size:1g\n")
    found = check_launch(tmp_path, valid, "model:\n  model_id: gpt_oss\n")
    assert "error" not in found.values(), found
    env = {"PYTORCH_NPU_ALLOC_CONF": "page_size:1g"}
    assert conflicting("feature.expandable-segments", ctx(env=env)) == []
    bad = launch("export PYTORCH_NPU_ALLOC_CONF=expandable_segments:True,max_split_size_mb:512\n")
    assert check_launch(tmp_path, bad, "model:\n  model_id: gpt_oss\n").get(
        "policy.alloc-conf-invalid"
    ) == ("error")


def test_p2_pytorch_alloc_conf_blocks_the_npu_variable(tmp_path: Path):
    env = {"PYTORCH_ALLOC_CONF": "expandable_segments:False"}
    assert conflicting("feature.expandable-segments", ctx(env=env))
    both = launch(
        "export PYTORCH_ALLOC_CONF=expandable_segments:True\n"
        "export PYTORCH_NPU_ALLOC_CONF=expandable_segments:True\n"
    )
    found = check_launch(tmp_path, both, "model:\n  model_id: gpt_oss\n")
    assert found.get("policy.alloc-conf-both-variables") == "error"
    zero_copy = launch(
        "export PYTORCH_ALLOC_CONF=expandable_segments:True\nexport TORCH_HCCL_ZERO_COPY=1\n"
    )
    found = check_launch(tmp_path, zero_copy, "model:\n  model_id: gpt_oss\n")
    assert "policy.zero-copy-needs-expandable" not in found


def test_p3_cpu_affinity_starts_at_mode_2_and_names_force():
    rule = feature("feature.cpu-affinity")
    assert [op.value for op in rule.change.ops] == ["2"]
    assert "force:1" in rule.effect.risk and "lazy_bind:0" in rule.effect.risk


def test_p4_deterministic_mode_costs_compute_too():
    rule = feature("feature.non-deterministic-mode")
    assert {a.bottleneck for a in rule.addresses} >= {
        "bottleneck.communication",
        "bottleneck.compute",
    }
    assert "CLOSE_MATMUL_K_SHIFT" in rule.docs.why and "A3" in rule.effect.gain


@pytest.mark.parametrize("flag", ["--use-torch-fsdp2", "--use-custom-fsdp"])
def test_p5_device_max_connections_not_1_is_required_with_megatron_fsdp(tmp_path: Path, flag):
    found = check_megatron(
        tmp_path,
        f"--tensor-model-parallel-size 2 {flag}",
        exports="export CUDA_DEVICE_MAX_CONNECTIONS=8",
    )
    assert "policy.mg-device-max-connections" not in found
    plain = check_megatron(
        tmp_path, "--tensor-model-parallel-size 2", exports="export CUDA_DEVICE_MAX_CONNECTIONS=8"
    )
    assert plain.get("policy.mg-device-max-connections") == "error"


def test_p5_fsdp2_with_one_connection_is_the_error(tmp_path: Path):
    found = check_megatron(
        tmp_path,
        "--tensor-model-parallel-size 2 --use-torch-fsdp2",
        exports="export CUDA_DEVICE_MAX_CONNECTIONS=1",
    )
    assert found.get("policy.mg-fsdp2-device-max-connections") == "error"
    rule = RULES.rules["policy.mg-fsdp2-device-max-connections"]
    assert isinstance(rule, PolicyRule) and rule.change is None  # never auto-fixed to a guess


def test_p6_sequence_parallel_without_tp_is_a_warning_not_silence():
    policy = RULES.rules["policy.mg-sequence-parallel-without-tp"]
    assert isinstance(policy, PolicyRule) and "with a warning" in policy.message
    assert any(
        "with a warning" in r.reason for r in feature("feature.mg-sequence-parallel").requires
    )


def test_p7_p8_overlap_grad_reduce_needs_no_distributed_optimizer(tmp_path: Path):
    config = megatron_config(tmp_path, "--tensor-model-parallel-size 1")
    assert unmet("feature.mg-overlap-grad-reduce", ctx(config)) == []
    assert "with or without" in feature("feature.mg-distributed-optimizer").docs.why
    assert "no extra memory" in (feature("feature.mg-overlap-grad-reduce").effect.memory or "")


def test_p9_permutation_flag_gain_is_reduced_under_grouped_gemm():
    assert "void under GMM" in feature("feature.mg-moe-alltoall-dispatcher").effect.gain


@pytest.mark.parametrize(
    ("flags", "fires"),
    [
        ("--moe-token-dispatcher-type alltoall_seq", True),  # no permutation-async-comm
        (
            "--moe-token-dispatcher-type alltoall_seq --moe-permutation-async-comm "
            "--tensor-model-parallel-size 2",
            True,
        ),  # TP > 1 without tp-extend-ep
        ("--moe-token-dispatcher-type alltoall --moe-tp-extend-ep", True),
        (
            "--moe-token-dispatcher-type alltoall_seq --moe-permutation-async-comm "
            "--tensor-model-parallel-size 2 --moe-tp-extend-ep",
            False,
        ),
        ("--moe-token-dispatcher-type alltoall", False),
    ],
)
def test_p10_alltoall_overlap_prerequisites(tmp_path: Path, flags: str, fires: bool):
    base = "--num-experts 8 --expert-model-parallel-size 4 --moe-grouped-gemm"
    found = check_megatron(tmp_path, f"{base} {flags} --moe-alltoall-overlap-comm")
    assert ("policy.mg-alltoall-overlap-needs" in found) is fires
    config = megatron_config(tmp_path, f"{base} {flags}")
    refused = unmet("feature.mg-moe-alltoall-overlap", ctx(config)) or conflicting(
        "feature.mg-moe-alltoall-overlap", ctx(config)
    )
    assert bool(refused) is fires


def test_p11_swap_optimizer_needs_fused_adamw_and_swaps_12_bytes(tmp_path: Path):
    found = check_megatron(
        tmp_path, "--use-distributed-optimizer --optimizer-selection adam --swap-optimizer"
    )
    assert "policy.mg-swap-optimizer-needs" in found
    ok = check_megatron(tmp_path, "--use-distributed-optimizer --swap-optimizer")
    assert "policy.mg-swap-optimizer-needs" not in ok
    assert "12 bytes per parameter" in (feature("feature.mg-swap-optimizer").effect.memory or "")


@pytest.mark.parametrize(
    ("flags", "accepted"),
    [
        ("--swap-optimizer", False),
        ("--use-distributed-optimizer --swap-optimizer", True),
        # MindSpeed's Muon feature turns on the layer-wise distributed optimizer for dist_muon,
        # which swap_optimizer_feature.validate_args accepts in place of the distributed one
        ("--optimizer dist_muon --swap-optimizer", True),
        ("--optimizer muon --swap-optimizer", False),
        ("--optimizer muon --use-distributed-optimizer --swap-optimizer", True),
    ],
)
def test_swap_optimizer_needs_a_distributed_optimizer_as_mindspeed_validates(
    tmp_path: Path, flags: str, accepted: bool
):
    found = check_megatron(tmp_path, flags)
    assert ("policy.mg-swap-optimizer-needs" not in found) is accepted
    config = megatron_config(tmp_path, flags.replace(" --swap-optimizer", ""))
    assert (unmet("feature.mg-swap-optimizer", ctx(config)) == []) is accepted


def test_p12_chunk_loss_in_sft_is_ignored_not_an_error(tmp_path: Path):
    path = tmp_path / "config.yaml"
    path.write_text(
        "model:\n  model_id: qwen3\ntraining:\n  stage: sft\noptimization:\n  chunk_loss_size: 1024\n"
    )
    findings = run_check(RULES, configs=[path]).findings
    severities = {f.rule_id: f.severity.value for f in findings}
    assert severities["policy.chunk-loss-needs-pretraining"] == "warning"


@pytest.mark.parametrize(
    ("flags", "yaml", "rule"),
    [
        (" --parallel.num_to_forward 2", "", "policy.cli-abbreviated-flag"),
        (" --training.log_throughput true --training.profile", "", "policy.cli-bare-boolean-last"),
    ],
)
def test_p13_cli_shortcuts_work_when_the_yaml_lacks_the_key(tmp_path: Path, flags, yaml, rule):
    base = "model:\n  model_id: gpt_oss\n"
    assert rule not in check_launch(tmp_path, launch(flags=flags), base + yaml)
    sets_it = {
        "policy.cli-abbreviated-flag": "parallel:\n  num_to_forward_prefetch: 1\n",
        "policy.cli-bare-boolean-last": "training:\n  profile: false\n",
    }[rule]
    assert check_launch(tmp_path, launch(flags=flags), base + sets_it).get(rule) == "error"


def test_p13_an_ambiguous_prefix_is_an_error_whatever_the_yaml(tmp_path: Path):
    found = check_launch(
        tmp_path, launch(flags=" --parallel.num_to 2"), "model:\n  model_id: gpt_oss\n"
    )
    assert found.get("policy.cli-abbreviated-flag") == "error"


def test_p14_misspelt_parallel_config_key_fails_start_up():
    policy = RULES.rules["policy.mf-config-keys"]
    assert "fails MindFormers at start-up" in policy.docs.why


def test_p15_gradient_accumulation_needs_semi_or_auto_parallel():
    data_parallel = {"parallel": {"parallel_mode": 0}}
    assert unmet("feature.mf-gradient-accumulation", ctx(data_parallel))
    assert unmet("feature.mf-gradient-accumulation", ctx({"parallel": {"parallel_mode": 1}})) == []


@pytest.mark.parametrize(("cutoff", "opens"), [(16384, False), (20480, True), (32768, True)])
def test_p16_ring_cp_is_gated_per_rank_at_8k(cutoff: int, opens: bool):
    config = {"data": {"cutoff_len": cutoff}, "parallel": {"fsdp_size": 8}}
    config["model"] = {"model_id": "qwen3"}
    assert (unmet("feature.context-parallel-ring", ctx(config)) == []) is opens


def test_p17_mc2_gated_on_a3_and_old_cann(tmp_path: Path):
    dense = megatron_config(tmp_path, "--tensor-model-parallel-size 2 --sequence-parallel")
    assert conflicting("feature.mg-ascend-mc2", ctx(dense, facts={"profile.device": "Ascend A3"}))
    assert conflicting("feature.mg-ascend-mc2", ctx(dense, facts={"profile.cann_version": "7.0.0"}))
    assert not conflicting(
        "feature.mg-ascend-mc2", ctx(dense, facts={"profile.cann_version": "8.3.RC1"})
    )
    assert "A3" in feature("feature.mg-ascend-mc2").effect.risk


@pytest.mark.parametrize(("level", "fires"), [("0", True), ("1", True), ("2", False), ("3", False)])
def test_p18_log_level_2_is_warning_and_costs_nothing(tmp_path: Path, level: str, fires: bool):
    text = launch(f"export ASCEND_GLOBAL_LOG_LEVEL={level}\n")
    found = check_launch(tmp_path, text, "model:\n  model_id: gpt_oss\n")
    assert ("policy.log-level-verbose" in found) is fires


def test_p19_training_backend_mechanism():
    assert "mindspeed_llm/__init__.py" in RULES.rules["policy.training-backend"].docs.why


def test_p20_a3_peak_is_per_die():
    devices = load_data(rules_dir() / "devices.yaml")["devices"]
    a3 = next(d for d in devices if "910_93" in d["match"])
    assert a3["peak_tflops"] == 376 and a3["memory_gib"] == 64


# ---------------------------------------------------------------- version conditions


def test_release_strings_compare_as_releases():
    assert version_key("8.3.RC1") < version_key("8.3.0")  # type: ignore[operator]
    assert version_key("8.0.RC2") < version_key("8.3.RC1")  # type: ignore[operator]
    assert version_key("2.7.1") < version_key("26.2")  # type: ignore[operator]
    assert version_key("2.7.1.post2") > version_key("2.7.1")  # type: ignore[operator]
    assert version_key("unknown") is None


def test_a_version_gate_is_silent_when_the_profile_has_no_version(tmp_path: Path):
    dense = megatron_config(tmp_path, "--tensor-model-parallel-size 2 --sequence-parallel")
    assert conflicting("feature.mg-ascend-mc2", ctx(dense)) == []
    # the requirement is still said: in the risk the user reads
    assert "CANN 8.0.RC2" in feature("feature.mg-ascend-mc2").effect.risk


def _without_cann_version(prof: Path) -> Path:
    for info in prof.rglob("profiler_info_*.json"):
        data = json.loads(info.read_text())
        del data["cann_version"]
        info.write_text(json.dumps(data))
    return prof


def test_a_version_gate_the_profile_cannot_check_is_a_note(tmp_path: Path):
    prof = _without_cann_version(profile(tmp_path, "tp-allreduce"))
    run = megatron_suggest(prof, script(tmp_path, "--sequence-parallel", tp=2))
    assert run.suggestion.recommendation is not None
    assert run.suggestion.recommendation.feature == "feature.mg-ascend-mc2"
    [version] = [n for n in run.notes if "profile.cann_version" in n]
    assert version.startswith(
        "not checked for feature.mg-ascend-mc2: MC2 needs CANN 8.0.RC2 or later"
    )
    # a note in the structured output, not risk text
    payload = json.loads(suggestion_json(run.suggestion, run.notes))
    assert version in payload["notes"]
    assert "profile.cann_version" not in payload["recommendation"]["risk"]
    assert f"note: {version}" in suggestion_text(run.suggestion, run.notes)


def test_a_recorded_version_leaves_no_note(tmp_path: Path):
    run = megatron_suggest(
        profile(tmp_path, "tp-allreduce"), script(tmp_path, "--sequence-parallel", tp=2)
    )
    assert run.facts.value("profile.cann_version") == "8.2.RC1"
    assert not [n for n in run.notes if "cann_version" in n]


# ---------------------------------------------------------------- references


INTERNAL = ("domain/", "seeds/", "real/", "README.md", "KNOWLEDGE", "megatron-backend.md")
OWN = "advisor's own choice"


def _rule_files() -> list[Path]:
    return sorted(p for p in rules_dir().rglob("*.yaml") if p.parent != rules_dir())


@pytest.mark.parametrize("rule_id", sorted(RULES.rules))
def test_every_rule_cites_a_public_upstream_source(rule_id: str):
    rule = RULES.rules[rule_id]
    assert rule.references, rule_id
    for ref in rule.references:
        assert not any(mark in ref.source for mark in INTERNAL), (rule_id, ref.source)


@pytest.mark.parametrize("rule_id", sorted(RULES.rules))
def test_every_threshold_cites_upstream_or_says_it_is_advisors_own(rule_id: str):
    rule = RULES.rules[rule_id]
    if not rule.params and not isinstance(rule, SymptomRule):
        return
    text = " ".join(f"{r.source} {r.section}" for r in rule.references)
    assert OWN in text or "threshold" in text, (rule_id, text)


# ---------------------------------------------------------------- upstream levers (section 3)


def test_lazy_fusion_needs_the_task_queue():
    assert unmet("feature.torch-npu-lazy-fusion", ctx(env={"TASK_QUEUE_ENABLE": "0"}))
    assert unmet("feature.torch-npu-lazy-fusion", ctx(env={})) == []  # default 1
    assert unmet("feature.torch-npu-lazy-fusion", ctx(env={"TASK_QUEUE_ENABLE": "2"})) == []


def test_lazy_reclaim_keeps_the_expandable_segments_already_set():
    from advisor.engine.changes import abstract_ops

    rule = feature("feature.multi-stream-lazy-reclaim")
    ops = abstract_ops(rule, ctx(env={"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True"}))
    assert [op.value for op in ops] == ["expandable_segments:True,multi_stream_lazy_reclaim:True"]
    for unset in ({}, {"PYTORCH_NPU_ALLOC_CONF": ""}):  # "": recorded by torch_npu as unset
        ops = abstract_ops(rule, ctx(env=unset))
        assert [op.value for op in ops] == ["multi_stream_lazy_reclaim:True"]
        assert unmet(rule.id, ctx(env=unset)) == []
    other = {"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True,page_size:1g"}
    assert unmet("feature.multi-stream-lazy-reclaim", ctx(env=other))
    both = {"PYTORCH_ALLOC_CONF": "expandable_segments:True"}
    assert conflicting("feature.multi-stream-lazy-reclaim", ctx(env=both))


def test_p2p_buffer_only_for_pipeline_jobs(tmp_path: Path):
    assert unmet("feature.p2p-hccl-buffsize", ctx(megatron_config(tmp_path, "--lr 1e-5")))
    piped = megatron_config(tmp_path, "--pipeline-model-parallel-size 2 --num-layers 8")
    assert unmet("feature.p2p-hccl-buffsize", ctx(piped)) == []


def test_internal_format_advice_fires_on_hot_transdata():
    rule = feature("feature.internal-format-off")
    hot = {"ops.top": [{"type": "TransData", "share": 0.2}, {"type": "MatMulV2"}]}
    cold = {"ops.top": [{"type": "MatMulV2"}]}
    gate = rule.addresses[0].when
    assert evaluate(gate, ctx(facts=hot)).is_true
    assert not evaluate(gate, ctx(facts=cold)).is_true


def test_fb_overlap_prerequisites_from_the_validator(tmp_path: Path):
    base = (
        "--num-experts 8 --expert-model-parallel-size 4 --moe-grouped-gemm "
        "--moe-token-dispatcher-type alltoall --moe-alltoall-overlap-comm"
    )
    assert unmet("feature.mg-moe-fb-overlap", ctx(megatron_config(tmp_path, base))) == []
    seq = base.replace("alltoall --", "alltoall_seq --")
    assert unmet("feature.mg-moe-fb-overlap", ctx(megatron_config(tmp_path, seq)))
    grad = megatron_config(tmp_path, f"{base} --overlap-grad-reduce")
    assert conflicting("feature.mg-moe-fb-overlap", ctx(grad))
    piped = megatron_config(tmp_path, f"{base} --pipeline-model-parallel-size 2 --num-layers 8")
    assert unmet("feature.mg-moe-fb-overlap", ctx(piped))


def test_fb_overlap_replaces_the_alltoall_overlap_in_the_script(tmp_path: Path):
    from advisor.dialects.megatron.edit import megatron_changes
    from advisor.dialects.megatron.script import read_megatron
    from advisor.engine.changes import abstract_ops

    path = tmp_path / "pretrain.sh"
    path.write_text(
        megatron_script(
            "--num-experts 8 --expert-model-parallel-size 4 --moe-grouped-gemm "
            "--moe-token-dispatcher-type alltoall --moe-alltoall-overlap-comm"
        )
    )
    doc = load_document(path)
    ops = abstract_ops(feature("feature.mg-moe-fb-overlap"), ctx(doc.config))
    text, _ = megatron_changes(doc.megatron, doc.layout, list(ops))
    args = read_megatron(path, text).args
    assert args.get("moe-fb-overlap") is True and "moe-alltoall-overlap-comm" not in args


def test_zero_memory_level_follows_the_overlap(tmp_path: Path):
    from advisor.engine.changes import abstract_ops

    rule = feature("feature.mg-moe-zero-memory")
    overlap = megatron_config(tmp_path, "--moe-alltoall-overlap-comm")
    assert [op.value for op in abstract_ops(rule, ctx(overlap))] == ["level1"]
    fb = megatron_config(tmp_path, "--moe-fb-overlap")
    assert [op.value for op in abstract_ops(rule, ctx(fb))] == ["level0"]
    assert unmet("feature.mg-moe-zero-memory", ctx(megatron_config(tmp_path, "--lr 1e-5")))


def test_tp_extend_ep_only_for_alltoall_seq_with_tp(tmp_path: Path):
    flags = (
        "--num-experts 8 --expert-model-parallel-size 2 --tensor-model-parallel-size 2 "
        "--moe-grouped-gemm --moe-permutation-async-comm --moe-token-dispatcher-type alltoall_seq"
    )
    assert unmet("feature.mg-moe-tp-extend-ep", ctx(megatron_config(tmp_path, flags))) == []
    plain = megatron_config(tmp_path, flags.replace("alltoall_seq", "alltoall"))
    assert unmet("feature.mg-moe-tp-extend-ep", ctx(plain))


def test_partial_recompute_respects_full_recompute_method(tmp_path: Path):
    full = megatron_config(tmp_path, "--recompute-granularity full --recompute-method uniform")
    assert unmet("feature.mg-recompute-activation-function", ctx(full))
    block = megatron_config(tmp_path, "--recompute-granularity full --recompute-method block")
    assert unmet("feature.mg-recompute-activation-function", ctx(block)) == []
    sp = megatron_config(tmp_path, "--tensor-model-parallel-size 2 --sequence-parallel")
    assert unmet("feature.mg-recompute-norm", ctx(sp))


def test_param_gather_with_optimizer_step_needs_vpp_and_torch_checkpoints(tmp_path: Path):
    base = "--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather"
    rule = "feature.mg-overlap-param-gather-with-optimizer-step"
    assert unmet(rule, ctx(megatron_config(tmp_path, base)))
    vpp = (
        f"{base} --pipeline-model-parallel-size 2 --num-layers 8 "
        "--num-layers-per-virtual-pipeline-stage 2 --ckpt-format torch"
    )
    assert unmet(rule, ctx(megatron_config(tmp_path, vpp))) == []


def test_model_specific_fusion_is_validated_by_model_id():
    from advisor.engine.changes import abstract_ops

    rule = feature("feature.model-specific-fusion")
    assert unmet(rule.id, ctx({"model": {"model_id": "qwen3_moe"}}))
    v4 = abstract_ops(rule, ctx({"model": {"model_id": "deepseek_v4"}}))
    assert [(op.path, op.value) for op in v4] == [("optimization.use_sparse_flash_attn", True)]
    nxt = abstract_ops(rule, ctx({"model": {"model_id": "qwen3_next"}}))
    assert [(op.path, op.value) for op in nxt] == [("optimization.use_flash_gdn", True)]


@pytest.mark.parametrize(
    ("rule_id", "config", "opens"),
    [
        ("feature.chunk-batch", {"training": {"per_device_train_batch_size": 4}}, True),
        ("feature.chunk-batch", {"training": {"per_device_train_batch_size": 1}}, False),
        ("feature.fused-adamw", {"training": {"optimizer": "adamw"}}, True),
        ("feature.fused-adamw", {"training": {"optimizer": "muon"}}, False),
        ("feature.mf-comm-recompute", {"parallel": {"enable_parallel_optimizer": True}}, True),
        ("feature.mf-comm-recompute", {"parallel": {"enable_parallel_optimizer": False}}, False),
    ],
)
def test_config_levers_open_where_upstream_accepts_them(rule_id: str, config, opens: bool):
    assert (unmet(rule_id, ctx(config)) == []) is opens


def test_keeping_params_after_forward_is_proposed_for_exposed_allgather(tmp_path: Path):
    from tests.test_suggest import make_job
    from tests.test_suggest import suggest as fsdp2_suggest

    extra = "  num_to_forward_prefetch: 2\n  num_to_backward_prefetch: 2\n  reduce_dtype: bf16\n"
    job = make_job(tmp_path, "comm-bound", model_id="qwen3", parallel_extra=extra)
    run = fsdp2_suggest(*job)
    reasons = {r.feature: rejection(r) for r in run.suggestion.rejected}
    rec = run.suggestion.recommendation
    chosen = rec.feature if rec else None
    assert chosen == "feature.fsdp-keep-params-after-forward" or (
        "feature.fsdp-keep-params-after-forward" in reasons
    ), (chosen, reasons)


@pytest.mark.parametrize(
    ("rule_id", "name"),
    [
        ("feature.aclnn-cache-limit", "ACLNN_CACHE_LIMIT"),
        ("feature.hccl-buffsize", "HCCL_BUFFSIZE"),
        ("feature.p2p-hccl-buffsize", "P2P_HCCL_BUFFSIZE"),
    ],
)
def test_a_variable_recorded_as_unset_is_not_applied(rule_id: str, name: str):
    from advisor.engine.changes import is_applied

    # the buffer counts as sized only against the largest collective it must hold
    largest = {"comm.largest_collective_mb": 144.0}
    assert not is_applied(feature(rule_id), ctx(env={name: ""}, facts=largest))
    value = "0" if "P2P" in name else "400"
    assert is_applied(feature(rule_id), ctx(env={name: value}, facts=largest))


def test_hccl_buffsize_is_proposed_only_for_a_collective_larger_than_the_buffer():
    """CANN: a collective whose data volume exceeds HCCL_BUFFSIZE (default 200 MB) may slow
    down. The trigger compares the database export's largest collective with the launch's value,
    200 when unset; without the volume (text export) or the launch it is unknown."""
    from advisor.engine.changes import is_applied
    from advisor.engine.conditions import Truth

    rule = feature("feature.hccl-buffsize")
    gate = rule.requires[0].condition
    big, small = {"comm.largest_collective_mb": 384.0}, {"comm.largest_collective_mb": 144.0}
    assert gate is not None
    assert gate.evaluate(ctx(env={}, facts=big)).truth is Truth.TRUE  # above the default 200
    assert gate.evaluate(ctx(env={}, facts=small)).truth is Truth.FALSE
    assert gate.evaluate(ctx(env={"HCCL_BUFFSIZE": "100"}, facts=small)).truth is Truth.TRUE
    assert gate.evaluate(ctx(env={"HCCL_BUFFSIZE": "400"}, facts=big)).truth is Truth.FALSE
    unknown = gate.evaluate(ctx(env={}))
    assert unknown.truth is Truth.UNKNOWN
    assert unknown.missing == ("fact:comm.largest_collective_mb",)
    no_launch = gate.evaluate(Context(facts=big, config={}, env=None))
    assert no_launch.missing == ("env:HCCL_BUFFSIZE",)
    # the profile's recorded variables alone (torch_npu does not record HCCL_BUFFSIZE): unknown
    recorded = {"ACLNN_CACHE_LIMIT": ""}
    only_recorded = gate.evaluate(Context(facts=big, config={}, env=recorded, env_ran=recorded))
    assert only_recorded.missing == ("env:HCCL_BUFFSIZE",)
    # set but below the largest collective: not yet applied
    assert not is_applied(rule, ctx(env={"HCCL_BUFFSIZE": "100"}, facts=small))


@pytest.mark.parametrize("model", ["minimax_m27", "step35", "mamba3", "longcat_flash_ngram"])
def test_w3_context_parallelism_on_such_a_model_is_a_check_error(tmp_path: Path, model: str):
    path = tmp_path / "config.yaml"
    path.write_text(f"model:\n  model_id: {model}\nparallel:\n  cp_size: 2\n  cp_type: ulysses\n")
    found = {f.rule_id: f.severity.value for f in run_check(RULES, configs=[path]).findings}
    assert found.get("policy.cp-unsupported-model") == "error"
