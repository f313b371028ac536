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
        # per pattern with a match under way: (next position, microseconds so far) of each
        self._partial: dict[int, list[tuple[int, float]]] = {}
        # a kernel type -> None (skipped) or, for each pattern it appears in, the pattern's
        # index and the positions it fills (cached: a model runs few kernel types)
        self._seen: dict[str, tuple[tuple[int, frozenset[int]], ...] | None] = {}
        self._step: int | None = None
        self.counts: dict[tuple[int | None, str], SequenceCount] = {}

    def _roles(self, op_type: str) -> tuple[tuple[int, frozenset[int]], ...] | None:
        if op_type not in self._seen:
            if self._skip.fullmatch(op_type):
                self._seen[op_type] = None
            else:
                fills = (
                    (i, frozenset(at for at, k in enumerate(p.kernels) if k.fullmatch(op_type)))
                    for i, p in enumerate(self._patterns)
                )
                self._seen[op_type] = tuple((i, f) for i, f in fills if f)
        return self._seen[op_type]

    def add(self, step: int | None, op_type: str, duration_us: float) -> None:
        if step != self._step:
            self._partial = {}  # a sequence never spans two steps
            self._step = step
        seen = self._seen
        roles = seen[op_type] if op_type in seen else self._roles(op_type)
        if roles is None:
            return
        if not roles:  # a kernel of no pattern breaks every sequence under way
            if self._partial:
                self._partial = {}
            return
        partial = self._partial
        grown_all: dict[int, list[tuple[int, float]]] = {}
        for index, fills in roles:
            under_way = partial.get(index, ())
            if not under_way and 0 not in fills:
                continue
            grown = [(at + 1, us + duration_us) for at, us in under_way if at in fills]
            if 0 in fills:
                grown.append((1, duration_us))
            pattern = self._patterns[index]
            done = [us for at, us in grown if at == len(pattern.kernels)]
            if done:
                found = self.counts.setdefault((step, pattern.name), SequenceCount())
                found.count += 1
                found.total_us += max(done)
            elif grown:
                grown_all[index] = grown  # a found sequence's kernels start no other
        # any pattern this kernel does not continue is broken by it
        self._partial = grown_all
