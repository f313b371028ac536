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
