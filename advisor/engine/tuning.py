"""What a tuning session found, as codes and measurements: why it stopped, what became of each
change (its edit, predicted and measured effect), baseline and final. `app/tune.py` produces it,
`render/tune.py` words it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from advisor.model import Patch, Reason, Recommendation

TUNE_SCHEMA = "advisor/tune@1"
FAILED_RUN_SCHEMA = "advisor/failed-run@1"  # compare --failed
FAILED_IN_A_ROW = 2  # failed runs in a row that end the loop


class Stop(Enum):
    """Why the loop ended."""

    healthy = "healthy"
    no_applicable_change = "no-applicable-change"  # status, feature, applicability
    max_changes = "max-changes"  # max_changes
    failed_runs = "two-failed-runs"
    timeout = "timeout"  # run, seconds
    interrupted = "interrupted"
    baseline_failed = "baseline-failed"  # failure
    no_profile = "no-profile"  # run, where: the run wrote no profile
    dry_run = "dry-run"


class Verdict3(Enum):
    """What became of one change."""

    keep = "keep"
    revert = "revert"
    failed = "failed"
    collect = "collect"  # a collection change (profile level): kept, not a tuning change
    interrupted = "interrupted"


@dataclass(frozen=True)
class Measure:
    """One run as measured: its step time and throughput, where its profile and log are."""

    run: int
    step_ms: float | None
    tokens_per_s: float | None
    profile: str | None
    log: str

    def to_json(self) -> dict[str, object]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Change:
    """One change tried: the edit, its predicted effect, the measured one and the verdict."""

    feature: str
    bottleneck: str
    patch: Patch
    predicted: dict[str, object]
    verdict: Verdict3
    run: int | None = None
    measured: Measure | None = None
    reason: str | None = None  # compare's code, or the failure's cause
    unit: str | None = None  # the unit compare judged in
    retry: Reason | None = None  # proposed again after a revert for no measurable effect


@dataclass
class TuneResult:
    config: Path
    ledger: Path
    run_dir: Path
    profile_root: Path
    command: str
    baseline: Measure | None = None
    final: Measure | None = None
    changes: list[Change] = field(default_factory=list)
    stopped: Stop = Stop.healthy
    stop_values: dict[str, object] = field(default_factory=dict)
    runs: int = 0
    # changes the loop may not apply (review ones without --accept review): left for a person
    set_aside: list[tuple[str, str]] = field(default_factory=list)
    first: Recommendation | None = None  # --dry-run: the first change from an existing profile
    notes: list[str] = field(default_factory=list)

    @property
    def kept(self) -> list[Change]:
        return [c for c in self.changes if c.verdict is Verdict3.keep]


@dataclass(frozen=True)
class FailedRun:
    """A candidate run that crashed: the cause its log names, and what the ledger recorded."""

    cause: str  # out-of-memory, hccl-timeout, nan, crashed
    log: Path | None
    feature: str | None  # the change marked failed (None: no ledger, or nothing to mark)
    ledger_note: str | None


NO_PREDICTION: dict[str, object] = {"metric": "step_ms", "source": "none"}


def predicted_of(rec: Recommendation, baseline: Measure) -> dict[str, object]:
    """The change's predicted effect: the most step time it can recover (the planner's ceiling:
    the attributed cost the feature addresses), as the step time it would leave at best."""
    if rec.predicted is not None and baseline.step_ms is not None:
        p = rec.predicted  # suggest's own prediction: a range of the relative change
        return {
            "metric": "step_ms",
            "source": "suggest",
            "unit": p.metric,
            "expected_ratio": p.expected,
            "low_ratio": p.low,
            "high_ratio": p.high,
            "expected_step_ms": baseline.step_ms * (1.0 + p.expected),
            "efficacy_from": p.efficacy_from,
        }
    source, ratio = "ceiling", rec.ceiling_ratio
    if ratio is None and rec.cause is not None:
        # no ceiling of its own: at most the cost of the bottleneck it addresses
        source, ratio = "bottleneck-cost", rec.cause.cost_ratio
    if ratio is None or baseline.step_ms is None:
        return dict(NO_PREDICTION)
    saves = rec.ceiling_ms if source == "ceiling" and rec.ceiling_ms else ratio * baseline.step_ms
    return {
        "metric": "step_ms",
        "source": source,
        "saves_at_most_ms": saves,
        "saves_at_most_ratio": ratio,
        "step_ms_at_best": max(0.0, baseline.step_ms - saves),
    }
