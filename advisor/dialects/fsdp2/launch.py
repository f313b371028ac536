"""The FSDP2 launch script as a document: the environment it exports (sourced files included),
the `--section.key value` overrides of its training command, and the config they make. It is
checked on its own; as a job's config it is refused (the YAML is the config, the script its
--launch)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import ClassVar, Self

from advisor.core.text import read_text
from advisor.core.yamlio import locate
from advisor.dialects.base import ConfigProblem, Probe, export_location, split_lines
from advisor.dialects.fsdp2 import LAUNCH_ID, SERVING_ID
from advisor.dialects.fsdp2.repository_schema import KeySchema, repository_schema
from advisor.dialects.fsdp2.schema import config_problems, fsdp2_keys
from advisor.dialects.megatron.document import training_command
from advisor.edit.patch import env_fix_changes
from advisor.model import FileChange, InputError, Patch
from advisor.shell.launch import LaunchScript, parse_launch, run_path
from advisor.shell.overrides import effective_config


def _named_config(script: LaunchScript) -> dict[str, object] | None:
    """The YAML the command names, found where the script runs from (None: not found, or not
    a mapping: what it holds is unknown)."""
    if not script.config_arg:
        return {}
    found = run_path(script.path, script.config_arg, script.root)
    if found is None:
        return None
    try:
        loaded = locate(read_text(found), str(found)).data
    except InputError:
        return None  # the YAML's own problem, reported on the YAML
    return loaded if isinstance(loaded, dict) else None


class PartialConfig(Mapping[str, object]):
    """A config of which only some keys are known (the command line's, when the YAML it names
    cannot be read): every other key is unknown, never unset."""

    def __init__(self, known: Mapping[str, object]) -> None:
        self.known = known

    def __getitem__(self, key: str) -> object:
        value = self.known.get(key)
        return PartialConfig(value) if isinstance(value, Mapping) else value

    def __contains__(self, key: object) -> bool:
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(self.known)

    def __len__(self) -> int:
        return len(self.known)


@dataclass
class FSDP2LaunchScript:
    dialect_id: ClassVar[str] = LAUNCH_ID

    path: Path
    text: str
    lines: list[str]
    script: LaunchScript
    overridden: dict[str, object]  # the named YAML (or nothing) with the command's overrides
    yaml: dict[str, object] | None  # the YAML the command names (None: it cannot be read)
    # the key schema of the script's repository (its own argument dataclasses; None: bundled)
    schema: KeySchema | None = None

    @classmethod
    def load(cls, probe: Probe) -> Self:
        reading = training_command(probe)
        script = parse_launch(probe.path, probe.root, reading.reading if reading else None)
        named = _named_config(script)
        arg = script.config_arg
        script.config_found = not arg or run_path(script.path, arg, script.root) is not None
        schema = repository_schema(probe.root)
        config = effective_config(named or {}, script, fsdp2_keys(schema))
        lines = split_lines(probe.text)
        return cls(probe.path, probe.text, lines, script, config, named, schema)

    @property
    def keys(self) -> dict[str, dict[str, object]]:
        return fsdp2_keys(self.schema)

    @property
    def config(self) -> Mapping[str, object]:
        """What conditions read: the effective config; only the overrides when the YAML the
        command names cannot be read (every other key unknown)."""
        return self.overridden if self.yaml is not None else PartialConfig(self.overridden)

    @cached_property
    def problems(self) -> list[ConfigProblem]:
        return config_problems(self.overridden, self.schema)

    @property
    def cli_paths(self) -> set[str]:
        return {o.path for o in self.script.overrides}

    @property
    def policy_env(self) -> Mapping[str, str]:
        return self.script.env_view

    @property
    def launch(self) -> LaunchScript:
        return self.script

    def reports_config(self, paths: Sequence[str]) -> bool:
        # a config-only policy is reported on the YAML unless the command line sets the keys
        return bool(set(paths) & self.cli_paths)

    def flag_position(self, dotted: str) -> tuple[int, int]:
        start = self.script.command_line or 1
        end = self.script.command_end_line or start
        for i in range(start - 1, min(end, len(self.lines))):
            col = self.lines[i].find(f"--{dotted}")
            if col >= 0:
                return i + 1, col + 1
        return start, 1

    def config_position(self, dotted: str) -> tuple[int, int]:
        if dotted in self.cli_paths:
            return self.flag_position(dotted)
        return self.script.command_line or 1, 1

    def env_location(self, name: str) -> tuple[Path, int, int]:
        return export_location(self.path, self.script, name)

    def source_texts(self) -> Mapping[Path, str]:
        return self.script.texts

    def fix_changes(self, patches: Sequence[Patch]) -> list[FileChange]:
        return env_fix_changes(self.script, patches) if patches else []


@dataclass
class FSDP2ServingScript(FSDP2LaunchScript):
    """A launch script of FSDP2's inference program: read as any FSDP2 launch script, judged
    only by the rules that hold without a training schedule (rules name it
    `launch-inference`)."""

    dialect_id: ClassVar[str] = SERVING_ID
