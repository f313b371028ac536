"""The Megatron-backend dialect as the registry knows it: a shell script whose training command
takes Megatron's flags (never dotted, as FSDP2's overrides are), and its structural checks."""

from __future__ import annotations

from advisor.dialects.base import SHELL_SUFFIXES, Dialect, Probe
from advisor.dialects.megatron.checks import MEGATRON_CHECKS
from advisor.dialects.megatron.document import MegatronDocument, training_command


def _detects(probe: Probe) -> bool:
    command = training_command(probe)
    occurrences = command.args.occurrences if command is not None else []
    return bool(occurrences) and not any("." in o.flag for o in occurrences)


MEGATRON: Dialect[MegatronDocument] = Dialect(
    id=MegatronDocument.dialect_id,
    label="MindSpeed-LLM Megatron-backend script",
    suffixes=SHELL_SUFFIXES,
    detects=_detects,
    load=MegatronDocument.load,
    checks=MEGATRON_CHECKS,
)
