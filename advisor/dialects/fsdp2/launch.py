"""The FSDP2 launch script as a document: the environment it exports (sourced files included),
the `--section.key value` overrides of its training command, and the config they make. It is
checked on its own; as a job's config it is refused (the YAML is the config, the script its
--launch)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import ClassVar

from advisor.core.text import read_text
from advisor.core.yamlio import locate
from advisor.dialects.base import ConfigProblem, Probe, export_location, split_lines
from advisor.dialects.fsdp2.schema import config_problems
from advisor.edit.patch import env_fix_changes
from advisor.model import FileChange, Patch
from advisor.shell.launch import LaunchScript, effective_config, parse_launch


def _named_config(script: LaunchScript) -> dict[str, object]:
    """The YAML the command names (beside the script, else from the working folder)."""
    if not script.config_arg:
        return {}
    for base in (script.path.parent, Path.cwd()):
        candidate = base / script.config_arg
        if candidate.is_file():
            loaded = locate(read_text(candidate), str(candidate)).data
            return loaded if isinstance(loaded, dict) else {}
    return {}


@dataclass
class FSDP2LaunchScript:
    dialect_id: ClassVar[str] = "launch-script"

    path: Path
    text: str
    lines: list[str]
    script: LaunchScript
    config: dict[str, object]  # the named YAML with the command's overrides

    @classmethod
    def load(cls, probe: Probe) -> FSDP2LaunchScript:
        script = parse_launch(probe.path)
        config = effective_config(_named_config(script), script)
        return cls(probe.path, probe.text, split_lines(probe.text), script, config)

    @cached_property
    def problems(self) -> list[ConfigProblem]:
        return config_problems(self.config)

    @property
    def cli_paths(self) -> set[str]:
        return {o.path for o in self.script.overrides}

    @property
    def policy_env(self) -> dict[str, str]:
        return self.script.env

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
