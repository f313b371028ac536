"""A rank once read: the compact summary the job-level facts are built from.

What a worker returns for a rank: the rank's own facts and the few small things the job level
needs (its id, process groups, link totals, where each value came from), never raw events or
tables, so thousands of ranks fit in memory and travel between processes. The rank derivers
produce it and the job derivers read it, so it sits below both.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from advisor.facts.base import Recorder
from advisor.model import JOB_SCOPE, Fact, MissingFact
from advisor.parsers.profile_data import LinkStat, ProcessGroup


@dataclass
class RankSummary:
    """A rank once read: its facts (scope job until the cluster places it) and what the job
    level needs besides."""

    path: Path
    rank: int | None
    facts: dict[str, Fact]
    missing: dict[str, MissingFact]
    process_groups: dict[str, ProcessGroup] = field(default_factory=dict)
    links: list[LinkStat] | None = None
    sources: dict[str, str] = field(default_factory=dict)
    inputs: list[Path] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # read in full (kernels, trace, communication); False: the step model only (two-tier reads)
    deep: bool = True

    @property
    def label(self) -> str:
        return f"rank {self.rank}" if self.rank is not None else self.path.name

    def recorder(self, scope: str) -> Recorder:
        """The rank's facts under `scope` (rank:N in a cluster, job for a single rank)."""
        if scope == JOB_SCOPE:
            return Recorder(scope, dict(self.facts), dict(self.missing))
        return Recorder(
            scope,
            {k: replace(f, scope=scope) for k, f in self.facts.items()},
            {k: replace(m, scope=scope) for k, m in self.missing.items()},
        )
