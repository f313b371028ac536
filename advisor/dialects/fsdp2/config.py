"""The FSDP2 YAML config as a document: schema problems computed once, the sanity gate before a
change is suggested, and the sharding size against the profile's world size."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, ClassVar

from advisor.dialects.base import ConfigProblem, Probe
from advisor.dialects.fsdp2.repository_schema import KeySchema, repository_schema
from advisor.dialects.fsdp2.schema import config_problems, fsdp2_keys, fsdp_size
from advisor.dialects.yaml_config import YamlConfig
from advisor.model import InputError
from advisor.shell.overrides import effective_config

if TYPE_CHECKING:
    # annotations only: the shell reader's import is paid when a script is read, never by a
    # check of a YAML config
    from advisor.shell.launch import LaunchScript


def detects(probe: Probe) -> bool:
    """An FSDP2 config is mostly its own sections; CI and tool YAML share none of them."""
    data = probe.mapping if probe.is_yaml else None
    if not data:
        return False
    keys = {str(k) for k in data}
    mine = keys & set(fsdp2_keys())
    return bool(mine) and len(mine) * 2 >= len(keys)


@dataclass
class FSDP2Config(YamlConfig):
    """A MindSpeed-LLM FSDP2 YAML config, judged against its repository's key schema when it has one."""

    dialect_id: ClassVar[str] = "fsdp2-config"
    # the key schema of the repository the file is in (its own argument dataclasses; None:
    # the bundled schema)
    schema: KeySchema | None = field(default=None, compare=False)

    @classmethod
    def load(cls, probe: Probe) -> FSDP2Config:
        base = YamlConfig.read(probe)
        schema = repository_schema(probe.root)
        return cls(base.path, base.text, base.lines, base.located, schema)

    @property
    def keys(self) -> dict[str, dict[str, object]]:
        return fsdp2_keys(self.schema)

    def effective(self, launch: LaunchScript | None) -> dict[str, object]:
        return effective_config(self.data, launch, self.keys)

    @cached_property
    def problems(self) -> list[ConfigProblem]:
        return config_problems(self.data, self.schema)

    def schema_problems(self, config: Mapping[str, object]) -> Sequence[object]:
        return config_problems(config, self.schema)

    def check_ready(self, launch: LaunchScript | None, effective: dict[str, object]) -> None:
        if self.problems:
            more = f" (and {len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
            raise InputError(
                str(self.path),
                f"fails the FSDP2 config schema: {self.problems[0]}{more}; fix it first "
                f"(advisor check {self.path} lists every problem, --fix moves misplaced keys)",
            )
        cli_problems = config_problems(effective, self.schema)
        if cli_problems and launch is not None:
            raise InputError(
                str(launch.path), f"a command-line override is invalid: {cli_problems[0]}"
            )

    def check_same_job(self, world_size: int, launch: LaunchScript | None) -> None:
        fsdp = fsdp_size(self.effective(launch))
        if fsdp is not None and fsdp not in (1, world_size):
            raise InputError(
                str(self.path),
                f"parallel.fsdp_size is {fsdp} but the profile ran with world size {world_size}: "
                "the profile and the config are not the same job",
            )
        started = launch.world_size if launch is not None else None
        if launch is not None and started is not None and started != world_size:
            raise InputError(
                str(launch.path),
                f"the launch command starts {started} processes (nnodes x nproc_per_node) but "
                f"the profile ran with world size {world_size}",
            )
