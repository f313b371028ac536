"""Facts about Megatron-backend flags that are data, not rules: rules/megatron.yaml."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from advisor.core.checked_data import load_valid
from advisor.core.resources import rules_dir


@dataclass(frozen=True)
class MegatronFlags:
    checkpoint_layout: frozenset[str]
    converts_from_hf: str
    deprecated: dict[str, str]  # old spelling -> the flag to write
    synonyms: tuple[frozenset[str], ...]
    switches: frozenset[str]


@cache
def megatron_flags() -> MegatronFlags:
    path = rules_dir() / "megatron.yaml"
    raw = load_valid(path, "megatron.schema.json")
    return MegatronFlags(
        checkpoint_layout=frozenset(raw["checkpoint_layout"]),
        converts_from_hf=str(raw["converts_from_hf"]),
        deprecated={str(k): str(v) for k, v in raw["deprecated"].items()},
        synonyms=tuple(frozenset(group) for group in raw["synonyms"]),
        switches=frozenset(raw["switches"]),
    )
