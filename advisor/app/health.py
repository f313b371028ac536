"""Training health while the job runs: the result layer beside efficiency (seed 003). From each
logged iteration — whatever the log's dialect (FSDP2, Megatron, MindSpore Transformers) — grad
norm explosions against the run's own history, a collapsing fp16 loss scale, skipped or NaN
iterations, and peak memory creeping up step over step. Thresholds: rules/watch.yaml."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cache
from itertools import pairwise
from statistics import median

from advisor.core.checked_data import load_valid
from advisor.core.resources import rules_dir
from advisor.parsers.trainlog.log import Iteration


@dataclass(frozen=True)
class Alert:
    """One alert: its kind (a stable id for machines), the iteration, the values that decided,
    and the line people read."""

    kind: str
    iteration: int
    message: str
    values: dict[str, float | int | str] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"ALERT iteration {self.iteration}: {self.message}"

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "iteration": self.iteration,
            "message": self.message,
            "values": self.values,
        }


@dataclass(frozen=True)
class HealthLimits:
    grad_norm_factor: float
    grad_norm_min_history: int
    loss_scale_halvings: int
    memory_creep_window: int
    memory_creep_ratio: float


@cache
def health_limits() -> HealthLimits:
    path = rules_dir() / "watch.yaml"
    data = load_valid(path, "watch.schema.json")
    return HealthLimits(
        float(data["grad_norm_factor"]),
        int(data["grad_norm_min_history"]),
        int(data["loss_scale_halvings"]),
        int(data["memory_creep_window"]),
        float(data["memory_creep_ratio"]),
    )


@dataclass
class Health:
    limits: HealthLimits = field(default_factory=health_limits)
    norms: list[float] = field(default_factory=list)
    scale: float | None = None
    halvings: int = 0
    skipped: int | None = None
    nan: int | None = None
    memory: list[float] = field(default_factory=list)
    creep_reported: bool = False

    def feed(self, it: Iteration) -> list[Alert]:
        return [
            alert
            for check in (self._grad_norm, self._loss_scale, self._counters, self._memory)
            for alert in check(it)
        ]

    def _grad_norm(self, it: Iteration) -> list[Alert]:
        norm = it.grad_norm
        if norm is None or not math.isfinite(norm):
            return []
        alerts = []
        if len(self.norms) >= self.limits.grad_norm_min_history:
            normal = median(self.norms)
            if normal > 0 and norm > self.limits.grad_norm_factor * normal:
                alerts.append(
                    Alert(
                        "grad-norm-explosion",
                        it.number,
                        f"grad norm {norm:g} is {norm / normal:.1f} x the run's median "
                        f"{normal:g} (alert above {self.limits.grad_norm_factor:g} x)",
                        {"grad_norm": norm, "median": normal},
                    )
                )
        self.norms.append(norm)
        return alerts

    def _loss_scale(self, it: Iteration) -> list[Alert]:
        scale = it.loss_scale
        if scale is None or not math.isfinite(scale):
            return []
        before, self.scale = self.scale, scale
        if before is None or scale >= before:
            self.halvings = 0
            return []
        self.halvings += 1
        if self.halvings != self.limits.loss_scale_halvings:
            return []
        return [
            Alert(
                "loss-scale-collapse",
                it.number,
                f"the loss scale fell {self.halvings} times in a row, now {scale:g}: the fp16 "
                "run keeps overflowing (bf16, where the device supports it, has no loss scale)",
                {"loss_scale": scale, "halvings": self.halvings},
            )
        ]

    def _counters(self, it: Iteration) -> list[Alert]:
        alerts = []
        for kind, now, attr in (
            ("skipped-iterations", it.skipped, "skipped"),
            ("nan-iterations", it.nan, "nan"),
        ):
            if now is None:
                continue
            before = getattr(self, attr)
            setattr(self, attr, now)
            if now > (before or 0):
                what = "skipped" if attr == "skipped" else "NaN"
                alerts.append(
                    Alert(
                        kind,
                        it.number,
                        f"{now - (before or 0)} more {what} iteration(s), {now} in all",
                        {"count": now},
                    )
                )
        return alerts

    def _memory(self, it: Iteration) -> list[Alert]:
        value = it.reserved_gb if it.reserved_gb is not None else it.allocated_gb
        if value is None or not math.isfinite(value):
            return []
        self.memory.append(value)
        window = self.memory[-self.limits.memory_creep_window :]
        if self.creep_reported or len(window) < self.limits.memory_creep_window:
            return []
        rising = all(b > a for a, b in pairwise(window))
        growth = (window[-1] - window[0]) / window[0] if window[0] > 0 else 0.0
        if not rising or growth <= self.limits.memory_creep_ratio:
            return []
        self.creep_reported = True
        return [
            Alert(
                "memory-creep",
                it.number,
                f"peak memory rose at each of the last {len(window)} logged iterations, "
                f"{window[0]:g} -> {window[-1]:g} GB (+{growth:.1%}): tensors kept across "
                "steps (a leak), not a steady peak",
                {"first_gb": window[0], "last_gb": window[-1]},
            )
        ]
