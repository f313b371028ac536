"""Closing the loop: compare, estimate, watch, ledger."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

import advisor.cli.console as console
from advisor.cli.options import (
    LOG_KINDS,
    PROFILE_KINDS,
    FactsFormat,
    QuietOpt,
    ReportFormat,
    RulesDirOpt,
    VerboseOpt,
)

RUN_KINDS = f"a profile ({PROFILE_KINDS}) or a training log ({LOG_KINDS})"


def compare_cmd(
    baseline: Annotated[Path | None, typer.Argument(help=f"Baseline run: {RUN_KINDS}.")] = None,
    candidate: Annotated[
        Path | None, typer.Argument(help="Candidate run: the same kinds as BASELINE.")
    ] = None,
    baseline_log: Annotated[
        Path | None,
        typer.Option(
            "--baseline-log", help="The baseline run's training log (with or without a profile)."
        ),
    ] = None,
    candidate_log: Annotated[
        Path | None,
        typer.Option("--candidate-log", help="The candidate run's training log."),
    ] = None,
    baseline_config: Annotated[
        Path | None,
        typer.Option(
            "--baseline-config",
            help="The config the baseline ran with (default: the ledger's record of it): "
            "tells which settings changed.",
        ),
    ] = None,
    candidate_config: Annotated[
        Path | None,
        typer.Option("--candidate-config", help="The config the candidate ran with."),
    ] = None,
    ledger: Annotated[
        Path | None, typer.Option("--ledger", help="Mark the latest suggestion kept or reverted.")
    ] = None,
    failed: Annotated[
        bool,
        typer.Option(
            "--failed",
            help="The candidate run crashed (out of memory, HCCL timeout, NaN...): mark the "
            "latest suggestion failed; its cause is read from --candidate-log when given.",
        ),
    ] = False,
    output_format: Annotated[
        ReportFormat,
        typer.Option(
            "--format",
            "-f",
            help="text, the advisor/comparison@4 JSON, or markdown (a PR comment).",
        ),
    ] = ReportFormat.text,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Keep, revert or inconclusive: compare a candidate run with its baseline.

    \b
    Example:
      advisor compare before/prof after/prof --ledger .advisor/ledger.jsonl
    """
    from advisor.app.compare import Side, failed_cause, run_compare, run_failed
    from advisor.render.compare import FORMATS, CompareReport, failed_report

    died = candidate_log if candidate_log is not None else candidate
    if failed or (died is not None and died.is_file() and failed_cause(died) is not None):
        run = run_failed(died if died is not None and died.is_file() else None, ledger)
        console.emit(
            failed_report(run, output_format.value), prose=output_format is ReportFormat.text
        )
        raise typer.Exit(1)
    with console.phase("reading and comparing"):
        result, note = run_compare(
            Side(path=baseline, log=baseline_log, config=baseline_config),
            Side(path=candidate, log=candidate_log, config=candidate_config),
            ledger_path=ledger,
        )
    with console.phase("rendering"):
        rendered = FORMATS[output_format.value](CompareReport(result, note))
    console.emit(rendered, prose=output_format is ReportFormat.text)
    # a CI can gate on the verdict: 0 keep, 1 revert, 3 inconclusive (2: usage or input error)
    if result.verdict.value != "keep":
        raise typer.Exit(1 if result.verdict.value == "revert" else 3)


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
        Path | None,
        typer.Option("--log", help=f"Take the step time from a training log ({LOG_KINDS})."),
    ] = None,
    device: Annotated[
        str,
        typer.Option("--device", help="Device name for the peak FLOPS table (910B, A3, H100...)."),
    ] = "910B",
    peak: Annotated[
        float | None, typer.Option("--peak-tflops", help="Override the device's peak TFLOPS.")
    ] = None,
    output_format: Annotated[
        FactsFormat,
        typer.Option("--format", "-f", help="text table or the advisor/facts@1 JSON."),
    ] = FactsFormat.text,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Parameters, FLOPs per token, MFU and per-rank memory from the model and training configs.

    \b
    Example:
      advisor estimate --model-config config.json --config train.yaml --log train.log
    """
    from advisor.app.pipeline import log_facts
    from advisor.dialects.fsdp2.schema import load_config
    from advisor.facts.estimate import (
        device_memory_gib,
        estimate,
        load_model_config,
        peak_tflops,
        training_and_assumptions,
    )
    from advisor.facts.layout_fit import layout_advice
    from advisor.inputs.thresholds import fact_thresholds
    from advisor.render.facts import FORMATS as FACTS_FORMATS
    from advisor.render.facts import FactsReport

    shape = load_model_config(model_config)
    train, assumed = training_and_assumptions(load_config(config) if config else None, world)
    if step_ms is None and log is not None:
        measured = log_facts([log]).value("log.step_time_ms")
        step_ms = float(measured) if isinstance(measured, int | float) else None
    peak_source = "--peak-tflops"
    if peak is None:
        peak, peak_source = peak_tflops(device)
    result = estimate(shape, train, step_ms, peak, peak_source, model_config.name)
    if assumed:
        source = f"not in {config}" if config else "no --config given"
        result.warnings.append(f"assumed ({source}): {', '.join(assumed)}")
    memory = device_memory_gib(device)
    if memory is not None:
        share = fact_thresholds().memory_pressure_ratio
        advice = layout_advice(shape, train, memory * 2**30, share)
        if not advice.startswith("fits"):
            result.warnings.append(f"{device}: {advice}")
    typer.echo(FACTS_FORMATS[output_format.value](FactsReport(result)), nl=False)


def scaling_cmd(
    logs: Annotated[
        list[Path] | None,
        typer.Argument(
            help=f"Training logs of the same job at different device counts ({LOG_KINDS})."
        ),
    ] = None,
    world: Annotated[
        list[int] | None,
        typer.Option(
            "--world",
            help="Devices of each log, in the logs' order (default: world_size of the log's "
            "argument dump).",
        ),
    ] = None,
    ledger: Annotated[
        Path | None,
        typer.Option(
            "--ledger",
            help="Also the runs `compare --ledger` recorded in this ledger, the latest at each "
            "device count.",
        ),
    ] = None,
    output_format: Annotated[
        FactsFormat,
        typer.Option("--format", "-f", help="text table or the advisor/scaling@1 JSON."),
    ] = FactsFormat.text,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Scaling efficiency across device counts: throughput per device against the smallest run.

    \b
    Example:
      advisor scaling run8/train.log run32/train.log --world 8 --world 32
      advisor scaling --ledger .advisor/ledger.jsonl
    """
    from advisor.app.scaling import run_scaling
    from advisor.model import InputError
    from advisor.render.scaling import scaling_json, scaling_text

    if not logs and ledger is None:
        raise InputError("scaling", "give the logs of runs at different device counts, or --ledger")
    runs = run_scaling(logs or [], world or [], ledger)
    render = scaling_json if output_format is FactsFormat.json else scaling_text
    typer.echo(render(runs), nl=False)


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
    output_format: Annotated[
        str,
        typer.Option(
            "--format", help="text: one line per alert; jsonl: one JSON object per alert."
        ),
    ] = "text",
    on_alert: Annotated[
        str | None,
        typer.Option(
            "--on-alert",
            help="A shell command run for each alert, the alert as JSON on its standard input "
            "(and in ADVISOR_ALERT): push it to a chat or a pager.",
        ),
    ] = None,
) -> None:
    """Follow a growing log; alert on slow steps, NaN loss, grad-norm explosions, a collapsing
    loss scale, skipped iterations and memory creeping up (find it in minutes, not the next
    morning).

    Example: advisor watch train.log --exit-on-alert --format jsonl
    """
    import json
    import subprocess

    from advisor.app.health import Alert, Health
    from advisor.app.watch import Watcher, watch
    from advisor.model import DataError

    if output_format not in ("text", "jsonl"):
        raise DataError(f"--format: must be text or jsonl, not {output_format!r}")
    if max_step_ms is None and regression is None:
        regression = 1.2
    watcher = Watcher(max_step_ms=max_step_ms, regression=regression, consecutive=consecutive)

    def raise_alert(alert: Alert) -> None:
        text = json.dumps(alert.to_json(), ensure_ascii=False)
        typer.echo(text if output_format == "jsonl" else str(alert))
        if on_alert:
            # the hook's failure is the user's to see, never the end of the watch
            done = subprocess.run(
                ["bash", "-c", on_alert],
                input=text,
                text=True,
                env={**os.environ, "ADVISOR_ALERT": text},
                check=False,
            )
            if done.returncode != 0:
                console.warn(f"--on-alert exited with {done.returncode}")

    alerts = watch(
        log, watcher, raise_alert, poll, idle_timeout, stop_on_alert=exit_on_alert, health=Health()
    )
    if alerts and exit_on_alert:
        raise typer.Exit(1)


