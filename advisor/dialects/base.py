"""What every config dialect is: how it is recognised and read (`Dialect`), and what its
document offers the services (`Document`): the config conditions read, the environment the
training command sees, where a key or variable is written, the edits a change becomes, and the
checks that tell whether a profile and this config describe the same job.

A file is looked at once (`Probe`): its text, its YAML data or its training command are read
at most once whichever dialects ask.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar, cast, runtime_checkable

from advisor.core.yamlio import LocatedDocument, locate
from advisor.engine.rule_model import PolicyRule
from advisor.model import FileChange, Finding, Patch

if TYPE_CHECKING:
    # annotations only: the shell reader's import is paid when a script is read, never by a
    # check of a YAML config
    from advisor.shell.launch import LaunchScript

T = TypeVar("T")
_YAML_SUFFIXES = (".yaml", ".yml")
SHELL_SUFFIXES = (".sh", ".bash")


def split_lines(text: str) -> list[str]:
    """LF-normalised lines, for positions and waivers."""
    return text.replace("\r\n", "\n").split("\n")


@dataclass
class Probe:
    """One file as the registry looks at it: each reading is done on first use, then shared."""

    path: Path
    text: str
    # the folder the file's scripts run from: relative sourced and config paths are found there
    root: Path | None = None

    @property
    def is_yaml(self) -> bool:
        return self.path.suffix in _YAML_SUFFIXES

    @property
    def is_shell(self) -> bool:
        if self.is_yaml:
            return False
        if self.path.suffix in SHELL_SUFFIXES:
            return True
        first = self.text.split("\n", 1)[0]
        return first.startswith("#!") and any(s in first for s in ("sh", "bash"))

    @cached_property
    def located(self) -> LocatedDocument:
        """The YAML (a file that does not parse is an error, not "another dialect")."""
        return locate(self.text.replace("\r\n", "\n"), str(self.path))

    @property
    def mapping(self) -> dict[str, Any] | None:
        data = self.located.data
        return data if isinstance(data, dict) else None

    readings: dict[str, object] = field(default_factory=dict)

    def reading(self, name: str, read: Callable[[Probe], T]) -> T:
        """A dialect's own reading of the file, shared with the dialects asked after it."""
        if name not in self.readings:
            self.readings[name] = read(self)
        return cast(T, self.readings[name])


@dataclass(frozen=True)
class ConfigProblem:
    """One reason the backend would reject or silently ignore part of a config."""

    path: str  # dotted location, e.g. "optimization.indexer_loss_coeff"
    message: str
    moved_to: str | None = None  # the right location of a key that sits in the wrong section

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@runtime_checkable
class Document(Protocol):
    """A file read in its dialect: what `check` runs policies on and fixes."""

    dialect_id: ClassVar[str]  # what rules' `applies_to` and the JSON output name it

    @property
    def path(self) -> Path: ...
    @property
    def lines(self) -> list[str]: ...  # LF-normalised, for positions and waivers
    @property
    def text(self) -> str: ...  # exactly as read: edits start from it
    @property
    def config(self) -> Mapping[str, object] | None:
        """What `config:` conditions read (a script: the config it names, with overrides)."""

    @property
    def policy_env(self) -> Mapping[str, str] | None:
        """The environment `env:` conditions of policies read (None: the file sets none)."""

    @property
    def launch(self) -> LaunchScript | None:
        """The launch script this file is, when it is one (its exports, its command)."""

    def reports_config(self, paths: Sequence[str]) -> bool:
        """Whether a policy about these config keys is reported on this file."""

    def config_position(self, dotted: str) -> tuple[int, int]: ...
    def env_location(self, name: str) -> tuple[Path, int, int]: ...
    def source_texts(self) -> Mapping[Path, str]:
        """Every file read for this document (a script's sourced files), exactly as read."""

    def fix_changes(self, patches: Sequence[Patch]) -> list[FileChange]:
        """The edits of several fixes to this file, applied in order."""


