"""One simulated run: the settings through the response model to its steps, its training log
and, for the profiled ranks, its profile. Exit code 1 with an OOM error when the run's memory
does not fit, as the real job dies in its first step."""

from __future__ import annotations

import os
import socket
import statistics
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

from simjob.profile import collection, profiled_ranks, write_rank
from simjob.response import Recipe, load_response, recipe
from simjob.settings import LaunchError, Settings, read_settings
from simjob.timeline import NS, StepPlan, plan_steps
from simjob.trace import Clock
from simjob.trainlog import Iteration, iteration_line, out_of_memory, start_lines

HERE = Path(__file__).resolve().parents[1]
DEFAULT_RESPONSE = HERE / "response.yaml"
DEFAULT_ITERATIONS = 10  # training.max_steps -1 (epochs): a short simulated run


@dataclass(frozen=True)
class Outcome:
    """A run's result: its steps, or None when it ran out of memory."""

    recipe: Recipe
    plans: list[StepPlan] | None

    @property
    def steady_step_ms(self) -> float | None:
        """The median step after the first two (start-up and warm-up), as advisor measures it."""
        if not self.plans:
            return None
        steady = self.plans[2:] or self.plans
        return statistics.median(p.end - p.start for p in steady) / NS / 1000.0


def iterations(settings: Settings) -> int:
    steps = settings.number("training.max_steps")
    return steps if steps > 0 else DEFAULT_ITERATIONS


def simulate(settings: Settings, model: dict[str, Any]) -> Outcome:
    r = recipe(model, settings)
    if not r.memory.fits:
        return Outcome(r, None)
    return Outcome(r, plan_steps(r, iterations(settings)))


def _log(settings: Settings, outcome: Outcome, started: datetime, out: TextIO) -> None:
    assert outcome.plans is not None
    r = outcome.recipe
    total = len(outcome.plans)
    every = max(1, settings.number("training.logging_steps"))
    at = started
    for plan in outcome.plans:
        step_ms = (plan.end - plan.start) / NS / 1000.0
        if plan.number == 1:
            step_ms += r.startup_ms
        if plan.number % every == 0:
            it = Iteration(plan.number, step_ms, at)
            line = iteration_line(
                r,
                it,
                total,
                settings.world_size,
                settings.number("data.cutoff_len"),
                float(settings.get("training.lr")),
                settings.flag("training.log_throughput"),
            )
            print(line, file=out)
        at += timedelta(milliseconds=step_ms)


def _profile(settings: Settings, outcome: Outcome, epoch_us: int) -> list[Path]:
    assert outcome.plans is not None
    c = collection(settings, len(outcome.plans))
    if c is None:
        return []
    plans = outcome.plans[c.start : c.start + c.active]
    root = settings.run_dir / str(settings.get("training.profile_save_path"))
    stamp = datetime.fromtimestamp(epoch_us / 1e6, UTC).strftime("%Y%m%d%H%M%S%f")[:-3]
    host = socket.gethostname().split(".")[0] or "localhost"
    written = []
    clock = Clock(epoch_us + round(outcome.recipe.startup_ms * 1000))
    for rank in profiled_ranks(settings):
        folder = root / f"{host}_{os.getpid() + rank}_{stamp}_ascend_pt"
        written.append(write_rank(folder, settings, outcome.recipe, plans, c, rank, clock))
    return written


def main(argv: list[str], env: dict[str, str], cwd: Path, out: TextIO = sys.stdout) -> int:
    try:
        settings = read_settings(argv, env, cwd)
    except (LaunchError, OSError) as exc:
        print(f"train_fsdp2.py: error: {exc}", file=sys.stderr)
        return 2
    model = load_response(Path(env.get("SIMJOB_RESPONSE") or DEFAULT_RESPONSE))
    epoch_us = time.time_ns() // 1000
    started = datetime.fromtimestamp(epoch_us / 1e6, UTC)
    start_lines(started, settings.world_size, out)
    outcome = simulate(settings, model)
    if outcome.plans is None:
        out_of_memory(outcome.recipe.memory, started, out)
        out.flush()
        return 1
    _log(settings, outcome, started, out)
    for folder in _profile(settings, outcome, epoch_us):
        print(f"INFO [{started:%Y-%m-%d %H:%M:%S}] >> profile written to {folder}", file=out)
    return 0
