"""The scaling command's service: each log's throughput and world size, compared."""

from __future__ import annotations

from pathlib import Path

from advisor.app.pipeline import log_facts
from advisor.facts.scaling import ScalingRun, scaling
from advisor.model import InputError
from advisor.parsers.trainlog.log import read_logs


def _world(log: Path, given: int | None) -> int:
    """--world when given, else the world size of the log's Megatron argument dump."""
    if given is not None:
        if given < 1:
            raise InputError("--world", f"{given} is not a device count")
        return given
    dumped = read_logs([log]).arguments.get("world_size", "")
    if dumped.isdigit() and int(dumped) > 0:
        return int(dumped)
    raise InputError(str(log), "no world_size in the log's argument dump: pass --world for it")


def run_scaling(logs: list[Path], worlds: list[int]) -> list[ScalingRun]:
    if worlds and len(worlds) != len(logs):
        raise InputError("--world", f"{len(worlds)} values for {len(logs)} logs: one per log")
    runs = []
    for i, log in enumerate(logs):
        world = _world(log, worlds[i] if worlds else None)
        runs.append((str(log), world, log_facts([log])))
    if len({world for _, world, _ in runs}) < 2:
        raise InputError("scaling", "every run has the same world size: nothing scales")
    return scaling(runs)
