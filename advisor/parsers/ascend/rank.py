"""torch_npu / MindSpore 2.3+ profiler output: one rank directory or a cluster of them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from advisor.inputs.taxonomy import Taxonomy
from advisor.inputs.thresholds import reader_thresholds
from advisor.model import InputError
from advisor.parsers.ascend import files, memory, meta
from advisor.parsers.ascend.comm_matrix import read_comm_matrix
from advisor.parsers.ascend.kernels import read_kernels
from advisor.parsers.ascend.locate import (
    CLUSTER_COMMUNICATION,
    CLUSTER_MATRIX,
    CLUSTER_STEP_TRACE,
    OUTPUT_DIR,
    framework_of,
    is_output_dir,
    is_text_output,
)
from advisor.parsers.ascend_db.reader import (
    DbProfile,
    analysis_db,
    profiler_db,
    read_database,
    read_step_model,
)
from advisor.parsers.bounds import BadValues
from advisor.parsers.cluster.database import CLUSTER_DB, read_cluster_db
from advisor.parsers.layout_hints import layout_problem
from advisor.parsers.profile_data import ProfileData, RankProfile
from advisor.parsers.trace_view.parallel import read_trace_bounded, start_trace

T = TypeVar("T")


class _Reader:
    """Reads one file into the rank profile; absent files are noted, bad ones fail or warn."""

    def __init__(self, rank: RankProfile, skip_bad: bool, warnings: list[str]) -> None:
        self.rank = rank
        self.skip_bad = skip_bad
        self.warnings = warnings

    def read(self, path: Path | None, name: str, parse: Callable[[Path], T]) -> T | None:
        if path is None or not path.is_file():
            self.rank.absent[name] = "not in the profile"
            return None
        try:
            value = parse(path)
        except InputError as exc:
            if not self.skip_bad:
                raise
            self.warnings.append(f"{exc} (skipped)")
            self.rank.absent[name] = f"unreadable: {exc.problem}"
            return None
        self.rank.inputs.append(path)
        return value


def read_rank(
    directory: Path,
    taxonomy: Taxonomy,
    skip_bad: bool,
    warnings: list[str],
    shallow: bool = False,
    split_trace: bool = True,
) -> RankProfile:
    """One rank directory. `shallow` reads the header, the step model and the communication
    summaries only (the cheap tier of a large cluster: what msprof-analyze's cluster analysis
    reads); `split_trace` lets a large trace be decoded by worker processes (off
    inside a worker that reads one rank of many)."""
    output = directory / OUTPUT_DIR if (directory / OUTPUT_DIR).is_dir() else None
    if output is None and is_output_dir(directory):
        output = directory
    suffixed = framework_of(directory)
    rank = RankProfile(path=directory, output_dir=output, framework=suffixed or "torch_npu")
    rank.framework_source = (
        f"from the directory suffix ({directory.name})"
        if suffixed
        else f"assumed: {OUTPUT_DIR} without a _ascend_pt / _ascend_ms directory suffix"
    )
    reader = _Reader(rank, skip_bad, warnings)
    _read_description(rank, directory, reader)
    if output is None:
        raise _no_output(directory)
    db_path = profiler_db(output)
    if db_path is not None and not is_text_output(output):
        _read_db_rank(rank, db_path, taxonomy, reader, shallow)
        return rank
    bad = BadValues(skip=skip_bad)
    if shallow and _read_summaries(rank, output, taxonomy, reader, bad):
        return rank
    # (without a step model the rank is read in full: its trace holds the steps)
    _read_text_rank(rank, output, taxonomy, reader, bad, split_trace)
    if rank.level is None:
        _infer_level(rank)
    _check_steps(rank, output)
    return rank


def _read_description(rank: RankProfile, directory: Path, reader: _Reader) -> None:
    """profiler_info_<rank>.json, profiler_metadata.json, PROF_*'s info.json: where present."""
    info_paths = sorted(p for p in directory.glob("profiler_info*.json") if p.is_file())
    if info_paths:
        info = reader.read(info_paths[0], "profiler_info.json", files.read_json)
        if info is not None:
            meta.apply_info(rank, info, info_paths[0])
    else:
        rank.absent["profiler_info.json"] = "not in the profile"
    metadata = reader.read(
        directory / "profiler_metadata.json", "profiler_metadata.json", meta.read_metadata
    )
    if metadata is not None:
        meta.apply_metadata(rank, metadata)
    meta.read_device_info(rank, directory, reader.read)


