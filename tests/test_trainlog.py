"""Training log lines of the three backends, interleaved, rotated, cut and fuzzed."""

from __future__ import annotations

import contextlib
import random
from pathlib import Path

import pytest

from advisor.app.pipeline import log_facts
from advisor.model import InputError
from advisor.parsers.trainlog.log import parse_line, read_logs

FSDP2 = (
    "INFO [2026-06-22 19:28:41] >>  iteration        2/    2000 | consumed samples:         16 | "
    "consumed tokens:      65536 | elapsed time per iteration (ms): 1879.90 | learning rate: 9.999978E-06 | "
    "global batch size:     8 | lm loss: 1.232217E+00 | grad norm: 4.346 | max_memory_allocated(GB): 19.65 | "
    "max_memory_reserved(GB): 25.59 |"
)
MEGATRON = (
    "[2024-04-06 03:02:12] iteration       71/     100 | consumed samples:         9088 | elapsed time per "
    "iteration (ms): 5361.6 | throughput per GPU (TFLOP/s/GPU): 243.6 | learning rate: 1.420000E-05 | global "
    "batch size:   128 | lm loss: 1.818812E+00 | load_balancing_loss: 1.013377E+00 | loss scale: 1.0 | grad "
    "norm: 1.300 | num zeros: 0.0 | number of skipped iterations:   0 | number of nan iterations:   0 |"
)
MINDFORMERS = (
    "2025-04-07 15:34:29,173 - [mindformers/core/callback/callback.py:529] - INFO - { Epoch:[  1/  2], "
    "step:[    2/   19], loss: 10.633, per_step_time: 1752ms, lr: 1e-05, overflow cond: False, "
    "loss_scale: 1.0, global_norm: [1 508834], train_throughput_per_npu: 170.738T"
)


def fsdp2_line(
    i: int, ms: float, loss: float | str = 1.0, extra: str = "", grad: float = 4.0
) -> str:
    return (
        f"INFO [2026-06-22 19:28:41] >>  iteration {i:8d}/    2000 | consumed samples: {8 * i:10d} | consumed "
        f"tokens: {32768 * i:10d} | elapsed time per iteration (ms): {ms:.2f} | {extra}learning rate: "
        f"1.0E-05 | global batch size:     8 | lm loss: {loss} | grad norm: {grad} | "
        "max_memory_allocated(GB): 19.65 | max_memory_reserved(GB): 25.59 |"
    )


def test_real_lines_of_each_backend():
    it = parse_line(FSDP2, 1)
    assert it is not None and it.fmt == "fsdp2"
    assert (it.number, it.total, it.step_ms, it.loss, it.grad_norm) == (
        2,
        2000,
        1879.90,
        1.232217,
        4.346,
    )
    assert (it.allocated_gb, it.reserved_gb) == (19.65, 25.59)
    mg = parse_line(MEGATRON, 1)
    assert mg is not None and mg.fmt == "megatron"
    assert (mg.number, mg.step_ms, mg.tflops_per_device, mg.loss, mg.skipped, mg.nan) == (
        71,
        5361.6,
        243.6,
        1.818812,
        0,
        0,
    )
    mf = parse_line(MINDFORMERS, 1)
    assert mf is not None and mf.fmt == "mindformers"
    assert (mf.number, mf.total, mf.step_ms, mf.loss, mf.tflops_per_device) == (
        2,
        19,
        1752.0,
        10.633,
        170.738,
    )


def test_optional_segments_tokens_and_mfu():
    it = parse_line(fsdp2_line(5, 1800.0, extra="tokens/s: 36408.9 | mfu: 31.20 | "), 1)
    assert it is not None and it.tokens_per_s == 36408.9 and it.mfu == 31.20


def test_steady_median_drops_warmup_and_checkpoint_outliers(tmp_path: Path):
    log = tmp_path / "train.log"
    times = [10520.0] + [1800.0 + (i % 5) for i in range(2, 40)] + [9000.0] + [1802.0] * 5
    lines = ["starting...", "[rank0]: some warning"]
    lines += [
        fsdp2_line(i + 1, t, extra="tokens/s: 36000.0 | mfu: 30.00 | ") for i, t in enumerate(times)
    ]
    log.write_text(
        "\n".join(lines) + "\n" + fsdp2_line(len(times) + 1, 1800.0)[:120]
    )  # cut mid-line
    facts = log_facts([log])
    assert facts.value("log.step_time_ms") == pytest.approx(1802.0)
    assert facts.value("log.step_time_mad_ms") == pytest.approx(1.0)
    note = facts.get("log.step_time_ms").note
    assert "warm-up 1 dropped" in note and "outliers 40 dropped" in note
    assert facts.value("log.mfu") == pytest.approx(0.30)
    assert facts.value("log.tokens_per_s") == 36000.0
    assert facts.value("log.memory_reserved_peak_bytes") == int(25.59 * 1024**3)
    assert facts.value("log.iterations") == len(times) + 1


def test_rotated_logs_and_convergence_facts(tmp_path: Path):
    first, second = tmp_path / "train.log.1", tmp_path / "train.log"
    first.write_text(
        "\n".join(fsdp2_line(i, 1800.0, loss=2.0 - i * 0.01) for i in range(1, 11)) + "\n"
    )
    rows = [fsdp2_line(i, 1800.0, loss=2.0 - i * 0.01) for i in range(11, 20)]
    rows.append(fsdp2_line(20, 1800.0, loss="nan", grad=80.0))
    second.write_text("\n".join(rows) + "\n")
    facts = log_facts([first, second])
    assert facts.value("log.iterations") == 20
    assert facts.value("log.nan_iterations") == 1
    assert facts.value("log.grad_norm_spikes") == 1
    curve = facts.value("log.loss")
    assert curve[0] == [1, pytest.approx(1.99)] and curve[-1] == [20, None]


def test_megatron_counts_skipped_and_nan(tmp_path: Path):
    log = tmp_path / "mg.log"
    lines = [
        MEGATRON.replace("71/", f"{i}/").replace(
            "skipped iterations:   0", f"skipped iterations:   {i % 2}"
        )
        for i in range(60, 70)
    ]
    log.write_text("\n".join(lines) + "\n")
    facts = log_facts([log])
    assert facts.value("log.skipped_iterations") == 5
    assert facts.value("log.tflops_per_device") == 243.6


def test_no_iteration_lines_is_an_input_error(tmp_path: Path):
    log = tmp_path / "empty.log"
    log.write_text("hello\nworld\n")
    with pytest.raises(InputError, match="no training iteration lines"):
        read_logs([log])


def test_fuzzed_and_truncated_logs_do_not_crash(tmp_path: Path):
    rng = random.Random(7)
    base = "\n".join([FSDP2, MEGATRON, MINDFORMERS, fsdp2_line(3, 1700.0)])
    alphabet = "|:/ 0123456789.eE-+naif\n[]{},"
    for case in range(300):
        text = list(base)
        for _ in range(rng.randint(1, 30)):
            pos = rng.randrange(len(text))
            action = rng.random()
            if action < 0.4:
                text[pos] = rng.choice(alphabet)
            elif action < 0.7:
                del text[pos]
            else:
                text.insert(pos, rng.choice(alphabet))
        cut = rng.randint(0, len(text))
        for number, line in enumerate("".join(text[:cut]).splitlines(), start=1):
            it = parse_line(line, number)  # must never raise
            assert it is None or it.number >= 0
        path = tmp_path / f"f{case}.log"
        path.write_text("".join(text[:cut]))
        with contextlib.suppress(InputError):
            log_facts([path])
