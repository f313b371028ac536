"""The Megatron-backend dialect as the registry knows it: a shell script whose training command
takes Megatron's flags (never dotted, as FSDP2's overrides are), and its structural checks."""

from __future__ import annotations

from advisor.dialects.base import SHELL_SUFFIXES, Dialect, Probe
from advisor.dialects.megatron.checks import MEGATRON_CHECKS
from advisor.dialects.megatron.document import (
    MegatronDocument,
    MegatronServingDocument,
    training_command,
)
from advisor.dialects.programs import programs


def _detects(probe: Probe) -> bool:
    """A training program of MindSpeed-LLM's Megatron backend (PyTorch or MindSpore), or an
    unknown program taking Megatron's core flags (never dotted, as FSDP2's overrides are)."""
    command = training_command(probe)
    if command is None or command.program is None:
        return False
    known = programs()
    if command.program in known.megatron_training:
        return True
    if command.program in known.known:
        return False
    flags = {o.flag for o in command.args.occurrences}
    return bool(flags & known.megatron_core_flags) and not any("." in f for f in flags)


def _serves(probe: Probe) -> bool:
    """An inference or evaluation program of the Megatron backend: no training schedule."""
    command = training_command(probe)
    return command is not None and command.program in programs().megatron_serving


MEGATRON: Dialect[MegatronDocument] = Dialect(
    id=MegatronDocument.dialect_id,
    label="MindSpeed-LLM Megatron-backend script",
    suffixes=SHELL_SUFFIXES,
    detects=_detects,
    load=MegatronDocument.load,
    checks=MEGATRON_CHECKS,
)

MEGATRON_SERVING: Dialect[MegatronServingDocument] = Dialect(
    id=MegatronServingDocument.dialect_id,
    label="MindSpeed-LLM Megatron-backend inference or evaluation script",
    suffixes=SHELL_SUFFIXES,
    detects=_serves,
    load=MegatronServingDocument.load,
    checks=MEGATRON_CHECKS,
    not_a_config="is an inference or evaluation script: no training job to tune",
)
