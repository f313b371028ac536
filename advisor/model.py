"""Value objects shared by every stage. Imports nothing from the package."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from pathlib import PurePath
from typing import Any, TypeAlias

JOB_SCOPE = "job"


def rank_scope(rank: int) -> str:
    return f"rank:{rank}"


@dataclass(frozen=True)
class Fact:
    """A number (or structured value) measured from an input, with its provenance. Facts
    never carry judgements: `note` says how the value was computed, not whether it is good."""

    id: str
    value: Any
    unit: str
    scope: str
    source: str
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in ("id", "value", "unit", "scope", "source", "note")}


@dataclass(frozen=True)
class MissingFact:
    """A fact that could not be computed, and why (never replaced by a made-up zero)."""

    id: str
    scope: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "scope": self.scope, "reason": self.reason}


@dataclass
class FactSet:
    """All facts derived from one set of inputs."""

    inputs: list[str] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    missing: list[MissingFact] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def get(self, fact_id: str, scope: str = JOB_SCOPE) -> Fact | None:
        for fact in self.facts:
            if fact.id == fact_id and fact.scope == scope:
                return fact
        return None

    def value(self, fact_id: str, scope: str = JOB_SCOPE) -> Any:
        fact = self.get(fact_id, scope)
        return None if fact is None else fact.value


class Severity(StrEnum):
    """SARIF levels, in increasing order."""

    note = "note"
    warning = "warning"
    error = "error"

    @property
    def rank(self) -> int:
        return list(Severity).index(self)


class Applicability(StrEnum):
    """Whether a change may be written automatically (ruff's fix applicability)."""

    safe = "safe"
    review = "review"
    display_only = "display-only"


class PatchTarget(StrEnum):
    """Where a change lands: the YAML config, a command-line flag, the launch environment."""

    config = "config"
    cli = "cli"
    env = "env"
    none = "none"


class AdvisorError(Exception):
    """Base of every error the CLI reports as one line with exit code 2."""


class InputError(AdvisorError):
    """An input file or folder is missing, empty, malformed or inconsistent."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem

    def __reduce__(self) -> tuple[type[InputError], tuple[str, str]]:
        # raised in worker processes too: rebuild from both fields, not from the message
        return (InputError, (self.path, self.problem))


class DataError(AdvisorError):
    """A project data file (taxonomy, rules, schemas) is invalid."""


@dataclass(frozen=True)
class PatchOp:
    op: str  # "set" | "remove"
    path: str  # "parallel.num_to_forward_prefetch" or "TASK_QUEUE_ENABLE"
    value: object = None
    expect: object = None  # the value before the change (None: not set)
    near: tuple[str, ...] = ()  # where a new Megatron flag is written: beside these flags

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"op": self.op, "path": self.path}
        if self.op == "set":
            out["value"] = self.value
        out["before"] = self.expect
        return out


@dataclass(frozen=True)
class FileChange:
    path: str
    before: str
    after: str


@dataclass(frozen=True)
class Patch:
    """A change as data: ops on a target; `changes` are the file edits once it is placed."""

    rule_id: str
    target: PatchTarget
    ops: tuple[PatchOp, ...]
    applicability: Applicability
    title: str = ""
    file: str | None = None  # None: not placed, or lines to add by hand (no launch script)
    changes: tuple[FileChange, ...] = ()
    lines_to_add: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # what placing it found: checkpoint re-conversion, new bubble

    def to_json(self) -> dict[str, object]:
        return {
            "target": str(self.target),
            "file": self.file,
            "applicability": str(self.applicability),
            "ops": [op.to_json() for op in self.ops],
            "lines_to_add": list(self.lines_to_add),
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class Finding:
    """One policy violation in a config or launch script, with an optional fix."""

    rule_id: str
    severity: Severity
    message: str
    file: str
    line: int
    col: int
    key: str  # what the finding is about (config path, variable, flag): part of the fingerprint
    patch: Patch | None = None
    suppressed: str | None = None  # the waiver's reason
    in_baseline: bool = False

    @property
    def fingerprint(self) -> str:
        name = PurePath(self.file).name
        return hashlib.sha256(f"{self.rule_id}|{name}|{self.key}".encode()).hexdigest()[:20]

    @property
    def counts(self) -> bool:
        return self.suppressed is None and not self.in_baseline

    @property
    def fixable(self) -> bool:
        return self.patch is not None and self.patch.applicability is Applicability.safe


class Direction(StrEnum):
    """Which way a fact should move after a change."""

    decrease = "decrease"
    increase = "increase"
    unchanged = "unchanged"
    watch = "watch"
    back_to_baseline = "back-to-baseline"


@dataclass(frozen=True)
class VerifyCheck:
    """How to verify a change: a fact, the direction it should move, its value now."""

    fact: str
    direction: Direction
    current: float | None = None
    unit: str | None = None  # None: not a catalogue fact


# The values that decided an outcome, as JSON can carry them: renderers word them
Value: TypeAlias = str | int | float | bool | tuple["Value", ...] | None
Values: TypeAlias = Mapping[str, Value]


class Status(Enum):
    """What a suggestion is: one change, nothing to change, or a request before changing."""

    change = "change"
    healthy = "healthy"
    needs_data = "needs-data"
    stale = "stale"
    awaiting_measurement = "awaiting-measurement"


class Grounds(Enum):
    """Why the suggestion has its status (its `values` carry what decided)."""

    main_bottleneck = "main-bottleneck"  # bottleneck
    next_bottleneck = "next-bottleneck"  # bottleneck: the main one had nothing left to try
    no_bottleneck = "no-bottleneck"
    features_exhausted = "features-exhausted"  # bottleneck, cost_ratio, message
    evidence_missing = "evidence-missing"  # bottleneck, missing: its evidence lacks facts
    fixes_undecided = "fixes-undecided"  # bottleneck, missing, hints, applied_collector
    trust_failed = "trust-failed"  # bottleneck, check: a failed check the bottleneck rests on
    undo = "undo"  # feature: compare said revert
    stale_environment = "stale-environment"  # bottleneck, names, now, ran
    awaiting_measurement = "awaiting-measurement"  # feature
    # a recommendation's `retry` (engine/retry.py, memory_room.py; the first three have `kept`)
    masking_relieved = "masking-relieved"  # masked_by, relieved_by: where its freed time went
    leading_changed = "leading-changed"  # was, now: the leading bottleneck
    share_grown = "share-grown"  # was, now, factor: the share of the step it acts on
    memory_freed = "memory-freed"  # freed_by: ran out of memory, a kept change lowered the peak
    frees_memory = "frees-memory"  # bottleneck, other: after other ran out, lower the peak first


@dataclass(frozen=True)
class Reason:
    """A coded outcome and the values that decided it; the renderers word it."""

    code: Grounds
    values: Values = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {"code": self.code.value, "values": dict(self.values)}


class RejectCode(Enum):
    """Why a candidate feature was not chosen."""

    disabled = "disabled"
    applied = "applied"
    prerequisite_false = "prerequisite-false"  # requirement: the rule's reason
    not_indicated = "not-indicated"  # its trigger condition is false; lacks: what, in words
    trigger_unknown = "trigger-unknown"  # needs
    rejected_before = "rejected-before"  # the ledger records it rejected or reverted
    no_memory_room = "no-memory-room"  # other: the change whose run ran out of memory
    prerequisite_unknown = "prerequisite-unknown"  # requirement, needs
    conflicts_setting = "conflicts-setting"  # conflict: the rule's reason
    conflicts_feature = "conflicts-feature"  # other, conflict
    after = "after"  # other: a feature that must come first
    nothing_to_change = "nothing-to-change"
    below_ceiling = "below-ceiling"  # ceiling_ms/_ratio, target(_key/_ms), mechanism, limit
    behind_undecided = "behind-undecided"  # needs: an earlier feature's trigger lacks them
    lower_ceiling = "lower-ceiling"  # ceiling_ratio, other, other_ratio
    try_order = "try-order"  # order, other
    numerics_last = "numerics-last"  # other: a candidate that keeps the numerics comes first


@dataclass(frozen=True)
class Rejected:
    """A candidate feature that was not chosen: the code and the values that decided."""

    feature: str
    code: RejectCode
    values: Values = field(default_factory=dict)


class TrustCheck(Enum):
    """The profile invariants of the trust gate; the value is the warning's stable id."""

    level_below_need = "trust.level-below-need"  # level, bottlenecks, wanted
    unknown_profiler_version = "trust.unknown-profiler-version"  # tool, version, side, low, high
    no_collectives = "trust.no-collectives"  # world_size
    parts_do_not_add_up = "trust.parts-do-not-add-up"  # total_ms, step_ms
    short_step = "trust.short-step"  # step_ms, min_ms
    no_steps = "trust.no-steps"
    single_step = "trust.single-step"  # steady_steps, platform


@dataclass(frozen=True)
class TrustWarning:
    """A profile invariant that failed (trust gate), with the values that failed it."""

    id: TrustCheck
    values: Values = field(default_factory=dict)


class Lead(Enum):
    """Why the first bottleneck leads the ranking."""

    only = "only"
    costs_more = "costs-more"  # than `runner_up`
    more_severe = "more-severe"  # at equal cost


@dataclass(frozen=True)
class Bottleneck:
    """A bottleneck its evidence found; `message` is its rule's template, filled (or, when it
    claims no step time, the evidence's messages and the rule's notes)."""

    id: str
    severity: str
    cost_ratio: float
    evidence: list[str]
    message: str
    title: str = ""
    notes: str = ""
    # its evidence's highest level on its own measures (ranks equal costs); `severity`: the cost
    evidence_level: str = ""
    lead: Lead | None = None  # set on the first bottleneck only
    runner_up: tuple[str, float] | None = None  # (id, cost_ratio) of the second, for costs-more
    unmeasured: tuple[str, ...] = ()  # evidence not measured that can cost: cost a lower bound
    runner_up_unmeasured: bool = False  # the second's cost is a lower bound too


@dataclass(frozen=True)
class Reach:
    """The most step time a change can recover, bounded by its mechanism (`limit`)."""

    ms: float
    ratio: float  # of the step
    target_ms: float
    mechanism: str  # the rule's ceiling.mechanism
    limit: str | None = None  # None: the target itself; "share": a part; "hides-under": compute
    hides_under: tuple[str, float] | None = None  # (fact, ms) of the compute an overlap needs


@dataclass(frozen=True)
class Prediction:
    """A change's predicted relative change of the time per unit of work (engine/predict.py)."""

    metric: str  # step_time | time_per_token | time_per_sample
    step_ms: float  # the step the change is predicted against
    expected: float  # negative: faster; low <= expected <= high
    low: float  # the largest gain of the range
    high: float
    addressed_ms: float  # the attributed time the change addresses
    addressed_by: str  # ceiling (the feature's target) | bottleneck-cost (no ceiling)
    bound_ms: float  # the most of it the mechanism can remove
    efficacy_low: float  # the share of bound_ms the change realises
    efficacy_high: float
    efficacy_from: str  # feature-prior | default-prior | unbounded-prior | job-calibration
    measurements: int = 0  # the job's measurements of this feature behind a calibration
    changes_work: bool = False  # the change alters the work per step (batch, accumulation)


@dataclass(frozen=True)
class Recommendation:
    feature: str
    bottleneck: str
    title: str
    cause: Bottleneck | None  # the bottleneck the change addresses, as diagnosed
    evidence: tuple[Fact, ...]
    patch: Patch | None
    advice: str
    expected: str
    risk: str
    verify: tuple[VerifyCheck, ...]
    diff: str = ""
    ceiling_ms: float | None = None  # the most step time the change can recover
    ceiling_ratio: float | None = None
    reach: Reach | None = None  # how the ceiling was bounded
    predicted: Prediction | None = None  # the expected effect, set once the job is known
    undo: bool = False  # undoes a change the ledger marked reverted (never recorded as proposed)
    memory: str = ""  # the rule's word on what the change does to memory
    revert_note: str | None = None  # an undo's: what compare recorded when it said revert
    retry: Reason | None = None  # proposed again after a revert for no measurable effect


@dataclass(frozen=True)
class Suggestion:
    status: Status
    recommendation: Recommendation | None
    rejected: tuple[Rejected, ...]
    reason: Reason
    warnings: tuple[TrustWarning, ...] = ()
