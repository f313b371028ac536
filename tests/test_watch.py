"""watch: alerts on sustained slow steps and NaN loss, following a growing file."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from typer.testing import CliRunner

from advisor.app.watch import Watcher, watch
from advisor.cli import app
from advisor.parsers.trainlog.log import parse_line
from tests.test_trainlog import fsdp2_line

runner = CliRunner()


def feed(watcher: Watcher, times: list[float], loss: float | str = 1.0) -> list[str]:
    alerts = []
    for i, ms in enumerate(times, start=1):
        it = parse_line(fsdp2_line(i, ms, loss=loss), i)
        assert it is not None
        alerts += [str(alert) for alert in watcher.feed(it)]
    return alerts


def test_regression_needs_consecutive_slow_steps():
    watcher = Watcher(regression=1.2, consecutive=3)
    normal = [10000.0] + [1800.0] * 10
    assert feed(watcher, [*normal, 2500.0, 2500.0, 1800.0, 2500.0]) == []  # a blip is not an alert
    alerts = feed(Watcher(regression=1.2, consecutive=3), [*normal, 2500.0, 2600.0, 2700.0])
    assert (
        len(alerts) == 1
        and "1.2 x the steady median 1800.0 ms" in alerts[0]
        and "(12-14)" in alerts[0]
    )


def test_absolute_limit_and_nan():
    assert feed(Watcher(max_step_ms=2000.0, consecutive=2), [1900.0, 2100.0, 2200.0])[0].startswith(
        "ALERT iteration 3"
    )
    assert "loss is NaN" in feed(Watcher(regression=1.2), [1800.0], loss="nan")[0]


def test_follows_a_growing_file_and_exits_on_alert(tmp_path: Path):
    log = tmp_path / "train.log"
    log.write_text("\n".join(fsdp2_line(i, 1800.0) for i in range(1, 12)) + "\n")

    def grow() -> None:
        time.sleep(0.2)
        with log.open("a") as handle:
            for i in range(12, 16):
                handle.write(fsdp2_line(i, 4000.0) + "\n")
                handle.flush()
                time.sleep(0.05)

    thread = threading.Thread(target=grow)
    thread.start()
    seen: list[str] = []
    count = watch(
        log,
        Watcher(regression=1.5, consecutive=3),
        lambda alert: seen.append(str(alert)),
        poll=0.05,
        idle_timeout=3.0,
        stop_on_alert=True,
    )
    thread.join()
    assert count == 1 and "iteration 14" in seen[0]


def test_cli_exit_code_on_alert(tmp_path: Path):
    log = tmp_path / "train.log"
    log.write_text(
        "\n".join(fsdp2_line(i, 1800.0 if i < 10 else 5000.0) for i in range(1, 14)) + "\n"
    )
    result = runner.invoke(
        app,
        [
            "watch",
            str(log),
            "--regression",
            "1.2",
            "--exit-on-alert",
            "--idle-timeout",
            "0.2",
            "--poll",
            "0.05",
        ],
    )
    assert result.exit_code == 1 and "ALERT" in result.output
    quiet = runner.invoke(
        app, ["watch", str(log), "--max-step-ms", "9000", "--idle-timeout", "0.2", "--poll", "0.05"]
    )
    assert quiet.exit_code == 0 and "ALERT" not in quiet.output
