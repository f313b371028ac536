"""Parameter counts, FLOPs, MFU and memory estimates against hand arithmetic."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.cli import app
from advisor.facts.estimate import (
    Training,
    estimate,
    load_model_config,
    parameter_counts,
    peak_tflops,
)
from advisor.model import InputError

MODELS = Path(__file__).resolve().parents[1] / "examples" / "models"
runner = CliRunner()


def test_qwen3_8b_dense_parameter_count():
    total, active = parameter_counts(load_model_config(MODELS / "qwen3-8b.json"))
    h, layers, vocab = 4096, 36, 151936
    attention = h * 4096 + 2 * h * 1024 + 4096 * h  # q, k, v, o
    mlp = 3 * h * 12288
    by_hand = 2 * vocab * h + layers * (attention + mlp)
    assert total == pytest.approx(by_hand, rel=0.01)
    assert total == pytest.approx(8.19e9, rel=0.01)  # the published 8.2B
    assert active == total


def test_qwen3_30b_a3b_moe_parameter_counts():
    total, active = parameter_counts(load_model_config(MODELS / "qwen3-30b-a3b.json"))
    h, layers, vocab, experts, per_token, moe_i = 2048, 48, 151936, 128, 8, 768
    attention = h * 4096 + 2 * h * 512 + 4096 * h
    expert = 3 * h * moe_i
    by_hand_total = 2 * vocab * h + layers * (attention + experts * expert + h * experts)
    by_hand_active = 2 * vocab * h + layers * (attention + per_token * expert + h * experts)
    assert total == pytest.approx(by_hand_total, rel=0.01)
    assert active == pytest.approx(by_hand_active, rel=0.01)
    assert total == pytest.approx(30.5e9, rel=0.01) and active == pytest.approx(3.3e9, rel=0.03)


def test_flops_mfu_and_memory():
    shape = load_model_config(MODELS / "qwen3-8b.json")
    train = Training(
        seq=4096, micro_batch=1, grad_accum=8, world=8, fsdp=8, cp=1, ep=1, recompute=False
    )
    facts = estimate(shape, train, step_ms=2000.0, peak=354.0)
    total, active = parameter_counts(shape)
    flops = 6 * active + 12 * 4096 * 128 * 32 * 36
    assert facts.value("model.flops_per_token") == flops
    tokens = 1 * 8 * 8 * 4096
    assert facts.value("mfu.estimated") == pytest.approx(flops * tokens / 2.0 / 8 / 354e12)
    assert facts.value("memory.estimate.optimizer_bytes") == pytest.approx(total / 8 * 12, rel=1e-6)
    assert facts.value("memory.estimate.weights_bytes") == pytest.approx(total / 8 * 2, rel=1e-6)
    recompute = estimate(shape, Training(4096, 1, 8, 8, 8, 1, 1, True), None, None)
    assert (
        recompute.value("memory.estimate.activations_bytes")
        < facts.value("memory.estimate.activations_bytes") / 10
    )
    assert recompute.value("model.hardware_flops_per_token") > recompute.value(
        "model.flops_per_token"
    )


def test_device_table_and_unknown_device():
    assert peak_tflops("Ascend910B3")[0] == 354
    assert peak_tflops("H800")[0] == 989
    with pytest.raises(InputError, match="unknown device"):
        peak_tflops("abacus")


def test_estimate_command(tmp_path: Path):
    result = runner.invoke(
        app,
        [
            "estimate",
            "--model-config",
            str(MODELS / "qwen3-30b-a3b.json"),
            "--world",
            "8",
            "--step-ms",
            "5000",
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert '"model.active_params"' in result.output and '"mfu.estimated"' in result.output
    bad = tmp_path / "bad.json"
    bad.write_text('{"hidden_size": 1}')
    broken = runner.invoke(app, ["estimate", "--model-config", str(bad)])
    assert broken.exit_code != 0


def test_memory_bottleneck_names_the_dominant_part():
    from advisor.app.diagnose import run_diagnose
    from advisor.app.job import JobOptions

    examples = MODELS.parent
    run = run_diagnose(
        JobOptions(
            profile=examples / "profiles" / "fragmentation",
            config=examples / "fsdp2" / "config.yaml",
            model_config=MODELS / "qwen3-30b-a3b.json",
        )
    )
    memory = run.diagnosis.main
    assert memory is not None and memory.id == "bottleneck.memory"
    dominant = run.facts.value("memory.estimate.dominant")
    assert dominant == "optimizer"  # 30.5B parameters x 12 bytes / 8 ranks dwarfs one micro-batch
    # a bottleneck that claims no step time carries its rule's notes apart from its evidence
    assert f"Largest part of the per-rank estimate: {dominant}" in memory.notes


def test_estimate_prints_its_assumptions_and_whether_it_fits(tmp_path):
    from typer.testing import CliRunner

    from advisor.cli import app

    model = Path(__file__).resolve().parents[1] / "examples" / "models" / "qwen3-30b-a3b.json"
    result = CliRunner().invoke(app, ["estimate", "--model-config", str(model)])
    assert result.exit_code == 0, result.output
    assert "assumed (no --config given): parallel.fsdp_size = 1" in result.output
    # one device cannot hold a 30B model's states: it says how many devices can
    assert "910B: does not fit 85% of 64 GiB on 1 device: the resident part alone" in result.output
    assert "it fits on 16 devices fully sharded with recompute" in result.output
    config = tmp_path / "config.yaml"
    config.write_text(
        "data:\n  cutoff_len: 4096\ntraining:\n  per_device_train_batch_size: 1\n"
        "  gradient_accumulation_steps: 1\nparallel:\n  fsdp_size: 64\n  cp_size: 1\n"
        "  ep_size: 8\n  recompute: true\n"
    )
    fits = CliRunner().invoke(
        app, ["estimate", "--model-config", str(model), "--config", str(config)]
    )
    assert fits.exit_code == 0, fits.output
    assert "assumed" not in fits.output and "does not fit" not in fits.output


def test_the_layout_that_fits_keeps_the_parallel_arithmetic():
    from dataclasses import replace

    from advisor.facts.layout_fit import fitting_layout, layout_advice

    model = load_model_config(
        Path(__file__).resolve().parents[1] / "examples" / "models" / "qwen3-30b-a3b.json"
    )
    base = Training(4096, 1, 1, 24, 4, 1, 1, False)
    fit = fitting_layout(model, base, 54 * 2**30)
    assert fit is not None
    # sharding first: the smallest fsdp_size that divides 24 devices and fits
    assert fit.train.fsdp == 12 and fit.train.cp == 1 and not fit.train.recompute
    assert fit.total_bytes <= 54 * 2**30
    assert "fsdp_size 4 -> " in layout_advice(model, base, 64 * 2**30, 54 / 64)
    # a layout the devices cannot divide is never proposed
    odd = replace(base, world=6, fsdp=2)
    found = fitting_layout(model, odd, 54 * 2**30)
    assert found is None or 6 % found.train.fsdp == 0


def test_a_910b4_has_32_gb_and_no_public_peak(tmp_path: Path):
    from advisor.facts.estimate import device_memory_gib

    assert device_memory_gib("Ascend910B4") == 32
    assert device_memory_gib("Ascend910B3") == 64
    assert peak_tflops("910B4")[0] is None
    result = runner.invoke(
        app,
        [
            *("estimate", "--model-config", str(MODELS / "qwen3-8b.json"), "--world", "8"),
            *("--step-ms", "5000", "--device", "910B4"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "no MFU" in result.output and "--peak-tflops" in result.output
    assert "mfu.estimated" not in result.output.split("estimate", 1)[-1]


def test_an_mfu_above_100_percent_is_said_to_be_an_input_error():
    args = ["estimate", "--model-config", str(MODELS / "qwen3-8b.json"), "--world", "8"]
    fast = runner.invoke(app, [*args, "--step-ms", "1000", "--device", "910B"])
    assert "above 100%" in fast.output
    slow = runner.invoke(app, [*args, "--step-ms", "500000", "--device", "910B"])
    assert "above 100%" not in slow.output


def test_the_a3_mfu_of_a_step_is_the_910b_figure_within_15_percent():
    """A rank on an Atlas A3 is one die: the same step gives the same MFU within 15%."""
    from advisor.facts.estimate import estimate, load_model_config, training_from_config

    model = load_model_config(MODELS / "qwen3-8b.json")
    train = training_from_config(None, 8)
    mfu = {}
    for device in ("910B", "A3"):
        peak, source = peak_tflops(device)
        mfu[device] = estimate(model, train, 9000.0, peak, source).value("mfu.estimated")
    assert abs(mfu["A3"] / mfu["910B"] - 1) <= 0.15