def _no_output(directory: Path) -> InputError:
    raw = sorted(p.name for p in directory.glob("PROF_*") if p.is_dir())
    hint = (
        f": only raw data ({raw[0]}) — parse it first (MindSpore: Profiler.offline_analyse; "
        "torch_npu: torch_npu.profiler.profiler.analyse)"
        if raw
        else ""
    )
    return InputError(str(directory), f"no {OUTPUT_DIR} folder with profiler output{hint}")


def _read_summaries(
    rank: RankProfile, output: Path, taxonomy: Taxonomy, reader: _Reader, bad: BadValues
) -> bool:
    """The cheap tier: the step model and the small communication files; whether there was a
    step model to read."""
    steps = output / "step_trace_time.csv"
    if not steps.is_file():
        return False
    rank.step_rows = reader.read(
        steps, "step_trace_time.csv", lambda p: files.read_step_trace(p, bad)
    )
    if rank.step_rows is None:
        return False
    # small files that tell a pipeline's stages (send/recv) and a slow link apart
    _read_comm(rank, reader, output.joinpath, taxonomy, bad)
    _read_links(rank, reader, output.joinpath)
    reader.warnings.extend(bad.warnings())
    rank.dropped.update(bad.by_name())
    return True


def _read_text_rank(
    rank: RankProfile,
    output: Path,
    taxonomy: Taxonomy,
    reader: _Reader,
    bad: BadValues,
    split_trace: bool,
) -> None:
    """Every file of a text export. Large traces are decoded by worker processes while the CSV
    files are read here."""
    out = output.joinpath
    trace_path = out("trace_view.json")
    pending = start_trace(trace_path, taxonomy) if trace_path.is_file() and split_trace else None
    rank.step_rows = reader.read(
        out("step_trace_time.csv"), "step_trace_time.csv", lambda p: files.read_step_trace(p, bad)
    )
    rank.kernels = reader.read(
        out("kernel_details.csv"),
        "kernel_details.csv",
        lambda p: read_kernels(
            p, reader_thresholds(), bad, spans=out("memory_record.csv").is_file()
        ),
    )
    rank.op_stats = reader.read(
        out("op_statistic.csv"), "op_statistic.csv", lambda p: files.read_op_statistic(p, bad)
    )
    _read_comm(rank, reader, out, taxonomy, bad)
    spans = rank.kernels.step_spans if rank.kernels is not None else ()
    rank.memory = memory.read_memory(out, reader.read, bad, spans)
    rank.module_memory = reader.read(
        out("npu_module_mem.csv"),
        "npu_module_mem.csv",
        lambda p: memory.read_module_memory(p, bad),
    )
    reader.warnings.extend(bad.warnings())
    rank.dropped.update(bad.by_name())
    _read_links(rank, reader, out)
    rank.trace = reader.read(
        trace_path,
        "trace_view.json",
        lambda p: pending() if pending else read_trace_bounded(p, taxonomy),
    )


def _check_steps(rank: RankProfile, output: Path) -> None:
    """A rank without steps (neither a step model nor ProfilerStep events) is refused."""
    if rank.step_rows is not None or (rank.trace is not None and rank.trace.steps):
        return
    trace_path = output / "trace_view.json"
    nothing = rank.trace is None and not trace_path.is_file()
    if nothing and not (output / "step_trace_time.csv").is_file():
        raise InputError(str(output), layout_problem(output))
    where = trace_path if rank.trace is not None else output
    raise InputError(
        str(where),
        "no steps: neither step_trace_time.csv rows nor ProfilerStep#N events in trace_view.json",
    )


def _read_comm(
    rank: RankProfile,
    reader: _Reader,
    out: Callable[[str], Path],
    taxonomy: Taxonomy,
    bad: BadValues,
) -> None:
    """communication.json: time per collective and step."""
    rank.comm = reader.read(
        out("communication.json"),
        "communication.json",
        lambda p: files.read_communication(p, taxonomy, bad),
    )


def _read_links(rank: RankProfile, reader: _Reader, out: Callable[[str], Path]) -> None:
    """communication_matrix.json, when the profile has one: the links."""
    if out("communication_matrix.json").is_file():
        rank.links = reader.read(
            out("communication_matrix.json"), "communication_matrix.json", read_comm_matrix
        )


