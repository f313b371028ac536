"""Unfused kernel sequences in the device's launch order: each fusion pattern of
rules/analyzers.yaml (kernel types one fused operator replaces) counted per step, with the time
of the kernels it matched. Kernels matching the skip pattern (collectives on their own stream)
are passed over; any other kernel between two of a sequence breaks it."""

from __future__ import annotations

from advisor.inputs.analyzer_rules import FusionPattern, analyzer_rules
from advisor.parsers.profile_data import SequenceCount


class SequenceCounter:
    """Fed one kernel at a time in launch order; `counts` holds what was found."""

    def __init__(self, patterns: tuple[FusionPattern, ...] | None = None) -> None:
        rules = analyzer_rules()
        self._patterns = patterns if patterns is not None else rules.fusion
        self._skip = rules.fusion_skip
        # per pattern: the partial matches as (next position, microseconds so far)
        self._partial: list[list[tuple[int, float]]] = [[] for _ in self._patterns]
        # a kernel type -> skipped, or the positions it fills in each pattern (cached: few types)
        self._seen: dict[str, tuple[frozenset[int], ...] | None] = {}
        self._step: int | None = None
        self.counts: dict[tuple[int | None, str], SequenceCount] = {}

    def _positions(self, op_type: str) -> tuple[frozenset[int], ...] | None:
        if op_type not in self._seen:
            if self._skip.fullmatch(op_type):
                self._seen[op_type] = None
            else:
                self._seen[op_type] = tuple(
                    frozenset(i for i, k in enumerate(p.kernels) if k.fullmatch(op_type))
                    for p in self._patterns
                )
        return self._seen[op_type]

    def add(self, step: int | None, op_type: str, duration_us: float) -> None:
        if step != self._step:
            self._partial = [[] for _ in self._patterns]  # a sequence never spans two steps
            self._step = step
        positions = self._positions(op_type)
        if positions is None:
            return
        for index, pattern in enumerate(self._patterns):
            fills = positions[index]
            grown = [(at + 1, us + duration_us) for at, us in self._partial[index] if at in fills]
            if 0 in fills:
                grown.append((1, duration_us))
            done = [us for at, us in grown if at == len(pattern.kernels)]
            if done:
                found = self.counts.setdefault((step, pattern.name), SequenceCount())
                found.count += 1
                found.total_us += max(done)
                grown = []  # the kernels of a found sequence start no other
            self._partial[index] = grown
