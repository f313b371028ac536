"""The facts catalogue: every fact id the advisor can derive, its unit, meaning and provenance.

This is the public contract rules and users rely on. Ids are fixed once published; a fact that
cannot be computed is reported as missing with the reason, never as a made-up zero. The entries
are data, in rules/facts.yaml (checked against schemas/fact_catalogue.schema.json), read once
on first use: importing this module reads nothing, so commands that never name a fact pay
nothing, and a warm cache of checked data (inputs/checked_data.py) reads it back as JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from typing import Any

from advisor.core.checked_data import load_valid
from advisor.core.resources import rules_dir
from advisor.model import DataError

CATALOGUE_FILE = "facts.yaml"
SCHEMA = "fact_catalogue.schema.json"
# facts named after an environment variable, one generic entry for them all
ENV_PREFIX = "env."
GPU_PLATFORMS = ("cuda", "rocm")
STEP_MODELS_ONLY = (
    "read the ranks in full: --deep auto or all (--deep 0 read the step models and "
    "communication summaries only)"
)


class Combine(StrEnum):
    """How a job-level fact is formed from the ranks' facts in a cluster profile."""

    MAX = "max"  # the slowest / biggest rank sets the pace (step time, memory peaks)
    MEDIAN = "median"  # a typical rank (ratios, per-step counts)
    FIRST = "first"  # identical on every rank (versions, level, environment)
    REPRESENTATIVE = "representative"  # structured values: the rank with the median step time
    JOB = "job"  # only defined for the job (cluster facts)
    # the rank with the highest memory peak: its own curve's parts, never a mix of ranks
    PEAK_RANK = "peak-rank"


@dataclass(frozen=True)
class FactSpec:
    id: str
    unit: str
    area: str
    doc: str
    combine: Combine
    collect: str  # how to get the data when the fact is missing
    gpu_collect: str = ""  # the same on a PyTorch profiler trace, when the fact says it


@dataclass(frozen=True)
class Catalogue:
    """rules/facts.yaml once read: the entries in their listed order, the areas' order, the
    entry environment variables share, and the GPU counterpart of each shared hint."""

    specs: dict[str, FactSpec]
    areas: tuple[str, ...]
    environment: FactSpec
    gpu_collect: dict[str, str]
    # (a phrase of a missing fact's reason, the way to get what it names, the same on a GPU)
    because: tuple[tuple[str, str, str], ...] = ()


def _spec(entry: Mapping[str, Any], fact_id: str, collect: str) -> FactSpec:
    return FactSpec(
        fact_id,
        str(entry["unit"]),
        str(entry["area"]),
        str(entry["doc"]),
        Combine(entry["combine"]),
        collect,
        str(entry.get("gpu", "")),
    )


def _build(raw: Mapping[str, Any], where: str) -> Catalogue:
    """The catalogue from data the schema accepted; what the schema cannot say is checked here
    (hint names, ids listed once)."""
    hints = {str(name): dict(hint) for name, hint in raw["hints"].items()}
    areas = tuple(str(a) for a in raw["areas"])
    specs: dict[str, FactSpec] = {}
    for entry in raw["facts"]:
        fact_id = str(entry["id"])
        if fact_id in specs:
            raise DataError(f"{where}: fact {fact_id} is listed twice")
        hint = entry.get("hint")
        if hint is not None and hint not in hints:
            raise DataError(f"{where}: fact {fact_id}: no hint named {hint}")
        collect = str(hints[hint]["collect"]) if hint is not None else entry.get("collect", "")
        specs[fact_id] = _spec(entry, fact_id, collect)
    environment = raw["environment"]
    return Catalogue(
        specs=specs,
        areas=areas,
        environment=_spec(environment, ENV_PREFIX, str(environment["collect"])),
        gpu_collect={str(h["collect"]): str(h["gpu"]) for h in hints.values() if "gpu" in h},
        because=tuple(
            (str(b["because"]), str(b["collect"]), str(b.get("gpu", b["collect"])))
            for b in raw.get("missing_because", [])
        ),
    )


@cache
def catalogue() -> Catalogue:
    """The catalogue, read and checked on first use; a broken file is a DataError naming it."""
    path = rules_dir() / CATALOGUE_FILE
    raw = load_valid(path, SCHEMA)
    return _build(raw, str(path))


# Read on first access (PEP 562), so importing the module reads no file.
CATALOGUE: tuple[FactSpec, ...]
SPECS: dict[str, FactSpec]
AREAS: tuple[str, ...]


def __getattr__(name: str) -> object:
    if name == "CATALOGUE":
        return tuple(catalogue().specs.values())
    if name == "SPECS":
        return catalogue().specs
    if name == "AREAS":
        return catalogue().areas
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def spec_for(fact_id: str) -> FactSpec:
    """The catalogue entry of a fact id; `env.<NAME>` facts share one generic entry."""
    known = catalogue()
    if fact_id.startswith(ENV_PREFIX):
        env = known.environment
        return FactSpec(fact_id, env.unit, env.area, env.doc, env.combine, env.collect)
    return known.specs[fact_id]


def collect_hint(
    fact_id: str, platform: object, step_models_only: bool = False, reason: str | None = None
) -> str:
    """How to collect a missing fact on the profile's platform (`step_models_only`: no rank
    was read in full, so the profile may well hold it; `reason`: why the fact is missing, when
    it names what is actually absent)."""
    spec = spec_for(fact_id)
    if step_models_only and spec.collect:
        return STEP_MODELS_ONLY
    for because, collect, gpu in catalogue().because if reason else ():
        if because in (reason or ""):
            return gpu if platform in GPU_PLATFORMS else collect
    if platform in GPU_PLATFORMS:
        return (
            spec.gpu_collect
            or catalogue().gpu_collect.get(spec.collect)
            or "not recorded in PyTorch profiler traces"
        )
    return spec.collect or f"a profile that yields {fact_id}"


def is_known(fact_id: str) -> bool:
    return fact_id in catalogue().specs or (
        fact_id.startswith(ENV_PREFIX) and len(fact_id) > len(ENV_PREFIX)
    )
