"""Facts from profiles and logs, and the checked rule graph: the steps every command shares."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from advisor.facts import derive_facts
from advisor.facts.base import Recorder
from advisor.facts.layout import complete_layout
from advisor.facts.log import derive as log_derive
from advisor.inputs.taxonomy import default_taxonomy
from advisor.model import JOB_SCOPE, FactSet, InputError
from advisor.parsers.ascend import read_profile
from advisor.parsers.kineto import is_kineto_file, kineto_files, read_kineto
from advisor.parsers.profile_data import ProfileData
from advisor.parsers.trainlog import read_logs


def log_facts(logs: list[Path], into: FactSet | None = None) -> FactSet:
    """Facts of training logs (rotated files together), added to `into` when given."""
    result = into or FactSet()
    log = read_logs(logs)
    out = Recorder(JOB_SCOPE)
    log_derive(log, default_taxonomy(), out)
    result.facts.extend(out.facts.values())
    result.missing.extend(out.missing.values())
    result.inputs.extend(str(p) for p in logs)
    return result


def collect_facts(
    profile: Path | None,
    logs: list[Path] | None,
    skip_bad_files: bool = False,
    config: Mapping[str, object] | None = None,
    config_source: str = "",
) -> FactSet:
    """Facts of a profile, of training logs, or of both; the job's layout from them and, when
    given, the config (after the launch command's overrides)."""
    result = profile_facts(profile, skip_bad_files) if profile is not None else FactSet()
    if logs:
        log_facts(logs, result)
    complete_layout(result, config, config_source, default_taxonomy())
    return result


def profile_facts(path: Path, skip_bad_files: bool = False) -> FactSet:
    """Read a profile folder (one rank or a cluster) and derive its facts."""
    taxonomy = default_taxonomy()
    kineto = [path] if is_kineto_file(path) else kineto_files(path) if path.is_dir() else []
    if kineto and not (path.is_dir() and any(path.glob("*_ascend_*"))):
        data = ProfileData(
            root=path, ranks=[read_kineto(p, taxonomy, skip_bad_files) for p in kineto]
        )
        data.ranks.sort(key=lambda r: (r.rank is None, r.rank or 0))
        warnings: list[str] = []
    else:
        data, warnings = read_profile(path, taxonomy, skip_bad=skip_bad_files)
    warnings.extend(w for rank in data.ranks for w in rank.warnings)
    inputs = [p for rank in data.ranks for p in rank.inputs]
    inputs.extend(p for p in (data.cluster_source, data.cluster_comm_source) if p is not None)
    facts = derive_facts(data, taxonomy, inputs)
    facts.warnings.extend(warnings)
    return facts


def side_facts(path: Path | None, log: Path | None) -> FactSet:
    """One side of a comparison: a profile folder, a training log file, or both."""
    profile = path if path is not None and path.is_dir() else None
    logs = [
        p for p in (log, path if path is not None and path.is_file() else None) if p is not None
    ]
    if profile is None and not logs:
        where = str(path) if path is not None else "comparison side"
        raise InputError(where, "no such profile folder or training log")
    return collect_facts(profile, logs)


def add_estimates(
    facts: FactSet, model_config: Path, config: dict[str, object] | None, device: str = "910B"
) -> None:
    """Merge `advisor estimate` facts (with the measured step time and world size) into `facts`."""
    from advisor.facts.estimate import (
        estimate,
        load_model_config,
        peak_tflops,
        training_from_config,
    )

    world = facts.value("profile.world_size")
    train = training_from_config(config, world if isinstance(world, int) else None)
    step = facts.value("log.step_time_ms") or facts.value("step.time_ms")
    peak, source = peak_tflops(device)
    extra = estimate(
        load_model_config(model_config),
        train,
        float(step) if isinstance(step, int | float) else None,
        peak,
        source,
        model_config.name,
    )
    facts.facts.extend(extra.facts)
    facts.inputs.append(str(model_config))
