"""`advisor tune`: the closed loop. Run the job, suggest on its newest profile and log, apply one
change with the same writer as `suggest --write`, run again, compare noise-aware in the job's
unit, keep it (the run becomes the baseline) or restore the edited files byte for byte, record
predicted and measured effect in the ledger; until the job is healthy, nothing applicable is
left, --max-changes changes were tried, two runs in a row failed, a run overran its time, or
the user pressed Ctrl-C (the change under test is reverted, the ledger stays consistent).

Orchestration only: suggest, compare and the writer decide; this module sequences them and
returns codes and measurements that render/tune.py words."""

from __future__ import annotations

import dataclasses
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.app.compare import _check as check_prediction
from advisor.app.diagnose import run_diagnose
from advisor.app.job import JobOptions
from advisor.app.pipeline import side_facts
from advisor.app.suggest import SuggestOptions, SuggestRun, run_suggest
from advisor.app.tune_run import RunResult, new_profile, profile_location, run_job
from advisor.dialects.registry import load_config_values, load_job_config
from advisor.edit.writer import write_changes, write_file, write_patch
from advisor.engine.compare import Comparison, Verdict, compare
from advisor.engine.retry import masked_by, retry_policy
from advisor.engine.settings import RuleOptions
from advisor.engine.tuning import (
    FAILED_IN_A_ROW,
    NO_PREDICTION,
    Change,
    Measure,
    Stop,
    TuneResult,
    Verdict3,
    predicted_of,
)
from advisor.inputs.ledger import Ledger, default_path
from advisor.inputs.taxonomy import default_taxonomy
from advisor.model import Applicability, FactSet, InputError, Patch, Recommendation, Status
from advisor.shell.launch import parse_launch


@dataclass(frozen=True)
class TuneOptions:
    config: Path
    run: str
    launch: Path | None = None
    profile: Path | None = None  # default: where the config says
    log: Path | None = None  # the log the job writes itself (default: the captured output)
    max_changes: int = 9  # with the baseline, ten runs
    run_timeout: float | None = None
    accept_review: bool = False
    ledger: Path | None = None
    dry_run: bool = False
    rules: RuleOptions = field(default_factory=RuleOptions)


@dataclass
class _Kept:
    """The kept state: its run, facts, and the config values it ran with."""

    result: RunResult
    facts: FactSet
    measure: Measure
    config_values: dict[str, object] | None


class _Interrupted(Exception):
    """Ctrl-C during a run or a step of the loop, after the files were restored."""


def _number(facts: FactSet, *ids: str) -> float | None:
    for fact_id in ids:
        value = facts.value(fact_id)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


def measure_of(run: RunResult, facts: FactSet) -> Measure:
    return Measure(
        run.number,
        _number(facts, "log.step_time_ms", "step.time_ms"),
        _number(facts, "log.tokens_per_s"),
        str(run.profile) if run.profile else None,
        str(run.log),
    )


