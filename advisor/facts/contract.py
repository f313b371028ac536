"""The one shape of a fact deriver: what it reads, what it writes, one function.

A fact family (the step model, operators, communication, the ranks' spread...) is one
`Deriver`: the inputs it reads by name (the rank's profile, the taxonomy, the facts' thresholds,
the steady steps...),
the fact ids it reads from other derivers of its scope, the fact ids it writes (an id ending in
`*` stands for a family of ids, as `env.*`), and `derive(inputs, out)`. Derivers run in scopes
(one rank, the job, training logs), each scope with its inputs type; the order inside a scope
follows from what reads what (facts/order.py), and the runner holds each deriver to the ids it
declared.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import Generic, TypeVar

from advisor.facts.base import Recorder
from advisor.facts.steady import SteadyRows, steady_rows
from advisor.facts.summary import RankSummary
from advisor.inputs.taxonomy import Taxonomy
from advisor.inputs.thresholds import (
    FactThresholds,
    LogThresholds,
    fact_thresholds,
    log_thresholds,
)
from advisor.parsers.profile_data import ProfileData, RankProfile
from advisor.parsers.trainlog.log import TrainLog


class Scope(StrEnum):
    """Where a deriver's facts live, and so which inputs it is given."""

    RANK = "rank"  # one rank's profile
    JOB = "job"  # the job, from its ranks' summaries and msprof-analyze's cluster output
    LOG = "log"  # training logs


@dataclass
class RankInputs:
    """What a rank deriver reads: the rank's profile, the taxonomy, the facts' thresholds and
    its steady steps."""

    profile: RankProfile
    taxonomy: Taxonomy
    # the source communication facts name (communication.json unless the caller knows better)
    comm_source: str | None = None
    thresholds: FactThresholds = field(default_factory=fact_thresholds)

    @cached_property
    def steady(self) -> SteadyRows:
        return steady_rows(self.profile, self.thresholds)


# the ranks of each pipeline stage (None: no stages) and where the stages were read from
# (None: inferred from the ranks' compute)
StageGroups = tuple[list[list[str]] | None, str | None]


@dataclass
class JobInputs:
    """What a job deriver reads: the profile's job-level data, the ranks' summaries and every
    rank's facts by label (rank directories and the cluster file's ranks)."""

    data: ProfileData
    ranks: list[RankSummary]
    recorders: list[tuple[str, Recorder]]
    taxonomy: Taxonomy
    several: bool  # several ranks (a single rank's facts are the job's as they are)
    source: str = "rank directories"
    stages: StageGroups = (None, None)
    # some rank was read in full (or summarised its communication), so send/recv is known
    traffic_read: bool = True
    coverage: str = ""  # which ranks were read how, which failed (profile.ranks' note)
    thresholds: FactThresholds = field(default_factory=fact_thresholds)


@dataclass
class LogInputs:
    """What a log deriver reads: the training logs (rotated files together), the taxonomy and
    the logs' thresholds."""

    log: TrainLog
    taxonomy: Taxonomy
    thresholds: LogThresholds = field(default_factory=log_thresholds)


InputsT = TypeVar("InputsT", RankInputs, JobInputs, LogInputs)


def _always(_: object) -> bool:
    return True


@dataclass(frozen=True)
class Deriver(Generic[InputsT]):
    """One fact family's declaration; see the module docstring."""

    name: str
    scope: Scope
    inputs: frozenset[str]  # attributes of the scope's inputs type
    reads: frozenset[str]  # fact ids other derivers of the scope write
    writes: frozenset[str]  # fact ids; "prefix.*" for a family of ids
    derive: Callable[[InputsT, Recorder], None]
    # whether it runs for these inputs (a job of one rank has no spread between ranks)
    applies: Callable[[InputsT], bool] = field(default=_always)
    # it reads what another process may still be measuring (a large trace's phases): it runs
    # after the derivers that do not read its facts, which are recorded in the plan's order
    waits: bool = False

    def declares(self, fact_id: str) -> bool:
        return fact_id in self.writes or any(
            w.endswith("*") and fact_id.startswith(w[:-1]) for w in self.writes
        )

    def writes_any(self, fact_ids: frozenset[str]) -> bool:
        return any(self.declares(fact_id) for fact_id in fact_ids)
