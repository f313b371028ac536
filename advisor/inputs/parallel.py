"""The job's parallel layout as the config states it."""

from __future__ import annotations

from collections.abc import Mapping

from advisor.inputs.values import get_path


def fsdp_size(config: Mapping[str, object] | None) -> int | None:
    """`parallel.fsdp_size` when it is a whole number, else None (unset or not a number)."""
    value = get_path(config, "parallel.fsdp_size")
    return value if isinstance(value, int) and not isinstance(value, bool) else None
