"""The thresholds of each layer, loaded from rules/thresholds.yaml.

One object per layer, so a layer receives the numbers it decides with and nothing else: the
readers' (what a small or a memory-bound kernel is), the fact derivers', the training-log
derivers', compare's, the planner's and trust gate's, and the cluster reader's. The
classification vocabulary (names and patterns) is the taxonomy's (`taxonomy.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from advisor.core.checked_data import load_valid
from advisor.core.resources import rules_dir


@dataclass(frozen=True)
class ReaderThresholds:
    small_op_max_us: float
    mte2_bound_min_ratio: float
    compute_well_used_ratio: float


@dataclass(frozen=True)
class FactThresholds:
    partial_step_ratio: float
    cross_check_tolerance: float
    stage_split_gap: float
    stepless_window_tolerance: float
    open_last_step_ratio: float
    link_min_mb: float
    memory_pressure_ratio: float
    memory_dynamic_share: float


@dataclass(frozen=True)
class LogThresholds:
    warmup_iterations: int
    outlier_mads: float
    grad_norm_spike_factor: float


@dataclass(frozen=True)
class CompareThresholds:
    z: float
    min_effect: float
    loss_tolerance: float


@dataclass(frozen=True)
class PlannerThresholds:
    min_ceiling_ratio: float
    min_trusted_step_ms: float
    retry_share_growth: float


@dataclass(frozen=True)
class ClusterThresholds:
    deep_all_max_ranks: int
    deep_sample_ranks: int


@cache
def _sections() -> dict[str, Any]:
    data: dict[str, Any] = load_valid(rules_dir() / "thresholds.yaml", "thresholds.schema.json")
    return data


def _floats(section: dict[str, Any]) -> dict[str, float]:
    return {key: float(value) for key, value in section.items()}


@cache
def reader_thresholds() -> ReaderThresholds:
    return ReaderThresholds(**_floats(_sections()["readers"]))


@cache
def fact_thresholds() -> FactThresholds:
    return FactThresholds(**_floats(_sections()["facts"]))


@cache
def log_thresholds() -> LogThresholds:
    raw = _sections()["logs"]
    return LogThresholds(
        warmup_iterations=int(raw["warmup_iterations"]),
        outlier_mads=float(raw["outlier_mads"]),
        grad_norm_spike_factor=float(raw["grad_norm_spike_factor"]),
    )


@cache
def compare_thresholds() -> CompareThresholds:
    return CompareThresholds(**_floats(_sections()["compare"]))


@cache
def planner_thresholds() -> PlannerThresholds:
    return PlannerThresholds(**_floats(_sections()["planner"]))


@cache
def cluster_thresholds() -> ClusterThresholds:
    raw = _sections()["cluster"]
    return ClusterThresholds(
        deep_all_max_ranks=int(raw["deep_all_max_ranks"]),
        deep_sample_ranks=int(raw["deep_sample_ranks"]),
    )
