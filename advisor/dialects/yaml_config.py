"""What the YAML dialects share: a file whose own data is the config, positions from the YAML,
edits made in the YAML (or on the launch command's flag that overrides the key), each change
validated against the dialect's schema before it is proposed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.core.yamlio import LocatedDocument
from advisor.dialects.base import Probe, split_lines, yaml_position
from advisor.model import FileChange, InputError, Patch, PatchTarget
from advisor.shell.overrides import effective_config

if TYPE_CHECKING:
    # annotations only: the shell reader's import is paid when a script is read, never by a
    # check of a YAML config
    from advisor.shell.launch import LaunchScript


def yaml_mapping(probe: Probe) -> tuple[LocatedDocument, dict[str, Any]]:
    """The YAML of a config file; anything but a mapping is refused with what it is."""
    data = probe.located.data
    if not isinstance(data, dict):
        kind = "empty" if data is None else type(data).__name__
        raise InputError(str(probe.path), f"a training config must be a YAML mapping, got {kind}")
    return probe.located, data


@dataclass
class YamlConfig:
    """A YAML config file: its text, lines and located data."""

    path: Path
    text: str  # exactly as read: edits start from it and the writer compares against it
    lines: list[str]  # LF-normalised, for positions and waivers
    located: LocatedDocument

    @classmethod
    def read(cls, probe: Probe) -> YamlConfig:
        located, _ = yaml_mapping(probe)
        return cls(probe.path, probe.text, split_lines(probe.text), located)

    @property
    def data(self) -> dict[str, Any]:
        return self.located.data  # type: ignore[no-any-return]  # a mapping, checked on read

    @property
    def config(self) -> Mapping[str, object]:
        return self.data

    @property
    def policy_env(self) -> dict[str, str] | None:
        return None  # a YAML sets no environment

    @property
    def launch(self) -> LaunchScript | None:
        return None

    def reports_config(self, paths: Sequence[str]) -> bool:
        return True

    def config_position(self, dotted: str) -> tuple[int, int]:
        return yaml_position(self.lines, self.located, dotted)

    def env_location(self, name: str) -> tuple[Path, int, int]:
        return self.path, 1, 1

    def source_texts(self) -> Mapping[Path, str]:
        return {self.path: self.text}

    def effective(self, launch: LaunchScript | None) -> dict[str, object]:
        return effective_config(self.data, launch)

    def job_launch(self, given: LaunchScript | None) -> LaunchScript | None:
        return given

    def schema_problems(self, config: Mapping[str, object]) -> Sequence[object]:
        """The dialect's schema problems of a config (overridden by each YAML dialect)."""
        return ()

    def place(self, patch: Patch, launch: LaunchScript | None) -> Patch:
        # the editors (and the shell reader under them) load when a change is built: a check
        # without --fix never builds one
        from advisor.edit.patch import place_env, place_yaml

        if patch.target is PatchTarget.env:
            return place_env(patch, launch)
        return place_yaml(patch, self.path, self.text, launch, self.schema_problems)

    def fix_changes(self, patches: Sequence[Patch]) -> list[FileChange]:
        from advisor.edit.patch import yaml_fix_changes  # lazy, as in place()

        return yaml_fix_changes(self.path, self.text, patches) if patches else []
