"""The one input loader of the profile commands: facts, the config document, the launch script,
and the context conditions are evaluated in."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from advisor.app.pipeline import add_estimates, collect_facts, with_memory_pressure
from advisor.app.read_ranks import ReadOptions
from advisor.dialects.base import JobConfig
from advisor.dialects.registry import load_job_config, registry
from advisor.engine.conditions import Context
from advisor.engine.recorded_env import recorded_environment
from advisor.model import JOB_SCOPE, FactSet
from advisor.shell.launch import LaunchScript, parse_launch


@dataclass(frozen=True)
class JobOptions:
    """What describes one training job: its profile and/or logs, its config and launch script."""

    profile: Path | None
    config: Path | None = None
    launch: Path | None = None
    logs: tuple[Path, ...] = ()
    model_config: Path | None = None
    skip_bad_files: bool = False
    # how the ranks are read: where, and how deep
    reading: ReadOptions = field(default_factory=ReadOptions)
    # the device named on the command line (--device): its memory and peak when the profile
    # records no device
    device: str | None = None


@dataclass(frozen=True)
class Job:
    facts: FactSet
    config: JobConfig | None  # the config as read: text, positions, data
    launch: LaunchScript | None
    effective: dict[str, object] | None  # the config after the command line's overrides
    context: Context


def job_context(
    facts: FactSet,
    effective: dict[str, object] | None,
    launch: LaunchScript | None,
    kind: str | None = None,
) -> Context:
    """Facts, the effective config and the environment.

    The environment that ran is what the profiler recorded (of the variables it records at all:
    rules/profilers.yaml); the environment now is that, with
    the launch script's exports on top (the script is what the next run will use). Conditions
    judge the next change, so they see the environment now; both are kept.
    """
    values = {f.id: f.value for f in facts.facts if f.scope == JOB_SCOPE}
    # only what the profiler records: a variable it does not list is unknown, not unset
    ran = dict(recorded_environment(values).values)
    now: dict[str, str] | None = {**ran, **(launch.env if launch else {})}
    if not ran and launch is None:
        now = None
    if kind is None:
        # no config given: the profile's framework says which backend's features to offer
        kind = registry().default_for(values.get("profile.framework"))
    missing = {m.id: m.reason for m in facts.missing if m.scope == JOB_SCOPE}
    return Context(
        facts=values, config=effective, env=now, env_ran=ran or None, dialect=kind, missing=missing
    )


def _peak_device(facts: FactSet, options: JobOptions) -> str:
    """The device whose peak MFU is computed against: the one the profile recorded when the
    table knows it, else --device, else the 910B (the estimate's long-standing default)."""
    from advisor.facts.estimate import device_entry

    recorded = facts.value("profile.device")
    if isinstance(recorded, str) and device_entry(recorded) is not None:
        return recorded
    return options.device or "910B"


def load_job(options: JobOptions) -> Job:
    if options.device is not None:
        from advisor.facts.estimate import known_device

        known_device(options.device)  # a device the table does not know is refused, named
    config = load_job_config(options.config) if options.config else None
    launch = parse_launch(options.launch) if options.launch else None
    effective = None
    if config is not None:
        launch = config.job_launch(launch)
        effective = config.effective(launch)
    facts = collect_facts(
        options.profile,
        list(options.logs),
        skip_bad_files=options.skip_bad_files,
        config=effective,
        reading=options.reading,
        config_source=options.config.name if options.config else "",
    )
    if options.model_config is not None:
        add_estimates(facts, options.model_config, effective, _peak_device(facts, options))
    with_memory_pressure(facts, options.device)
    kind = config.dialect_id if config is not None else None
    return Job(facts, config, launch, effective, job_context(facts, effective, launch, kind))
