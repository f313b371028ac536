"""Where the ranks of a torch_npu / MindSpore export are: rank folders, bare output folders,
msprof-analyze's cluster output, or one file standing for its export."""

from __future__ import annotations

from pathlib import Path

from advisor.model import InputError
from advisor.parsers.ascend_db.reader import profiler_db
from advisor.parsers.cluster.database import CLUSTER_DB
from advisor.parsers.layout_hints import UNREAD_FORMATS, not_a_profile

OUTPUT_DIR = "ASCEND_PROFILER_OUTPUT"
RANK_SUFFIXES = {"_ascend_pt": "torch_npu", "_ascend_ms": "mindspore"}
KNOWN_OUTPUTS = (
    "trace_view.json",
    "kernel_details.csv",
    "op_statistic.csv",
    "step_trace_time.csv",
    "communication.json",
    "memory_record.csv",
)
CLUSTER_OUTPUT = Path("cluster_analysis_output")
CLUSTER_STEP_TRACE = CLUSTER_OUTPUT / "cluster_step_trace_time.csv"
CLUSTER_COMMUNICATION = CLUSTER_OUTPUT / "cluster_communication.json"
CLUSTER_MATRIX = "cluster_communication_matrix.json"
# How deep below the given folder rank directories are searched for (e.g. prof/node0/rank3/).
SEARCH_DEPTH = 3


def framework_of(directory: Path) -> str | None:
    return next((fw for sfx, fw in RANK_SUFFIXES.items() if directory.name.endswith(sfx)), None)


def is_output_dir(directory: Path) -> bool:
    return is_text_output(directory) or profiler_db(directory) is not None


def is_text_output(directory: Path) -> bool:
    return any((directory / name).is_file() for name in KNOWN_OUTPUTS)


def is_rank_dir(directory: Path) -> bool:
    return framework_of(directory) is not None or (directory / OUTPUT_DIR).is_dir()


def _find_rank_dirs(root: Path, depth: int) -> list[Path]:
    found: list[Path] = []
    try:
        children = sorted(p for p in root.iterdir() if p.is_dir())
    except OSError as exc:
        raise InputError(str(root), f"cannot list folder: {exc.strerror}") from None
    for child in children:
        if is_rank_dir(child):
            found.append(child)
        elif depth > 1:
            found.extend(_find_rank_dirs(child, depth - 1))
    return found


def _export_of(path: Path) -> Path:
    """The export a file stands for (one of its outputs: its trace_view.json, say), or the refusal."""
    if path.name in KNOWN_OUTPUTS and is_output_dir(path.parent):
        return path.parent
    unread = [what for pattern, what in UNREAD_FORMATS if path.match(pattern.split("/")[-1])]
    why = f"{unread[0]}; " if unread else ""
    raise InputError(
        str(path),
        f"{why}expected a profile directory or a PyTorch profiler trace (*.pt.trace.json[.gz]), "
        "got another file",
    )


def locate(path: Path) -> tuple[list[Path], Path | None]:
    """Rank directories (or bare output folders) under `path`, plus msprof-analyze's cluster folder."""
    if not path.exists():
        raise InputError(str(path), "no such file or directory")
    if not path.is_dir():
        return locate(_export_of(path))
    if path.name == CLUSTER_OUTPUT.name or any(
        (path / name).is_file() for name in (CLUSTER_STEP_TRACE.name, CLUSTER_DB)
    ):
        return [], path  # msprof-analyze's cluster output passed itself
    cluster_file = path / CLUSTER_OUTPUT if (path / CLUSTER_OUTPUT).is_dir() else None
    if path.name == OUTPUT_DIR or (is_output_dir(path) and not is_rank_dir(path)):
        parent = path.parent
        return ([parent] if is_rank_dir(parent) else [path]), cluster_file
    if is_rank_dir(path):
        return [path], cluster_file
    ranks = _find_rank_dirs(path, SEARCH_DEPTH)
    if ranks or cluster_file:
        return ranks, cluster_file
    if not any(path.iterdir()):
        raise InputError(str(path), "empty folder")
    raise InputError(str(path), not_a_profile(path))
