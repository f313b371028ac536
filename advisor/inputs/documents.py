"""The documents `check` and `suggest` read: FSDP2 / MindFormers configs, Megatron-backend
scripts and FSDP2 launch scripts, with the positions of the keys, flags and variables findings
are about."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.inputs import dialect
from advisor.inputs.configs import ConfigProblem
from advisor.inputs.launch import LaunchScript, effective_config, parse_launch
from advisor.inputs.megatron import MegatronArgs, MegatronScript, read_megatron
from advisor.inputs.megatron_layout import Layout, layout_of
from advisor.inputs.text import read_text
from advisor.inputs.yamlio import LocatedDocument, locate
from advisor.model import InputError


@dataclass
class Document:
    path: Path
    kind: str  # one of dialect.DIALECTS
    lines: list[str]  # LF-normalised, for positions and waivers
    text: str  # exactly as read: edits start from it and the writer compares against it
    located: LocatedDocument | None = None
    script: LaunchScript | None = None
    config: dict[str, Any] | None = None
    env: dict[str, str] | None = None
    problems: list[ConfigProblem] | None = None  # schema problems, computed once
    megatron: MegatronScript | None = None  # a Megatron-backend script's arguments
    layout: Layout | None = None  # and its parallel arithmetic

    @property
    def data(self) -> dict[str, Any]:
        """The YAML's own data (a script's: the config it names, with its overrides)."""
        return self.located.data if self.located is not None else dict(self.config or {})


def load_config_document(path: Path) -> Document:
    text = read_text(path)
    located = locate(text.replace("\r\n", "\n"), str(path))
    if not isinstance(located.data, dict):
        kind = "empty" if located.data is None else type(located.data).__name__
        raise InputError(str(path), f"a training config must be a YAML mapping, got {kind}")
    kind = "mindformers-config" if is_mindformers(located.data) else "fsdp2-config"
    lines = text.replace("\r\n", "\n").split("\n")
    return Document(path, kind, lines, text, located, config=located.data)


def is_mindformers(data: dict[str, Any]) -> bool:
    """MindSpore Transformers configs have parallel_config / runner_config at the top level."""
    return "parallel_config" in data or "runner_config" in data


def load_megatron_document(path: Path) -> Document:
    """A Megatron-backend script is its own config: `args.<flag>` and the derived `layout.*`."""
    text = read_text(path)
    megatron = read_megatron(path, text)
    layout = layout_of(megatron.args, megatron.world_size)
    script = parse_launch(path)  # the environment it exports, for env edits and policies
    lines = text.replace("\r\n", "\n").split("\n")
    config: dict[str, Any] = {"args": megatron.args, "layout": layout.as_config()}
    return Document(
        path,
        dialect.MEGATRON,
        lines,
        text,
        script=script,
        config=config,
        env=script.env,
        megatron=megatron,
        layout=layout,
    )


def plain_config(config: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A config as plain JSON data (a Megatron script's arguments with unknown ones marked)."""
    if config is None:
        return None
    out: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, MegatronArgs):
            out[key] = value.known_values()
        elif isinstance(value, Mapping):
            out[key] = plain_config(value)
        else:
            out[key] = value
    return out


def load_config_values(path: Path) -> dict[str, Any]:
    """The config a file states, as plain data, whatever its dialect."""
    return plain_config(load_document(path).config) or {}


def document_kind(path: Path) -> str | None:
    """The file's dialect (None: not a training config or launch script)."""
    return dialect.detect(path, read_text(path))


def load_document(path: Path, kind: str | None = None) -> Document:
    """Load a file as the dialect its content shows (or `kind` when already known)."""
    kind = kind or document_kind(path)
    if kind == dialect.MEGATRON:
        return load_megatron_document(path)
    if kind == dialect.LAUNCH:
        return load_script_document(path)
    if kind in (dialect.FSDP2, dialect.MINDFORMERS) or path.suffix in (".yaml", ".yml"):
        doc = load_config_document(path)  # a YAML that is not a mapping is refused here
        if kind is None:
            keys = ", ".join(str(k) for k in list(doc.data)[:6])
            raise InputError(
                str(path),
                f"not a training config: its top-level keys ({keys}) are neither FSDP2 "
                "sections (model, data, parallel, training, optimization) nor MindSpore "
                "Transformers ones (parallel_config, runner_config, ...)",
            )
        return doc
    raise InputError(
        str(path),
        "not a training config advisor knows (FSDP2 or MindSpore Transformers YAML, or a "
        "Megatron-backend launch script)",
    )


