"""End-to-end steps shared by the commands: inputs in, results out (no rendering, no CLI)."""

from __future__ import annotations

from pathlib import Path

from advisor.facts import derive_facts
from advisor.model import FactSet
from advisor.parsers.ascend import read_profile
from advisor.taxonomy import default_taxonomy


def profile_facts(path: Path, skip_bad_files: bool = False) -> FactSet:
    """Read a profile folder (one rank or a cluster) and derive its facts."""
    taxonomy = default_taxonomy()
    data, warnings = read_profile(path, taxonomy, skip_bad=skip_bad_files)
    inputs = [p for rank in data.ranks for p in rank.inputs]
    inputs.extend(p for p in (data.cluster_source, data.cluster_comm_source) if p is not None)
    facts = derive_facts(data, taxonomy, inputs)
    facts.warnings.extend(warnings)
    return facts
