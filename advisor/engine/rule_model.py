"""The typed rule model: one frozen dataclass per rule kind and per part of a rule.

Field names follow the rule schema's property names (tests keep the two in step); fields marked
`LOADED` are not in the file but set by the loader (where the file is, the user's settings).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from advisor.engine.conditions import Condition, Scalar
from advisor.model import Applicability, Direction, PatchTarget, Severity

LOADED = {"loaded": True}
LEVELS = ("note", "warning", "error")


class Compare(StrEnum):
    above = "above"
    at_or_above = "at_or_above"
    below = "below"
    at_or_below = "at_or_below"

    def crossed(self, value: float, cut: float) -> bool:
        if self is Compare.above:
            return value > cut
        if self is Compare.at_or_above:
            return value >= cut
        if self is Compare.below:
            return value < cut
        return value <= cut

    @property
    def upward(self) -> bool:
        return self in (Compare.above, Compare.at_or_above)


@dataclass(frozen=True)
class Example:
    """A rule's example: the config before and after."""

    before: str
    after: str


@dataclass(frozen=True)
class Docs:
    """A rule's documentation: why, an example, notes."""

    why: str
    example: Example
    notes: str | None = None


@dataclass(frozen=True)
class Reference:
    """The public source a rule's claim is taken from."""

    source: str
    section: str


@dataclass(frozen=True)
class Param:
    """A rule's parameter: its default, unit, meaning and the value in force."""

    default: Scalar
    unit: str
    doc: str
    value: Scalar = field(default=None, metadata=LOADED)  # the default or the settings' value


@dataclass(frozen=True)
class Levels:
    """Cut points of a symptom's grades (params bound); None: the grade is not used."""

    note: float | None = None
    warning: float | None = None
    error: float | None = None

    def items(self) -> list[tuple[str, float]]:
        cuts = {"note": self.note, "warning": self.warning, "error": self.error}
        return [(name, cut) for name, cut in cuts.items() if cut is not None]


@dataclass(frozen=True)
class Cost:
    """The step time a symptom costs."""

    scale: str | None = None  # fact multiplying (value - fine) to express it as a step share
    none: bool = False  # evidence only: the symptom costs no measurable step time
    # facts subtracted first: the parts other bottlenecks explain (each counted once)
    excluding: tuple[str, ...] = ()


@dataclass(frozen=True)
class Evidence:
    """The symptoms a bottleneck is diagnosed from."""

    any: tuple[str, ...] = ()
    all: tuple[str, ...] = ()

    @property
    def ids(self) -> tuple[str, ...]:
        return (*self.any, *self.all)


@dataclass(frozen=True)
class Address:
    """A bottleneck a feature addresses, in the order it is tried."""

    bottleneck: str
    order: int
    when: Condition | None = None
    otherwise: str | None = None  # what the profile lacks when `when` is false, in words


@dataclass(frozen=True)
class Requirement:
    """What a feature needs, and why."""

    condition: Condition
    reason: str


@dataclass(frozen=True)
class Conflict:
    """What a feature cannot be combined with, and why."""

    reason: str
    feature: str | None = None
    condition: Condition | None = None


@dataclass(frozen=True)
class ChangeOp:
    """One edit of a rule's change."""

    op: str  # "set" | "remove" | "increment" | "scale"
    path: str
    value: Scalar = None
    default: float | None = None  # increment, scale: the value when the key is not set
    by: float | None = None  # increment: added; scale: the factor (a whole result, rounded down)
    max: float | None = None  # params bound
    min: float | None = None
    near: tuple[str, ...] = ()  # a Megatron flag's neighbours: a new flag is written beside them
    unless: Condition | None = None


@dataclass(frozen=True)
class Change:
    """The edit a rule proposes: where it lands, whether it is written automatically."""

    target: PatchTarget
    applicability: Applicability
    ops: tuple[ChangeOp, ...] = ()
    advice: str | None = None


@dataclass(frozen=True)
class Effect:
    """What a feature's change gains and risks."""

    gain: str
    risk: str
    memory: str | None = None
    changes_numerics: bool = False  # the seeds try such changes last
    changes_work: bool = False  # alters the work per step: judged per token or sample
    device_memory: str | None = None  # more | less: the device memory peak it moves


@dataclass(frozen=True)
class VerifyItem:
    """A fact that should move in one direction after a change."""

    fact: str
    direction: Direction