def load_script_document(path: Path) -> Document:
    script = parse_launch(path)
    config: dict[str, Any] = {}
    if script.config_arg:
        for base in (path.parent, Path.cwd()):
            candidate = base / script.config_arg
            if candidate.is_file():
                loaded = locate(read_text(candidate), str(candidate)).data
                config = loaded if isinstance(loaded, dict) else {}
                break
    text = read_text(path)
    lines = text.replace("\r\n", "\n").split("\n")
    return Document(
        path,
        "launch-script",
        lines,
        text,
        script=script,
        config=effective_config(config, script),
        env=script.env,
    )


# ---------------------------------------------------------------- where a key, flag or variable is


def _scan_position(lines: list[str], section: str, key: str) -> tuple[int, int] | None:
    """Block-style YAML: the `section:` line at column 0, then its `  key:` line. No parse."""
    head = re.compile(rf"^{re.escape(section)}\s*:")
    entry = re.compile(rf"^(\s+){re.escape(key)}\s*:") if key else None
    for i, line in enumerate(lines):
        if head.match(line):
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


_LAYOUT_FLAGS = {
    "tp": "tensor-model-parallel-size",
    "pp": "pipeline-model-parallel-size",
    "cp": "context-parallel-size",
    "ep": "expert-model-parallel-size",
    "etp": "expert-tensor-parallel-size",
    "dp": "tensor-model-parallel-size",
    "expert_dp": "expert-model-parallel-size",
    "layers": "num-layers",
    "vpp_chunks": "num-layers-per-virtual-pipeline-stage",
    "micro_batch_size": "micro-batch-size",
    "global_batch_size": "global-batch-size",
    "micro_batches": "global-batch-size",
    "bubble_ratio": "pipeline-model-parallel-size",
}


def megatron_flag_position(doc: Document, flag: str) -> tuple[int, int]:
    """Where the last occurrence of a flag is written (the command line when it is absent)."""
    script = doc.megatron
    assert script is not None
    occurrence = script.args.last(flag)
    pos = occurrence.flag_field.chars[0].pos if occurrence and occurrence.flag_field.chars else None
    if pos is None:
        return script.command_line or 1, 1
    line_start = script.text.rfind("\n", 0, pos) + 1
    return script.text.count("\n", 0, pos) + 1, pos - line_start + 1


def config_position(doc: Document, dotted: str) -> tuple[int, int]:
    if doc.megatron is not None:
        section, _, key = dotted.partition(".")
        flag = key if section == "args" else _LAYOUT_FLAGS.get(key, key)
        return megatron_flag_position(doc, flag)
    if doc.located is not None:
        section, _, key = dotted.partition(".")
        quick = _scan_position(doc.lines, section, key)
        if quick is not None:
            return quick
        section, _, key = dotted.partition(".")
        entry = doc.located.entry(section, key) if key else doc.located.entry(section)
        if entry is None and key:
            entry = doc.located.entry(section)
        if entry is not None:
            return entry.key_line + 1, entry.key_col + 1
    if doc.script is not None:
        for override in doc.script.overrides:
            if override.path == dotted:
                return flag_position(doc, dotted)
        return doc.script.command_line or 1, 1
    return 1, 1


def flag_position(doc: Document, dotted: str) -> tuple[int, int]:
    start = (doc.script.command_line or 1) if doc.script else 1
    end = (doc.script.command_end_line or start) if doc.script else start
    for i in range(start - 1, min(end, len(doc.lines))):
        col = doc.lines[i].find(f"--{dotted}")
        if col >= 0:
            return i + 1, col + 1
    return start, 1


def _as_given(given: Path, found: Path) -> Path:
    """A sourced file's path in the form the checked file was named (relative stays relative)."""
    if given.is_absolute() or not found.is_absolute():
        return found
    try:
        return found.relative_to(Path.cwd().resolve())
    except ValueError:
        return found


def env_location(doc: Document, name: str) -> tuple[Path, int, int]:
    """The file and line that set a variable the command sees (a sourced env file's export
    too); the command line when the script does not set it."""
    if doc.script is not None:
        for export in reversed(doc.script.exports):
            if export.name == name and name in doc.script.env:
                return _as_given(doc.path, export.path), export.line, 1
        return doc.path, doc.script.command_line or 1, 1
    return doc.path, 1, 1


def env_position(doc: Document, name: str) -> tuple[int, int]:
    if doc.script is not None:
        for export in reversed(doc.script.exports):
            if export.name == name and export.path == doc.path:
                return export.line, 1
        return doc.script.command_line or 1, 1
    return 1, 1
