"""MindSpore Transformers YAML (`parallel_config`, `runner_config`, ...): how it is recognised,
the problems in the sections the rules read or change, and the device count its parallel grid
asks for."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, ClassVar

from advisor.core.resources import schemas_dir
from advisor.core.validation import schema_violations
from advisor.core.values import get_path
from advisor.dialects.base import ConfigProblem, Dialect, Probe
from advisor.dialects.yaml_config import YamlConfig
from advisor.engine.rule_model import PolicyRule
from advisor.engine.templates import render
from advisor.model import Finding, InputError

if TYPE_CHECKING:
    # annotations only: the shell reader's import is paid when a script is read, never by a
    # check of a YAML config
    from advisor.shell.launch import LaunchScript

MINDFORMERS_SCHEMA = "config/mindformers.schema.json"
# top-level keys that only MindSpore Transformers configs have
_OWN_KEYS = {"parallel_config", "runner_config", "recompute_config", "runner_wrapper"}
GRID = ("data_parallel", "model_parallel", "context_parallel", "pipeline_stage")


def mindformers_problems(data: Any) -> list[ConfigProblem]:
    """Problems in the MindFormers sections the rules read or change (others pass)."""
    problems = []
    for v in schema_violations(data, MINDFORMERS_SCHEMA):
        where = ".".join(str(p) for p in v.path)
        if v.validator == "additionalProperties" and isinstance(v.instance, dict):
            section = where
            allowed = set(_mindformers_keys().get(section, {}))
            for key in sorted(str(k) for k in v.instance if k not in allowed):
                problems.append(
                    ConfigProblem(
                        f"{section}.{key}",
                        f"unknown key of {section}: MindSpore Transformers does not read it "
                        f"(known: {', '.join(sorted(allowed))})",
                    )
                )
            continue
        problems.append(ConfigProblem(where or "(top level)", f"invalid value: {v.message}"))
    return problems


@cache
def _mindformers_keys() -> dict[str, dict[str, Any]]:
    schema = json.loads((schemas_dir() / MINDFORMERS_SCHEMA).read_text(encoding="utf-8"))
    return {
        s: dict(body.get("properties", {}))
        for s, body in schema["properties"].items()
        if isinstance(body, dict) and "properties" in body
    }


def devices(config: Mapping[str, object] | None) -> int | None:
    """dp x mp x cp x pp of a parallel_config (unset sizes are 1); None when one is not a whole
    number."""
    count = 1
    for key in GRID:
        value = get_path(config, f"parallel_config.{key}")
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool):
            return None
        count *= value
    return count


@dataclass
class MindFormersConfig(YamlConfig):
    """A MindSpore Transformers training config (YAML)."""

    dialect_id: ClassVar[str] = "mindformers-config"

    def schema_problems(self, config: Mapping[str, object]) -> Sequence[object]:
        return mindformers_problems(config)

    def check_ready(self, launch: LaunchScript | None, effective: dict[str, object]) -> None:
        problems = mindformers_problems(self.data)
        if problems:
            raise InputError(
                str(self.path), f"{problems[0]}; fix it first (advisor check lists all)"
            )

    def check_same_job(self, world_size: int, launch: LaunchScript | None) -> None:
        asked = devices(self.data)
        if asked is not None and asked != world_size:
            raise InputError(
                str(self.path),
                f"parallel_config asks for {asked} devices (data x model x context x pipeline) "
                f"but the profile ran with world size {world_size}: not the same job",
            )


@dataclass
class MindFormersInferenceConfig(MindFormersConfig):
    """A MindFormers config whose `run_mode` is predict or eval: no training schedule, so
    only the rules that hold without one judge it (rules name it `mindformers-inference`)."""

    dialect_id: ClassVar[str] = "mindformers-inference"


# run modes that train (MindFormers' RunMode: train, finetune); the others run a model
_TRAINING_MODES = {"train", "finetune"}


def _is_mindformers(probe: Probe) -> bool:
    data = probe.mapping if probe.is_yaml else None
    return bool(data) and bool({str(k) for k in data or {}} & _OWN_KEYS)


def _serves(data: dict[str, Any] | None) -> bool:
    mode = (data or {}).get("run_mode")
    return isinstance(mode, str) and mode.lower() not in _TRAINING_MODES


def _detects(probe: Probe) -> bool:
    return _is_mindformers(probe) and not _serves(probe.mapping)


def _detects_serving(probe: Probe) -> bool:
    return _is_mindformers(probe) and _serves(probe.mapping)


def _load(probe: Probe) -> MindFormersConfig:
    base = YamlConfig.read(probe)
    return MindFormersConfig(base.path, base.text, base.lines, base.located)


def _load_serving(probe: Probe) -> MindFormersInferenceConfig:
    base = YamlConfig.read(probe)
    return MindFormersInferenceConfig(base.path, base.text, base.lines, base.located)


def _check_keys(rule: PolicyRule, doc: MindFormersConfig) -> Iterator[Finding]:
    for problem in mindformers_problems(doc.config):
        line, col = doc.config_position(problem.path)
        message = render(rule.message, path=problem.path, detail=problem.message)
        yield Finding(
            rule.id, rule.effective_severity, message, str(doc.path), line, col, problem.path
        )


MINDFORMERS: Dialect[MindFormersConfig] = Dialect(
    id=MindFormersConfig.dialect_id,
    label="MindSpore Transformers config",
    suffixes=(".yaml", ".yml"),
    detects=_detects,
    load=_load,
    checks={"mindformers-config-keys": _check_keys},
    default_for=("mindspore",),
    keys_hint="MindSpore Transformers ones (parallel_config, runner_config, ...)",
)

MINDFORMERS_INFERENCE: Dialect[MindFormersInferenceConfig] = Dialect(
    id=MindFormersInferenceConfig.dialect_id,
    label="MindSpore Transformers predict/eval config",
    suffixes=(".yaml", ".yml"),
    detects=_detects_serving,
    load=_load_serving,
    checks={"mindformers-config-keys": _check_keys},
    not_a_config="is a predict or eval config (run_mode): no training job to tune",
)
