"""advisor watch watches training health, not only speed: grad-norm explosions, a collapsing
loss scale, skipped/NaN iterations and memory creeping up, from every log dialect; alerts as
lines or JSON lines, pushed to a hook, and --exit-on-alert for all of them."""

from __future__ import annotations

import json
from pathlib import Path

from advisor.app.health import Health
from advisor.parsers.trainlog.log import parse_line
from tests.cli_run import run_cli


def megatron_line(
    i: int,
    *,
    norm: float = 2.0,
    scale: float = 65536.0,
    skipped: int = 0,
    reserved: float | None = None,
) -> str:
    memory = f" max_memory_reserved(GB): {reserved} |" if reserved is not None else ""
    return (
        f" [2026-01-01 10:00:00] iteration {i:>8}/    1000 | consumed samples: {i * 64} |"
        f" elapsed time per iteration (ms): 1800.0 | learning rate: 1.0E-05 |"
        f" global batch size: 64 | lm loss: 7.5E+00 | loss scale: {scale} |"
        f" grad norm: {norm} | number of skipped iterations: {skipped} |"
        f" number of nan iterations: 0 |{memory}"
    )


def mindformers_line(i: int, norm: float) -> str:
    return (
        f"2026-01-01 10:00:00 - mindformers - INFO - {{ Epoch:[  1/  2], step:[{i:>5}/  100], "
        f"loss: 2.5, per_step_time: 1500ms, lr: 1e-05, overflow cond: False, "
        f"loss_scale: 1024.0, global_norm: [{norm}], train_throughput_per_npu: 100.5T}}"
    )


def kinds(lines: list[str]) -> list[str]:
    health = Health()
    out = []
    for n, text in enumerate(lines, start=1):
        it = parse_line(text, n)
        assert it is not None, text
        out += [alert.kind for alert in health.feed(it)]
    return out


def test_a_grad_norm_explosion_is_an_alert_against_the_run_s_own_median() -> None:
    steady = [megatron_line(i, norm=2.0 + 0.1 * (i % 3)) for i in range(1, 9)]
    assert kinds(steady) == []
    assert kinds([*steady, megatron_line(9, norm=40.0)]) == ["grad-norm-explosion"]
    # a rise the run has seen before is no explosion
    assert kinds([*steady, megatron_line(9, norm=4.0)]) == []


def test_the_mindformers_global_norm_is_watched_too() -> None:
    lines = [mindformers_line(i, 1.5) for i in range(1, 8)] + [mindformers_line(8, 30.0)]
    assert kinds(lines) == ["grad-norm-explosion"]


def test_a_loss_scale_halving_again_and_again_is_a_collapse() -> None:
    scales = [65536.0, 65536.0, 32768.0, 16384.0, 8192.0, 4096.0]
    lines = [megatron_line(i, scale=s) for i, s in enumerate(scales, start=1)]
    assert kinds(lines) == ["loss-scale-collapse"]  # once, at the third halving in a row
    # one overflow then recovery is the scaler working
    recovering = [65536.0, 32768.0, 65536.0, 32768.0, 65536.0]
    assert kinds([megatron_line(i, scale=s) for i, s in enumerate(recovering, 1)]) == []


def test_skipped_iterations_and_memory_creep() -> None:
    assert kinds([megatron_line(1), megatron_line(2, skipped=2)]) == ["skipped-iterations"]
    creeping = [megatron_line(i, reserved=50.0 + i) for i in range(1, 12)]
    assert kinds(creeping) == ["memory-creep"]
    flat = [megatron_line(i, reserved=50.0) for i in range(1, 12)]
    assert kinds(flat) == []


def test_cli_jsonl_hook_and_exit_on_alert(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    lines = [megatron_line(i) for i in range(1, 8)] + [megatron_line(8, norm=50.0)]
    log.write_text("\n".join(lines) + "\n")
    pushed = tmp_path / "pushed.json"
    ran = run_cli(
        "watch",
        str(log),
        "--idle-timeout",
        "0",
        "--format",
        "jsonl",
        "--on-alert",
        f"cat > {pushed}",
        "--exit-on-alert",
    )
    assert ran.exit_code == 1, ran.output
    alert = json.loads(ran.stdout.strip().splitlines()[-1])
    assert alert["kind"] == "grad-norm-explosion" and alert["iteration"] == 8
    assert json.loads(pushed.read_text())["kind"] == "grad-norm-explosion"
    text = run_cli("watch", str(log), "--idle-timeout", "0")
    assert "ALERT iteration 8: grad norm 50" in text.stdout
