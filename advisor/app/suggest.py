"""`advisor suggest`: profile + config (+ launch script) -> one validated change, remembered.

Orchestration only: load the job, diagnose, plan, place the patch in files, record the ledger.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.app.job import Job, JobOptions, load_job
from advisor.app.rulesets import load_graph
from advisor.dialects.base import JobConfig, plain_config
from advisor.edit.patch import unified_diff
from advisor.edit.writer import write_patch
from advisor.engine.candidates import missing_names
from advisor.engine.changes import is_applied
from advisor.engine.compare_work import side_shape
from advisor.engine.conditions import Truth, evaluate
from advisor.engine.diagnose import Diagnosis, diagnose
from advisor.engine.graph import RuleGraph
from advisor.engine.loop import History
from advisor.engine.planner import plan
from advisor.engine.predict import calibrate, predict, prediction_json
from advisor.engine.recorded_env import unrecorded_settings
from advisor.engine.retry import proposed_on, retry_policy
from advisor.engine.settings import RuleOptions
from advisor.inputs.ledger import Ledger, default_path, file_hash, files_fingerprint
from advisor.inputs.taxonomy import default_taxonomy
from advisor.model import FactSet, InputError, PatchTarget, Recommendation, Suggestion


@dataclass(frozen=True)
class SuggestOptions:
    ledger: Path | None = None  # default: .advisor/ledger.jsonl next to the config
    use_ledger: bool = True
    # edit the files in place (safe changes only); the ledger records the proposal after the
    # files are written, so it never names a change that is not on disk
    write: bool = False
    # read the ledger, never add to it (a report shows the suggestion without recording it)
    read_only: bool = False
    # features the caller has set aside for this answer (tune: review changes it may not apply)
    set_aside: frozenset[str] = frozenset()

    @property
    def records(self) -> bool:
        """A dry run reads the ledger but adds to it only when a ledger file was named."""
        return self.use_ledger and not self.read_only and (self.write or self.ledger is not None)


@dataclass
class SuggestRun:
    facts: FactSet
    diagnosis: Diagnosis
    suggestion: Suggestion
    ledger: Ledger | None
    notes: list[str]
    written: list[str] = dataclasses.field(default_factory=list)  # files --write edited
    write_error: InputError | None = None  # why --write refused (the suggestion stands)


def _check_same_job(job: Job, config: JobConfig) -> None:
    """The config must be sound and describe the job the profile ran (the dialect says how)."""
    assert job.effective is not None  # a config was given
    config.check_ready(job.launch, job.effective)
    recorded = job.facts.value("profile.world_size")
    if isinstance(recorded, int):
        config.check_same_job(recorded, job.launch)


def _mark_applied(ledger: Ledger, graph: RuleGraph, job: Job, record: bool) -> list[str]:
    last = ledger.last_proposed()
    if last is None or ledger.status(str(last["feature"])) != "proposed":
        return []
    rule = graph.ruleset.feature(str(last["feature"]))
    if rule is None or not is_applied(rule, job.context):
        return []
    ledger.append("applied", rule.id, in_memory=not record, bottleneck=last.get("bottleneck"))
    return [f"the previous suggestion ({rule.id}) is now applied; moving on"]


def _placed(suggestion: Suggestion, config: JobConfig, job: Job) -> Suggestion:
    rec = suggestion.recommendation
    if rec is None or rec.patch is None:
        return suggestion
    patch = config.place(rec.patch, job.launch)
    rec = dataclasses.replace(rec, patch=patch, diff=unified_diff(patch.changes))
    return dataclasses.replace(suggestion, recommendation=rec)


def _record(
    ledger: Ledger, run: SuggestRun, job: Job, config: JobConfig, profile: Path, config_hash: str
) -> None:
    rec = run.suggestion.recommendation
    if rec is None or rec.undo:
        return
    last = ledger.last_proposed()
    repeat = (
        last is not None
        and last["feature"] == rec.feature
        and last.get("config_sha256") == config_hash
    )
    if repeat:
        return
    # why it is proposed again: only on a retried change's proposal
    again: dict[str, Any] = {"retry": rec.retry.to_json()} if rec.retry is not None else {}
    ledger.append(
        "proposed",
        rec.feature,
        **again,
        bottleneck=rec.bottleneck,
        status=run.suggestion.status.value,
        patch=rec.patch.to_json() if rec.patch else None,
        facts={f.id: f.value for f in rec.evidence},
        predicted=prediction_json(rec.predicted) if rec.predicted else None,
        config=str(config.path),
        config_sha256=config_hash,
        config_values=plain_config(job.effective),
        profile=str(profile),
        profile_fingerprint=files_fingerprint(job.facts.inputs),
        proposed_on=proposed_on(run.diagnosis, rec),
    )


def _predicted(
    suggestion: Suggestion, graph: RuleGraph, job: Job, ledger: Ledger | None
) -> Suggestion:
    """The recommendation with its predicted effect: calibrated by the job's own measurements
    of the feature when its ledger holds some (a retried change's masked run left out)."""
    rec = suggestion.recommendation
    if rec is None:
        return suggestion
    facts = job.facts
    step_ms = next(
        (
            float(value)
            for value in (
                facts.value(f) for f in ("attrib.step_ms", "step.time_ms", "log.step_time_ms")
            )
            if isinstance(value, int | float) and not isinstance(value, bool) and value > 0
        ),
        None,
    )
    shape = side_shape(facts, job.effective, default_taxonomy().config_layout)
    entries = ledger.entries if ledger is not None else []
    if rec.retry is not None:
        # a retry's grounds say its run without effect was masked: not its efficacy
        masked = retry_policy().no_effect
        entries = [
            e
            for e in entries
            if not (
                e["feature"] == rec.feature and e["event"] == "reverted" and e.get("note") in masked
            )
        ]
    per_feature, _ = calibrate(entries)
    rule = graph.ruleset.feature(rec.feature)
    predicted = predict(
        rec, rule, step_ms, shape.work.tokens is not None, per_feature.get(rec.feature)
    )
    return dataclasses.replace(
        suggestion, recommendation=dataclasses.replace(rec, predicted=predicted)
    )


def _unrecorded_notes(
    graph: RuleGraph, diagnosis: Diagnosis, job: Job, suggestion: Suggestion
) -> list[str]:
    """Say which of the launch script's settings the advice took as applied although the profile
    cannot confirm them: only those of the main bottleneck's features that come before the one
    proposed (the ones that would otherwise have been proposed instead)."""
    ctx = job.context
    if diagnosis.main is None or job.launch is None:
        return []
    features = graph.features_for(diagnosis.main.id)
    chosen = suggestion.recommendation.feature if suggestion.recommendation else None
    before = next((order for order, rule in features if rule.id == chosen), None)
    names = [
        rule.applied_when.names("env")
        for order, rule in features
        if rule.applied_when is not None and (before is None or order < before)
    ]
    unknown = unrecorded_settings(ctx.env, ctx.env_ran, names)
    if not unknown:
        return []
    framework = ctx.facts.get("profile.framework") or "the profiler"
    settings = ", ".join(f"{name}={value}" for name, value in sorted(unknown.items()))
    one = len(unknown) == 1
    return [
        f"the profile cannot tell whether {settings} (set by the launch script) applied to the "
        f"profiled run: {framework} does not record {'it' if one else 'them'}. The advice "
        f"assumes {'it' if one else 'they'} did; if the profile predates the launch script, "
        "profile again"
    ]


def _unchecked_notes(graph: RuleGraph, job: Job, rec: Recommendation | None) -> list[str]:
    """Say which of the proposed change's exclusions the profile could not check (a CANN or
    torch_npu version, the device it does not record): unknown is not "no", so the user checks."""
    rule = graph.ruleset.feature(rec.feature) if rec is not None and not rec.undo else None
    if rule is None:
        return []
    notes = []
    for conflict in rule.conflicts:
        if conflict.condition is None:
            continue
        outcome = evaluate(conflict.condition, job.context)
        if outcome.truth is Truth.UNKNOWN:
            needs = ", ".join(missing_names(outcome))
            notes.append(
                f"not checked for {rule.id}: {conflict.reason} (the profile does not record "
                f"{needs}); check it before applying the change"
            )
    return notes


def _other_platform(job: Job) -> str | None:
    """How the profile differs from the config's job (None when it does not): its platform
    (every dialect advisor reads is an Ascend one: MindSpeed-LLM, MindSpore Transformers) or
    its framework (a torch_npu profile with a MindSpore Transformers config)."""
    from advisor.dialects.registry import LABELS, registry

    ctx = job.context
    platform = ctx.facts.get("profile.platform")
    label = LABELS.get(str(ctx.dialect), str(ctx.dialect))
    framework = ctx.facts.get("profile.framework")
    if isinstance(platform, str) and platform != "ascend":
        return (
            f"the profile is a {framework or 'profiler'} trace on {platform} while a {label} "
            "runs on Ascend NPUs: check it is this job's profile"
        )
    if registry().runs_framework(str(ctx.dialect), framework) is False:
        return (
            f"the profile was recorded by {framework}, which does not run a {label}: check it "
            "is this job's profile"
        )
    return None


def _skipped_main_notes(
    graph: RuleGraph, diagnosis: Diagnosis, job: Job, rec: Recommendation | None
) -> list[str]:
    """Say why the advice is about a later bottleneck: advisor knows no change for the main one
    in this dialect on this platform; and that a profile from another platform than the
    config's (a PyTorch GPU trace with an Ascend config) may not be this job's, whichever
    bottleneck the advice addresses."""
    from advisor.dialects.registry import LABELS

    main = diagnosis.main
    bottleneck = rec.bottleneck if rec is not None else None
    elsewhere = _other_platform(job)
    if main is None or bottleneck is None or bottleneck == main.id:
        return [elsewhere] if elsewhere else []
    ctx = job.context
    platform = ctx.facts.get("profile.platform")
    label = LABELS.get(str(ctx.dialect), str(ctx.dialect))
    usable = [
        rule
        for _, rule in graph.features_for(main.id)
        if rule.runs_for(ctx.dialect) and rule.runs_on(platform)
    ]
    if usable and not elsewhere:
        return []  # its changes were weighed: the suggestion lists why each was passed over
    on = f" on {platform}" if isinstance(platform, str) else ""
    why = (
        f"none of the changes advisor knows to a {label} for the main bottleneck ({main.id}) "
        "applies (see the ones passed over)"
        if usable
        else f"advisor knows no change to a {label} for the main bottleneck ({main.id}){on}"
    )
    note = f"{why}: the advice addresses the next one ({bottleneck})"
    return [f"{note}; {elsewhere}" if elsewhere else note]


def _open_ledger(
    options: SuggestOptions, config: JobConfig, graph: RuleGraph, job: Job
) -> tuple[Ledger | None, list[str]]:
    """The job's ledger (none when not used), with the previous suggestion marked applied
    when the config now has it."""
    if not options.use_ledger:
        return None, []
    ledger = Ledger.load(options.ledger or default_path(config.path))
    notes = _mark_applied(ledger, graph, job, not options.read_only)
    job.facts.warnings.extend(ledger.warnings)
    return ledger, notes


def _env_notes(suggestion: Suggestion, job: Job) -> list[str]:
    rec = suggestion.recommendation
    patch = rec.patch if rec is not None else None
    if patch is None or patch.target is not PatchTarget.env or job.context.env is not None:
        return []
    return [
        "the launch environment is unknown (the profile recorded none and no --launch was given): "
        "check whether the variable is already set"
    ]


def _write(run: SuggestRun, recording: Ledger | None) -> bool:
    """`--write`: the patch's files edited; False when refused (the suggestion stands)."""
    rec = run.suggestion.recommendation
    if rec is None or rec.patch is None or not rec.patch.changes:
        return True
    try:
        if recording is not None:
            # an edit that is applied must be recorded: the ledger's preconditions first
            recording.check_writable()
        run.written = write_patch(rec.patch)
    except InputError as exc:  # a review change, a read-only file...: nothing is recorded
        run.write_error = exc
        return False
    return True


def run_suggest(
    job: JobOptions, rules: RuleOptions | None = None, options: SuggestOptions | None = None
) -> SuggestRun:
    options = options or SuggestOptions()
    if job.config is None or job.profile is None:
        raise InputError("suggest", "needs a profile and a training config")
    graph = load_graph(rules or RuleOptions())
    loaded = load_job(job)
    config = loaded.config
    assert config is not None  # job.config was given
    _check_same_job(loaded, config)
    ledger, notes = _open_ledger(options, config, graph, loaded)
    history = History.of(
        ledger.events() if ledger else [], profile=files_fingerprint(loaded.facts.inputs)
    )
    if options.set_aside:
        history = dataclasses.replace(history, rejected=history.rejected | options.set_aside)
    diagnosis = diagnose(graph, loaded.context)
    suggestion = plan(graph, diagnosis, loaded.context, history, loaded.facts.facts)
    suggestion = _placed(suggestion, config, loaded)
    suggestion = _predicted(suggestion, graph, loaded, ledger)
    notes += _env_notes(suggestion, loaded)
    notes += _unrecorded_notes(graph, diagnosis, loaded, suggestion)
    notes += _skipped_main_notes(graph, diagnosis, loaded, suggestion.recommendation)
    notes += _unchecked_notes(graph, loaded, suggestion.recommendation)
    run = SuggestRun(loaded.facts, diagnosis, suggestion, ledger, notes)
    config_hash = file_hash(config.path)  # the config the suggestion was made for
    if options.write and not _write(run, ledger if options.records else None):
        return run
    if ledger is not None and options.records:
        _record(ledger, run, loaded, config, job.profile, config_hash)
    return run
