"""Shared option types and output-format choices of the commands."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from advisor.app.job import JobOptions
    from advisor.app.read_ranks import ReadOptions
    from advisor.engine.settings import RuleOptions

EXIT_INPUT_ERROR = 2


class FactsFormat(StrEnum):
    text = "text"
    json = "json"


class SuggestFormat(StrEnum):
    text = "text"
    json = "json"
    diff = "diff"
    markdown = "markdown"  # a pull-request comment


class ReportFormat(StrEnum):
    text = "text"
    json = "json"
    markdown = "markdown"


class CheckFormat(StrEnum):
    text = "text"
    json = "json"
    sarif = "sarif"
    github = "github"
    gitlab = "gitlab"  # GitLab Code Quality (Code Climate JSON)


class Level(StrEnum):
    error = "error"
    warning = "warning"
    note = "note"


class GraphFormat(StrEnum):
    dot = "dot"
    mermaid = "mermaid"


# What the commands read, said once: every command's help names each kind it takes.
PROFILE_KINDS = (
    "a PyTorch profiler trace (*.pt.trace.json[.gz], CUDA or ROCm) or a folder of them, one per "
    "rank; a torch_npu *_ascend_pt or MindSpore *_ascend_ms rank directory, its "
    "ASCEND_PROFILER_OUTPUT folder, or a parent folder of rank directories; msprof-analyze's "
    "cluster output (cluster_analysis_output)"
)
CONFIG_KINDS = (
    "an FSDP2 config YAML (MindSpeed-LLM), a MindSpore Transformers (MindFormers) config YAML, "
    "or a Megatron-backend pretrain script (the script is the config)"
)
LOG_KINDS = "FSDP2, Megatron-style or MindSpore Transformers output"
LAUNCH_HELP = "The FSDP2 launch script (exports + torchrun command) and the env files it sources."

ProfileArg = Annotated[
    Path,
    typer.Argument(help=f"The profile: {PROFILE_KINDS}."),
]
SkipBadOpt = Annotated[
    bool,
    typer.Option(
        "--skip-bad-files",
        help="Warn about unreadable files (e.g. a truncated trace_view.json) and use the rest.",
    ),
]
SettingsOpt = Annotated[
    Path | None,
    typer.Option(
        "--settings", help="Settings file (.advisor.yaml): enable/disable rules, override params."
    ),
]
RulesDirOpt = Annotated[
    list[Path] | None,
    typer.Option("--rules-dir", help="A folder of extra rule files (repeatable)."),
]


ModelConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--model-config", help="Hugging Face config.json: adds parameter, MFU and memory estimates."
    ),
]
DeviceOpt = Annotated[
    str | None,
    typer.Option(
        "--device",
        help="The device each rank runs on (910B, A3, H100...; rules/devices.yaml): its memory "
        "for the memory pressure when the profile does not record it, its peak for MFU.",
    ),
]
LogOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--log",
        help=f"A training log ({LOG_KINDS}; repeat for rotated files): step time, tokens/s, "
        "memory, loss.",
    ),
]


def rule_options(settings: Path | None, rules_dir: list[Path] | None) -> RuleOptions:
    """The rules options of a command (imported here, not at start-up: see the architecture)."""
    from advisor.engine.settings import RuleOptions

    if settings is None:
        settings = _nearest_settings()
    return RuleOptions(settings=settings, rules_dirs=tuple(rules_dir or ()))


SETTINGS_NAME = ".advisor.yaml"


def _nearest_settings() -> Path | None:
    """The settings file a command run here means when none is named, as ruff finds its
    configuration: `.advisor.yaml` in the current folder or the nearest one above it, up to the
    repository's top. Said on stderr, so a rule switched off there is never a mystery."""
    import advisor.cli.console as console

    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        candidate = folder / SETTINGS_NAME
        if candidate.is_file():
            console.note(f"settings from {candidate}")
            return candidate
        if (folder / ".git").exists():
            return None
    return None


def job_options(
    path: Path | None,
    config: Path | None,
    launch: Path | None,
    log: list[Path] | None,
    model_config: Path | None,
    skip_bad_files: bool,
    reading: ReadOptions | None = None,
    device: str | None = None,
) -> JobOptions:
    from advisor.app.job import JobOptions
    from advisor.app.read_ranks import ReadOptions

    return JobOptions(
        profile=path,
        config=config,
        launch=launch,
        logs=tuple(log or ()),
        model_config=model_config,
        skip_bad_files=skip_bad_files,
        reading=reading or ReadOptions(),
        device=device,
    )


def read_options(jobs: int | None, scheduler: str | None, deep: str) -> ReadOptions:
    from advisor.app.read_ranks import ReadOptions, parse_deep

    parse_deep(deep)  # a bad value is refused before anything is read
    return ReadOptions(jobs=jobs, scheduler=scheduler, deep=deep)


JobsOpt = Annotated[
    int | None,
    typer.Option(
        "--jobs",
        "-j",
        help="Worker processes reading the ranks of a cluster (default: every core).",
    ),
]
SchedulerOpt = Annotated[
    str | None,
    typer.Option(
        "--scheduler",
        help="Read the ranks on an existing Dask cluster (tcp://HOST:PORT; or ADVISOR_SCHEDULER); "
        "its workers must see the profile's paths. Needs pip install 'advisor[dask]'.",
    ),
]
DeepOpt = Annotated[
    str,
    typer.Option(
        "--deep",
        help="Ranks read in full: all, auto (all up to 64 ranks; above, the step model of every "
        "rank and in full the slowest and fastest of each stage plus a sample) or a number "
        "(0: step models and communication summaries only).",
    ),
]


def _quiet(value: bool) -> bool:
    from advisor.cli.console import set_quiet

    set_quiet(value)
    return value


def _verbose(value: bool) -> bool:
    from advisor.cli.console import set_verbose

    set_verbose(value)
    return value


QuietOpt = Annotated[
    bool,
    typer.Option(
        "--quiet",
        "-q",
        callback=_quiet,
        is_eager=True,
        help="Print the result only: no warnings, notes or progress bars on stderr.",
    ),
]
VerboseOpt = Annotated[
    bool,
    typer.Option(
        "--verbose",
        "-v",
        callback=_verbose,
        help="Also print the files read and the time each phase took (stderr).",
    ),
]
