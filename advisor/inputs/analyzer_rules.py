"""The analyzers' data loaded from rules/analyzers.yaml: the loss chain's operator types, how
the slowest and fastest ranks are told apart, what the AI-CPU list shows, which dtypes are fp16,
and what counts as a
small or unaligned communication transfer, when an RDMA transfer was retransmitted, and the
HCCL data types' sizes, and which core count each kind of kernel's block dim is compared with."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from advisor.core.checked_data import load_valid
from advisor.core.resources import rules_dir
from advisor.model import DataError


@dataclass(frozen=True)
class FusionPattern:
    """Kernel types one fused operator replaces, in launch order (each a whole-type regex)."""

    name: str
    kernels: tuple[re.Pattern[str], ...]
    fused: str
    switches: dict[str, str]  # config dialect -> the switch that enables it


@dataclass(frozen=True)
class AnalyzerRules:
    loss_chain: frozenset[str]
    loss_min_share: float
    same_count_tolerance: float
    min_extra_ratio: float  # below it the slow and fast ranks compute alike: no cause
    slow_fast_top: int
    aicpu_top: int
    fallback_dtypes: frozenset[str]
    fp16_dtypes: frozenset[str]
    small_transfer_mb: dict[str, float]
    sdma_links: tuple[str, ...]
    sdma_total: str
    alignment_bytes: int
    optimizer_types: re.Pattern[str]
    retransmission_ms: float
    group_min_share: float
    dtype_bytes: dict[str, int]
    fusion_skip: re.Pattern[str]
    fusion: tuple[FusionPattern, ...]
    # Accelerator Core kind -> "ai_cores" or "vector_cores": the count its Block Dim is against
    block_dim_units: dict[str, str]
    block_dim_top: int


def load_analyzer_rules(path: Path) -> AnalyzerRules:
    raw = load_valid(path, "analyzers.schema.json")
    try:
        return _build(raw)
    except re.error as exc:
        raise DataError(f"{path}: invalid regular expression: {exc}") from None


def _build(raw: dict[str, Any]) -> AnalyzerRules:
    slow_fast, aicpu, comm = raw["slow_fast"], raw["aicpu"], raw["communication"]
    return AnalyzerRules(
        loss_chain=frozenset(str(t) for t in raw["loss_chain"]["types"]),
        loss_min_share=float(slow_fast["loss_min_share"]),
        same_count_tolerance=float(slow_fast["same_count_tolerance"]),
        min_extra_ratio=float(slow_fast["min_extra_ratio"]),
        slow_fast_top=int(slow_fast["top"]),
        aicpu_top=int(aicpu["top"]),
        fallback_dtypes=frozenset(str(d).upper() for d in aicpu["fallback_dtypes"]),
        fp16_dtypes=frozenset(str(d).upper() for d in raw["precision"]["fp16_dtypes"]),
        small_transfer_mb={str(k): float(v) for k, v in comm["small_transfer_mb"].items()},
        sdma_links=tuple(str(k) for k in comm["sdma_links"]),
        sdma_total=str(comm["sdma_total"]),
        alignment_bytes=int(comm["alignment_bytes"]),
        optimizer_types=re.compile("|".join(f"(?:{t})" for t in raw["optimizer"]["types"])),
        retransmission_ms=float(raw["collectives"]["retransmission_ms"]),
        group_min_share=float(raw["collectives"]["group_min_share"]),
        dtype_bytes={str(k).upper(): int(v) for k, v in raw["collectives"]["dtype_bytes"].items()},
        fusion_skip=re.compile(str(raw["fusion"]["skip"])),
        fusion=tuple(_pattern(p) for p in raw["fusion"]["patterns"]),
        block_dim_units={str(k).upper(): str(v) for k, v in raw["block_dim"]["units"].items()},
        block_dim_top=int(raw["block_dim"]["top"]),
    )


def _pattern(raw: dict[str, Any]) -> FusionPattern:
    return FusionPattern(
        name=str(raw["name"]),
        kernels=tuple(re.compile(str(k)) for k in raw["kernels"]),
        fused=str(raw["fused"]),
        switches={str(k): str(v) for k, v in raw["switches"].items()},
    )


@cache
def analyzer_rules() -> AnalyzerRules:
    return load_analyzer_rules(rules_dir() / "analyzers.yaml")