def _read_db_rank(
    rank: RankProfile, path: Path, taxonomy: Taxonomy, reader: _Reader, shallow: bool = False
) -> None:
    """The database export (export_type db): the same plain data from its tables (`shallow`:
    the step model alone, when the analysis database has one)."""
    if shallow:
        shallow_bad = BadValues(skip=reader.skip_bad)
        steps = reader.read(path, path.name, lambda p: read_step_model(p, taxonomy, shallow_bad))
        reader.warnings.extend(shallow_bad.warnings())
        if steps is not None and steps.step_rows is not None:
            _apply_db(rank, steps, path)
            return
    bad = BadValues(skip=reader.skip_bad)
    content = reader.read(path, path.name, lambda p: read_database(p, taxonomy, bad))
    reader.warnings.extend(bad.warnings())
    rank.dropped.update(bad.by_name())
    if content is None:
        raise InputError(str(path), f"unreadable: {rank.absent.get(path.name, 'skipped')}")
    _apply_db(rank, content, path)
    if rank.level is None:
        _infer_level(rank)
    if rank.step_rows is None and (rank.trace is None or not rank.trace.steps):
        raise InputError(
            str(path), "no steps: neither analysis.db StepTraceTime rows nor STEP_TIME windows"
        )


def _apply_db(rank: RankProfile, content: DbProfile, path: Path) -> None:
    if content.metadata:
        meta.apply_metadata(rank, content.metadata)
    if rank.rank is None and content.rank is not None:
        rank.rank = content.rank
    rank.step_rows = content.step_rows
    rank.kernels = content.kernels
    rank.comm = content.comm
    rank.memory = content.memory
    rank.module_memory = content.module_memory
    rank.process_sampled_peak_mb = content.process_sampled_peak_mb
    if content.device is not None:
        rank.device, rank.device_source = content.device, f"{path.name}:NPU_INFO"
    rank.trace = content.trace
    rank.links = content.links
    rank.collective_sizes = content.collective_sizes
    rank.aicore_freq_mhz = content.aicore_freq_mhz
    rank.sources.update(content.sources)
    rank.absent.update(content.absent)
    analysis = analysis_db(path.parent)
    if analysis is not None:
        rank.inputs.append(analysis)


def _infer_level(rank: RankProfile) -> None:
    """Without profiler_info, Level1+ is recognisable by its communication files and PMU columns."""
    if rank.comm is not None or (rank.kernels is not None and rank.kernels.has_pmu):
        rank.level, rank.level_source = "Level1", "inferred: communication files or PMU columns"
    elif rank.kernels is not None:
        rank.level, rank.level_source = "Level0", "inferred: no communication files, no PMU columns"


def read_cluster_output(
    path: Path, cluster_file: Path | None, taxonomy: Taxonomy, skip_bad: bool = False
) -> tuple[ProfileData, list[str]]:
    """msprof-analyze's cluster output (when the profile folder has one); the rank
    directories are read one by one elsewhere."""
    warnings: list[str] = []
    data = ProfileData(root=path)
    if cluster_file is None:
        return data, warnings
    step_trace = cluster_file / CLUSTER_STEP_TRACE.name
    comm = cluster_file / CLUSTER_COMMUNICATION.name
    bad = BadValues(skip=skip_bad)
    if step_trace.is_file():
        data.cluster_rows, data.cluster_stages = files.read_cluster_step_trace(step_trace, bad)
        data.cluster_source = step_trace
    if comm.is_file():
        data.cluster_comm = files.read_cluster_communication(comm, taxonomy, bad)
        data.cluster_comm_source = comm
    warnings.extend(bad.warnings())
    matrix = cluster_file / CLUSTER_MATRIX
    if matrix.is_file():
        data.cluster_links, data.cluster_links_source = read_comm_matrix(matrix), matrix
    database = cluster_file / CLUSTER_DB
    if database.is_file() and (data.cluster_rows is None or data.cluster_comm is None):
        rows, stages, by_rank = read_cluster_db(database, taxonomy)
        if data.cluster_rows is None and rows is not None:
            data.cluster_rows, data.cluster_stages = rows, stages
            data.cluster_source = database
        if data.cluster_comm is None and by_rank is not None:
            data.cluster_comm, data.cluster_comm_source = by_rank, database
    return data, warnings


def cluster_is_empty(data: ProfileData) -> bool:
    return data.cluster_rows is None and data.cluster_comm is None
