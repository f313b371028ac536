"""`advisor compare`: load both sides, compare, and record the verdict in the ledger."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.app.pipeline import side_facts
from advisor.app.scaling import recorded_run
from advisor.core.text import read_text
from advisor.dialects.registry import load_config_values as load_config
from advisor.engine.compare import Comparison, Verdict, compare, read_warnings
from advisor.engine.compare_work import Unit
from advisor.engine.predict import Checked, measure, recorded_prediction
from advisor.engine.tuning import FailedRun
from advisor.inputs.ledger import Ledger
from advisor.inputs.taxonomy import default_taxonomy
from advisor.model import FactSet, InputError


def _configs(
    ledger: Ledger | None, baseline_config: Path | None, candidate_config: Path | None
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    base = load_config(baseline_config) if baseline_config else None
    cand = load_config(candidate_config) if candidate_config else None
    if ledger is not None and (base is None or cand is None):
        last = ledger.last_proposed()
        if last is not None:
            if base is None and isinstance(last.get("config_values"), dict):
                base = last["config_values"]
            config_path = Path(str(last.get("config", "")))
            if cand is None and config_path.is_file():
                cand = load_config(config_path)
    return base, cand


def _check(last: dict[str, Any], result: Comparison) -> Checked | None:
    """The proposal's prediction against what the comparison measured, when both exist."""
    change = result.judged_change()
    predicted = recorded_prediction(last.get("predicted"))
    if change is None or predicted is None:
        return None
    measured = measure(predicted, result.judged_on.unit, change)
    recorded = result.verdict is not Verdict.inconclusive
    return Checked(str(last["feature"]), predicted, measured, recorded)


def _record(ledger: Ledger, result: Comparison, runs: dict[str, Any]) -> str | None:
    last = ledger.last_proposed()
    if last is None:
        return "no suggestion in the ledger to mark"
    feature = str(last["feature"])
    result.checked = _check(last, result)
    if result.verdict is Verdict.inconclusive:
        return f"{feature} left as {ledger.status(feature)} (inconclusive)"
    event = "kept" if result.verdict is Verdict.keep else "reverted"
    # the measurement of the change beside its prediction: the job's calibration
    measured: dict[str, Any] = {}
    if result.checked is not None:
        measured = {
            "predicted": dict(result.checked.predicted),
            "measured": result.checked.measured.to_json(),
        }
    # the reason's code: `advisor suggest` words it when it proposes the undo
    ledger.append(
        event,
        feature,
        bottleneck=last.get("bottleneck"),
        note=result.reason.code.value,
        runs=runs,
        **measured,
    )
    if event == "reverted":
        return f"{feature} marked reverted: the next suggest undoes it and never proposes it again"
    return f"{feature} marked kept"


def _runs(
    baseline: Side, candidate: Side, base: FactSet, cand: FactSet, result: Comparison
) -> dict[str, Any]:
    """Both sides as measured, for `advisor scaling --ledger` (tokens per step where the
    verdict was judged per token)."""
    judged = result.judged_on
    per_token = judged.unit is Unit.token
    return {
        name: recorded_run(
            str(side.path or side.log), facts, side.log, per_step if per_token else None
        )
        for name, side, facts, per_step in (
            ("baseline", baseline, base, judged.baseline_per_step),
            ("candidate", candidate, cand, judged.candidate_per_step),
        )
    }


@dataclass(frozen=True)
class Side:
    """One run of a comparison: a profile folder or a log file, a log, the config it ran."""

    path: Path | None = None
    log: Path | None = None
    config: Path | None = None


def run_compare(
    baseline: Side, candidate: Side, ledger_path: Path | None = None
) -> tuple[Comparison, str | None]:
    if baseline.path is None and baseline.log is None:
        raise InputError("baseline", "give a baseline profile folder or --baseline-log")
    if candidate.path is None and candidate.log is None:
        raise InputError("candidate", "give a candidate profile folder or --candidate-log")
    base = side_facts(baseline.path, baseline.log)
    cand = side_facts(candidate.path, candidate.log)
    ledger = Ledger.load(ledger_path) if ledger_path else None
    base_config, cand_config = _configs(ledger, baseline.config, candidate.config)
    result = compare(base, cand, default_taxonomy(), base_config, cand_config)
    note = None
    if ledger is not None:
        note = _record(ledger, result, _runs(baseline, candidate, base, cand, result))
        result.warnings.extend(read_warnings(ledger.warnings))  # torn lines read past or set aside
    return result, note


def failed_cause(log: Path | None) -> str | None:
    """The cause a candidate log names for a failed run, when it ran no step at all (a log with
    steps is compared; its loss guard judges a NaN)."""
    from advisor.app.tune_run import failure_cause

    if log is None or not log.is_file():
        return None
    text = read_text(log)
    cause = failure_cause(text)
    if cause is None:
        return None
    try:
        steps = side_facts(None, log).value("log.step_time_ms")
    except InputError:  # not one iteration line: the run died before its first step
        steps = None
    return cause if steps is None else None


def run_failed(candidate_log: Path | None, ledger_path: Path | None) -> FailedRun:
    """`compare --failed` (or a candidate log of a run that died): the latest suggestion is
    recorded failed, so suggest undoes it and never proposes it again for this job."""
    from advisor.app.tune_run import failure_cause

    cause = "crashed"
    if candidate_log is not None and candidate_log.is_file():
        cause = failure_cause(read_text(candidate_log)) or cause
    if ledger_path is None:
        return FailedRun(cause, candidate_log, None, None)
    ledger = Ledger.load(ledger_path)
    last = ledger.last_proposed()
    if last is None:
        return FailedRun(cause, candidate_log, None, "no suggestion in the ledger to mark")
    feature = str(last["feature"])
    if ledger.status(feature) not in ("proposed", "applied"):
        note = f"the latest suggestion ({feature}) is already {ledger.status(feature)}: not marked"
        return FailedRun(cause, candidate_log, None, note)
    fields: dict[str, Any] = {"failure": cause}
    if candidate_log is not None:
        fields["log"] = str(candidate_log)
    ledger.append("failed", feature, bottleneck=last.get("bottleneck"), **fields)
    note = f"{feature} marked failed: the next suggest undoes it and never proposes it again"
    return FailedRun(cause, candidate_log, feature, note)
