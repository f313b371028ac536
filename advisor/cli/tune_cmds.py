"""`advisor tune`: run the job, change one thing, run again, keep or revert, until done."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

import advisor.cli.console as console
from advisor.cli.options import (
    QuietOpt,
    ReportFormat,
    RulesDirOpt,
    SettingsOpt,
    VerboseOpt,
    rule_options,
)


def tune_cmd(
    config: Annotated[Path, typer.Argument(help="The training config the loop edits.")],
    run: Annotated[
        str,
        typer.Option(
            "--run",
            help="The shell command of a short profiling run (e.g. 'bash run.sh'), run with "
            "bash in CONFIG's folder; a non-zero exit is a failed run.",
        ),
    ],
    launch: Annotated[
        Path | None,
        typer.Option("--launch", help="The launch script (its exports are edited too)."),
    ] = None,
    profile: Annotated[
        Path | None,
        typer.Option(
            "--profile",
            help="Where the runs write their profile (default: where the config says, "
            "resolved against CONFIG's folder).",
        ),
    ] = None,
    log: Annotated[
        Path | None,
        typer.Option(
            "--log",
            help="The training log the job writes itself (default: the run's captured output).",
        ),
    ] = None,
    max_changes: Annotated[
        int, typer.Option("--max-changes", min=1, help="Changes to try at most.")
    ] = 9,
    run_timeout: Annotated[
        float | None,
        typer.Option(
            "--run-timeout",
            min=0.001,
            help="Seconds a run may take; past it the run's process group is killed and its "
            "change reverted, and the loop stops.",
        ),
    ] = None,
    accept: Annotated[
        str | None,
        typer.Option(
            "--accept",
            help="review: also apply changes whose applicability is review (default: safe only).",
        ),
    ] = None,
    output_format: Annotated[
        ReportFormat,
        typer.Option("--format", "-f", help="text table, the advisor/tune@1 JSON, or markdown."),
    ] = ReportFormat.text,
    ledger: Annotated[
        Path | None,
        typer.Option(
            "--ledger",
            help="The ledger (default: .advisor/ledger.jsonl beside CONFIG); run logs are kept "
            "in tune/ beside it.",
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Print what would run and be edited; run nothing."),
    ] = False,
    settings: SettingsOpt = None,
    rules_dir: RulesDirOpt = None,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """The closed loop: run the job, apply advisor's next change, run again, keep it or restore
    the files byte for byte; until the job is healthy or nothing applicable is left.

    \b
    Example:
      advisor tune config.yaml --launch run.sh --run 'bash run.sh' --max-changes 9
    """
    from advisor.app.tune import TuneOptions, run_tune
    from advisor.model import DataError
    from advisor.render.tune import FORMATS

    if accept not in (None, "review"):
        raise DataError(f"--accept: only 'review' can be accepted, not {accept!r}")
    options = TuneOptions(
        config=config,
        run=run,
        launch=launch,
        profile=profile,
        log=log,
        max_changes=max_changes,
        run_timeout=run_timeout,
        accept_review=accept == "review",
        ledger=ledger,
        dry_run=dry_run,
        rules=rule_options(settings, rules_dir),
    )
    result = run_tune(options, progress=console.note)
    console.emit(FORMATS[output_format.value](result), prose=output_format is ReportFormat.text)
    # 0: the loop ended normally; 1: it ended on failures or a timeout; 130: interrupted
    codes = {"interrupted": 130, "timeout": 1, "two-failed-runs": 1, "baseline-failed": 1}
    code = codes.get(result.stopped.value, 0)
    if code:
        raise typer.Exit(code)
