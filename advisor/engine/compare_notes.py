"""The codes of a comparison: its verdict, why, what else it noticed and what would let it
decide, each with the values that decided (the renderers word them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from advisor.model import Values


class Verdict(Enum):
    keep = "keep"
    revert = "revert"
    inconclusive = "inconclusive"


class CompareCode(Enum):
    """Why the verdict is what it is, or what else the comparison noticed."""

    no_step_time = "no-step-time"
    loss_regression = "loss-regression"  # first, last, candidate, baseline, ratio
    nan_iterations = "nan-iterations"  # count
    no_noise_estimate = "no-noise-estimate"  # side, steps
    within_noise = "within-noise"  # delta_ms, noise_ms (per unit), z, unit
    below_min_effect = "below-min-effect"  # delta_ratio, min_effect, unit
    # baseline_ms, candidate_ms (step), delta_ratio (of the unit), unit; per token or sample
    # also baseline_unit_ms, candidate_unit_ms, step_delta_ratio
    beyond_noise = "beyond-noise"
    settings_differ = "settings-differ"  # count, keys
    no_shared_iterations = "no-shared-iterations"
    grad_norm_spikes = "grad-norm-spikes"  # baseline, candidate
    # a baseline condition differs: condition, baseline, candidate
    baseline_differs = "baseline-differs"
    read_warning = "read-warning"  # text: what reading an input warned, worded by its reader


class Collect(Enum):
    """What would let an inconclusive comparison decide."""

    step_time_both_sides = "step-time-both-sides"
    more_steady_steps = "more-steady-steps"


@dataclass(frozen=True)
class CompareNote:
    code: CompareCode
    values: Values = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {"code": self.code.value, "values": dict(self.values)}
