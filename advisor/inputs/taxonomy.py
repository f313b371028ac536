"""Operator and host-event classes loaded from rules/taxonomy.yaml."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from advisor.core.checked_data import load_valid
from advisor.core.resources import rules_dir
from advisor.model import DataError


def _alternation(patterns: list[str], flags: int = 0) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns), flags)


@dataclass(frozen=True)
class Taxonomy:
    partial_step_ratio: float
    small_op_max_us: float
    cross_check_tolerance: float
    log_warmup_iterations: int
    log_outlier_mads: float
    grad_norm_spike_factor: float
    compare_z: float
    compare_min_effect: float
    compare_loss_tolerance: float
    operator_classes: dict[str, re.Pattern[str]]
    operator_docs: dict[str, str]
    aicpu_core: str
    step: re.Pattern[str]
    dataloader: re.Pattern[str]
    sync_calls: re.Pattern[str]
    malloc_calls: re.Pattern[str]
    free_calls: re.Pattern[str]
    copy_calls: re.Pattern[str]
    blocking_copies: re.Pattern[str]
    blocking_ops: re.Pattern[str]
    comm_kinds: dict[str, re.Pattern[str]]
    # host ranges a collective kernel is launched under (group 1: the collective's name)
    collective_launchers: tuple[re.Pattern[str], ...]
    stage_split_gap: float
    stepless_window_tolerance: float
    open_last_step_ratio: float
    mte2_bound_min_ratio: float
    min_ceiling_ratio: float
    memory_pressure_ratio: float
    memory_dynamic_share: float
    compute_well_used_ratio: float
    min_trusted_step_ms: float
    link_min_mb: float
    deep_all_max_ranks: int
    deep_sample_ranks: int
    p2p_kinds: frozenset[str]
    tp_group_names: frozenset[str]
    # short name (tp, pp...) -> where it is stated: argument names, config keys
    recorded_layout: dict[str, tuple[str, ...]]
    config_layout: dict[str, tuple[str, ...]]
    # short name (tp, pp...) -> the names frameworks give its process groups (lower case)
    group_names: dict[str, frozenset[str]]
    # torch_npu / cann / mindspore -> (oldest, newest) known (major, minor)
    profiler_versions: dict[str, tuple[tuple[int, int], tuple[int, int]]]
    profiler_levels: tuple[str, ...]
    # PyTorch profiler event category -> its role (kernel, memory, runtime, sync, annotation)
    kineto_roles: dict[str, str]

    def op_class(self, op_type: str, name: str) -> set[str]:
        """Every class whose pattern matches the kernel's type (or, failing that, its name)."""
        found = set()
        for cls, pattern in self.operator_classes.items():
            if pattern.fullmatch(op_type) or pattern.fullmatch(name):
                found.add(cls)
        return found

    def comm_kind(self, name: str) -> str:
        """Map `hcom_allGather__123_0`, `HcclAllreduce`, `allgather@group` to a kind."""
        base = name.split("@", 1)[0].lower().replace("_", "")
        if base.startswith("hcom"):
            base = base[4:]
        for kind, pattern in self.comm_kinds.items():
            if pattern.fullmatch(base):
                return kind
        return "other"


def _major_minor(text: str) -> tuple[int, int]:
    major, minor = text.split(".")
    return int(major), int(minor)


def _build(raw: dict[str, Any]) -> Taxonomy:
    measurement = raw["measurement"]
    ops = raw["operators"]
    host = raw["host"]
    return Taxonomy(
        partial_step_ratio=float(measurement["partial_step_ratio"]),
        small_op_max_us=float(measurement["small_op_max_us"]),
        cross_check_tolerance=float(measurement["cross_check_tolerance"]),
        log_warmup_iterations=int(measurement["log_warmup_iterations"]),
        log_outlier_mads=float(measurement["log_outlier_mads"]),
        grad_norm_spike_factor=float(measurement["grad_norm_spike_factor"]),
        compare_z=float(measurement["compare_z"]),
        compare_min_effect=float(measurement["compare_min_effect"]),
        compare_loss_tolerance=float(measurement["compare_loss_tolerance"]),
        operator_classes={k: _alternation(v["types"]) for k, v in ops.items()},
        operator_docs={k: str(v["doc"]) for k, v in ops.items()},
        aicpu_core=str(raw["aicpu_core"]),
        step=re.compile(host["step"]),
        dataloader=re.compile(host["dataloader"]),
        sync_calls=_alternation(host["sync_calls"]),
        malloc_calls=_alternation(host["malloc_calls"]),
        free_calls=_alternation(host["free_calls"]),
        copy_calls=_alternation(host.get("copy_calls", [])),
        blocking_copies=_alternation(host.get("blocking_copies", [])),
        blocking_ops=_alternation(host.get("blocking_ops", [])),
        comm_kinds={k: _alternation(v, re.IGNORECASE) for k, v in raw["comm_kinds"].items()},
        collective_launchers=tuple(re.compile(p) for p in raw.get("collective_launchers", [])),
        stage_split_gap=float(measurement["stage_split_gap"]),
        stepless_window_tolerance=float(measurement.get("stepless_window_tolerance", 0.10)),
        open_last_step_ratio=float(measurement.get("open_last_step_ratio", 1.5)),
        mte2_bound_min_ratio=float(measurement["mte2_bound_min_ratio"]),
        min_ceiling_ratio=float(measurement["min_ceiling_ratio"]),
        memory_pressure_ratio=float(measurement["memory_pressure_ratio"]),
        memory_dynamic_share=float(measurement["memory_dynamic_share"]),
        compute_well_used_ratio=float(measurement["compute_well_used_ratio"]),
        min_trusted_step_ms=float(measurement["min_trusted_step_ms"]),
        link_min_mb=float(measurement["link_min_mb"]),
        deep_all_max_ranks=int(measurement["deep_all_max_ranks"]),
        deep_sample_ranks=int(measurement["deep_sample_ranks"]),
        p2p_kinds=frozenset(str(k) for k in raw["p2p_kinds"]),
        tp_group_names=frozenset(str(k) for k in raw.get("tp_group_names", [])),
        recorded_layout={k: tuple(v["recorded"]) for k, v in raw["parallel_layout"].items()},
        config_layout={k: tuple(v["config"]) for k, v in raw["parallel_layout"].items()},
        group_names={
            k: frozenset(str(n).lower() for n in v.get("group_names", []))
            for k, v in raw["parallel_layout"].items()
            if v.get("group_names")
        },
        profiler_versions={
            k: (_major_minor(v["min"]), _major_minor(v["max"]))
            for k, v in raw["profiler_versions"].items()
        },
        profiler_levels=tuple(str(level) for level in raw["profiler_levels"]),
        kineto_roles={
            str(cat): role for role, cats in raw["kineto_categories"].items() for cat in cats
        },
    )


def load_taxonomy(path: Path) -> Taxonomy:
    raw = load_valid(path, "taxonomy.schema.json")
    try:
        return _build(raw)
    except re.error as exc:
        raise DataError(f"{path}: invalid regular expression: {exc}") from None


@cache
def default_taxonomy() -> Taxonomy:
    return load_taxonomy(rules_dir() / "taxonomy.yaml")
