"""What a profile says about the launch environment it ran with: three-valued.

A profiler records a fixed list of environment variables (rules/profilers.yaml): a listed
variable in the profile's metadata is known — set to its value, or recorded as unset when the
value is empty — and every other variable is unknown, never "unset". torch_npu, for one, records
PYTORCH_NPU_ALLOC_CONF and ASCEND_LAUNCH_BLOCKING but not TASK_QUEUE_ENABLE: a launch script
exporting TASK_QUEUE_ENABLE=2 beside a profile that does not mention it is not a difference.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

from advisor.core.checked_data import load_valid
from advisor.core.resources import rules_dir

ENV_PREFIX = "env."
PROFILERS_FILE = "profilers.yaml"


@dataclass(frozen=True)
class Recorder:
    """One profiler's habit: which variables its metadata lists."""

    framework: str
    records_env: frozenset[str]
    source: str


@dataclass(frozen=True)
class RecordedEnvironment:
    """The environment that ran, as far as the profile can tell."""

    values: Mapping[str, str]  # recorded names -> value ("" = recorded as unset)
    recorder: Recorder | None  # None: no profile, or a profiler the table does not know

    def knows(self, name: str) -> bool:
        return name in self.values

    def unknown(self, names: list[str]) -> list[str]:
        return [name for name in names if name not in self.values]


@cache
def recorders() -> dict[str, Recorder]:
    path = rules_dir() / PROFILERS_FILE
    data = load_valid(path, "profilers.schema.json")
    return {
        row["framework"]: Recorder(row["framework"], frozenset(row["records_env"]), row["source"])
        for row in data["profilers"]
    }


def recorded_environment(facts: Mapping[str, object]) -> RecordedEnvironment:
    """The recorded variables among the job's `env.*` facts: those its profiler records."""
    framework = facts.get("profile.framework")
    recorder = recorders().get(str(framework)) if framework is not None else None
    listed = recorder.records_env if recorder is not None else frozenset()
    values = {
        key[len(ENV_PREFIX) :]: str(value)
        for key, value in facts.items()
        if key.startswith(ENV_PREFIX) and key[len(ENV_PREFIX) :] in listed
    }
    return RecordedEnvironment(values, recorder)


def unrecorded_settings(
    env_now: Mapping[str, str] | None,
    env_ran: Mapping[str, str] | None,
    feature_env_names: list[list[str]],
) -> dict[str, str]:
    """The settings the launch environment now gives to variables the main bottleneck's
    features read but the profile did not record: the profile cannot say whether the profiled
    run had them (a note, never a "stale" verdict)."""
    if env_now is None:
        return {}
    ran = env_ran or {}
    return {
        name: env_now[name]
        for names in feature_env_names
        for name in names
        if name in env_now and name not in ran
    }
