"""What a launch script's program is (rules/programs.yaml): a training or a serving program of
a dialect advisor checks, or one of a repository it does not support yet."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from advisor.core.checked_data import load_valid
from advisor.core.resources import rules_dir
from advisor.core.values import get_path


@dataclass(frozen=True)
class Unsupported:
    """A repository advisor does not support yet: its programs, folders and config keys."""

    label: str
    programs: frozenset[str]
    folders: tuple[str, ...]
    config_keys: tuple[str, ...]

    def runs(self, program_path: str) -> bool:
        name = program_path.rsplit("/", 1)[-1]
        path = program_path.lstrip("./")
        return name in self.programs or any(
            path.startswith(f) or f"/{f}" in program_path for f in self.folders
        )

    def configures(self, data: object) -> bool:
        return any(get_path(data, key) is not None for key in self.config_keys)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Programs:
    """The launchers' programs of rules/programs.yaml, by what they run."""

    megatron_training: frozenset[str]
    megatron_serving: frozenset[str]
    fsdp2_training: frozenset[str]
    fsdp2_serving: frozenset[str]
    megatron_core_flags: frozenset[str]
    unsupported: tuple[Unsupported, ...]

    @property
    def known(self) -> frozenset[str]:
        return (
            self.megatron_training
            | self.megatron_serving
            | self.fsdp2_training
            | self.fsdp2_serving
        )

    def unsupported_program(self, program_path: str) -> Unsupported | None:
        return next((u for u in self.unsupported if u.runs(program_path)), None)

    def unsupported_config(self, data: object) -> Unsupported | None:
        return next((u for u in self.unsupported if u.configures(data)), None)


@cache
def programs() -> Programs:
    path = rules_dir() / "programs.yaml"
    raw = load_valid(path, "programs.schema.json")
    return Programs(
        megatron_training=frozenset(raw["megatron_training"]),
        megatron_serving=frozenset(raw["megatron_serving"]),
        fsdp2_training=frozenset(raw["fsdp2_training"]),
        fsdp2_serving=frozenset(raw["fsdp2_serving"]),
        megatron_core_flags=frozenset(raw["megatron_core_flags"]),
        unsupported=tuple(
            Unsupported(
                str(u["label"]),
                frozenset(u["programs"]),
                tuple(u["folders"]),
                tuple(u["config_keys"]),
            )
            for u in raw["unsupported"]
        ),
    )