def _known_feature(feature: str, rules_dir: list[Path] | None) -> None:
    import difflib

    from advisor.engine.rules import load_rules
    from advisor.model import DataError

    known = sorted(load_rules(tuple(rules_dir or ()), kinds=("feature",)).rules)
    if feature not in known:
        close = difflib.get_close_matches(feature, known, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise DataError(
            f"--mark: {feature or '(empty)'} is not a feature{hint}; advisor rules list --kind "
            "feature lists them"
        )


def _nearest_ledger() -> Path:
    """The ledger meant when none is named: the nearest above the current folder, else the one
    below it in the repository (several: the user chooses)."""
    from advisor.inputs.ledger import LEDGER_DIR, LEDGER_NAME, find_ledgers
    from advisor.model import DataError

    found = find_ledgers(Path.cwd())
    if not found:
        return Path(LEDGER_DIR) / LEDGER_NAME
    if len(found) > 1:
        listed = ", ".join(_shown(p) for p in found)
        raise DataError(f"several ledgers found ({listed}): choose one with --ledger or --config")
    console.note(f"reading the ledger {_shown(found[0])}")
    return found[0]


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def ledger_cmd(
    config: Annotated[
        Path | None, typer.Option("--config", help="Find the ledger next to this config.")
    ] = None,
    ledger: Annotated[Path | None, typer.Option("--ledger", help="The ledger file.")] = None,
    mark: Annotated[
        str | None,
        typer.Option("--mark", help="FEATURE=STATUS, e.g. feature.task-queue-level2=rejected."),
    ] = None,
    rules_dir: RulesDirOpt = None,
    output_format: Annotated[
        FactsFormat,
        typer.Option(
            "--format",
            "-f",
            help="text (events, predicted vs measured, calibration) or the "
            "advisor/ledger-history@1 JSON.",
        ),
    ] = FactsFormat.text,
) -> None:
    """Print the history of suggested changes, each change's predicted against measured effect
    and the calibration of the predictions; --mark records a decision.

    \b
    Example:
      advisor ledger --format json
      advisor ledger --mark feature.task-queue-level2=rejected
    """
    from advisor.inputs.ledger import STATUSES, Ledger, default_path
    from advisor.model import DataError
    from advisor.render.ledger import ledger_json, ledger_text

    if ledger is None and config is None:
        ledger = _nearest_ledger()
    path = ledger or default_path(config)  # type: ignore[arg-type]
    book = Ledger.load(path)
    if mark:
        feature, _, status = mark.partition("=")
        if status not in STATUSES:
            raise DataError(f"--mark: status must be one of {', '.join(STATUSES)}")
        _known_feature(feature, rules_dir)  # a mark on no feature would never take effect
        book.append(status, feature)
    for warning in book.warnings:  # torn lines read past or set aside
        console.warn(warning)
    render = ledger_json if output_format is FactsFormat.json else ledger_text
    typer.echo(render(book), nl=False)