@runtime_checkable
class JobConfig(Document, Protocol):
    """A document that can be a job's config (`suggest`, `report`, `compare`)."""

    def effective(self, launch: LaunchScript | None) -> dict[str, object]:
        """The config the job runs with, given the launch script named beside it."""

    def job_launch(self, given: LaunchScript | None) -> LaunchScript | None:
        """The launch script of the job (a script that is its own config refuses another)."""

    def check_ready(self, launch: LaunchScript | None, effective: dict[str, object]) -> None:
        """InputError when the config is not sound enough to suggest a change to."""

    def check_same_job(self, world_size: int, launch: LaunchScript | None) -> None:
        """InputError when the config cannot be the job a profile of `world_size` ranks ran."""

    def place(self, patch: Patch, launch: LaunchScript | None) -> Patch:
        """The patch with its file edits, where the effective value comes from."""


D = TypeVar("D", bound=Document)
Check = Callable[[PolicyRule, D], Iterator[Finding]]


@dataclass(frozen=True)
class Dialect(Generic[D]):
    """One way of configuring a training job: how its files are recognised and read, and the
    structural policy checks (by the `check` name rules give) that exist for it."""

    id: str  # what rules' `applies_to` and the JSON output name it
    label: str  # how people call it
    suffixes: tuple[str, ...]  # the files a folder walk looks at
    detects: Callable[[Probe], bool]
    load: Callable[[Probe], D]
    checks: Mapping[str, Check[D]] = field(default_factory=dict)
    # the profile's frameworks (profile.framework) whose jobs are this dialect when no config
    # is given; "*" for the fallback
    default_for: tuple[str, ...] = ()
    keys_hint: str | None = None  # a YAML dialect: its top-level keys, for "not a config"
    # why a file of this dialect is not accepted as the job's config (None: it is)
    not_a_config: str | None = None


@runtime_checkable
class KnownValues(Protocol):
    """A value whose parts may be unknown (a script's arguments): its comparable form."""

    def known_values(self) -> dict[str, object]: ...


def plain_config(config: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A config as plain JSON data (values with unknown parts as their known form)."""
    if config is None:
        return None
    out: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, KnownValues):
            out[key] = value.known_values()
        elif isinstance(value, Mapping):
            out[key] = plain_config(value)
        else:
            out[key] = value
    return out


# ---------------------------------------------------------------- positions shared by dialects


def yaml_position(lines: list[str], located: LocatedDocument, dotted: str) -> tuple[int, int]:
    """Where a dotted key of a YAML file is written (its section when the key is absent)."""
    section, _, key = dotted.partition(".")
    quick = _scan_position(lines, section, key)
    if quick is not None:
        return quick
    entry = located.entry(section, key) if key else located.entry(section)
    if entry is None and key:
        entry = located.entry(section)
    if entry is not None:
        return entry.key_line + 1, entry.key_col + 1
    return 1, 1


def _scan_position(lines: list[str], section: str, key: str) -> tuple[int, int] | None:
    """Block-style YAML: the `section:` line at column 0, then its `  key:` line. No parse."""
    head = re.compile(rf"^{re.escape(section)}\s*:")
    entry = re.compile(rf"^(\s+){re.escape(key)}\s*:") if key else None
    for i, line in enumerate(lines):
        if not head.match(line):
            continue
        if entry is None:
            return i + 1, 1
        for j in range(i + 1, len(lines)):
            text = lines[j]
            if text.strip() and not text[:1].isspace() and not text.lstrip().startswith("#"):
                break  # the next section
            m = entry.match(text)
            if m:
                return j + 1, len(m.group(1)) + 1
        return i + 1, 1
    return None


def _as_given(given: Path, found: Path) -> Path:
    """A sourced file's path in the form the checked file was named (relative stays relative)."""
    if given.is_absolute() or not found.is_absolute():
        return found
    try:
        return found.relative_to(Path.cwd().resolve())
    except ValueError:
        return found


def export_location(path: Path, script: LaunchScript, name: str) -> tuple[Path, int, int]:
    """The file and line that set a variable the command sees (a sourced env file's export
    too); the command line when the script does not set it."""
    for export in reversed(script.exports):
        if export.name == name and name in script.env:
            return _as_given(path, export.path), export.line, 1
    return path, script.command_line or 1, 1
