"""What a run was launched with: the FSDP2 config, its command-line overrides, the environment.

The FSDP2 backend reads `train_fsdp2.py CONFIG.yaml --section.key value ...`: command-line values
win over the YAML, and keys the YAML leaves out take the backend's defaults. Only the keys the
simulated job responds to are kept, with the backend's default for each.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

# The FSDP2 backend's defaults (mindspeed_llm/fsdp2/utils/arguments.py) of the keys read here.
DEFAULTS: dict[str, Any] = {
    "model.model_id": None,
    "data.cutoff_len": 2048,
    "parallel.fsdp_size": 1,
    "parallel.recompute": False,
    "parallel.num_to_forward_prefetch": 1,
    "parallel.num_to_backward_prefetch": 1,
    "parallel.reduce_dtype": "fp32",
    "training.seed": 42,
    "training.max_steps": -1,
    "training.gradient_accumulation_steps": 1,
    "training.per_device_train_batch_size": 8,
    "training.lr": 1e-5,
    "training.logging_steps": 1,
    "training.log_throughput": False,
    "training.dataloader_num_workers": 0,
    "training.dataloader_prefetch_factor": None,
    "training.profile": False,
    "training.profile_step_start": 0,
    "training.profile_step_end": -1,
    "training.profile_ranks": [-1],
    "training.profile_level": "level0",
    "training.profile_with_cpu": False,
    "training.profile_with_memory": False,
    "training.profile_save_path": "./profile",
    "optimization.use_fused_rmsnorm": False,
    "optimization.use_fused_rotary_pos_emb": False,
    "optimization.moe_grouped_gemm": False,
    "optimization.use_flash_attn": False,
}

_TRUE = {"true", "yes", "t", "y", "1"}
_FALSE = {"false", "no", "f", "n", "0"}


class LaunchError(Exception):
    """A launch the backend would refuse at start-up (the message is what it prints)."""


@dataclass(frozen=True)
class Settings:
    """The effective config (dotted keys) and the environment of one run."""

    config: Mapping[str, Any]
    env: Mapping[str, str]
    run_dir: Path
    world_size: int

    def get(self, key: str) -> Any:
        return self.config.get(key, DEFAULTS.get(key))

    def flag(self, key: str) -> bool:
        return bool(self.get(key))

    def number(self, key: str) -> int:
        return int(self.get(key))

    def env_value(self, name: str, default: str = "") -> str:
        return self.env.get(name, default)


def _flatten(document: Mapping[str, Any]) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for section, body in document.items():
        if isinstance(body, Mapping):
            for key, value in body.items():
                flat[f"{section}.{key}"] = value
    return flat


def _typed(key: str, words: Sequence[str]) -> Any:
    """A command-line value read the way the backend's argparse types read it."""
    default = DEFAULTS.get(key)
    if isinstance(default, list):
        return [_scalar(word, None) for word in words]
    if len(words) != 1:
        raise LaunchError(f"--{key} expects one value, got {len(words)}")
    return _scalar(words[0], default)


def _scalar(word: str, default: Any) -> Any:
    lowered = word.lower()
    if isinstance(default, bool):
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise LaunchError(f"not a boolean: {word!r}")
    for kind in (int, float):
        try:
            return kind(word)
        except ValueError:
            continue
    return word


def overrides(args: Sequence[str]) -> dict[str, Any]:
    """`--section.key value [value ...]` and `--section.key=value` flags, in order (last wins)."""
    out: dict[str, Any] = {}
    index = 0
    while index < len(args):
        arg = args[index]
        if not arg.startswith("--"):
            raise LaunchError(f"unexpected argument {arg!r}")
        key, sep, inline = arg[2:].partition("=")
        index += 1
        words = [inline] if sep else []
        while not sep and index < len(args) and not args[index].startswith("--"):
            words.append(args[index])
            index += 1
        if not words:
            words = ["true"]  # a bare flag: argparse's const True
        out[key] = _typed(key, words)
    return out


def read_settings(argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> Settings:
    """The run's settings from `CONFIG.yaml [--section.key value ...]` and its environment."""
    if not argv:
        raise LaunchError("usage: train_fsdp2.py CONFIG.yaml [--section.key value ...]")
    config_path = cwd / argv[0]
    loaded = YAML(typ="safe").load(config_path.read_text(encoding="utf-8"))
    if not isinstance(loaded, Mapping):
        raise LaunchError(f"{config_path}: not a mapping of sections")
    config = _flatten(loaded)
    config.update(overrides(argv[1:]))
    world = int(env.get("WORLD_SIZE", "1"))
    settings = Settings(config=config, env=dict(env), run_dir=cwd, world_size=world)
    if settings.number("parallel.fsdp_size") != world:
        raise LaunchError(
            f"parallel.fsdp_size ({settings.number('parallel.fsdp_size')}) must equal the world "
            f"size ({world})"
        )
    return settings
