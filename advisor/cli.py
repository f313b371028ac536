"""Command line: parse arguments, call the pipeline, render, choose the exit code."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from advisor import __version__
from advisor.check_run import fix_changes, run_check, write_baseline
from advisor.compare_run import run_compare
from advisor.configs import load_config
from advisor.estimate import estimate, load_model_config, peak_tflops, training_from_config
from advisor.graph import integrity_errors, to_dot, to_mermaid
from advisor.ledger import STATUSES, Ledger, default_path
from advisor.model import AdvisorError, DataError
from advisor.patch import unified_diff, write_changes
from advisor.pipeline import collect_facts, diagnose_profile, load_graph, log_facts
from advisor.policy import fails
from advisor.render import facts_json, facts_text
from advisor.render_check import findings_github, findings_json, findings_sarif, findings_text
from advisor.render_compare import comparison_json, comparison_text
from advisor.render_diagnosis import diagnosis_json, diagnosis_text
from advisor.render_ledger import ledger_text
from advisor.render_rules import rule_show_text, rules_list_text
from advisor.render_suggestion import suggestion_json, suggestion_text
from advisor.rules import KINDS, load_rules
from advisor.suggest import run_suggest
from advisor.watch import Watcher, watch

app = typer.Typer(
    name="advisor",
    help="Reads training profiles, finds the bottleneck, and proposes the one next change.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

rules_app = typer.Typer(help="List, show, lint and draw the rule graph.", no_args_is_help=True)
app.add_typer(rules_app, name="rules")

EXIT_INPUT_ERROR = 2


class FactsFormat(StrEnum):
    text = "text"
    json = "json"


class SuggestFormat(StrEnum):
    text = "text"
    json = "json"
    diff = "diff"


class CheckFormat(StrEnum):
    text = "text"
    json = "json"
    sarif = "sarif"
    github = "github"


class Level(StrEnum):
    error = "error"
    warning = "warning"
    note = "note"


class GraphFormat(StrEnum):
    dot = "dot"
    mermaid = "mermaid"


ProfileArg = Annotated[
    Path,
    typer.Argument(
        help="A rank's *_ascend_pt / *_ascend_ms directory, its ASCEND_PROFILER_OUTPUT folder, "
        "or a folder holding one such directory per rank."
    ),
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


def _version(value: bool) -> None:
    if value:
        typer.echo(f"advisor {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """advisor: profile in, one validated change out."""


ModelConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--model-config", help="Hugging Face config.json: adds parameter, MFU and memory estimates."
    ),
]
LogOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--log",
        help="A training log (repeat for rotated files): step time, tokens/s, memory, loss.",
    ),
]


@app.command()
def facts(
    path: Annotated[
        Path | None,
        typer.Argument(
            help="A rank's *_ascend_pt / *_ascend_ms directory, its ASCEND_PROFILER_OUTPUT folder, "
            "or a folder holding one such directory per rank (optional with --log)."
        ),
    ] = None,
    log: LogOpt = None,
    output_format: Annotated[
        FactsFormat, typer.Option("--format", "-f", help="text table or the advisor/facts@1 JSON.")
    ] = FactsFormat.text,
    notes: Annotated[
        bool, typer.Option("--notes", help="Text: show how each fact was computed.")
    ] = False,
    skip_bad_files: SkipBadOpt = False,
) -> None:
    """Derive the diagnosis facts of a profile and/or training logs."""
    if path is None and not log:
        raise DataError("give a profile folder, --log train.log, or both")
    result = collect_facts(path, log, skip_bad_files=skip_bad_files)
    if output_format is FactsFormat.json:
        typer.echo(facts_json(result))
    else:
        for warning in result.warnings:
            typer.echo(f"advisor: warning: {warning}", err=True)
        result.warnings = []
        typer.echo(facts_text(result, show_notes=notes), nl=False)


@app.command()
def diagnose(
    path: ProfileArg,
    config: Annotated[
        Path | None, typer.Option("--config", help="The training config YAML.")
    ] = None,
    launch: Annotated[
        Path | None, typer.Option("--launch", help="The launch script (run.sh).")
    ] = None,
    output_format: Annotated[
        FactsFormat, typer.Option("--format", "-f", help="text or the advisor/diagnosis@1 JSON.")
    ] = FactsFormat.text,
    settings: SettingsOpt = None,
    rules_dir: RulesDirOpt = None,
    skip_bad_files: SkipBadOpt = False,
    log: LogOpt = None,
    model_config: ModelConfigOpt = None,
) -> None:
    """Rank the bottlenecks of a profile: symptoms, the main bottleneck and what is unknown."""
    run = diagnose_profile(
        path, config, launch, settings, rules_dir, skip_bad_files, log, model_config
    )
    for warning in run.facts.warnings:
        typer.echo(f"advisor: warning: {warning}", err=True)
    if output_format is FactsFormat.json:
        typer.echo(diagnosis_json(run.diagnosis))
    else:
        typer.echo(diagnosis_text(run.diagnosis), nl=False)


@app.command()
def suggest(
    path: ProfileArg,
    config: Annotated[
        Path, typer.Argument(help="The training config YAML (train_fsdp2.py CONFIG.yaml).")
    ],
    launch: Annotated[
        Path | None,
        typer.Option("--launch", help="The launch script (exports + torchrun command)."),
    ] = None,
    log: LogOpt = None,
    model_config: ModelConfigOpt = None,
    output_format: Annotated[
        SuggestFormat,
        typer.Option(
            "--format", "-f", help="text, the advisor/suggestion@1 JSON, or a git-apply diff."
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
) -> None:
    """Propose the ONE next change for the main bottleneck, as a validated patch."""
    run = run_suggest(
        path,
        config,
        launch,
        settings,
        rules_dir,
        ledger,
        not no_ledger,
        skip_bad_files,
        log,
        model_config,
    )
    for warning in run.facts.warnings:
        typer.echo(f"advisor: warning: {warning}", err=True)
    suggestion = run.suggestion
    rec = suggestion.recommendation
    if output_format is SuggestFormat.json:
        typer.echo(suggestion_json(suggestion, run.notes))
    elif output_format is SuggestFormat.diff:
        typer.echo(rec.diff if rec else "", nl=False)
    else:
        typer.echo(suggestion_text(suggestion, run.notes), nl=False)
    if write:
        if rec is None or rec.patch is None or not rec.patch.changes:
            typer.echo("advisor: nothing to write", err=True)
            return
        written = write_changes(rec.patch)
        typer.echo(f"advisor: wrote {', '.join(written)}", err=True)


@app.command("check")
def check_cmd(
    configs: Annotated[list[Path] | None, typer.Argument(help="FSDP2 config YAML files.")] = None,
    launch: Annotated[
        list[Path] | None, typer.Option("--launch", help="Launch scripts (repeatable).")
    ] = None,
    output_format: Annotated[CheckFormat, typer.Option("--format", "-f")] = CheckFormat.text,
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
    settings: SettingsOpt = None,
    rules_dir: RulesDirOpt = None,
) -> None:
    """Policy checks for training configs and launch scripts (for code review and CI)."""
    files = list(configs or [])
    scripts = list(launch or [])
    if not files and not scripts:
        raise DataError("give config files and/or --launch scripts to check")
    graph = load_graph(settings, rules_dir)
    result = run_check(files, scripts, graph.ruleset, baseline if not update_baseline else None)
    if update_baseline:
        if baseline is None:
            raise DataError("--update-baseline needs --baseline FILE")
        write_baseline(baseline, result.findings)
        typer.echo(
            f"advisor: wrote {baseline} ({len(result.findings)} findings accepted)", err=True
        )
        return
    names = [str(d.path) for d in result.documents]
    docs = {str(d.path): d for d in result.documents}
    if fix:
        changes = [c for d in result.documents for c in fix_changes(d, d.findings, safe_only=True)]
        diff = unified_diff(tuple(changes))
        for change in changes:
            Path(change.path).write_text(change.after, encoding="utf-8", newline="")
        typer.echo(diff, nl=False, err=output_format is not CheckFormat.text)
        if changes:
            result = run_check(files, scripts, graph.ruleset, baseline)
    if output_format is CheckFormat.json:
        typer.echo(findings_json(result.findings, names))
    elif output_format is CheckFormat.sarif:
        typer.echo(
            findings_sarif(
                result.findings,
                graph.ruleset,
                lambda f: fix_changes(docs[f.file], [f], safe_only=False),
            )
        )
    elif output_format is CheckFormat.github:
        typer.echo(findings_github(result.findings), nl=False)
    else:
        typer.echo(findings_text(result.findings, names), nl=False)
    if fails(result.findings, fail_on.value):
        raise typer.Exit(1)


@app.command("compare")
def compare_cmd(
    baseline: Annotated[
        Path | None, typer.Argument(help="Baseline: a profile folder or a training log.")
    ] = None,
    candidate: Annotated[
        Path | None, typer.Argument(help="Candidate: a profile folder or a training log.")
    ] = None,
    baseline_log: Annotated[Path | None, typer.Option("--baseline-log")] = None,
    candidate_log: Annotated[Path | None, typer.Option("--candidate-log")] = None,
    baseline_config: Annotated[Path | None, typer.Option("--baseline-config")] = None,
    candidate_config: Annotated[Path | None, typer.Option("--candidate-config")] = None,
    ledger: Annotated[
        Path | None, typer.Option("--ledger", help="Mark the latest suggestion kept or reverted.")
    ] = None,
    output_format: Annotated[FactsFormat, typer.Option("--format", "-f")] = FactsFormat.text,
) -> None:
    """Keep, revert or inconclusive: compare a candidate run with its baseline."""
    result, note = run_compare(
        baseline, candidate, baseline_log, candidate_log, baseline_config, candidate_config, ledger
    )
    if output_format is FactsFormat.json:
        typer.echo(comparison_json(result, note))
    else:
        typer.echo(comparison_text(result, note), nl=False)


@app.command("estimate")
def estimate_cmd(
    model_config: Annotated[
        Path, typer.Option("--model-config", help="Hugging Face config.json of the model.")
    ],
    config: Annotated[
        Path | None,
        typer.Option("--config", help="The FSDP2 training config (seq, batch, sizes, recompute)."),
    ] = None,
    world: Annotated[
        int | None, typer.Option("--world", help="Number of devices (default: parallel.fsdp_size).")
    ] = None,
    step_ms: Annotated[
        float | None, typer.Option("--step-ms", help="Measured step time for MFU.")
    ] = None,
    log: Annotated[
        Path | None, typer.Option("--log", help="Take the step time from a training log.")
    ] = None,
    device: Annotated[
        str,
        typer.Option("--device", help="Device name for the peak FLOPS table (910B, A3, H100...)."),
    ] = "910B",
    peak: Annotated[
        float | None, typer.Option("--peak-tflops", help="Override the device's peak TFLOPS.")
    ] = None,
    output_format: Annotated[FactsFormat, typer.Option("--format", "-f")] = FactsFormat.text,
) -> None:
    """Parameters, FLOPs per token, MFU and per-rank memory from the model and training configs."""
    shape = load_model_config(model_config)
    train = training_from_config(load_config(config) if config else None, world)
    if step_ms is None and log is not None:
        measured = log_facts([log]).value("log.step_time_ms")
        step_ms = float(measured) if isinstance(measured, int | float) else None
    peak_source = "--peak-tflops"
    if peak is None:
        peak, peak_source = peak_tflops(device)
    result = estimate(shape, train, step_ms, peak, peak_source, model_config.name)
    typer.echo(
        facts_json(result) if output_format is FactsFormat.json else facts_text(result), nl=False
    )


@app.command("watch")
def watch_cmd(
    log: Annotated[Path, typer.Argument(help="The training log to follow (like tail -f).")],
    max_step_ms: Annotated[
        float | None, typer.Option("--max-step-ms", help="Alert above this step time.")
    ] = None,
    regression: Annotated[
        float | None,
        typer.Option("--regression", help="Alert above this factor x the steady median."),
    ] = None,
    consecutive: Annotated[
        int,
        typer.Option("--consecutive", min=1, help="Logged iterations in a row before alerting."),
    ] = 3,
    exit_on_alert: Annotated[
        bool, typer.Option("--exit-on-alert", help="Exit with code 1 at the first alert.")
    ] = False,
    poll: Annotated[
        float, typer.Option("--poll", help="Seconds between checks for new lines.")
    ] = 1.0,
    idle_timeout: Annotated[
        float | None,
        typer.Option("--idle-timeout", help="Stop after this many seconds without new lines."),
    ] = None,
) -> None:
    """Follow a growing log; alert on slow steps or NaN loss (find it in minutes, not the next morning)."""
    if max_step_ms is None and regression is None:
        regression = 1.2
    watcher = Watcher(max_step_ms=max_step_ms, regression=regression, consecutive=consecutive)
    alerts = watch(
        log, watcher, lambda a: typer.echo(a), poll, idle_timeout, stop_on_alert=exit_on_alert
    )
    if alerts and exit_on_alert:
        raise typer.Exit(1)


@app.command("ledger")
def ledger_cmd(
    config: Annotated[
        Path | None, typer.Option("--config", help="Find the ledger next to this config.")
    ] = None,
    ledger: Annotated[Path | None, typer.Option("--ledger", help="The ledger file.")] = None,
    mark: Annotated[
        str | None,
        typer.Option("--mark", help="FEATURE=STATUS, e.g. feature.task-queue-level2=rejected."),
    ] = None,
) -> None:
    """Print the history of suggested changes; --mark records a decision."""
    if ledger is None and config is None:
        ledger = Path(".advisor/ledger.jsonl")
    path = ledger or default_path(config)  # type: ignore[arg-type]
    book = Ledger.load(path)
    if mark:
        feature, _, status = mark.partition("=")
        if status not in STATUSES:
            raise DataError(f"--mark: status must be one of {', '.join(STATUSES)}")
        book.append(status, feature)
    typer.echo(ledger_text(book), nl=False)


@rules_app.command("list")
def rules_list(
    kind: Annotated[
        str | None, typer.Option("--kind", help="symptom, bottleneck, feature or policy.")
    ] = None,
    tag: Annotated[str | None, typer.Option("--tag", help="Only rules with this tag.")] = None,
    settings: SettingsOpt = None,
    rules_dir: RulesDirOpt = None,
) -> None:
    """One line per rule."""
    if kind is not None and kind not in KINDS:
        raise DataError(f"--kind: '{kind}' is not one of {', '.join(KINDS)}")
    graph = load_graph(settings, rules_dir)
    rules = sorted(graph.ruleset.rules.values(), key=lambda r: (KINDS.index(r.kind), r.id))
    rules = [
        r for r in rules if (kind is None or r.kind == kind) and (tag is None or tag in r.tags)
    ]
    typer.echo(rules_list_text(rules), nl=False)


@rules_app.command("show")
def rules_show(
    rule_id: Annotated[str, typer.Argument(help="A rule id, e.g. feature.task-queue-level2.")],
    settings: SettingsOpt = None,
    rules_dir: RulesDirOpt = None,
) -> None:
    """A rule's documentation, params, edges and example."""
    graph = load_graph(settings, rules_dir)
    if rule_id not in graph.ruleset:
        close = [r for r in graph.ruleset.rules if rule_id.split(".")[-1] in r]
        hint = f" (did you mean {', '.join(sorted(close)[:3])}?)" if close else ""
        raise DataError(f"no rule {rule_id}{hint}")
    typer.echo(rule_show_text(graph.ruleset[rule_id], graph), nl=False)