class Tuner:
    """One tuning session over one job's files."""

    def __init__(self, options: TuneOptions, progress: Callable[[str], None]) -> None:
        self.options = options
        self.progress = progress
        self.config = options.config.resolve()
        self.run_dir = self.config.parent
        self.ledger_path = (options.ledger or default_path(self.config)).resolve()
        self.logs = self.ledger_path.parent / "tune"
        self.ledger = Ledger.load(self.ledger_path)
        self.result = TuneResult(
            self.config, self.ledger_path, self.run_dir, self._profile_root(), options.run
        )

    def _profile_root(self) -> Path:
        if self.options.profile is not None:
            path = self.options.profile
            return path if path.is_absolute() else (Path.cwd() / path).resolve()
        config = load_job_config(self.config)
        launch = parse_launch(self.options.launch) if self.options.launch else None
        launch = config.job_launch(launch)
        return profile_location(config.dialect_id, config.effective(launch), self.run_dir)

    # ------------------------------------------------------------------ one run

    def _run(self) -> RunResult:
        number = self.result.runs
        self.result.runs += 1
        log = self.logs / f"run-{number:02d}.log"
        self.progress(f"run {number}: {self.options.run}")
        done = run_job(self.options.run, self.run_dir, log, number, self.options.run_timeout)
        if done.failed:
            return done
        profile = new_profile(
            self.result.profile_root, done.started_ns, self.logs / f"run-{number:02d}.profile"
        )
        return dataclasses.replace(done, profile=profile)

    def _facts(self, run: RunResult) -> FactSet:
        logs = [run.log]
        if self.options.log is not None:
            own = self.options.log
            logs = [own if own.is_absolute() else self.run_dir / own]
        return side_facts(run.profile, logs[0])

    def _config_values(self) -> dict[str, object] | None:
        try:
            return load_config_values(self.config)
        except InputError:
            return None

    # ------------------------------------------------------------------ the loop

    def tune(self) -> TuneResult:
        try:
            return self._loop()
        except (KeyboardInterrupt, _Interrupted):
            # outside a change under test the files are as at the last kept state already
            return self._stop(Stop.interrupted)

    def _loop(self) -> TuneResult:
        self.ledger.check_writable()
        baseline = self._run()
        if baseline.failed:
            return self._stop(Stop.baseline_failed, failure=baseline.failure, log=str(baseline.log))
        if baseline.profile is None:
            return self._stop(Stop.no_profile, run=0, where=str(self.result.profile_root))
        facts = self._facts(baseline)
        kept = _Kept(baseline, facts, measure_of(baseline, facts), self._config_values())
        self.result.baseline = self.result.final = kept.measure
        failed_in_row = 0
        tried = 0
        while True:
            if tried >= self.options.max_changes:
                return self._stop(Stop.max_changes, max_changes=self.options.max_changes)
            suggested = self._suggest(kept)
            stop = self._why_stop(suggested)
            if stop is not None:
                return stop
            rec = suggested.suggestion.recommendation
            assert rec is not None  # _why_stop stops on an answer without one
            if rec.patch is None or not rec.patch.changes or not self._allowed(rec.patch):
                # advice, or a change for a person to read: left to them; the next answer may
                # be one the loop can apply
                kind = "advice" if rec.patch is None else rec.patch.applicability.value
                if rec.patch is not None and not rec.patch.changes:
                    kind = "no-file"  # lines to add by hand: an export without --launch
                self.result.set_aside.append((rec.feature, kind))
                continue
            assert rec.patch is not None
            collecting = suggested.suggestion.status is Status.needs_data
            kept, change = self._try(rec, kept, collecting)
            self.result.changes.append(change)
            self.result.final = kept.measure
            if change.verdict is Verdict3.failed:
                if change.reason == "timeout":
                    return self._stop(
                        Stop.timeout, run=change.run, seconds=self.options.run_timeout
                    )
                failed_in_row += 1
                if failed_in_row >= FAILED_IN_A_ROW:
                    return self._stop(Stop.failed_runs)
            else:
                failed_in_row = 0
            if not collecting:
                tried += 1

    def _stop(self, why: Stop, **values: object) -> TuneResult:
        self.result.stopped = why
        self.result.stop_values = {k: v for k, v in values.items() if v is not None}
        return self.result

    def _suggest(self, kept: _Kept) -> SuggestRun:
        job = JobOptions(
            profile=kept.result.profile,
            config=self.config,
            launch=self.options.launch,
            logs=(Path(kept.measure.log),),
        )
        # the ledger records the proposal; the edit is this loop's, below
        set_aside = frozenset(feature for feature, _ in self.result.set_aside)
        options = SuggestOptions(ledger=self.ledger_path, set_aside=set_aside)
        return run_suggest(job, self.options.rules, options)

    def _allowed(self, patch: Patch) -> bool:
        if patch.applicability is Applicability.safe:
            return True
        return patch.applicability is Applicability.review and self.options.accept_review

    def _why_stop(self, suggested: SuggestRun) -> TuneResult | None:
        suggestion = suggested.suggestion
        rec = suggestion.recommendation
        if suggestion.status is Status.healthy:
            return self._stop(Stop.healthy)
        if suggestion.status not in (Status.change, Status.needs_data) or rec is None or rec.undo:
            return self._stop(
                Stop.no_applicable_change,
                status=suggestion.status.value,
                reason=suggestion.reason.code.value,
            )
        return None

    def _try(self, rec: Recommendation, kept: _Kept, collecting: bool) -> tuple[_Kept, Change]:
        """Apply the change, run, and keep or restore; the ledger records each step."""
        patch = rec.patch
        assert patch is not None
        # a collection change makes the next profile decide; it predicts no speed-up
        predicted = NO_PREDICTION if collecting else predicted_of(rec, kept.measure)
        change = Change(
            rec.feature, rec.bottleneck, patch, predicted, Verdict3.interrupted, retry=rec.retry
        )
        saved = {Path(c.path): Path(c.path).read_bytes() for c in patch.changes}
        self.progress(f"applying {rec.feature}")
        with _restored_on_interrupt(self, saved, change):
            if patch.applicability is Applicability.safe:
                write_patch(patch)
            else:  # --accept review
                write_changes(patch.changes)
            self.ledger.append("applied", rec.feature, bottleneck=rec.bottleneck)
            done = self._run()
            if done.failed or done.profile is None:
                cause = done.failure or "no-profile"
                _restore(saved)
                self._record("failed", change, failure=cause, run=done.number, log=str(done.log))
                return kept, dataclasses.replace(
                    change, verdict=Verdict3.failed, run=done.number, reason=cause
                )
            facts = self._facts(done)
            candidate = _Kept(done, facts, measure_of(done, facts), self._config_values())
            if collecting:
                self._record("kept", change, note="collection", run=done.number)
                return candidate, dataclasses.replace(
                    change, verdict=Verdict3.collect, run=done.number, measured=candidate.measure
                )
            judged = compare(
                kept.facts, facts, default_taxonomy(), kept.config_values, candidate.config_values
            )
            return self._judge(judged, change, kept, candidate, saved)

    def _judge(
        self,
        judged: Comparison,
        change: Change,
        kept: _Kept,
        candidate: _Kept,
        saved: dict[Path, bytes],
    ) -> tuple[_Kept, Change]:
        measured = candidate.measure
        fields: dict[str, object] = {
            "run": measured.run,
            "note": judged.reason.code.value,
            "tune": {  # this loop's step times, beside compare's record below
                "baseline_step_ms": kept.measure.step_ms,
                "step_ms": measured.step_ms,
                "tokens_per_s": measured.tokens_per_s,
                "judged_on": judged.judged_on.unit.value,
            },
        }
        # prediction against measurement as `compare --ledger` records them (the calibration)
        proposal = Ledger.load(self.ledger_path).last_proposed()  # suggest appended it
        checked = check_prediction(proposal, judged) if proposal is not None else None
        if checked is not None:
            fields["predicted"] = dict(checked.predicted)
            fields["measured"] = checked.measured.to_json()
        done = dataclasses.replace(
            change,
            run=measured.run,
            measured=measured,
            reason=judged.reason.code.value,
            unit=judged.judged_on.unit.value,
        )
        if judged.verdict is Verdict.keep:
            self._ledger_append("kept", change.feature, change.bottleneck, fields)
            return candidate, dataclasses.replace(done, verdict=Verdict3.keep)
        # revert, or inconclusive: not shown to help, so the kept state stays as it was
        if judged.reason.code.value in retry_policy().no_effect:
            # no effect: where did the time it should have freed go? (read before the restore:
            # the change's own run, with the config it ran with)
            masking = self._masked_by(candidate, proposal, change.bottleneck)
            if masking is not None:
                fields["masked_by"] = masking
        _restore(saved)
        self._ledger_append("reverted", change.feature, change.bottleneck, fields)
        return kept, dataclasses.replace(done, verdict=Verdict3.revert)

    def _masked_by(
        self, candidate: _Kept, proposal: dict[str, Any] | None, addressed: str
    ) -> dict[str, object] | None:
        job = JobOptions(
            profile=candidate.result.profile,
            config=self.config,
            launch=self.options.launch,
            logs=(Path(candidate.measure.log),),
        )
        changed = run_diagnose(job, self.options.rules).diagnosis
        return masked_by(proposal.get("proposed_on") if proposal else None, changed, addressed)

    def _record(self, event: str, change: Change, **fields: object) -> None:
        extra = {"predicted": change.predicted, **fields}
        self._ledger_append(event, change.feature, change.bottleneck, extra)

    def _ledger_append(
        self, event: str, feature: str, bottleneck: str, fields: dict[str, Any]
    ) -> None:
        self.ledger.append(event, feature, bottleneck=bottleneck, **fields)

    # ------------------------------------------------------------------ --dry-run

    def dry_run(self) -> TuneResult:
        """What would run and be edited first, from a profile already in place; nothing runs."""
        self.result.stopped = Stop.dry_run
        root = self.result.profile_root
        existing = new_profile(root, 0, self.logs / "dry-run.profile") if root.is_dir() else None
        if existing is None:
            self.result.notes.append("no profile yet")
            return self.result
        job = JobOptions(
            profile=existing,
            config=self.config,
            launch=self.options.launch,
            logs=((self.options.log,) if self.options.log else ()),
        )
        run = run_suggest(job, self.options.rules, SuggestOptions(read_only=True))
        rec = run.suggestion.recommendation
        if rec is not None and rec.patch is not None and rec.patch.changes:
            self.result.first = rec
        return self.result


def _restore(saved: dict[Path, bytes]) -> None:
    """Put the edited files back byte for byte, through the one atomic writer."""
    for path, data in saved.items():
        if path.read_bytes() != data:
            write_file(path, data.decode("utf-8"))


@contextmanager
def _restored_on_interrupt(
    tuner: Tuner, saved: dict[Path, bytes], change: Change
) -> Iterator[None]:
    """Ctrl-C while a change is under test: its files restored, the ledger told, a second
    Ctrl-C ignored until both are done."""
    try:
        yield
    except KeyboardInterrupt:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            _restore(saved)
            applied = tuner.ledger.status(change.feature) == "applied"
            if applied:
                tuner._record("reverted", change, note="interrupted")
            tuner.result.changes.append(change)
        finally:
            signal.signal(signal.SIGINT, previous)
        raise _Interrupted from None


def run_tune(options: TuneOptions, progress: Callable[[str], None] = lambda _: None) -> TuneResult:
    if not options.config.is_file():
        raise InputError(str(options.config), "no such config file")
    tuner = Tuner(options, progress)
    return tuner.dry_run() if options.dry_run else tuner.tune()
