"""The operator analyzers' data loaded from rules/operators.yaml: the loss chain's operator
types, how the slowest and fastest ranks are told apart, what the AI-CPU list shows."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from advisor.core.checked_data import load_checked
from advisor.core.resources import rules_dir
from advisor.model import DataError


@dataclass(frozen=True)
class OperatorRules:
    loss_chain: frozenset[str]
    loss_min_share: float
    same_count_tolerance: float
    slow_fast_top: int
    aicpu_top: int
    fallback_dtypes: frozenset[str]


def load_operator_rules(path: Path) -> OperatorRules:
    raw, errors = load_checked(path, "operators.schema.json")
    if errors:
        raise DataError(f"{path}: {errors[0]}")
    slow_fast, aicpu = raw["slow_fast"], raw["aicpu"]
    return OperatorRules(
        loss_chain=frozenset(str(t) for t in raw["loss_chain"]["types"]),
        loss_min_share=float(slow_fast["loss_min_share"]),
        same_count_tolerance=float(slow_fast["same_count_tolerance"]),
        slow_fast_top=int(slow_fast["top"]),
        aicpu_top=int(aicpu["top"]),
        fallback_dtypes=frozenset(str(d).upper() for d in aicpu["fallback_dtypes"]),
    )


@cache
def operator_rules() -> OperatorRules:
    return load_operator_rules(rules_dir() / "operators.yaml")
