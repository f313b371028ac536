"""Reading one rank: a pure function of a path, run by whichever executor maps the ranks.

`extract_rank` reads a rank directory (or a PyTorch profiler trace), derives the rank's facts
and returns a RankSummary: never raw events. Errors come back as values, so a worker process
(or a Dask worker on another machine) reports a bad rank without losing the others; only the
parent decides whether a bad rank stops the job.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from advisor.facts.rank import RankSummary, summarize
from advisor.inputs.taxonomy import default_taxonomy
from advisor.model import AdvisorError, InputError
from advisor.parsers.ascend.identity import is_ascend_timeline
from advisor.parsers.ascend.rank import read_rank

ASCEND = "ascend"
KINETO = "kineto"
RENAMED_TIMELINE = (
    'torch_npu\'s timeline (trace_view.json: its device lane is "Ascend Hardware"), not a '
    "PyTorch profiler trace: pass the folder that holds it under its own name, trace_view.json "
    "(ASCEND_PROFILER_OUTPUT or its *_ascend_pt directory)"
)


@dataclass(frozen=True)
class RankTask:
    path: Path
    kind: str = ASCEND  # ascend (a rank directory) or kineto (one PyTorch profiler trace)
    skip_bad: bool = False
    deep: bool = True  # False: the step model only (the cheap tier)
    # one rank alone may split its large trace between processes; a rank among many may not
    split_trace: bool = False


@dataclass(frozen=True)
class RankOutcome:
    task: RankTask
    summary: RankSummary | None = None
    where: str = ""  # a failed rank: the file and the problem
    problem: str = ""
    warnings: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        return self.summary is None


def extract_rank(task: RankTask) -> RankOutcome:
    """Read and summarise one rank; a problem with its files is returned, not raised."""
    taxonomy = default_taxonomy()
    warnings: list[str] = []
    try:
        if task.kind == KINETO:
            from advisor.parsers.kineto.reader import read_kineto  # only when a trace is read

            profile = read_kineto(task.path, taxonomy, task.skip_bad, split=task.split_trace)
        else:
            profile = read_rank(
                task.path,
                taxonomy,
                task.skip_bad,
                warnings,
                shallow=not task.deep,
                split_trace=task.split_trace,
            )
        # a rank without a step model was read in full all the same (its trace has the steps)
        full = task.deep or any(part is not None for part in (profile.trace, profile.kernels))
        summary = summarize(profile, taxonomy, deep=full)
    except InputError as exc:
        problem = exc.problem
        if task.kind == KINETO and is_ascend_timeline(task.path):
            problem = RENAMED_TIMELINE
        return RankOutcome(task, where=exc.path, problem=problem, warnings=tuple(warnings))
    except AdvisorError as exc:
        return RankOutcome(task, where=str(task.path), problem=str(exc), warnings=tuple(warnings))
    summary.warnings = warnings + summary.warnings
    return RankOutcome(task, summary, warnings=())
