"""`advisor report`: one self-contained HTML page of a job's diagnosis."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

import advisor.cli.console as console
from advisor.cli.options import (
    CONFIG_KINDS,
    LAUNCH_HELP,
    DeepOpt,
    DeviceOpt,
    JobsOpt,
    LogOpt,
    ModelConfigOpt,
    ProfileArg,
    QuietOpt,
    RulesDirOpt,
    SchedulerOpt,
    SettingsOpt,
    SkipBadOpt,
    VerboseOpt,
    job_options,
    read_options,
    rule_options,
)

# A file is replaced only when it is an earlier report (never a page or file the user wrote).
REPORT_MARK = "<title>advisor report"


def _write_report(path: Path, page: str) -> None:
    import os
    import tempfile

    from advisor.model import InputError

    if path.is_dir():
        raise InputError(str(path), "is a folder: name the report's file, e.g. -o report.html")
    if path.exists():
        try:
            head = path.read_bytes()[:4096].decode("utf-8", "replace")
        except OSError as exc:
            raise InputError(str(path), f"cannot read: {exc.strerror}") from None
        if REPORT_MARK not in head:
            raise InputError(
                str(path),
                "exists and is not an advisor report: not overwritten (name another file)",
            )
    folder = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=".advisor-report-", suffix=".html", dir=folder)
    except OSError as exc:
        raise InputError(str(path), f"cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(page)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # an ordinary file, as the shell would create it
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise InputError(str(path), f"cannot write: {exc.strerror or exc}") from None


DEFAULT_REPORT = "report.html"


def _to_terminal() -> bool:
    import sys

    return sys.stdout.isatty()


def report_cmd(
    path: ProfileArg,
    config: Annotated[
        Path | None,
        typer.Argument(
            help=f"The training config, adding the one next change with its diff: {CONFIG_KINDS}."
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="The HTML file to write (an earlier report is replaced, any other file never). "
            f"Default: standard output, or {DEFAULT_REPORT} when that is a terminal.",
        ),
    ] = None,
    launch: Annotated[Path | None, typer.Option("--launch", help=LAUNCH_HELP)] = None,
    log: LogOpt = None,
    model_config: ModelConfigOpt = None,
    device: DeviceOpt = None,
    baseline: Annotated[
        Path | None,
        typer.Option(
            "--baseline",
            help="A baseline profile folder or training log: adds the keep/revert comparison.",
        ),
    ] = None,
    ledger: Annotated[
        Path | None,
        typer.Option(
            "--ledger",
            help="The ledger whose history to show (default: .advisor/ledger.jsonl next to the "
            "config, when it exists). Read only.",
        ),
    ] = None,
    settings: SettingsOpt = None,
    rules_dir: RulesDirOpt = None,
    skip_bad_files: SkipBadOpt = False,
    jobs: JobsOpt = None,
    scheduler: SchedulerOpt = None,
    deep: DeepOpt = "auto",
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Write one self-contained HTML page: where the step goes, bottlenecks, ranks, operators.

    With a config the page shows the next change and its diff; --baseline adds the comparison, --ledger the history. Nothing else is written.

    \b
    Example:
      advisor report prof/ config.yaml -o report.html
    """
    from advisor.app.report import ReportOptions, run_report
    from advisor.render.report_html import report_html

    with console.phase("reading and diagnosing"):
        data = run_report(
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
            ReportOptions(baseline=baseline, ledger=ledger),
        )
    console.read_report(data.facts.inputs, data.facts.warnings)
    with console.phase("rendering the page"):
        page = report_html(data)
    why = ""
    if output is None and _to_terminal():
        # a page of HTML is no use on a terminal: written to a file, as -o would
        output = Path(DEFAULT_REPORT)
        why = " (standard output is a terminal; -o names another file)"
    if output is None:
        typer.echo(page, nl=False)
        return
    with console.phase("writing"):
        _write_report(output, page)
    console.note(f"wrote {output}{why}")
