"""`advisor suggest`: profile + config (+ launch script) -> one validated change, remembered.

Orchestration only: load the job, diagnose, plan, place the patch in files, record the ledger.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from advisor.app.job import Job, JobOptions, load_job
from advisor.app.rulesets import load_graph
from advisor.edit.patch import place, unified_diff
from advisor.edit.writer import write_patch
from advisor.engine.changes import is_applied
from advisor.engine.diagnose import Diagnosis, diagnose
from advisor.engine.graph import RuleGraph
from advisor.engine.loop import History
from advisor.engine.planner import plan
from advisor.engine.recorded_env import unrecorded_settings
from advisor.engine.settings import RuleOptions
from advisor.inputs.configs import config_problems, dialect_problems
from advisor.inputs.documents import Document, plain_config
from advisor.inputs.ledger import Ledger, default_path, file_hash, files_fingerprint
from advisor.inputs.parallel import fsdp_size, mindformers_devices
from advisor.model import FactSet, InputError, PatchTarget, Suggestion


@dataclass(frozen=True)
class SuggestOptions:
    ledger: Path | None = None  # default: .advisor/ledger.jsonl next to the config
    use_ledger: bool = True
    # edit the files in place (safe changes only); the ledger records the proposal after the
    # files are written, so it never names a change that is not on disk
    write: bool = False
    # read the ledger, never add to it (a report shows the suggestion without recording it)
    read_only: bool = False

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


def _check_config(job: Job, config: Document) -> None:
    if config.layout is not None and config.layout.problems:
        flag, message = config.layout.problems[0]
        raise InputError(str(config.path), f"{message} (--{flag}): fix the parallel sizes first")
    if config.kind == "mindformers-config":
        mf = dialect_problems(config.data, config.kind)
        if mf:
            raise InputError(str(config.path), f"{mf[0]}; fix it first (advisor check lists all)")
        return
    if config.kind != "fsdp2-config":
        return  # a Megatron script's arguments are checked by `advisor check`
    problems = config_problems(config.data)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise InputError(
            str(config.path),
            f"fails the FSDP2 config schema: {problems[0]}{more}; fix it first "
            f"(advisor check {config.path} lists every problem, --fix moves misplaced keys)",
        )
    cli_problems = config_problems(job.effective)
    if cli_problems and job.launch is not None:
        raise InputError(
            str(job.launch.path), f"a command-line override is invalid: {cli_problems[0]}"
        )


def _check_world_size(job: Job, config: Document) -> None:
    recorded = job.facts.value("profile.world_size")
    if not isinstance(recorded, int):
        return
    fsdp = fsdp_size(job.effective)
    if fsdp is not None and fsdp not in (1, recorded):
        raise InputError(
            str(config.path),
            f"parallel.fsdp_size is {fsdp} but the profile ran with world size {recorded}: "
            "the profile and the config are not the same job",
        )
    if config.kind == "mindformers-config":
        devices = mindformers_devices(config.data)
        if devices is not None and devices != recorded:
            raise InputError(
                str(config.path),
                f"parallel_config asks for {devices} devices (data x model x context x pipeline) "
                f"but the profile ran with world size {recorded}: not the same job",
            )
        return
    if config.megatron is not None:
        world = config.megatron.world_size
        if world is not None and world != recorded:
            raise InputError(
                str(config.path),
                f"the script starts {world} processes (--nnodes x --nproc_per_node) but the "
                f"profile ran with world size {recorded}: not the same job",
            )
        return
    launch = job.launch
    if launch is not None and launch.world_size is not None and launch.world_size != recorded:
        raise InputError(
            str(launch.path),
            f"the launch command starts {launch.world_size} processes (nnodes x nproc_per_node) but the "
            f"profile ran with world size {recorded}",
        )


def _mark_applied(ledger: Ledger, graph: RuleGraph, job: Job, record: bool) -> list[str]:
    last = ledger.last_proposed()
    if last is None or ledger.status(str(last["feature"])) != "proposed":
        return []
    rule = graph.ruleset.feature(str(last["feature"]))
    if rule is None or not is_applied(rule, job.context):
        return []
    ledger.append("applied", rule.id, in_memory=not record, bottleneck=last.get("bottleneck"))
    return [f"the previous suggestion ({rule.id}) is now applied; moving on"]


def _placed(suggestion: Suggestion, config: Document, job: Job) -> Suggestion:
    rec = suggestion.recommendation
    if rec is None or rec.patch is None:
        return suggestion
    patch = place(rec.patch, config, job.launch)
    rec = dataclasses.replace(rec, patch=patch, diff=unified_diff(patch.changes))
    return dataclasses.replace(suggestion, recommendation=rec)


def _record(
    ledger: Ledger, run: SuggestRun, job: Job, config: Document, profile: Path, config_hash: str
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
    ledger.append(
        "proposed",
        rec.feature,
        bottleneck=rec.bottleneck,
        status=run.suggestion.status.value,
        patch=rec.patch.to_json() if rec.patch else None,
        facts={f.id: f.value for f in rec.evidence},
        config=str(config.path),
        config_sha256=config_hash,
        config_values=plain_config(job.effective),
        profile=str(profile),
        profile_fingerprint=files_fingerprint(job.facts.inputs),
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
    _check_config(loaded, config)
    _check_world_size(loaded, config)
    ledger = None
    if options.use_ledger:
        ledger = Ledger.load(options.ledger or default_path(config.path))
    notes = _mark_applied(ledger, graph, loaded, not options.read_only) if ledger else []
    if ledger is not None:
        loaded.facts.warnings.extend(ledger.warnings)
    fingerprint = files_fingerprint(loaded.facts.inputs)
    history = History.of(ledger.events() if ledger else [], profile=fingerprint)
    diagnosis = diagnose(graph, loaded.context)
    suggestion = plan(graph, diagnosis, loaded.context, history, loaded.facts.facts)
    suggestion = _placed(suggestion, config, loaded)
    rec = suggestion.recommendation
    if rec and rec.patch and rec.patch.target is PatchTarget.env and loaded.context.env is None:
        notes.append(
            "the launch environment is unknown (the profile recorded none and no --launch was given): "
            "check whether the variable is already set"
        )
    notes.extend(_unrecorded_notes(graph, diagnosis, loaded, suggestion))
    run = SuggestRun(loaded.facts, diagnosis, suggestion, ledger, notes)
    config_hash = file_hash(config.path)  # the config the suggestion was made for
    if options.write and rec is not None and rec.patch is not None and rec.patch.changes:
        try:
            if ledger is not None and options.records:
                # an edit that is applied must be recorded: the ledger's preconditions first
                ledger.check_writable()
            run.written = write_patch(rec.patch)
        except InputError as exc:  # a review change, a read-only file...: nothing is recorded
            run.write_error = exc
            return run
    if ledger is not None and options.records:
        _record(ledger, run, loaded, config, job.profile, config_hash)
    return run
