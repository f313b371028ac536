"""Which kind of training file a path is, from its content (not only its name).

- `fsdp2-config`: MindSpeed-LLM FSDP2 YAML (top-level sections model/data/parallel/training/...)
- `mindformers-config`: MindSpore Transformers YAML (parallel_config, runner_config, ...)
- `megatron-script`: a MindSpeed-LLM Megatron-backend launch script (the script is the config)
- `launch-script`: an FSDP2 launch script (`torchrun ... train.py config.yaml --section.key v`)
- None: anything else (a CI workflow, a pre-commit config, a sourced env file...)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from advisor.model import InputError

FSDP2 = "fsdp2-config"
MINDFORMERS = "mindformers-config"
MEGATRON = "megatron-script"
LAUNCH = "launch-script"
DIALECTS = (FSDP2, MINDFORMERS, MEGATRON, LAUNCH)
LABELS = {
    FSDP2: "MindSpeed-LLM FSDP2 config",
    MINDFORMERS: "MindSpore Transformers config",
    MEGATRON: "MindSpeed-LLM Megatron-backend script",
    LAUNCH: "FSDP2 launch script",
}

_YAML_SUFFIXES = {".yaml", ".yml"}
_SHELL_SUFFIXES = {".sh", ".bash"}
# top-level keys that only MindSpore Transformers configs have
_MINDFORMERS_KEYS = {"parallel_config", "runner_config", "recompute_config", "runner_wrapper"}


def yaml_dialect(data: Any) -> str | None:
    if not isinstance(data, dict) or not data:
        return None
    keys = {str(k) for k in data}
    if keys & _MINDFORMERS_KEYS:
        return MINDFORMERS
    from advisor.inputs.configs import fsdp2_keys

    sections = set(fsdp2_keys())
    # an FSDP2 config is mostly its own sections; CI and tool YAML share none of them
    if keys & sections and len(keys & sections) * 2 >= len(keys):
        return FSDP2
    return None


def is_shell(path: Path, text: str) -> bool:
    if path.suffix in _SHELL_SUFFIXES:
        return True
    first = text.split("\n", 1)[0]
    return first.startswith("#!") and any(s in first for s in ("sh", "bash"))


def script_dialect(path: Path, text: str) -> str | None:
    """megatron-script, launch-script or None for a shell script's text."""
    from advisor.inputs.megatron import read_megatron

    try:
        script = read_megatron(path, text)
    except InputError:
        return None  # no training command (an env file) or not shell bash can read
    # FSDP2 overrides are dotted (--training.key); Megatron flags never are
    if script.args.occurrences and not any("." in o.flag for o in script.args.occurrences):
        return MEGATRON
    return LAUNCH


def detect(path: Path, text: str) -> str | None:
    """The dialect of a file's text; a YAML file that does not parse is an error, not "other"."""
    if path.suffix in _YAML_SUFFIXES:
        from advisor.inputs.yamlio import locate

        return yaml_dialect(locate(text.replace("\r\n", "\n"), str(path)).data)
    if is_shell(path, text):
        return script_dialect(path, text)
    return None
