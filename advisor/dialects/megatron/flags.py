"""Facts about Megatron-backend flags that are data, not rules: rules/megatron.yaml."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from advisor.core.checked_data import load_valid
from advisor.core.resources import rules_dir


@dataclass(frozen=True)
class MegatronFlags:
    """What rules/megatron.yaml says of Megatron's flags: spellings, synonyms, switches."""

    checkpoint_layout: frozenset[str]
    converts_from_hf: str
    deprecated: dict[str, str]  # old spelling -> the flag to write
    synonyms: tuple[frozenset[str], ...]
    switches: frozenset[str]
    # a MindSpeed-LLM checkout's files declaring its flags (where a deprecation is checked)
    argument_sources: tuple[str, ...] = ()


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
        argument_sources=tuple(raw.get("argument_sources", ())),
    )


_MAX_SOURCE_BYTES = 2_000_000


def deprecated_in(root: Path | None) -> dict[str, str]:
    """The deprecated spellings that hold for the repository at `root`: in a MindSpeed-LLM
    checkout (it holds an argument source), those whose replacement its sources name; else
    (no checkout to read: a user's scripts) every one, as for the newest release."""
    flags = megatron_flags()
    if root is None:
        return flags.deprecated
    stamps = []
    for name in flags.argument_sources:
        path = root / name
        try:
            stat = path.stat()
        except OSError:
            continue
        stamps.append((str(path.resolve()), stat.st_mtime_ns, stat.st_size))
    return _declared(tuple(stamps)) if stamps else flags.deprecated


@cache
def _declared(sources: tuple[tuple[str, int, int], ...]) -> dict[str, str]:
    """Keyed on the files' times and sizes: an edited source is read again."""
    text = ""
    for path, _, size in sources:
        if size > _MAX_SOURCE_BYTES:
            continue
        try:
            text += Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
    renamed = megatron_flags().deprecated
    return {old: new for old, new in renamed.items() if f"--{new}" in text}
