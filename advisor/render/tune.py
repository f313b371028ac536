"""Render a tuning session: a table of the changes tried (feature, the edit, predicted, measured,
verdict) and baseline -> final; the advisor/tune@1 JSON; markdown for a PR or a chat message."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from advisor.engine.tuning import TUNE_SCHEMA, Change, Measure, Stop, TuneResult, Verdict3
from advisor.model import Patch
from advisor.render.compare_words import recorded_reason
from advisor.render.retry_words import retry_reason

_STOPS = {
    Stop.healthy: "the job is healthy: advisor finds no bottleneck left to act on",
    Stop.no_applicable_change: "no applicable change left",
    Stop.max_changes: "--max-changes reached",
    Stop.failed_runs: "two runs failed in a row",
    Stop.timeout: "a run overran --run-timeout: it was killed and its change reverted",
    Stop.interrupted: "interrupted: the change under test was reverted",
    Stop.baseline_failed: "the baseline run failed: nothing to tune from",
    Stop.no_profile: "the run wrote no profile where advisor looked",
    Stop.dry_run: "dry run: nothing was run or edited",
}
_FAILURES = {
    "out-of-memory": "out of memory",
    "hccl-timeout": "HCCL timeout",
    "nan": "NaN loss",
    "crashed": "the run failed",
    "timeout": "overran --run-timeout",
    "no-profile": "no profile written",
}


def stop_text(result: TuneResult) -> str:
    words = _STOPS[result.stopped]
    values = result.stop_values
    if result.stopped is Stop.no_applicable_change:
        return f"{words}: the next answer is {values.get('status')} ({values.get('reason')})"
    if result.stopped is Stop.baseline_failed:
        return f"{words} ({_FAILURES.get(str(values.get('failure')), values.get('failure'))}; see {values.get('log')})"
    if result.stopped is Stop.no_profile:
        return f"{words} ({values.get('where')}): give it with --profile"
    if result.stopped is Stop.max_changes:
        return f"{words} ({values.get('max_changes')})"
    return words


def edit_text(patch: Patch) -> str:
    ops = []
    for op in patch.ops:
        before = "unset" if op.expect in (None, "") else str(op.expect)
        after = "unset" if op.op == "remove" else str(op.value)
        ops.append(f"{op.path} {before} -> {after}")
    where = Path(patch.file).name if patch.file else patch.target.value
    return f"{'; '.join(ops)} ({where})"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} ms"


def predicted_text(predicted: dict[str, object]) -> str:
    expected, low, high = (predicted.get(k) for k in ("expected_ratio", "low_ratio", "high_ratio"))
    if isinstance(expected, float) and isinstance(low, float) and isinstance(high, float):
        return f"{expected:+.0%} ({low:+.0%}..{high:+.0%})"
    saves = predicted.get("saves_at_most_ms")
    if not isinstance(saves, int | float):
        return "-"
    if predicted.get("source") == "ceiling":
        return f"up to -{saves:.1f} ms"
    # the cost of the bottleneck it addresses: an order of magnitude, not a bound
    return f"~-{saves:.1f} ms"


def verdict_text(change: Change) -> str:
    if change.verdict is Verdict3.failed:
        return f"failed: {_FAILURES.get(change.reason or '', change.reason)}, reverted"
    if change.verdict is Verdict3.revert:
        return f"revert ({recorded_reason(change.reason or '')})"
    if change.verdict is Verdict3.collect:
        return "kept (profile collection, not a tuning change)"
    if change.verdict is Verdict3.interrupted:
        return "interrupted, reverted"
    return "keep"


def _measure_text(m: Measure | None) -> str:
    if m is None:
        return "-"
    tps = f", {m.tokens_per_s:,.0f} tokens/s" if m.tokens_per_s else ""
    return f"{_ms(m.step_ms)}{tps}"


def _rows(result: TuneResult) -> list[tuple[str, str, str, str, str, str]]:
    return [
        (
            str(c.run if c.run is not None else "-"),
            c.feature.removeprefix("feature.") + (" (retry)" if c.retry else ""),
            edit_text(c.patch),
            predicted_text(c.predicted),
            _ms(c.measured.step_ms if c.measured else None),
            verdict_text(c),
        )
        for c in result.changes
    ]


def _summary(result: TuneResult) -> list[str]:
    base, final = result.baseline, result.final
    lines = []
    if base is not None and final is not None:
        share = ""
        if base.step_ms and final.step_ms:
            share = f" ({final.step_ms / base.step_ms:.0%} of the baseline)"
        lines.append(f"baseline: {_measure_text(base)} (run {base.run})")
        lines.append(f"final:    {_measure_text(final)} (run {final.run}){share}")
    for change in (c for c in result.changes if c.retry is not None):
        assert change.retry is not None
        feature = change.feature.removeprefix("feature.")
        lines.append(f"run {change.run}, {feature}: {retry_reason(change.retry)}")
    kept = len(result.kept)
    lines.append(
        f"{result.runs} runs, {len(result.changes)} changes tried, {kept} kept; "
        f"stopped: {stop_text(result)}"
    )
    if result.set_aside:
        words = {"no-file": "no file to edit: give --launch", "advice": "advice"}
        left = ", ".join(f"{f} ({words.get(k, k)})" for f, k in result.set_aside)
        lines.append(
            f"left for you to read and apply (advisor suggest shows the diff; --accept review "
            f"lets the loop apply review changes): {left}"
        )
    return lines


def tune_text(result: TuneResult) -> str:
    if result.stopped is Stop.dry_run:
        return _dry_run_text(result)
    header = ("run", "feature", "edit", "predicted", "measured", "verdict")
    rows = [header, *_rows(result)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header) - 1)]
    lines = []
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    if not result.changes:
        lines = ["no change was tried"]
    lines += [
        "",
        *_summary(result),
        f"ledger: {result.ledger}; run logs: {result.ledger.parent / 'tune'}",
    ]
    return "\n".join(lines) + "\n"


def _dry_run_text(result: TuneResult) -> str:
    lines = [
        f"would run, with bash in {result.run_dir}: {result.command}",
        f"  each run's output kept in {result.ledger.parent / 'tune'}/run-NN.log",
        f"  its profile read from the rank folders it writes under {result.profile_root}",
        f"  the ledger: {result.ledger}",
    ]
    first = result.first
    if first is not None and first.patch is not None:
        lines.append(
            f"from the profile already there, the first change would be {first.feature}: "
            f"{edit_text(first.patch)} [{first.patch.applicability.value}]"
        )
    else:
        lines.append("the first change is decided after the baseline run (no usable profile yet)")
    lines.append(stop_text(result))
    return "\n".join(lines) + "\n"


def _measure_json(m: Measure | None) -> dict[str, object] | None:
    return None if m is None else m.to_json()


def tune_json(result: TuneResult) -> str:
    payload = {
        "schema": TUNE_SCHEMA,
        "config": str(result.config),
        "command": result.command,
        "ledger": str(result.ledger),
        "runs": result.runs,
        "baseline": _measure_json(result.baseline),
        "final": _measure_json(result.final),
        "changes": [
            {
                "feature": c.feature,
                "bottleneck": c.bottleneck,
                "patch": c.patch.to_json(),
                "edit": edit_text(c.patch),
                "predicted": c.predicted,
                "measured": _measure_json(c.measured),
                "verdict": c.verdict.value,
                "reason": c.reason,
                "judged_on": c.unit,
                "run": c.run,
                "retry": None
                if c.retry is None
                else {**c.retry.to_json(), "message": retry_reason(c.retry)},
            }
            for c in result.changes
        ],
        "stopped": result.stopped.value,
        "stop_values": result.stop_values,
        "stop_message": stop_text(result),
        "set_aside": [{"feature": f, "applicability": a} for f, a in result.set_aside],
        "first": (
            None
            if result.first is None or result.first.patch is None
            else {"feature": result.first.feature, "patch": result.first.patch.to_json()}
        ),
    }
    return json.dumps(payload, indent=2, ensure_ascii=False) + "\n"


def tune_markdown(result: TuneResult) -> str:
    if result.stopped is Stop.dry_run:
        return _dry_run_text(result)
    lines = ["### advisor tune", ""]
    lines += [
        "| run | feature | edit | predicted | measured | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for row in _rows(result):
        cells = [cell.replace("|", "\\|") for cell in row]
        lines.append(
            "| " + " | ".join(cells[:2]) + f" | `{cells[2]}` | " + " | ".join(cells[3:]) + " |"
        )
    lines += ["", *(f"{line}  " for line in _summary(result))]
    return "\n".join(lines) + "\n"


FORMATS: dict[str, Callable[[TuneResult], str]] = {
    "text": tune_text,
    "json": tune_json,
    "markdown": tune_markdown,
}
