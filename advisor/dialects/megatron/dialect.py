"""The Megatron-backend dialect as the registry knows it: a shell script whose training command
takes Megatron's flags (never dotted, as FSDP2's overrides are), and its structural checks.

The script's reader (the shell reader, Megatron's argument model, the editors: ~30 ms of
imports) is imported by the functions that read a script, so a check of a YAML config, the
command pre-commit runs on every commit, never loads it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor.dialects.base import SHELL_SUFFIXES, Dialect, Probe
from advisor.dialects.megatron import SCRIPT_ID, SERVING_ID
from advisor.dialects.megatron.checks import MEGATRON_CHECKS
from advisor.dialects.programs import programs

if TYPE_CHECKING:
    from advisor.dialects.megatron.document import MegatronDocument, MegatronServingDocument
    from advisor.dialects.megatron.script import MegatronScript


def script_command(probe: Probe) -> MegatronScript | None:
    """The training command a shell script's launcher starts, as bash and argparse give its
    arguments (None: not a shell script, or no command); read once per file."""
    if not probe.is_shell:
        return None
    from advisor.dialects.megatron.document import training_command  # lazy: see the module doc

    return training_command(probe)


def _detects(probe: Probe) -> bool:
    """A training program of MindSpeed-LLM's Megatron backend (PyTorch or MindSpore), or an
    unknown program taking Megatron's core flags (never dotted, as FSDP2's overrides are)."""
    command = script_command(probe)
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
    command = script_command(probe)
    return command is not None and command.program in programs().megatron_serving


def _load(probe: Probe) -> MegatronDocument:
    from advisor.dialects.megatron.document import MegatronDocument  # lazy: see the module doc

    return MegatronDocument.load(probe)


def _load_serving(probe: Probe) -> MegatronServingDocument:
    from advisor.dialects.megatron.document import MegatronServingDocument  # lazy, as _load

    return MegatronServingDocument.load(probe)


MEGATRON: Dialect[MegatronDocument] = Dialect(
    id=SCRIPT_ID,
    label="MindSpeed-LLM Megatron-backend script",
    suffixes=SHELL_SUFFIXES,
    detects=_detects,
    load=_load,
    checks=MEGATRON_CHECKS,
)

MEGATRON_SERVING: Dialect[MegatronServingDocument] = Dialect(
    id=SERVING_ID,
    label="MindSpeed-LLM Megatron-backend inference or evaluation script",
    suffixes=SHELL_SUFFIXES,
    detects=_serves,
    load=_load_serving,
    checks=MEGATRON_CHECKS,
    not_a_config="is an inference or evaluation script: no training job to tune",
)
