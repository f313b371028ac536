"""The two FSDP2 dialects as the registry knows them: how each is recognised and read, and the
structural checks that exist for it.

The launch scripts' reader (the shell reader, Megatron's argument model, the editors: ~30 ms
of imports) is imported by the functions that read a script, so a check of a YAML config, the
command pre-commit runs on every commit, never loads it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor.dialects.base import SHELL_SUFFIXES, Dialect, Probe
from advisor.dialects.fsdp2 import LAUNCH_ID, SERVING_ID, checks
from advisor.dialects.fsdp2.config import FSDP2Config, detects
from advisor.dialects.launch_checks import LAUNCH_CHECKS
from advisor.dialects.megatron.dialect import script_command
from advisor.dialects.programs import programs

if TYPE_CHECKING:
    from advisor.dialects.fsdp2.launch import FSDP2LaunchScript, FSDP2ServingScript

FSDP2_CONFIG: Dialect[FSDP2Config] = Dialect(
    id=FSDP2Config.dialect_id,
    label="MindSpeed-LLM FSDP2 config",
    suffixes=(".yaml", ".yml"),
    detects=detects,
    load=FSDP2Config.load,
    checks={
        "config-unknown-key": lambda r, d: checks.config_keys(r, d, invalid_values=False),
        "config-invalid-value": lambda r, d: checks.config_keys(r, d, invalid_values=True),
    },
    default_for=("*",),
    keys_hint="FSDP2 sections (model, data, parallel, training, optimization)",
)


def _is_launch(probe: Probe) -> bool:
    """A shell script whose launcher starts an FSDP2 program, or an unknown program taking
    `--section.key` overrides (the Megatron dialects, asked first, take theirs)."""
    command = script_command(probe)
    if command is None or command.program is None:
        return False
    known = programs()
    if command.program in known.fsdp2_serving:
        return False  # FSDP2_SERVING's
    if command.program in known.fsdp2_training:
        return True
    if command.program in known.known:
        return False
    return any("." in o.flag for o in command.args.occurrences)


def _load_launch(probe: Probe) -> FSDP2LaunchScript:
    from advisor.dialects.fsdp2.launch import FSDP2LaunchScript  # lazy: see the module doc

    return FSDP2LaunchScript.load(probe)


FSDP2_LAUNCH: Dialect[FSDP2LaunchScript] = Dialect(
    id=LAUNCH_ID,
    label="FSDP2 launch script",
    suffixes=SHELL_SUFFIXES,
    detects=_is_launch,
    load=_load_launch,
    checks={
        "config-invalid-value": checks.cli_values,
        "cli-bare-boolean-last": lambda r, d: checks.cli_flags(r, d, "bare-last"),
        "cli-abbreviated-flag": lambda r, d: checks.cli_flags(r, d, "abbreviated"),
        "cli-unknown-flag": lambda r, d: checks.cli_flags(r, d, "unknown"),
        "fsdp-size-world": checks.fsdp_world,
        **LAUNCH_CHECKS,
    },
    not_a_config="is an FSDP2 launch script: give it as --launch, with its YAML config",
)


def _serves(probe: Probe) -> bool:
    """A launcher starting FSDP2's inference program (its own `inference` section, no
    training schedule)."""
    command = script_command(probe)
    return command is not None and command.program in programs().fsdp2_serving


def _load_serving(probe: Probe) -> FSDP2ServingScript:
    from advisor.dialects.fsdp2.launch import FSDP2ServingScript  # lazy: see the module doc

    return FSDP2ServingScript.load(probe)


FSDP2_SERVING: Dialect[FSDP2ServingScript] = Dialect(
    id=SERVING_ID,
    label="FSDP2 inference launch script",
    suffixes=SHELL_SUFFIXES,
    detects=_serves,
    load=_load_serving,
    checks=LAUNCH_CHECKS,
    not_a_config="is an FSDP2 inference script: no training job to tune",
)
