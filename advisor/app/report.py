"""`advisor report`: everything the text commands say about one job, gathered for one page.

Orchestration only: facts and diagnosis always; the suggestion when a config is given (a dry
run: nothing is written, the ledger is read but never added to); the comparison with a baseline
profile and the ledger's history when asked for.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from advisor.app.diagnose import run_diagnose
from advisor.app.job import JobOptions
from advisor.app.pipeline import side_facts
from advisor.app.rulesets import load_graph
from advisor.app.suggest import SuggestOptions, run_suggest
from advisor.engine.compare import Comparison, compare
from advisor.engine.diagnose import Diagnosis
from advisor.engine.graph import RuleGraph
from advisor.engine.settings import RuleOptions
from advisor.inputs.ledger import Ledger, default_path
from advisor.inputs.taxonomy import default_taxonomy
from advisor.model import FactSet, InputError, Suggestion


@dataclass(frozen=True)
class ReportOptions:
    baseline: Path | None = None  # a baseline profile (or log) to compare the job against
    ledger: Path | None = None  # the ledger whose history the page shows


@dataclass
class ReportData:
    """What one page shows; the renderer only formats it."""

    title: str
    facts: FactSet
    diagnosis: Diagnosis
    suggestion: Suggestion | None = None
    notes: list[str] = field(default_factory=list)
    comparison: Comparison | None = None
    baseline: str | None = None
    ledger: Ledger | None = None
    graph: RuleGraph | None = None  # the rules the run used


def run_report(
    job: JobOptions, rules: RuleOptions | None = None, options: ReportOptions | None = None
) -> ReportData:
    options = options or ReportOptions()
    if job.profile is None:
        raise InputError("report", "needs a profile")
    if job.config is not None:
        ledger_path = options.ledger or default_path(job.config)
        suggested = run_suggest(
            job,
            rules,
            SuggestOptions(ledger=ledger_path, use_ledger=ledger_path.is_file(), read_only=True),
        )
        data = ReportData(
            str(job.profile),
            suggested.facts,
            suggested.diagnosis,
            suggested.suggestion,
            suggested.notes,
            ledger=suggested.ledger,
        )
    else:
        diagnosed = run_diagnose(job, rules)
        data = ReportData(str(job.profile), diagnosed.facts, diagnosed.diagnosis)
    data.graph = load_graph(rules)
    if options.ledger is not None:
        if not options.ledger.is_file():
            raise InputError(str(options.ledger), "no such ledger file")
        data.ledger = Ledger.load(options.ledger)
    if options.baseline is not None:
        base = side_facts(options.baseline, None)
        data.comparison = compare(base, data.facts, default_taxonomy())
        data.baseline = str(options.baseline)
    return data
