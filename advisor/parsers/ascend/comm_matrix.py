"""Communication matrices: bytes and time per link (source rank -> destination rank).

torch_npu writes one per rank (communication_matrix.json: {step: {p2p|collective: {op@group:
{"src-dst": {Transport Type, Transit Size(MB), Transit Time(ms), ...}}}}}); msprof-analyze merges
them into cluster_communication_matrix.json ({group: {step: {op: {"src-dst": {...}}}}}). Both
are reduced to totals per link; local copies (a rank to itself) are not links.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from advisor.parsers.ascend.files import read_json
from advisor.parsers.profile_data import LinkStat

_LINK = re.compile(r"(\d+)-(\d+)")
LOCAL = "LOCAL"


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) and number >= 0 else None


def _walk(node: Any, links: dict[tuple[int, int, str], LinkStat]) -> None:
    """Every {"src-dst": {...}} mapping below `node`, whatever the nesting of steps and ops."""
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        m = _LINK.fullmatch(str(key))
        if m and isinstance(value, dict) and "Transit Size(MB)" in value:
            src, dst = int(m.group(1)), int(m.group(2))
            transport = str(value.get("Transport Type", "")) or "UNKNOWN"
            size, time = (
                _number(value.get("Transit Size(MB)")),
                _number(value.get("Transit Time(ms)")),
            )
            if src == dst or transport == LOCAL or size is None or time is None:
                continue
            stat = links.setdefault((src, dst, transport), LinkStat(src, dst, transport))
            stat.size_mb += size
            stat.time_ms += time
        elif not str(key).startswith("Total Op Info"):
            _walk(value, links)


def read_comm_matrix(path: Path) -> list[LinkStat]:
    links: dict[tuple[int, int, str], LinkStat] = {}
    _walk(read_json(path), links)
    return sorted(links.values(), key=lambda s: (s.src, s.dst, s.transport))
