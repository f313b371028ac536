"""The one input loader of the profile commands: facts, the config document, the launch script,
and the context conditions are evaluated in."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from advisor.app.pipeline import add_estimates, collect_facts
from advisor.engine.conditions import Context
from advisor.facts.catalogue import ENV_PREFIX
from advisor.inputs.documents import Document, load_config_document
from advisor.inputs.launch import LaunchScript, effective_config, parse_launch
from advisor.model import JOB_SCOPE, FactSet


@dataclass(frozen=True)
class JobOptions:
    """What describes one training job: its profile and/or logs, its config and launch script."""

    profile: Path | None
    config: Path | None = None
    launch: Path | None = None
    logs: tuple[Path, ...] = ()
    model_config: Path | None = None
    skip_bad_files: bool = False


@dataclass(frozen=True)
class Job:
    facts: FactSet
    config: Document | None  # the config as read: text, positions, data
    launch: LaunchScript | None
    effective: dict[str, object] | None  # the config after the command line's overrides
    context: Context


def job_context(
    facts: FactSet, effective: dict[str, object] | None, launch: LaunchScript | None
) -> Context:
    """Facts, the effective config and the environment.

    The environment that ran is what the profiler recorded; the environment now is that, with
    the launch script's exports on top (the script is what the next run will use). Conditions
    judge the next change, so they see the environment now; both are kept.
    """
    values = {f.id: f.value for f in facts.facts if f.scope == JOB_SCOPE}
    ran = {k[len(ENV_PREFIX) :]: str(v) for k, v in values.items() if k.startswith(ENV_PREFIX)}
    now: dict[str, str] | None = {**ran, **(launch.env if launch else {})}
    if not ran and launch is None:
        now = None
    return Context(facts=values, config=effective, env=now, env_ran=ran or None)


def load_job(options: JobOptions) -> Job:
    launch = parse_launch(options.launch) if options.launch else None
    config = load_config_document(options.config) if options.config else None
    effective = effective_config(config.data, launch) if config is not None else None
    facts = collect_facts(
        options.profile,
        list(options.logs),
        skip_bad_files=options.skip_bad_files,
        config=effective,
        config_source=options.config.name if options.config else "",
    )
    if options.model_config is not None:
        add_estimates(facts, options.model_config, effective)
    return Job(facts, config, launch, effective, job_context(facts, effective, launch))
