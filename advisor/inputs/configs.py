"""The training config and launch script: YAML values, CLI overrides, exported environment.

The FSDP2 backend reads `torchrun ... train_fsdp2.py CONFIG.yaml --section.key value ...`; CLI
flags win over the YAML, and the environment is what the script exports (including files it
sources). The effective config is YAML < CLI overrides.
"""

from __future__ import annotations

import copy
import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from advisor.inputs.resources import schemas_dir
from advisor.inputs.validation import schema_violations
from advisor.inputs.yamlio import load_data
from advisor.model import InputError

_EXPORT = re.compile(r"^\s*export\s+([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
_SOURCE = re.compile(r"^\s*(?:source|\.)\s+(.+?)\s*$")
# `source "$(dirname "$0")/env.sh"` and friends: the script's own folder
_SCRIPT_DIR = re.compile(
    r'^\$\(\s*dirname\s+"?\$(?:0|\{0\}|\{BASH_SOURCE\[0\]\}|BASH_SOURCE)"?\s*\)|^\$\{(?:0|BASH_SOURCE\[0\])%/\*\}'
)
_LAUNCHERS = ("torchrun", "torch.distributed.run", "torch.distributed.launch")
_BOOL_WORDS = {
    "true": True,
    "false": False,
    "yes": True,
    "no": False,
    "t": True,
    "f": False,
    "y": True,
    "n": False,
    "1": True,
    "0": False,
}


@dataclass(frozen=True)
class Export:
    name: str
    value: str
    path: Path
    line: int  # 1-based


@dataclass(frozen=True)
class Override:
    path: str  # section.key
    value: str | None  # None: a bare flag with no value
    line: int
    token_index: int


@dataclass
class LaunchScript:
    path: Path
    exports: list[Export] = field(default_factory=list)
    overrides: list[Override] = field(default_factory=list)
    config_arg: str | None = None
    command_line: int | None = None
    command_end_line: int | None = None
    nnodes: int | None = None
    nproc_per_node: int | None = None

    @property
    def env(self) -> dict[str, str]:
        """Exported variables, later exports winning (as bash evaluates them)."""
        return {e.name: e.value for e in self.exports}

    @property
    def world_size(self) -> int | None:
        if self.nnodes is not None and self.nproc_per_node is not None:
            return self.nnodes * self.nproc_per_node
        return None


def load_config(path: Path) -> dict[str, Any]:
    data = load_data(path)
    if not isinstance(data, dict):
        kind = "empty" if data is None else type(data).__name__
        raise InputError(str(path), f"a training config must be a YAML mapping, got {kind}")
    return data


def _unquote(value: str) -> str:
    value = value.strip()
    if value.startswith("#"):
        return ""
    try:
        parts = shlex.split(value, comments=True)
    except ValueError:
        return value.strip("'\"")
    return parts[0] if parts else ""


def _logical_lines(text: str) -> list[tuple[int, int, str]]:
    """Join backslash continuations: (first physical line, last physical line, text), 1-based."""
    out: list[tuple[int, int, str]] = []
    buffer, start = "", 0
    number = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        if not buffer:
            start = number
        if raw.rstrip().endswith("\\"):
            buffer += raw.rstrip()[:-1] + " "
            continue
        out.append((start, number, buffer + raw))
        buffer = ""
    if buffer:
        out.append((start, number, buffer))
    return out


def _parse_command(script: LaunchScript, line: int, text: str) -> None:
    try:
        tokens = shlex.split(text, comments=True)
    except ValueError as exc:
        raise InputError(
            f"{script.path}:{line}", f"cannot parse the launch command: {exc}"
        ) from None
    script.command_line = line
    for i, token in enumerate(tokens):
        for flag, attr in (
            ("--nnodes", "nnodes"),
            ("--nproc_per_node", "nproc_per_node"),
            ("--nproc-per-node", "nproc_per_node"),
        ):
            value = None
            if token == flag and i + 1 < len(tokens):
                value = tokens[i + 1]
            elif token.startswith(flag + "="):
                value = token.split("=", 1)[1]
            if value is not None and value.isdigit():
                setattr(script, attr, int(value))
    script_index = next((i for i, t in enumerate(tokens) if t.endswith(".py")), None)
    if script_index is None:
        return
    rest = tokens[script_index + 1 :]
    if rest and not rest[0].startswith("-"):
        script.config_arg = rest[0]
        rest = rest[1:]
    i = 0
    while i < len(rest):
        token = rest[i]
        if token.startswith("--") and "." in token:
            key = token[2:]
            if "=" in key:
                key, value = key.split("=", 1)
                script.overrides.append(Override(key, value, line, i))
                i += 1
                continue
            if i + 1 < len(rest) and not rest[i + 1].startswith("--"):
                values = []
                j = i + 1
                while j < len(rest) and not rest[j].startswith("--"):
                    values.append(rest[j])
                    j += 1
                script.overrides.append(Override(key, " ".join(values), line, i))
                i = j
                continue
            script.overrides.append(Override(key, None, line, i))
        i += 1


def _read_exports(path: Path, script: LaunchScript, seen: set[Path]) -> None:
    if path in seen:
        return
    seen.add(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(str(path), f"cannot read: {exc.strerror}") from None
    for number, last, line in _logical_lines(text):
        m = _EXPORT.match(line)
        if m:
            script.exports.append(Export(m.group(1), _unquote(m.group(2)), path, number))
            continue
        s = _SOURCE.match(line)
        if s:
            argument = s.group(1).split(" #", 1)[0].strip()
            if argument[:1] in "\"'" and argument[-1:] == argument[:1]:
                argument = argument[1:-1]
            argument = _SCRIPT_DIR.sub(".", argument)
            if "$" in argument:
                raise InputError(
                    f"{path}:{number}",
                    f"cannot resolve the sourced path {s.group(1)} (variables other than the script's folder)",
                )
            target = (path.parent / argument).resolve()
            if not target.is_file():
                raise InputError(f"{path}:{number}", f"sourced file {s.group(1)} not found")
            _read_exports(target, script, seen)
            continue
        if path == script.path and any(launcher in line for launcher in _LAUNCHERS):
            _parse_command(script, number, line)
            script.command_end_line = last


def parse_launch(path: Path) -> LaunchScript:
    script = LaunchScript(path=path)
    _read_exports(path, script, set())
    if script.command_line is None:
        raise InputError(str(path), "no torchrun (torch.distributed.run) training command found")
    return script


def cli_value(text: str | None) -> Any:
    """Turn a CLI token into the value argparse would produce for the common key types."""
    if text is None:
        return None
    lowered = text.lower()
    if lowered in _BOOL_WORDS and not lowered.isdigit():
        return _BOOL_WORDS[lowered]
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def effective_config(config: Mapping[str, Any], launch: LaunchScript | None) -> dict[str, Any]:
    merged = copy.deepcopy(dict(config))
    if launch is None:
        return merged
    for override in launch.overrides:
        if override.value is None:
            continue  # a bare flag is not recognised as an override by the backend
        section, _, key = override.path.partition(".")
        node = merged.setdefault(section, {})
        if isinstance(node, dict):
            node[key] = cli_value(override.value)
    return merged


FSDP2_SCHEMA = "config/mindspeed-fsdp2.schema.json"


@dataclass(frozen=True)
class ConfigProblem:
    """One reason the FSDP2 backend would reject or silently ignore part of a config."""

    path: str  # dotted location, e.g. "optimization.indexer_loss_coeff"
    message: str
    moved_to: str | None = None  # the right location of a key that sits in the wrong section

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@cache
def fsdp2_keys() -> dict[str, dict[str, Any]]:
    """section -> key -> its schema (type description and default)."""
    schema = json.loads((schemas_dir() / FSDP2_SCHEMA).read_text(encoding="utf-8"))
    return {s: dict(body["properties"]) for s, body in schema["properties"].items()}


def _homes(key: str) -> list[str]:
    return [section for section, keys in fsdp2_keys().items() if key in keys]


def config_problems(data: Any) -> list[ConfigProblem]:
    """Schema problems of an FSDP2 config, explained in the backend's terms."""
    keys = fsdp2_keys()
    problems: list[ConfigProblem] = []
    for v in schema_violations(data, FSDP2_SCHEMA):
        where = ".".join(str(p) for p in v.path)
        if v.validator == "additionalProperties" and isinstance(v.instance, dict):
            section = str(v.path[0]) if v.path else None
            allowed = set(keys) if section is None else set(keys.get(section, {}))
            for key in sorted(k for k in v.instance if k not in allowed):
                if section is None:
                    problems.append(
                        ConfigProblem(
                            str(key),
                            f"unknown section (the backend reads only {', '.join(keys)})",
                        )
                    )
                    continue
                homes = _homes(str(key))
                if homes:
                    problems.append(
                        ConfigProblem(
                            f"{section}.{key}",
                            f"not a key of {section}, so the backend silently ignores it; it belongs in {homes[0]}",
                            f"{homes[0]}.{key}",
                        )
                    )
                else:
                    problems.append(
                        ConfigProblem(
                            f"{section}.{key}",
                            f"unknown key: {section} has no '{key}', the backend silently ignores it",
                        )
                    )
        elif len(v.path) == 2 and str(v.path[0]) in keys and str(v.path[1]) in keys[str(v.path[0])]:
            spec = keys[str(v.path[0])][str(v.path[1])]
            problems.append(
                ConfigProblem(
                    where, f"{v.instance!r} is not a valid {spec.get('description', 'value')}"
                )
            )
        else:
            problems.append(ConfigProblem(where or "(top level)", v.message))
    return problems
