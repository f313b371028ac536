"""Run the readers on one mutated input and classify what happened.

An outcome is `ok` (facts that pass the sanity checks), `error` (the one-line input error the
CLI prints with exit 2), `traceback` (any other exception: a bug) or `wrong` (facts derived
from data that cannot be right: a ratio outside [0, 1], a negative or infinite duration, parts
that do not add up to the step).
"""

from __future__ import annotations

import math
import random
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.app.pipeline import profile_facts
from advisor.facts.attrib import MEMORY_PART, PARTS
from advisor.model import AdvisorError, FactSet
from tests.fuzz.mutations import Mutation

# shares of the step: each in [0, 1]
_STEP_SHARES = (
    "step.compute_ratio",
    "step.comm_total_ratio",
    "step.comm_exposed_ratio",
    "step.comm_overlapped_ratio",
    "step.free_ratio",
    "step.memory_ratio",
    "step.preparing_ratio",
    "step.bubble_ratio",
)
_NON_NEGATIVE_UNITS = {"ms", "us", "count", "bytes", "MB", "GB/s", "MiB"}


@dataclass(frozen=True)
class Outcome:
    kind: str  # ok | error | traceback | wrong
    detail: str = ""


def _numbers(value: Any) -> list[float]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int | float):
        return [float(value)]
    if isinstance(value, dict):
        return [n for v in value.values() for n in _numbers(v)]
    if isinstance(value, list):
        return [n for v in value for n in _numbers(v)]
    return []


def insane(facts: FactSet) -> str | None:
    """Why these facts cannot be right, or None."""
    for fact in facts.facts:
        for number in _numbers(fact.value):
            if not math.isfinite(number):
                return f"{fact.id} ({fact.scope}) = {fact.value!r}: not finite"
            if fact.unit in _NON_NEGATIVE_UNITS and number < 0:
                return f"{fact.id} ({fact.scope}) = {fact.value!r}: negative"
        if fact.id in _STEP_SHARES and not 0.0 <= float(fact.value) <= 1.0 + 1e-9:
            return f"{fact.id} ({fact.scope}) = {fact.value!r}: a share outside [0, 1]"
    scopes = {f.scope for f in facts.facts}
    for scope in scopes:
        step = facts.value("attrib.step_ms", scope)
        parts = [facts.value(p, scope) for p in PARTS]
        if step and all(isinstance(p, int | float) for p in parts):
            total = sum(parts) + (facts.value(MEMORY_PART, scope) or 0.0)
            if abs(total - step) > 0.01 * step + 1e-6:
                return f"attrib parts add up to {total} ms, not {step} ms ({scope})"
    steps = facts.value("step.time_ms")
    if isinstance(steps, int | float) and steps <= 0:
        return f"step.time_ms = {steps}: not a step"
    return None


def run_case(
    source: Path,
    relative: str,
    mutate: Mutation,
    seed: int,
    work: Path,
    skip_bad_files: bool = False,
) -> Outcome:
    """Copy the profile `source`, mutate the file at `relative` inside it, read it."""
    target = work / source.name
    if target.exists():
        shutil.rmtree(target) if target.is_dir() else target.unlink()
    if source.is_dir():
        shutil.copytree(source, target)
        path = target / relative
    else:
        shutil.copy(source, target)
        path = target
    data = path.read_bytes()
    mutated = mutate(data, random.Random(seed))
    if mutated is None:
        path.unlink()
    else:
        path.write_bytes(mutated)
    try:
        facts = profile_facts(target, skip_bad_files=skip_bad_files)
    except AdvisorError as exc:
        text = str(exc)
        if "\n" in text.strip():
            return Outcome("traceback", f"multi-line error: {text[:200]!r}")
        return Outcome("error", text)
    except RecursionError:
        return Outcome("traceback", "RecursionError")
    except Exception as exc:  # the point of the suite: nothing else may escape
        return Outcome("traceback", f"{type(exc).__name__}: {exc}"[:300])
    why = insane(facts)
    return Outcome("wrong", why) if why else Outcome("ok")
