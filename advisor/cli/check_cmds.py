"""The check command: policy findings for code review."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

import advisor.cli.console as console
from advisor.cli.options import (
    CheckFormat,
    Level,
    QuietOpt,
    RulesDirOpt,
    SettingsOpt,
    VerboseOpt,
    rule_options,
)


def check_cmd(
    configs: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Files and folders to check, or - for standard input: FSDP2 config YAMLs "
            "(MindSpeed-LLM), MindSpore Transformers (MindFormers) config YAMLs, Megatron-backend "
            "pretrain scripts and FSDP2 launch scripts; each file's dialect is detected from its "
            "content, other files are skipped."
        ),
    ] = None,
    launch: Annotated[
        list[Path] | None,
        typer.Option("--launch", help="FSDP2 launch scripts, checked as such (repeatable)."),
    ] = None,
    output_format: Annotated[
        CheckFormat,
        typer.Option(
            "--format",
            "-f",
            help="text (file:line:col), the advisor/findings@1 JSON, SARIF 2.1.0 (code "
            "scanning), GitHub workflow annotations, or a GitLab Code Quality report.",
        ),
    ] = CheckFormat.text,
    fail_on: Annotated[
        Level,
        typer.Option("--fail-on", help="Exit 1 when a finding at or above this level remains."),
    ] = Level.error,
    fix: Annotated[
        bool,
        typer.Option("--fix", help="Apply safe autofixes (comment-preserving) and print the diff."),
    ] = False,
    baseline: Annotated[
        Path | None, typer.Option("--baseline", help="Accepted findings: only new ones count.")
    ] = None,
    update_baseline: Annotated[
        bool, typer.Option("--update-baseline", help="Write the current findings to --baseline.")
    ] = False,
    stdin_filename: Annotated[
        str | None,
        typer.Option(
            "--stdin-filename",
            help="With '-' (read standard input): the name to report (default <stdin>); its "
            "suffix tells YAML from shell, else the content does.",
        ),
    ] = None,
    root: Annotated[
        Path | None,
        typer.Option(
            "--root",
            help="The folder the scripts run from: relative sourced files and config paths are "
            "found there (else beside the script). Default: each file's git repository top "
            "level, else the working folder.",
        ),
    ] = None,
    target: Annotated[
        list[str] | None,
        typer.Option(
            "--target",
            help="The release the files are written for, PRODUCT@VERSION "
            "(mindspeed-llm@2.2.0, mindformers@1.5.0; repeatable). Default: what the "
            "repository's setup.py / package version says, else the newest release.",
        ),
    ] = None,
    settings: SettingsOpt = None,
    rules_dir: RulesDirOpt = None,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Policy checks for training configs and launch scripts (for code review and CI).

    \b
    Example:
      advisor check configs/ scripts/*.sh --format sarif
    """
    from advisor.app.check import finding_changes, run_check, safe_fix_changes, write_baseline
    from advisor.app.rulesets import load_policies
    from advisor.edit.writer import write_changes
    from advisor.engine.policy import fails
    from advisor.model import DataError, Severity
    from advisor.render.check import FORMATS, CheckReport

    files = list(configs or [])
    scripts = list(launch or [])
    if not files and not scripts:
        raise DataError("give config files and/or --launch scripts to check")
    from advisor.engine.targets import parse_target

    releases = dict(parse_target(t) for t in target or [])
    if root is not None and not root.is_dir():
        raise DataError(f"--root {root}: not a folder")
    if Path("-") in files:
        if fix or update_baseline:
            raise DataError(
                "'-' (standard input) is checked only: --fix and --update-baseline need files"
            )
        _check_stdin(stdin_filename, output_format, fail_on, rule_options(settings, rules_dir))
        return
    with console.phase("loading the policies"):
        policies = load_policies(rule_options(settings, rules_dir))
    with console.phase("checking"):
        result = run_check(
            policies,
            configs=files,
            launches=scripts,
            baseline=baseline if not update_baseline else None,
            root=root,
            target=releases,
        )
    if update_baseline:
        if baseline is None:
            raise DataError("--update-baseline needs --baseline FILE")
        write_baseline(baseline, result.findings)
        console.note(f"wrote {baseline} ({len(result.findings)} findings accepted)")
        return
    # a sourced file named alone was checked (through the scripts that source it)
    names = list(result.dialects) + list(result.through) + result.unreadable
    dropped: list[str] = []
    if fix:
        # the editors (and the shell reader under them) load only to fix
        from advisor.edit.patch import unified_diff

        changes = safe_fix_changes(result)
        dropped = [str(d) for d in result.dropped]
        diff = unified_diff(changes)
        write_changes(changes)
        typer.echo(diff, nl=False, err=output_format is not CheckFormat.text)
        if changes:
            result = run_check(
                policies,
                configs=files,
                launches=scripts,
                baseline=baseline,
                root=root,
                target=releases,
            )
    # each finding's own edit; a fix that cannot be built is taken off its finding, in every
    # format (the finding stays), and said once
    fixes = finding_changes(result)
    dropped = list(dict.fromkeys([*dropped, *(str(d) for d in result.dropped)]))
    for line in dropped:
        console.note(line)
    report = CheckReport(
        result.findings,
        names,
        policies,
        lambda: fixes,
        result.dialects,
        # -q: findings only (the pre-commit hooks pass every YAML and shell file)
        None if console.VERBOSITY.quiet else result.skipped,
        dropped,
    )
    with console.phase("rendering"):
        rendered = FORMATS[output_format.value](report)
    typer.echo(rendered, nl=False)
    if fails(result.findings, Severity(fail_on.value)):
        raise typer.Exit(1)


def _check_stdin(
    label: str | None, output_format: CheckFormat, fail_on: Level, options: object
) -> None:
    """Check a document read from standard input, reported under `label` (`<stdin>`)."""
    import sys

    from advisor.app.check import STDIN, check_text
    from advisor.app.rulesets import load_policies
    from advisor.engine.policy import fails
    from advisor.model import Severity
    from advisor.render.check import FORMATS, CheckReport

    name = label or STDIN
    text = sys.stdin.read()
    policies = load_policies(options)  # type: ignore[arg-type]
    checked = check_text(policies, text, name)
    result = checked.result
    if checked.unresolved_sources:
        where = ", ".join(str(n) for n in checked.unresolved_sources)
        console.note(
            f"{name}: read from standard input, so the files it sources (line {where}) are "
            "not read: there is no folder to find them in; check the script as a file for them"
        )
    kinds = dict.fromkeys([name], next(iter(result.dialects.values()))) if result.dialects else {}
    report = CheckReport(
        result.findings,
        [name] if kinds else [],
        policies,
        lambda: [[] for _ in result.findings],
        kinds,
        result.skipped,
    )
    typer.echo(FORMATS[output_format.value](report), nl=False)
    if fails(result.findings, Severity(fail_on.value)):
        raise typer.Exit(1)
