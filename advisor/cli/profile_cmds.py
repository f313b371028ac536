"""Commands on one profile: facts, diagnose, suggest."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

import advisor.cli.console as console
from advisor.cli.options import (
    CONFIG_KINDS,
    LAUNCH_HELP,
    PROFILE_KINDS,
    DeepOpt,
    DeviceOpt,
    FactsFormat,
    JobsOpt,
    LogOpt,
    ModelConfigOpt,
    ProfileArg,
    QuietOpt,
    ReportFormat,
    RulesDirOpt,
    SchedulerOpt,
    SettingsOpt,
    SkipBadOpt,
    SuggestFormat,
    VerboseOpt,
    job_options,
    read_options,
    rule_options,
)


def facts(
    path: Annotated[
        Path | None,
        typer.Argument(help=f"The profile (optional with --log): {PROFILE_KINDS}."),
    ] = None,
    log: LogOpt = None,
    device: DeviceOpt = None,
    output_format: Annotated[
        FactsFormat, typer.Option("--format", "-f", help="text table or the advisor/facts@1 JSON.")
    ] = FactsFormat.text,
    notes: Annotated[
        bool, typer.Option("--notes", help="Text: show how each fact was computed.")
    ] = False,
    skip_bad_files: SkipBadOpt = False,
    jobs: JobsOpt = None,
    scheduler: SchedulerOpt = None,
    deep: DeepOpt = "auto",
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Derive the diagnosis facts of a profile and/or training logs.

    \b
    Example:
      advisor facts prof/ --log train.log
    """
    from advisor.app.pipeline import collect_facts, with_memory_pressure
    from advisor.model import DataError
    from advisor.render.facts import FORMATS, FactsReport

    if path is None and not log:
        raise DataError("give a profile folder, --log train.log, or both")
    with console.phase("reading and deriving the facts"):
        result = collect_facts(
            path, log, skip_bad_files=skip_bad_files, reading=read_options(jobs, scheduler, deep)
        )
        if device is not None:
            from advisor.facts.estimate import known_device

            known_device(device)  # a device the table does not know is refused, named
        with_memory_pressure(result, device)
    console.inputs_read(result.inputs)
    if output_format is not FactsFormat.json:
        # the text report shows warnings on stderr; the JSON carries them in its contract
        for warning in result.warnings:
            console.warn(warning)
        result.warnings = []
    with console.phase("rendering"):
        rendered = FORMATS[output_format.value](FactsReport(result, show_notes=notes))
    typer.echo(rendered, nl=False)


def diagnose(
    path: ProfileArg,
    config: Annotated[
        Path | None, typer.Option("--config", help=f"The training config: {CONFIG_KINDS}.")
    ] = None,
    launch: Annotated[Path | None, typer.Option("--launch", help=LAUNCH_HELP)] = None,
    output_format: Annotated[
        ReportFormat,
        typer.Option(
            "--format", "-f", help="text, the advisor/diagnosis@3 JSON, or markdown (a PR comment)."
        ),
    ] = ReportFormat.text,
    settings: SettingsOpt = None,
    rules_dir: RulesDirOpt = None,
    skip_bad_files: SkipBadOpt = False,
    log: LogOpt = None,
    model_config: ModelConfigOpt = None,
    device: DeviceOpt = None,
    jobs: JobsOpt = None,
    scheduler: SchedulerOpt = None,
    deep: DeepOpt = "auto",
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Rank the bottlenecks of a profile: symptoms, the main bottleneck and what is unknown.

    \b
    Example:
      advisor diagnose prof/ --config config.yaml --launch run.sh
    """
    from advisor.app.diagnose import run_diagnose
    from advisor.render.diagnosis import FORMATS
    from advisor.render.unknown_words import costing_evidence

    with console.phase("reading and diagnosing"):
        run = run_diagnose(
            job_options(
                path,
                config,
                launch,
                log,
                model_config,
                skip_bad_files,
                read_options(jobs, scheduler, deep),
                device,
            ),
            rule_options(settings, rules_dir),
        )
    console.read_report(run.facts.inputs, run.facts.warnings)
    with console.phase("rendering"):
        rendered = FORMATS[output_format.value](run.diagnosis, costing_evidence(run.graph))
    console.emit(rendered, prose=output_format is ReportFormat.text)


def suggest(
    path: ProfileArg,
    config: Annotated[Path, typer.Argument(help=f"The training config: {CONFIG_KINDS}.")],
    launch: Annotated[Path | None, typer.Option("--launch", help=LAUNCH_HELP)] = None,
    log: LogOpt = None,
    model_config: ModelConfigOpt = None,
    device: DeviceOpt = None,
    output_format: Annotated[
        SuggestFormat,
        typer.Option(
            "--format",
            "-f",
            help="text, the advisor/suggestion@4 JSON, a git-apply diff, or markdown (a PR comment).",
        ),
    ] = SuggestFormat.text,
    write: Annotated[
        bool,
        typer.Option(
            "--write", help="Edit the config / launch script in place (safe changes only)."
        ),
    ] = False,
    ledger: Annotated[
        Path | None,
        typer.Option(
            "--ledger", help="Ledger file (default .advisor/ledger.jsonl next to the config)."
        ),
    ] = None,
    no_ledger: Annotated[
        bool, typer.Option("--no-ledger", help="Do not read or record the ledger.")
    ] = False,
    settings: SettingsOpt = None,
    rules_dir: RulesDirOpt = None,
    skip_bad_files: SkipBadOpt = False,
    jobs: JobsOpt = None,
    scheduler: SchedulerOpt = None,
    deep: DeepOpt = "auto",
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Propose the ONE next change for the main bottleneck, as a validated patch.

    \b
    Example:
      advisor suggest prof/ config.yaml --launch run.sh
    """
    from advisor.app.suggest import SuggestOptions, run_suggest
    from advisor.render.suggestion import FORMATS, SuggestionReport

    # the service writes the files with --write: the phase says so
    with console.phase("reading, planning and writing" if write else "reading and planning"):
        run = run_suggest(
            job_options(
                path,
                config,
                launch,
                log,
                model_config,
                skip_bad_files,
                read_options(jobs, scheduler, deep),
                device,
            ),
            rule_options(settings, rules_dir),
            SuggestOptions(ledger=ledger, use_ledger=not no_ledger, write=write),
        )
    console.read_report(run.facts.inputs, run.facts.warnings)
    suggestion = run.suggestion
    with console.phase("rendering"):
        rendered = FORMATS[output_format.value](SuggestionReport(suggestion, run.notes))
    console.emit(rendered, prose=output_format is SuggestFormat.text)
    if run.write_error is not None:
        raise run.write_error
    if write:
        if not run.written:
            console.note("nothing to write")
            return
        console.note(f"wrote {', '.join(run.written)}")
