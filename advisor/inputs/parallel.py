"""The job's parallel layout as the config states it."""

from __future__ import annotations

from collections.abc import Mapping

from advisor.inputs.values import get_path


def fsdp_size(config: Mapping[str, object] | None) -> int | None:
    """`parallel.fsdp_size` when it is a whole number, else None (unset or not a number)."""
    value = get_path(config, "parallel.fsdp_size")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


MINDFORMERS_GRID = ("data_parallel", "model_parallel", "context_parallel", "pipeline_stage")


def mindformers_devices(config: Mapping[str, object] | None) -> int | None:
    """dp x mp x cp x pp of a MindFormers parallel_config (unset sizes are 1); None when one is
    not a whole number."""
    devices = 1
    for key in MINDFORMERS_GRID:
        value = get_path(config, f"parallel_config.{key}")
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool):
            return None
        devices *= value
    return devices
