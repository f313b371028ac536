"""Facts from profiles and logs, and the checked rule graph: the steps every command shares."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from advisor.app.executors import choose_executor, folder_bytes
from advisor.app.ranks import ASCEND, KINETO, RankTask
from advisor.app.read_ranks import ReadOptions, read_ranks
from advisor.facts.base import Recorder
from advisor.facts.derive import derive_facts
from advisor.facts.layout import complete_layout
from advisor.facts.rank import RankSummary
from advisor.facts.registry import derive_log as log_derive
from advisor.inputs.taxonomy import default_taxonomy
from advisor.inputs.thresholds import cluster_thresholds, fact_thresholds
from advisor.model import JOB_SCOPE, FactSet, InputError
from advisor.parsers.ascend.locate import locate
from advisor.parsers.ascend.rank import cluster_is_empty, read_cluster_output
from advisor.parsers.cluster.database import CLUSTER_DB
from advisor.parsers.kineto.files import is_kineto_file, kineto_files
from advisor.parsers.profile_data import ProfileData
from advisor.parsers.trainlog.log import read_logs


def _nested_traces(path: Path, traces: list[Path]) -> list[str]:
    """Traces found below the folder given: say where, so a stray trace is noticed."""
    if not path.is_dir():
        return []
    folders = sorted({str(p.parent.relative_to(path)) for p in traces if p.parent != path})
    if not folders:
        return []
    more = f" and {len(folders) - 3} more" if len(folders) > 3 else ""
    shown = ", ".join(folders[:3]) + more
    return [f"{len(traces)} PyTorch trace(s) found in sub-folders of {path}: {shown}"]


def log_facts(logs: list[Path], into: FactSet | None = None) -> FactSet:
    """Facts of training logs (rotated files together), added to `into` when given."""
    result = into or FactSet()
    log = read_logs(logs)
    out = Recorder(JOB_SCOPE)
    log_derive(log, default_taxonomy(), out)
    result.facts.extend(out.facts.values())
    result.missing.extend(out.missing.values())
    result.inputs.extend(str(p) for p in logs)
    result.warnings.extend(log.warnings)
    return result


def collect_facts(
    profile: Path | None,
    logs: list[Path] | None,
    skip_bad_files: bool = False,
    config: Mapping[str, object] | None = None,
    config_source: str = "",
    reading: ReadOptions | None = None,
) -> FactSet:
    """Facts of a profile, of training logs, or of both; the job's layout from them and, when
    given, the config (after the launch command's overrides)."""
    result = profile_facts(profile, skip_bad_files, reading) if profile is not None else FactSet()
    if logs:
        log_facts(logs, result)
    complete_layout(result, config, config_source, default_taxonomy())
    return result


def profile_facts(
    path: Path, skip_bad_files: bool = False, reading: ReadOptions | None = None
) -> FactSet:
    """Read a profile (one rank or a cluster; rank directories or PyTorch profiler traces),
    each rank by the pure extract_rank on an executor, and derive the job's facts."""
    reading = reading or ReadOptions()
    taxonomy = default_taxonomy()
    kineto = [path] if is_kineto_file(path) else kineto_files(path) if path.is_dir() else []
    if kineto and not (path.is_dir() and any(path.glob("*_ascend_*"))):
        tasks = [RankTask(p, KINETO, skip_bad_files) for p in kineto]
        data, warnings = ProfileData(root=path), list[str]()
        warnings.extend(_nested_traces(path, kineto))
    else:
        rank_dirs, cluster_file = locate(path)
        tasks = [RankTask(d, ASCEND, skip_bad_files) for d in rank_dirs]
        data, warnings = read_cluster_output(path, cluster_file, taxonomy, skip_bad_files)
        if cluster_file is not None and not rank_dirs and cluster_is_empty(data):
            raise InputError(
                str(cluster_file),
                f"no cluster_step_trace_time.csv, cluster_communication.json or {CLUSTER_DB}",
            )
    if len(tasks) == 1:  # one rank alone may split a large trace between processes
        tasks = [replace(tasks[0], split_trace=True)]
    summaries: list[RankSummary] = []
    coverage = ""
    if tasks:
        executor = choose_executor(
            reading.jobs, reading.scheduler, len(tasks), folder_bytes([t.path for t in tasks])
        )
        try:
            ranks = read_ranks(tasks, executor, reading, cluster_thresholds(), skip_bad_files)
        finally:
            executor.close()
        summaries, coverage = ranks.summaries, ranks.coverage
        warnings = ranks.warnings + warnings
        _check_unique(summaries)
    inputs = [p for rank in summaries for p in rank.inputs]
    inputs.extend(p for p in (data.cluster_source, data.cluster_comm_source) if p is not None)
    facts = derive_facts(data, summaries, taxonomy, inputs, coverage)
    facts.warnings.extend(warnings)
    return facts


def _check_unique(summaries: list[RankSummary]) -> None:
    seen: dict[int, Path] = {}
    for rank in summaries:
        if rank.rank is None:
            continue
        if rank.rank in seen:
            raise InputError(
                str(rank.path), f"rank {rank.rank} appears twice (also in {seen[rank.rank]})"
            )
        seen[rank.rank] = rank.path


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


def with_memory_pressure(facts: FactSet, device: str | None) -> None:
    """The job's memory pressure and attribution from every memory fact gathered so far, what
    its device can do (bf16), and the kernels launched on fewer blocks than it has cores: the
    facts that need the device, which --device may name."""
    from advisor.facts.block_dim import block_dim_usage
    from advisor.facts.device import device_capabilities
    from advisor.facts.pressure import memory_pressure

    memory_pressure(facts, device, fact_thresholds())
    device_capabilities(facts, device)
    block_dim_usage(facts, device)


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
    facts.warnings.extend(extra.warnings)
    facts.inputs.append(str(model_config))
