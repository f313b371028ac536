"""The scaling command's service: each run's throughput and world size, compared. The runs
come from logs, or from the ledger: `compare --ledger` records each side it measured."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from advisor.app.pipeline import log_facts
from advisor.facts.scaling import MEASURED, ScalingRun, scaling
from advisor.inputs.ledger import Ledger
from advisor.model import FactSet, InputError
from advisor.parsers.trainlog.log import read_logs


def _dumped_world(log: Path) -> int | None:
    """The world size of the log's Megatron argument dump, when it has one."""
    dumped = read_logs([log]).arguments.get("world_size", "")
    return int(dumped) if dumped.isdigit() and int(dumped) > 0 else None


def _world(log: Path, given: int | None) -> int:
    """--world when given, else the world size of the log's Megatron argument dump."""
    if given is not None:
        if given < 1:
            raise InputError("--world", f"{given} is not a device count")
        return given
    dumped = _dumped_world(log)
    if dumped is not None:
        return dumped
    raise InputError(str(log), "no world_size in the log's argument dump: pass --world for it")


def _measures(facts: FactSet) -> dict[str, float]:
    return {
        fact_id: float(value)
        for fact_id in MEASURED
        if isinstance(value := facts.value(fact_id), int | float) and not isinstance(value, bool)
    }


Run = tuple[str, int, Mapping[str, float]]


def _checked(runs: list[Run]) -> list[ScalingRun]:
    if len({world for _, world, _ in runs}) < 2:
        raise InputError("scaling", "every run has the same world size: nothing scales")
    return scaling(runs)


def run_scaling(
    logs: list[Path], worlds: list[int], ledger: Path | None = None
) -> list[ScalingRun]:
    """Logs at different device counts, and the runs a ledger recorded."""
    if worlds and len(worlds) != len(logs):
        raise InputError("--world", f"{len(worlds)} values for {len(logs)} logs: one per log")
    runs: list[Run] = []
    for i, log in enumerate(logs):
        world = _world(log, worlds[i] if worlds else None)
        runs.append((str(log), world, _measures(log_facts([log]))))
    if ledger is not None:
        runs.extend(ledger_runs(Ledger.load(ledger)))
    return _checked(runs)


# a recorded run's keys and the facts they stand for
RECORDED = {
    "step_ms": "log.step_time_ms",
    "tokens_per_s": "log.tokens_per_s",
    "tflops_per_device": "log.tflops_per_device",
}


def ledger_runs(ledger: Ledger) -> list[Run]:
    """The runs `compare --ledger` recorded with a device count, the latest at each count (the
    job as it runs now at that size), labelled with the ledger line they came from."""
    latest: dict[int, Run] = {}
    for number, entry in enumerate(ledger.entries, start=1):
        runs = entry.get("runs")
        if not isinstance(runs, dict):
            continue
        for side in ("baseline", "candidate"):
            run = runs.get(side)
            if not isinstance(run, dict):
                continue
            world = run.get("world")
            if not isinstance(world, int) or isinstance(world, bool) or world < 1:
                continue
            measures = {
                fact_id: float(run[key])
                for key, fact_id in RECORDED.items()
                if isinstance(run.get(key), int | float) and not isinstance(run[key], bool)
            }
            label = f"{ledger.path.name}:{number} {side} ({run.get('label', '?')})"
            latest[world] = (label, world, measures)
    return list(latest.values())


def recorded_run(
    label: str, facts: FactSet, log: Path | None, tokens_per_step: float | None
) -> dict[str, Any]:
    """One side of a comparison as the ledger keeps it for `scaling --ledger`: its device
    count (the profile's world size, else the log's argument dump) and throughput (as logged,
    else tokens per step over the step time)."""
    run: dict[str, Any] = {"label": label}
    world = facts.value("profile.world_size")
    if not isinstance(world, int) and log is not None and log.is_file():
        world = _dumped_world(log)
    if isinstance(world, int) and world >= 1:
        run["world"] = world
    measures = _measures(facts)
    step = measures.get("log.step_time_ms")
    if step is None and isinstance(profiled := facts.value("step.time_ms"), int | float):
        step = float(profiled)
    if step is not None and step > 0:
        run["step_ms"] = step
    tokens = measures.get("log.tokens_per_s")
    if tokens is None and tokens_per_step and step:
        tokens = tokens_per_step / (step / 1000.0)
    if tokens is not None and tokens > 0:
        run["tokens_per_s"] = tokens
    tflops = measures.get("log.tflops_per_device")
    if tflops is not None and tflops > 0:
        run["tflops_per_device"] = tflops
    return run
