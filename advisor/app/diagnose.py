"""`advisor diagnose`: a job's facts -> graded symptoms and ranked bottlenecks."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.app.job import JobOptions, load_job
from advisor.app.rulesets import load_graph
from advisor.engine.diagnose import Diagnosis, diagnose
from advisor.engine.graph import RuleGraph
from advisor.engine.settings import RuleOptions
from advisor.model import FactSet


@dataclass
class DiagnosisRun:
    facts: FactSet
    diagnosis: Diagnosis
    graph: RuleGraph


def run_diagnose(job: JobOptions, rules: RuleOptions | None = None) -> DiagnosisRun:
    graph = load_graph(rules or RuleOptions())
    loaded = load_job(job)
    return DiagnosisRun(loaded.facts, diagnose(graph, loaded.context), graph)
