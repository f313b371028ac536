"""suggest on Megatron-backend scripts: each mg-* feature from a generated profile that shows its
bottleneck, the edit written into the script, and the loop through compare."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.app.compare import Side, run_compare
from advisor.app.job import JobOptions
from advisor.app.suggest import SuggestOptions, run_suggest
from advisor.dialects.megatron.script import read_megatron
from advisor.edit.writer import write_changes, write_patch
from advisor.engine.compare import Verdict
from advisor.model import InputError
from tests.synth import PRESETS, write_pipeline, write_profile

BASE = """#!/bin/bash
export CUDA_DEVICE_MAX_CONNECTIONS=1
export TASK_QUEUE_ENABLE=2
export CPU_AFFINITY_CONF=1

NPUS_PER_NODE={npus}
NNODES=1
TP={tp}
PP={pp}
MBS=2
GBS=64

DISTRIBUTED_ARGS="
    --nproc_per_node $NPUS_PER_NODE \\
    --nnodes $NNODES
"

GPT_ARGS="
    --num-layers 4 \\
    --hidden-size 4096 \\
    --num-attention-heads 32 \\
    --normalization RMSNorm \\
    --swiglu \\
    --position-embedding-type rope \\
    {dtype}{extra}
"

MODEL_PARALLEL_ARGS="
    --tensor-model-parallel-size ${{TP}} \\
    --pipeline-model-parallel-size ${{PP}}
"

TRAIN_ARGS="
    --micro-batch-size ${{MBS}} \\
    --global-batch-size ${{GBS}} \\
    --lr 1e-5
"

torchrun $DISTRIBUTED_ARGS pretrain_gpt.py \\
    $GPT_ARGS \\
    $MODEL_PARALLEL_ARGS \\
    $TRAIN_ARGS \\
    --save /ckpt