@dataclass(frozen=True)
class Efficacy:
    """The share of its reachable gain a change is expected to realise: a prior range."""

    low: float
    high: float


@dataclass(frozen=True)
class Ceiling:
    """The most step time a feature can recover: the time it targets, bounded by what its
    mechanism can remove (a share of it, or the compute an overlap hides under)."""

    fact: str
    key: tuple[str, ...] = ()  # the entries of a per-kind fact it targets, summed
    # measured bounds (the smallest known one bounds it; used alone when `fact` is missing)
    at_most: tuple[str, ...] = ()
    mechanism: str = "removes"
    share: float = 1.0  # the part of the target the mechanism can remove
    hides_under: str | None = None  # an overlap hides at most this much (a fact in ms)
    source: str = ""  # where the bound is stated
    efficacy: Efficacy | None = None  # the prior; None: rules/prediction.yaml's default
    # a key the per-kind fact lacks: "none" of it (nothing to recover), or "unknown"
    missing_key: str = "none"


@dataclass(frozen=True)
class Location:
    """Where a policy's finding is placed: a config key or an environment variable."""

    config: str | None = None
    env: str | None = None
    value: str | None = None  # the config path {value} shows, when not the located key


@dataclass(frozen=True)
class Rule:
    """What every rule file has."""

    id: str
    kind: str
    title: str
    docs: Docs
    references: tuple[Reference, ...]
    status: str
    tags: tuple[str, ...]
    params: Mapping[str, Param]
    path: Path = field(metadata=LOADED)
    enabled: bool = field(default=True, metadata=LOADED)
    platforms: tuple[str, ...] = ()  # empty: every platform

    def param(self, name: str) -> Scalar:
        return self.params[name].value

    def runs_on(self, platform: object) -> bool:
        """Whether the rule applies to a profile of `platform` (unknown platform: yes)."""
        return not self.platforms or not isinstance(platform, str) or platform in self.platforms


@dataclass(frozen=True)
class SymptomRule(Rule):
    """A symptom: a measure crossing a cut, graded by levels."""

    measure: str = ""
    compare: Compare = Compare.above
    fine: float = 0.0
    levels: Levels = Levels()
    message: str = ""
    when: Condition | None = None
    cost: Cost = Cost()


@dataclass(frozen=True)
class BottleneckRule(Rule):
    """A bottleneck: diagnosed from its symptoms."""

    evidence: Evidence = Evidence()
    message: str = ""
    needs_level: str | None = None  # Level0 / Level1 / Level2


@dataclass(frozen=True)
class FeatureRule(Rule):
    """A feature: a change that addresses bottlenecks, with its limits."""

    addresses: tuple[Address, ...] = ()
    change: Change = Change(PatchTarget.none, Applicability.display_only)
    effect: Effect = Effect("", "")
    verify: tuple[VerifyItem, ...] = ()
    requires: tuple[Requirement, ...] = ()
    conflicts: tuple[Conflict, ...] = ()
    after: tuple[str, ...] = ()
    applied_when: Condition | None = None
    collects: tuple[str, ...] = ()
    ceiling: Ceiling | None = None
    applies_to: tuple[str, ...] = ()  # the config dialects its change exists in; empty: all

    def runs_for(self, dialect: object) -> bool:
        """Whether the feature exists for a job configured in `dialect` (unknown: yes)."""
        return not self.applies_to or not isinstance(dialect, str) or dialect in self.applies_to


@dataclass(frozen=True)
class PolicyRule(Rule):
    """A policy: a check of a config or launch script in code review."""

    applies_to: tuple[str, ...] = ()
    severity: Severity = Severity.warning  # as the file declares it
    message: str = ""
    when: Condition | None = None
    check: str | None = None
    location: Location | None = None
    change: Change | None = None
    # one finding per run for each distinct message, counting the places (a repeated note)
    aggregate: bool = False
    # the releases the rule's claim holds for ("mindspeed-llm>=2.3"); empty: every release
    targets: tuple[str, ...] = ()
    severity_override: Severity | None = field(default=None, metadata=LOADED)

    @property
    def effective_severity(self) -> Severity:
        return self.severity_override or self.severity


AnyRule = SymptomRule | BottleneckRule | FeatureRule | PolicyRule
RULE_CLASSES: dict[str, type[Rule]] = {
    "symptom": SymptomRule,
    "bottleneck": BottleneckRule,
    "feature": FeatureRule,
    "policy": PolicyRule,
}
