"""fp16 loss-scale trouble as a feature (seed 003: bf16 over fp16 where the device supports it):
the overflowed share of iterations from every log dialect that states it, the symptom, and the
switch to bf16 in each config dialect, gated on the device."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.app.job import JobOptions
from advisor.app.pipeline import log_facts
from advisor.app.suggest import SuggestOptions, run_suggest
from advisor.render.words import rejection
from tests.test_megatron_suggest import profile, script
from tests.test_upstream_rules import ctx, unmet


def megatron_log(path: Path, every: int = 30, bf16: bool = False) -> Path:
    """200 lines logged every 10 iterations; an overflow (one skipped iteration, the scale
    halved) every `every` iterations (none for a bf16 run, which logs no scale)."""
    lines, scale = [], 65536.0
    for i in range(10, 2010, 10):
        skipped = 0 if bf16 else int(i % every == 0)
        scale = max(1.0, scale / 2) if skipped else scale
        scale_text = "" if bf16 else f" loss scale: {scale} |"
        lines.append(
            f" [2026-01-01 10:00:00] iteration {i:>8}/    2000 | consumed samples: {i * 64} |"
            " elapsed time per iteration (ms): 1800.0 | learning rate: 1.0E-05 |"
            f" global batch size: 64 | lm loss: 7.5E+00 |{scale_text} grad norm: 2.0 |"
            f" number of skipped iterations: {skipped} | number of nan iterations: 0 |"
        )
    path.write_text("\n".join(lines) + "\n")
    return path


def mindformers_log(path: Path, every: int = 15) -> Path:
    lines, scale = [], 65536.0
    for i in range(1, 201):
        overflow = i % every == 0
        scale = scale / 2 if overflow else scale
        lines.append(
            "2026-01-01 10:00:00 - mindformers - INFO - { Epoch:[  1/  2], "
            f"step:[{i:>5}/  200], loss: 2.5, per_step_time: 1500ms, lr: 1e-05, "
            f"overflow cond: {overflow}, loss_scale: {scale}, global_norm: [1.5], "
            "train_throughput_per_npu: 100.5T}"
        )
    path.write_text("\n".join(lines) + "\n")
    return path


def fsdp2_log(path: Path, every: int = 20) -> Path:
    lines, scale = [], 65536.0
    for i in range(1, 201):
        scale = scale / 2 if i % every == 0 else scale
        lines.append(
            f"INFO [2026-06-22 19:28:41] >>  iteration {i:8d}/    2000 | consumed samples: "
            f"{8 * i:10d} | consumed tokens: {32768 * i:10d} | elapsed time per iteration (ms): "
            "1800.00 | learning rate: 1.0E-05 | global batch size:     8 | lm loss: 1.0 | "
            f"loss scale: {scale} | grad norm: 2.0 |"
        )
    path.write_text("\n".join(lines) + "\n")
    return path


def test_megatron_skipped_iterations_over_the_iterations_the_log_covers(tmp_path: Path) -> None:
    facts = log_facts([megatron_log(tmp_path / "train.log")])
    # a skip every 30 iterations over iterations 1-2000 (lines every 10 cover the 10 before)
    assert facts.value("log.skipped_iterations") == 66
    assert facts.value("log.overflow_ratio") == pytest.approx(66 / 2000)
    assert facts.value("log.loss_scale_drops") == 16  # 65536 -> 1 and no lower
    assert "65536 -> lowest 1 -> last 1" in (facts.get("log.loss_scale_drops") or ()).note


def test_mindformers_overflow_cond_counts_the_logged_steps(tmp_path: Path) -> None:
    facts = log_facts([mindformers_log(tmp_path / "mf.log")])
    assert facts.value("log.skipped_iterations") == 13
    assert facts.value("log.overflow_ratio") == pytest.approx(13 / 200)
    assert facts.value("log.loss_scale_drops") == 13


def test_a_log_with_only_the_scale_bounds_the_overflows_from_below(tmp_path: Path) -> None:
    facts = log_facts([fsdp2_log(tmp_path / "fsdp2.log")])
    assert facts.value("log.loss_scale_drops") == 10
    assert facts.value("log.overflow_ratio") == pytest.approx(10 / 200)
    assert "at least" in (facts.get("log.overflow_ratio") or ()).note
    assert facts.value("log.skipped_iterations") is None


def test_a_bf16_log_has_no_scale_and_no_overflow(tmp_path: Path) -> None:
    facts = log_facts([megatron_log(tmp_path / "train.log", bf16=True)])
    assert facts.value("log.overflow_ratio") == 0
    assert facts.value("log.loss_scale_drops") is None  # unknown, not zero: no scale logged


def _suggest(prof: Path, config: Path, log: Path, device: str | None = "910B", **kw: Path):
    options = JobOptions(profile=prof, config=config, logs=(log,), device=device, **kw)
    return run_suggest(options, options=SuggestOptions(use_ledger=False))


def test_megatron_fp16_with_overflows_switches_to_bf16(tmp_path: Path) -> None:
    run = _suggest(
        profile(tmp_path, "healthy", compute_dtype="DT_FLOAT16"),
        script(tmp_path, dtype="--fp16"),
        megatron_log(tmp_path / "train.log"),
    )
    rec = run.suggestion.recommendation
    assert rec is not None and rec.feature == "feature.mg-bf16"
    assert rec.diff is not None
    assert "+    --bf16" in rec.diff and "-    --fp16" in rec.diff


def test_fsdp2_fp16_with_a_falling_scale_switches_param_dtype(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    text = (Path("examples/fsdp2/config.yaml")).read_text()
    config.write_text(text.replace("parallel:\n", "parallel:\n  param_dtype: fp16\n", 1))
    run = _suggest(
        profile(tmp_path, "healthy", compute_dtype="DT_FLOAT16"),
        config,
        fsdp2_log(tmp_path / "fsdp2.log"),
        launch=Path("examples/fsdp2/run.sh"),
    )
    rec = run.suggestion.recommendation
    assert rec is not None and rec.feature == "feature.bf16-params"
    assert rec.diff is not None and "+  param_dtype: bf16" in rec.diff


def test_mindformers_float16_with_overflows_computes_in_bfloat16(tmp_path: Path) -> None:
    config = tmp_path / "mf.yaml"
    text = Path("examples/mindformers/config.yaml").read_text()
    config.write_text(
        text.replace("  model_config:\n", "  model_config:\n    compute_dtype: float16\n", 1)
    )
    run = _suggest(
        profile(tmp_path, "healthy", compute_dtype="DT_FLOAT16"),
        config,
        mindformers_log(tmp_path / "mf.log"),
    )
    rec = run.suggestion.recommendation
    assert rec is not None and rec.feature == "feature.mf-bf16-compute"
    assert rec.diff is not None and "+    compute_dtype: bfloat16" in rec.diff


def test_without_the_device_the_switch_is_undecided_not_proposed(tmp_path: Path) -> None:
    run = _suggest(
        profile(tmp_path, "healthy", compute_dtype="DT_FLOAT16"),
        script(tmp_path, dtype="--fp16"),
        megatron_log(tmp_path / "train.log"),
        device=None,
    )
    assert run.suggestion.recommendation is None
    reasons = {r.feature: rejection(r) for r in run.suggestion.rejected}
    assert "profile.device_bf16" in reasons["feature.mg-bf16"]


@pytest.mark.parametrize(
    "rule_id", ["feature.mg-bf16", "feature.bf16-params", "feature.mf-bf16-compute"]
)
def test_a_device_without_bf16_keeps_fp16(rule_id: str) -> None:
    reasons = unmet(rule_id, ctx(facts={"profile.device_bf16": False}))
    assert any("does not compute bf16" in r for r in reasons)


def test_a_bf16_run_gets_no_precision_change(tmp_path: Path) -> None:
    run = _suggest(
        profile(tmp_path, "healthy", compute_dtype="DT_FLOAT16"),
        script(tmp_path, dtype="--bf16"),
        megatron_log(tmp_path / "train.log"),  # skips without a bf16 cause: not the precision
    )
    rec = run.suggestion.recommendation
    assert rec is None or rec.feature != "feature.mg-bf16"


def test_a_working_scaler_is_no_symptom(tmp_path: Path) -> None:
    facts = log_facts([megatron_log(tmp_path / "train.log", every=1000)])
    assert facts.value("log.overflow_ratio") == pytest.approx(2 / 2000)  # below the 1% fine