"""
MOE = ["--num-experts 8", "--moe-router-topk 2", "--expert-model-parallel-size 8"]


def script(
    tmp_path: Path, *flags: str, npus: int = 8, tp: int = 1, pp: int = 1, dtype: str = "--bf16"
) -> Path:
    extra = "".join(f" \\\n    {f}" for f in flags)
    path = tmp_path / "pretrain_test.sh"
    path.write_text(BASE.format(npus=npus, tp=tp, pp=pp, dtype=dtype, extra=extra))
    return path


def profile(tmp_path: Path, preset: str, name: str = "prof", **changes: object) -> Path:
    write_profile(tmp_path / name, PRESETS[preset].with_(**{"steps": 4, "layers": 2, **changes}))
    return tmp_path / name


def suggest(prof: Path, config: Path, ledger: Path | None = None):
    options = SuggestOptions(ledger=ledger) if ledger else SuggestOptions(use_ledger=False)
    # the device says how much memory the generated profiles' peaks leave (the text export
    # records no device)
    return run_suggest(JobOptions(profile=prof, config=config, device="910B"), options=options)


CASES = [
    # (preset, profile changes, script flags, script knobs, feature, flag written)
    ("ddp-allreduce", {}, [], {}, "feature.mg-distributed-optimizer", "use-distributed-optimizer"),
    (
        "ddp-allreduce",
        {"exposed_comm": "reducescatter"},
        ["--use-distributed-optimizer"],
        {},
        "feature.mg-overlap-grad-reduce",
        "overlap-grad-reduce",
    ),
    (
        "comm-bound",
        {},
        ["--use-distributed-optimizer", "--overlap-grad-reduce"],
        {},
        "feature.mg-overlap-param-gather",
        "overlap-param-gather",
    ),
    ("tp-allreduce", {}, [], {"tp": 2}, "feature.mg-sequence-parallel", "sequence-parallel"),
    (
        "tp-allreduce",
        {},
        ["--sequence-parallel"],
        {"tp": 2},
        "feature.mg-ascend-mc2",
        "use-ascend-mc2",
    ),
    ("moe-comm-bound", {}, MOE, {}, "feature.mg-moe-grouped-gemm", "moe-grouped-gemm"),
    (
        "moe-comm-bound",
        {},
        [*MOE, "--moe-grouped-gemm"],
        {},
        "feature.mg-moe-alltoall-dispatcher",
        "moe-permutation-async-comm",
    ),
    (
        "moe-comm-bound",
        {},
        [
            *MOE,
            "--moe-grouped-gemm",
            "--moe-token-dispatcher-type alltoall",
            "--moe-permutation-async-comm",
        ],
        {},
        "feature.mg-moe-alltoall-overlap",
        "moe-alltoall-overlap-comm",
    ),
    (
        "ddp-allreduce",
        {"exposed_comm": "batchsendrecv"},
        ["--context-parallel-size 2", "--use-flash-attn"],
        {},
        "feature.mg-cp-send-recv-overlap",
        "use-cp-send-recv-overlap",
    ),
    ("unfused-attention", {}, [], {}, "feature.mg-flash-attn", "use-flash-attn"),
    ("small-ops", {}, ["--use-flash-attn"], {}, "feature.mg-fused-rmsnorm", "use-fused-rmsnorm"),
    (
        "small-ops",
        {},
        ["--use-flash-attn", "--use-fused-rmsnorm"],
        {},
        "feature.mg-fused-swiglu",
        "use-fused-swiglu",
    ),
    (
        "small-ops",
        {},
        ["--use-flash-attn", "--use-fused-rmsnorm", "--use-fused-swiglu"],
        {},
        "feature.mg-fused-rope",
        "use-fused-rotary-pos-emb",
    ),
    (
        "memory-pressure-static",
        {},
        [],
        {},
        "feature.mg-distributed-optimizer",
        "use-distributed-optimizer",
    ),
    (
        "memory-pressure-static",
        {},
        ["--use-distributed-optimizer"],
        {},
        "feature.mg-reuse-fp32-param",
        "reuse-fp32-param",
    ),
    (
        # the logits' memory first: ChunkLoss heads the dynamic footprint's remedies
        "memory-pressure",
        {},
        ["--use-distributed-optimizer", "--reuse-fp32-param", "--use-flash-attn"],
        {},
        "feature.mg-chunk-loss",
        "loss-compute-mode",
    ),
    (
        "memory-pressure",
        {},
        [
            "--use-distributed-optimizer",
            "--reuse-fp32-param",
            "--use-flash-attn",
            "--loss-compute-mode chunk",
        ],
        {},
        "feature.mg-recompute-activation-function",
        "recompute-activation-function",
    ),
    (
        "memory-pressure",
        {},
        [
            "--use-distributed-optimizer",
            "--reuse-fp32-param",
            "--use-flash-attn",
            "--loss-compute-mode chunk",
            "--recompute-activation-function",
        ],
        {},
        "feature.mg-recompute-norm",
        "recompute-norm",
    ),
    (
        "memory-pressure",
        {},
        [
            "--use-distributed-optimizer",
            "--reuse-fp32-param",
            "--use-flash-attn",
            "--loss-compute-mode chunk",
            "--recompute-activation-function",
            "--recompute-norm",
        ],
        {},
        "feature.mg-swap-attention",
        "swap-attention",
    ),
    (
        "memory-pressure",
        {},
        [
            "--use-distributed-optimizer",
            "--reuse-fp32-param",
            "--use-flash-attn",
            "--loss-compute-mode chunk",
            "--recompute-activation-function",
            "--recompute-norm",
            "--swap-attention",
        ],
        {},
        "feature.mg-selective-recompute",
        "recompute-granularity",
    ),
    (
        "memory-pressure-static",
        {},
        [
            "--use-distributed-optimizer",
            "--use-flash-attn",
            "--swap-attention",
            "--recompute-granularity full",
        ],
        {"dtype": "--fp16"},  # reuse-fp32-param, the alternative, is for bf16 only
        "feature.mg-swap-optimizer",
        "swap-optimizer",
    ),
    (
        "healthy",
        {"host_pause_us": 6000.0, "steps": 7},
        [],
        {},
        "feature.mg-manual-gc",
        "manual-gc",
    ),
]


@pytest.mark.parametrize(
    ("preset", "changes", "flags", "knobs", "feature", "written"),
    CASES,
    ids=[f"{c[4].removeprefix('feature.')}-{i}" for i, c in enumerate(CASES)],
)
def test_each_megatron_feature_from_its_profile(
    tmp_path: Path, preset, changes, flags, knobs, feature, written
):
    config = script(tmp_path, *flags, **knobs)
    run = suggest(profile(tmp_path, preset, **changes), config)
    rec = run.suggestion.recommendation
    assert rec is not None, run.suggestion.reason
    assert rec.feature == feature, [(r.feature, r.code) for r in run.suggestion.rejected]
    before = read_megatron(config, config.read_text()).args
    write_changes(rec.patch.changes)  # what --write does, or the user for a review change
    after = read_megatron(config, config.read_text()).args
    assert written in after and after[written] != before.get(written)
    # nothing else moved
    others = {k: v for k, v in after.known_values().items() if k != written}
    expected = {k: v for k, v in before.known_values().items() if k != written}
    expected.update({k: v for k, v in others.items() if k not in expected})  # a second op's flag
    assert others == expected


def test_more_micro_batches_halves_the_knob_and_prints_the_new_bubble(tmp_path: Path):
    base = PRESETS["healthy"].with_(comm_overlapped_us=0.0, steps=4, layers=2)
    write_pipeline(tmp_path / "prof", base, stages=2, stage_factor=1.0, p2p_us=2000.0)
    config = script(tmp_path, npus=4, pp=2)
    rec = suggest(tmp_path / "prof", config).suggestion.recommendation
    assert rec is not None and rec.feature == "feature.mg-more-micro-batches"
    assert "-MBS=2\n+MBS=1\n" in rec.diff
    notes = " ".join(rec.patch.notes)
    # 4 ranks, PP 2: DP 2; GBS 64 / (MBS 2 x DP 2) = 16 micro-batches -> 32
    assert "micro-batches per step: 16 -> 32" in notes
    assert "5.9% -> 3.0%" in notes


def test_a_layout_change_says_whether_the_checkpoint_needs_converting(tmp_path: Path):
    from advisor.dialects.megatron.edit import megatron_changes
    from advisor.dialects.registry import load_document
    from advisor.model import PatchOp

    config = script(tmp_path)
    doc = load_document(config)
    tp2 = [PatchOp("set", "args.tensor-model-parallel-size", 2)]
    _, notes = megatron_changes(doc.megatron, doc.layout, tp2)
    assert any("re-convert the checkpoint" in n for n in notes)
    assert any("data-parallel size: 8 -> 4" in n for n in notes)
    converting = script(tmp_path, "--enable-hf2mg-convert")
    converts = load_document(converting)
    _, notes = megatron_changes(converts.megatron, converts.layout, tp2)
    assert any("no re-conversion is needed" in n for n in notes)
    with pytest.raises(InputError, match="not divisible"):
        megatron_changes(
            doc.megatron, doc.layout, [PatchOp("set", "args.tensor-model-parallel-size", 3)]
        )


def test_the_loop_suggest_write_profile_compare_next(tmp_path: Path):
    config, ledger = script(tmp_path), tmp_path / "ledger.jsonl"
    base = profile(tmp_path, "ddp-allreduce", name="base", jitter=0.01, steps=6)
    first = suggest(base, config, ledger).suggestion.recommendation
    assert first.feature == "feature.mg-distributed-optimizer"
    assert first.diff and "+    --use-distributed-optimizer \\" in first.diff
    write_changes(first.patch.changes)  # a review change: applied by hand
    # the next run: the all-reduce became a reduce-scatter, still after the backward pass
    write_profile(
        tmp_path / "cand",
        PRESETS["ddp-allreduce"].with_(
            steps=6, layers=2, jitter=0.01, exposed_comm="reducescatter", comm_exposed_us=1600.0
        ),
    )
    result, _ = run_compare(Side(base), Side(tmp_path / "cand"), ledger_path=ledger)
    assert result.verdict is Verdict.keep, result.reason
    second = suggest(tmp_path / "cand", config, ledger).suggestion.recommendation
    assert second.feature == "feature.mg-overlap-grad-reduce"
    events = [json.loads(line)["event"] for line in ledger.read_text().splitlines()]
    assert events == ["proposed", "kept", "proposed"]


def test_profile_of_another_job_is_refused(tmp_path: Path):
    config = script(tmp_path, npus=16)
    with pytest.raises(InputError, match="world size 8"):
        suggest(profile(tmp_path, "ddp-allreduce"), config)


def test_environment_changes_go_into_the_megatron_script(tmp_path: Path):
    config = script(tmp_path)
    text = config.read_text().replace("export TASK_QUEUE_ENABLE=2\n", "")
    config.write_text(text)
    env = {**PRESETS["host-bound"].env, "CPU_AFFINITY_CONF": "1"}  # as the script exports
    rec = suggest(profile(tmp_path, "host-bound", env=env), config).suggestion.recommendation
    assert rec is not None and rec.feature == "feature.task-queue-level2"
    assert "+export TASK_QUEUE_ENABLE=2\n" in rec.diff
    write_patch(rec.patch)  # a safe change: what --write does
    assert (
        read_megatron(config, config.read_text()).args.known_values()
        == read_megatron(config, text).args.known_values()
    )


def test_cli_detects_dialects_refuses_other_files_and_writes(tmp_path: Path):
    from typer.testing import CliRunner

    from advisor.cli import app
    from tests.test_bad_input import run as run_cli

    runner = CliRunner()
    config = script(tmp_path)
    (tmp_path / "ci.yaml").write_text("on: [push]\njobs: {}\n")
    (tmp_path / "env.sh").write_text("export HCCL_CONNECT_TIMEOUT=1800\n")
    checked = runner.invoke(
        app, ["check", str(config), str(tmp_path / "ci.yaml"), str(tmp_path / "env.sh")]
    )
    assert checked.exit_code == 0, checked.output
    assert "(1 MindSpeed-LLM Megatron-backend script)" in checked.output
    assert checked.output.count("skipped, not a training config") == 2
    prof = profile(tmp_path, "unfused-attention")
    refused = run_cli("suggest", str(prof), str(tmp_path / "ci.yaml"), "--no-ledger")
    assert refused.returncode == 2 and "not a training config" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and not refused.stdout
    written = runner.invoke(app, ["suggest", str(prof), str(config), "--write", "--no-ledger"])
    assert written.exit_code == 0, written.output
    assert read_megatron(config, config.read_text()).args["use-flash-attn"] is True
