"""Value objects shared by every stage. Imports nothing from the package."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

JOB_SCOPE = "job"


def rank_scope(rank: int) -> str:
    return f"rank:{rank}"


@dataclass(frozen=True)
class Fact:
    """A number (or structured value) measured from an input, with its provenance.

    Facts never carry judgements: `note` says how the value was computed, not whether it is good.
    """

    id: str
    value: Any
    unit: str
    scope: str
    source: str
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "value": self.value,
            "unit": self.unit,
            "scope": self.scope,
            "source": self.source,
            "note": self.note,
        }


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


class AdvisorError(Exception):
    """Base of every error the CLI reports as one line with exit code 2."""


class InputError(AdvisorError):
    """An input file or folder is missing, empty, malformed or inconsistent."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


class DataError(AdvisorError):
    """A project data file (taxonomy, rules, schemas) is invalid."""


@dataclass(frozen=True)
class PatchOp:
    op: str  # "set" | "remove"
    path: str  # "parallel.num_to_forward_prefetch" or "TASK_QUEUE_ENABLE"
    value: Any = None
    expect: Any = None  # the value before the change (None: not set)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"op": self.op, "path": self.path}
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
    feature: str
    target: str  # "config" | "cli" | "env"
    file: str | None  # None: lines to add by hand (no launch script given)
    ops: tuple[PatchOp, ...]
    applicability: str  # "safe" | "review"
    changes: tuple[FileChange, ...] = ()
    lines_to_add: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "file": self.file,
            "applicability": self.applicability,
            "ops": [op.to_json() for op in self.ops],
            "lines_to_add": list(self.lines_to_add),
        }


@dataclass(frozen=True)
class Rejected:
    feature: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"feature": self.feature, "reason": self.reason}


@dataclass(frozen=True)
class Recommendation:
    feature: str
    bottleneck: str
    title: str
    why: str
    evidence: tuple[Fact, ...]
    patch: Patch | None
    advice: str
    expected: str
    risk: str
    verify: tuple[str, ...]
    diff: str = ""


@dataclass(frozen=True)
class Suggestion:
    status: str  # "change" | "healthy" | "needs-data"
    recommendation: Recommendation | None
    rejected: tuple[Rejected, ...]
    summary: str