@rules_app.command("lint")
def rules_lint(
    extra: Annotated[
        list[Path] | None,
        typer.Argument(help="Extra rule folders to check with the built-in rules."),
    ] = None,
) -> None:
    """Validate every rule file and the graph's integrity; exit 2 on any error."""
    ruleset = load_rules(extra or [])
    _, errors = integrity_errors(ruleset)
    if errors:
        for error in errors:
            typer.echo(f"advisor: error: {error}", err=True)
        raise typer.Exit(EXIT_INPUT_ERROR)
    counts = {k: len(ruleset.of_kind(k, enabled_only=False)) for k in KINDS}
    plural = {
        "symptom": "symptoms",
        "bottleneck": "bottlenecks",
        "feature": "features",
        "policy": "policies",
    }
    summary = ", ".join(f"{n} {plural[k] if n != 1 else k}" for k, n in counts.items())
    typer.echo(f"{len(ruleset.rules)} rules OK ({summary})")


@rules_app.command("graph")
def rules_graph(
    output_format: Annotated[GraphFormat, typer.Option("--format", "-f")] = GraphFormat.mermaid,
    settings: SettingsOpt = None,
    rules_dir: RulesDirOpt = None,
) -> None:
    """The whole rule graph as Graphviz dot or Mermaid, for docs and review."""
    graph = load_graph(settings, rules_dir)
    typer.echo(to_dot(graph) if output_format is GraphFormat.dot else to_mermaid(graph), nl=False)


def main() -> None:
    try:
        app(standalone_mode=False)
    except AdvisorError as exc:
        print(f"advisor: error: {exc}", file=sys.stderr)
        sys.exit(EXIT_INPUT_ERROR)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        print("advisor: aborted", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:  # click usage errors carry their own exit code
        code = getattr(exc, "exit_code", None)
        show = getattr(exc, "show", None)
        if code is not None and callable(show):
            show()
            sys.exit(code)
        raise


if __name__ == "__main__":
    main()
