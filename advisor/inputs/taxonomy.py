"""The classification vocabulary loaded from rules/taxonomy.yaml: operator and host-event
classes, collective kinds, Kineto event roles, the names parallel layouts and process groups go
by, the profiler versions and levels known. Numbers that decide are each layer's thresholds
(`thresholds.py`), not the vocabulary's."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from advisor.core.checked_data import load_valid
from advisor.core.resources import rules_dir
from advisor.model import DataError

# (type, name) pairs whose classes are remembered (a few hundred in a real profile)
OP_CLASS_MEMO = 1 << 16


def _alternation(patterns: list[str], flags: int = 0) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns), flags)


@dataclass(frozen=True)
class Taxonomy:
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
    blocking_calls: re.Pattern[str]
    user_ranges: re.Pattern[str]
    # step phase (forward, backward, optimizer) -> the host ranges that name it
    phase_ranges: dict[str, re.Pattern[str]]
    # host ranges (or their category) that are a Python garbage collection
    gc_ranges: re.Pattern[str]
    # FSDP2's ranges: all_gather (around each parameter all-gather it issues), forward and
    # backward (the hooks of each pass that issue them)
    fsdp_ranges: dict[str, re.Pattern[str]]
    comm_kinds: dict[str, re.Pattern[str]]
    # host ranges a collective kernel is launched under (group 1: the collective's name)
    collective_launchers: tuple[re.Pattern[str], ...]
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
    # PyTorch profiler event category -> its role (kernel, memory, runtime, sync, python,
    # annotation)
    kineto_roles: dict[str, str]
    # (type, name) -> its classes, matched once: the facts ask again for every step's kernel
    # groups (a trace of 15,000 steps asks 60,000 times for a handful of pairs)
    _op_classes: dict[tuple[str, str], set[str]] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )

    def op_class(self, op_type: str, name: str) -> set[str]:
        """Every class whose pattern matches the kernel's type (or, failing that, its name).
        The set is shared by every caller asking for the same pair: read it, never change it."""
        known = self._op_classes.get((op_type, name))
        if known is not None:
            return known
        found = set()
        for cls, pattern in self.operator_classes.items():
            if pattern.fullmatch(op_type) or pattern.fullmatch(name):
                found.add(cls)
        if len(self._op_classes) < OP_CLASS_MEMO:
            self._op_classes[(op_type, name)] = found
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
    ops = raw["operators"]
    host = raw["host"]
    return Taxonomy(
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
        blocking_calls=_alternation(host.get("blocking_calls", [])),
        user_ranges=_alternation(host.get("user_ranges", [])),
        phase_ranges={k: _alternation(v) for k, v in host.get("phases", {}).items()},
        gc_ranges=_alternation(host.get("gc", [])),
        fsdp_ranges={k: _alternation(v) for k, v in host.get("fsdp", {}).items()},
        comm_kinds={k: _alternation(v, re.IGNORECASE) for k, v in raw["comm_kinds"].items()},
        collective_launchers=tuple(re.compile(p) for p in raw.get("collective_launchers", [])),
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
