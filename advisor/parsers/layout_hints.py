"""What to tell a user whose folder is not a profile the readers know, or lacks its core files."""

from __future__ import annotations

from pathlib import Path

# Formats people hand over that are not read, by a file or folder name pattern they contain.
UNREAD_FORMATS = (
    ("PROF_*/mindstudio_profiler_output", "msprof command-line output (PROF_*) is not read"),
    ("*.nsys-rep", "Nsight Systems reports are not read"),
    ("*.qdrep", "Nsight Systems reports are not read"),
    ("*.sqlite", "Nsight Systems SQLite exports are not read"),
)


def not_a_profile(path: Path) -> str:
    expected = (
        "expected a *_ascend_pt / *_ascend_ms directory, an ASCEND_PROFILER_OUTPUT folder, "
        "msprof-analyze's cluster_analysis_output, PyTorch profiler traces (*.pt.trace.json[.gz]), "
        "or a folder holding one such directory or trace per rank"
    )
    for pattern, what in UNREAD_FORMATS:
        found = next(iter(sorted(path.glob(pattern))), None) or next(
            iter(sorted(path.glob(f"*/{pattern}"))), None
        )
        if found is not None:
            return (
                f"no profile found: {what} ({found.relative_to(path)}); profile with the "
                f"framework's profiler instead (torch_npu / MindSpore Profiler, or "
                f"torch.profiler with tensorboard_trace_handler); {expected}"
            )
    return f"no profile found: {expected}"


def layout_problem(output: Path) -> str:
    """Which of the step model's files are missing, and what the folder holds instead."""
    try:
        present = sorted(p.name for p in output.iterdir())
    except OSError:
        present = []
    holds = ", ".join(present[:8]) + (", ..." if len(present) > 8 else "") if present else "nothing"
    return (
        "none of step_trace_time.csv, trace_view.json or ascend_pytorch_profiler_<rank>.db / "
        f"ascend_mindspore_profiler_<rank>.db (the step model's sources); it holds: {holds}"
    )
