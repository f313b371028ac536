"""The config dialects advisor reads, in the order a file is offered to them, and the one place
that turns a path into a document of its dialect.

A file is offered to each dialect in turn and the first that recognises it reads it: MindSpore
Transformers before FSDP2 (its YAML may share FSDP2's section names), Megatron before the FSDP2
launch script (both start a launcher; Megatron's flags are never dotted). A dialect is added by
its own package and one line here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.core.text import read_text
from advisor.dialects.base import Dialect, Document, JobConfig, Probe, plain_config
from advisor.dialects.fsdp2.dialect import FSDP2_CONFIG, FSDP2_LAUNCH, FSDP2_SERVING
from advisor.dialects.megatron.dialect import MEGATRON, MEGATRON_SERVING, script_command
from advisor.dialects.mindformers import MINDFORMERS, MINDFORMERS_INFERENCE
from advisor.dialects.programs import programs
from advisor.dialects.yaml_config import yaml_mapping
from advisor.model import InputError


@dataclass(frozen=True)
class Registry:
    """The dialects, in the order a file is offered to them."""

    dialects: tuple[Dialect[Any], ...]

    def of(self, dialect_id: str) -> Dialect[Any]:
        return next(d for d in self.dialects if d.id == dialect_id)

    def detect(self, probe: Probe) -> Dialect[Any] | None:
        if unsupported(probe) is not None:
            return None
        return next((d for d in self.dialects if d.detects(probe)), None)

    @property
    def suffixes(self) -> set[str]:
        return {s for d in self.dialects for s in d.suffixes}

    def default_for(self, framework: object) -> str:
        """The dialect of a job no config describes, from the framework its profile ran."""
        named = [d for d in self.dialects if framework in d.default_for]
        fallback = [d for d in self.dialects if "*" in d.default_for]
        return (named or fallback)[0].id

    def runs_framework(self, dialect_id: str, framework: object) -> bool | None:
        """Whether a job of this dialect can have run a profile of this framework: False when
        the dialect names the frameworks it runs and this is not one, or another dialect claims
        it; None when nothing says (the fallback dialect, an unrecorded framework)."""
        if not isinstance(framework, str):
            return None
        dialect = self.of(dialect_id)
        named = [f for f in dialect.default_for if f != "*"]
        if framework in named:
            return True
        if named:
            return False
        others = [d for d in self.dialects if d.id != dialect_id and framework in d.default_for]
        return False if others else None

    def unknown(self, probe: Probe) -> InputError:
        """Why a file is no config of any dialect (a YAML: which keys it has instead)."""
        hints = [d.keys_hint for d in self.dialects if d.keys_hint]
        if probe.is_yaml and hints:
            _, data = yaml_mapping(probe)  # a YAML that is not a mapping is refused here
            keys = ", ".join(str(k) for k in list(data)[:6])
            return InputError(
                str(probe.path),
                f"not a training config: its top-level keys ({keys}) are neither "
                + " nor ".join(hints),
            )
        return InputError(
            str(probe.path),
            "not a training config advisor knows ("
            + ", ".join(d.label for d in self.dialects if d.not_a_config is None)
            + ")",
        )


def unsupported(probe: Probe) -> str | None:
    """Why a file of a repository advisor does not support yet is not checked (None: it is
    not one): a launcher starting one of its programs, a YAML with its own keys."""
    known = programs()
    if probe.is_shell:
        command = script_command(probe)
        field = command.reading.program_field if command is not None else None
        if field is None:
            return None
        found = known.unsupported_program(field.text)
        if found is not None:
            return f"a {found.label} script ({field.text.rsplit('/', 1)[-1]}): not supported yet"
        return None
    try:
        data = probe.mapping if probe.is_yaml else None
    except InputError:
        return None
    found = known.unsupported_config(data) if data else None
    return f"a {found.label} config: not supported yet" if found is not None else None


_registry = Registry(
    (
        MINDFORMERS_INFERENCE,
        MINDFORMERS,
        FSDP2_CONFIG,
        MEGATRON_SERVING,
        MEGATRON,
        FSDP2_SERVING,
        FSDP2_LAUNCH,
    )
)


def registry() -> Registry:
    return _registry


@contextmanager
def registered(dialect: Dialect[Any]) -> Iterator[Registry]:
    """A dialect added for the duration (first in the order), e.g. by a test or an extension."""
    global _registry
    before = _registry
    _registry = Registry((dialect, *before.dialects))
    try:
        yield _registry
    finally:
        _registry = before


class _Labels(Mapping[str, str]):
    """dialect id -> how people call it, for every registered dialect."""

    def __getitem__(self, dialect_id: str) -> str:
        for dialect in registry().dialects:
            if dialect.id == dialect_id:
                return dialect.label
        raise KeyError(dialect_id)

    def __iter__(self) -> Iterator[str]:
        return iter([d.id for d in registry().dialects])

    def __len__(self) -> int:
        return len(registry().dialects)


LABELS: Mapping[str, str] = _Labels()


def probe(path: Path, root: Path | None = None) -> Probe:
    return Probe(path, read_text(path), root)


def document_dialect(path: Path) -> str | None:
    """The file's dialect (None: not a training config or launch script)."""
    found = registry().detect(probe(path))
    return found.id if found is not None else None


def read_checked(path: Path, root: Path | None = None) -> tuple[Document | None, str | None]:
    """The file as its dialect, or None with why it is skipped when it is a file advisor
    recognises but does not support yet (None, None: no training file)."""
    looked = probe(path, root)
    why = unsupported(looked)
    if why is not None:
        return None, why
    found = registry().detect(looked)
    return (found.load(looked) if found is not None else None), None


def read_document(path: Path, root: Path | None = None) -> Document | None:
    """The file as the dialect its content shows; None when no dialect recognises it. Paths
    its scripts name are found from `root` (the folder they run from)."""
    looked = probe(path, root)
    found = registry().detect(looked)
    return found.load(looked) if found is not None else None


def load_document(path: Path) -> Document:
    """The file as the dialect its content shows; refused with the reason when none does."""
    looked = probe(path)
    found = registry().detect(looked)
    if found is None:
        raise registry().unknown(looked)
    return found.load(looked)  # type: ignore[no-any-return]


def load_job_config(path: Path) -> JobConfig:
    """The config of a job (`suggest`, `report`...): a file that is no config is refused."""
    looked = probe(path)
    found = registry().detect(looked)
    if found is None:
        raise registry().unknown(looked)
    if found.not_a_config is not None:
        raise InputError(str(path), found.not_a_config)
    doc = found.load(looked)
    if not isinstance(doc, JobConfig):
        raise InputError(str(path), f"a {found.label} cannot be a job's config")
    return doc


def load_config_values(path: Path) -> dict[str, Any]:
    """The config a file states, as plain data, whatever its dialect."""
    return plain_config(load_document(path).config) or {}
