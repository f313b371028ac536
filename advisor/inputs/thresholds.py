"""The thresholds of each layer, loaded from rules/thresholds.yaml.

One object per layer, so a layer receives the numbers it decides with and nothing else: the
readers' (what a small or a memory-bound kernel is), the fact derivers', the training-log
derivers', compare's, the planner's and trust gate's, and the cluster reader's. The
classification vocabulary (names and patterns) is the taxonomy's (`taxonomy.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cache
from typing import Any, TypeVar

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
    block_dim_mismatch_share: float
    queue_max_steps: int


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


_T = TypeVar("_T")
# the annotations of the threshold fields (strings: annotations are not evaluated here)
_NUMBERS: dict[str, type[int] | type[float]] = {"int": int, "float": float}


def _section(name: str, kind: type[_T]) -> _T:
    """A section of the file as its layer's object, each value as its field's number type."""
    raw = _sections()[name]
    return kind(**{f.name: _NUMBERS[str(f.type)](raw[f.name]) for f in fields(kind)})  # type: ignore[arg-type]


@cache
def reader_thresholds() -> ReaderThresholds:
    return _section("readers", ReaderThresholds)


@cache
def fact_thresholds() -> FactThresholds:
    return _section("facts", FactThresholds)


@cache
def log_thresholds() -> LogThresholds:
    return _section("logs", LogThresholds)


@cache
def compare_thresholds() -> CompareThresholds:
    return _section("compare", CompareThresholds)


@cache
def planner_thresholds() -> PlannerThresholds:
    return _section("planner", PlannerThresholds)


@cache
def cluster_thresholds() -> ClusterThresholds:
    return _section("cluster", ClusterThresholds)
