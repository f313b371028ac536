"""A Megatron-backend script as a document: the script is its own config (`args.<flag>` and the
derived `layout.*`) and its own launch script (the environment it exports). Positions are the
flags' characters; a change is an edit of the arguments where each value is written."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Self

from advisor.dialects.base import Probe, export_location, split_lines
from advisor.dialects.megatron import SCRIPT_ID, SERVING_ID
from advisor.dialects.megatron.edit import megatron_changes
from advisor.dialects.megatron.layout import Layout, layout_of
from advisor.dialects.megatron.script import MegatronScript, read_megatron
from advisor.edit.patch import env_fix_changes, place_env
from advisor.model import FileChange, InputError, Patch, PatchTarget
from advisor.shell.launch import LaunchScript, parse_launch

# the flag a derived `layout.<name>` finding points at
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


def _read(probe: Probe) -> MegatronScript | None:
    try:
        return read_megatron(probe.path, probe.text)
    except InputError:
        return None  # no training command (an env file) or not shell bash can read


def training_command(probe: Probe) -> MegatronScript | None:
    """The launcher command's arguments as bash and argparse give them (read once per file)."""
    return probe.reading("training-command", _read) if probe.is_shell else None


@dataclass
class MegatronDocument:
    dialect_id: ClassVar[str] = SCRIPT_ID

    path: Path
    text: str
    lines: list[str]
    script: LaunchScript  # the environment it exports, for env edits and policies
    megatron: MegatronScript  # its training arguments
    layout: Layout  # and their parallel arithmetic

    @classmethod
    def load(cls, probe: Probe) -> Self:
        megatron = training_command(probe) or read_megatron(probe.path, probe.text)
        layout = layout_of(megatron.args, megatron.world_size)
        script = parse_launch(probe.path, probe.root, megatron.reading)
        return cls(probe.path, probe.text, split_lines(probe.text), script, megatron, layout)

    @property
    def config(self) -> dict[str, Any]:
        return {"args": self.megatron.args, "layout": self.layout.as_config()}

    @property
    def data(self) -> dict[str, Any]:
        return self.config

    @property
    def policy_env(self) -> Mapping[str, str]:
        return self.script.env_view

    @property
    def launch(self) -> LaunchScript:
        return self.script

    def reports_config(self, paths: Sequence[str]) -> bool:
        return True

    def config_position(self, dotted: str) -> tuple[int, int]:
        section, _, key = dotted.partition(".")
        return megatron_flag_position(
            self, key if section == "args" else _LAYOUT_FLAGS.get(key, key)
        )

    def env_location(self, name: str) -> tuple[Path, int, int]:
        return export_location(self.path, self.script, name)

    def source_texts(self) -> Mapping[Path, str]:
        return self.script.texts

    def effective(self, launch: LaunchScript | None) -> dict[str, object]:
        return dict(self.config)

    def job_launch(self, given: LaunchScript | None) -> LaunchScript:
        if given is not None and given.path.resolve() != self.path.resolve():
            raise InputError(
                str(given.path),
                "a Megatron-backend script is its own launch script: give it once, as the config",
            )
        return self.script

    def check_ready(self, launch: LaunchScript | None, effective: dict[str, object]) -> None:
        # the arguments' own problems are `advisor check`'s; broken arithmetic stops a change
        if self.layout.problems:
            flag, message = self.layout.problems[0]
            raise InputError(str(self.path), f"{message} (--{flag}): fix the parallel sizes first")

    def check_same_job(self, world_size: int, launch: LaunchScript | None) -> None:
        started = self.megatron.world_size
        if started is not None and started != world_size:
            raise InputError(
                str(self.path),
                f"the script starts {started} processes (--nnodes x --nproc_per_node) but the "
                f"profile ran with world size {world_size}: not the same job",
            )

    def place(self, patch: Patch, launch: LaunchScript | None) -> Patch:
        if patch.target is PatchTarget.env:
            return place_env(patch, launch)
        after, notes = megatron_changes(self.megatron, self.layout, patch.ops)
        changes = (FileChange(str(self.path), self.text, after),) if after != self.text else ()
        return dataclasses.replace(patch, file=str(self.path), changes=changes, notes=notes)

    def fix_changes(self, patches: Sequence[Patch]) -> list[FileChange]:
        return env_fix_changes(self.script, patches) if patches else []


def megatron_flag_position(doc: MegatronDocument, flag: str) -> tuple[int, int]:
    """Where the last occurrence of a flag is written (the command line when it is absent)."""
    script = doc.megatron
    occurrence = script.args.last(flag)
    pos = occurrence.flag_field.chars[0].pos if occurrence and occurrence.flag_field.chars else None
    if pos is None:
        return script.command_line or 1, 1
    line_start = script.text.rfind("\n", 0, pos) + 1
    return script.text.count("\n", 0, pos) + 1, pos - line_start + 1


@dataclass
class MegatronServingDocument(MegatronDocument):
    """A Megatron-backend script running inference or evaluation (inference.py,
    evaluation.py): read as any Megatron script, judged only by the rules that hold without a
    training schedule (rules name it `megatron-inference`)."""

    dialect_id: ClassVar[str] = SERVING_ID
