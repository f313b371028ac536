"""A patch's ops as edits of a Megatron-backend script, with what the change means for the job:
the parallel arithmetic before and after, and whether the checkpoint must be re-converted."""

from __future__ import annotations

from collections.abc import Iterable

from advisor.dialects.megatron.flags import megatron_flags
from advisor.dialects.megatron.layout import Layout, layout_of
from advisor.dialects.megatron.script import MegatronScript, read_megatron
from advisor.dialects.megatron.text_editor import MegatronEditor
from advisor.model import InputError, PatchOp

_ARGS = "args."


def _flag(script: MegatronScript, op: PatchOp) -> str:
    if not op.path.startswith(_ARGS):
        raise InputError(
            str(script.path), f"{op.path} is derived from the arguments, not written: not edited"
        )
    return op.path[len(_ARGS) :]


def _layout_notes(before: Layout, after: Layout) -> list[str]:
    notes = []
    for name, label in (("dp", "data-parallel size"), ("micro_batches", "micro-batches per step")):
        old, new = getattr(before, name), getattr(after, name)
        if old != new:
            notes.append(f"{label}: {old} -> {new}")
    if before.bubble_ratio != after.bubble_ratio and after.bubble_ratio is not None:
        old = "unknown" if before.bubble_ratio is None else f"{before.bubble_ratio:.1%}"
        notes.append(f"expected pipeline bubble (p-1)/(v*m+p-1): {old} -> {after.bubble_ratio:.1%}")
    known = {message for _, message in before.problems}
    notes += [message for _, message in after.problems if message not in known]
    return notes


def megatron_changes(
    before: MegatronScript, layout_before: Layout, ops: Iterable[PatchOp]
) -> tuple[str, tuple[str, ...]]:
    """(new script text, notes) for the ops; InputError when the edit cannot be made exactly."""
    editor = MegatronEditor(before)
    touched = []
    for op in ops:
        flag = _flag(before, op)
        touched.append(flag)
        if op.op == "set":
            editor.set_flag(flag, op.value, op.near)
        else:
            editor.remove_flag(flag)
    after = editor.result()
    script = read_megatron(before.path, after)
    layout = layout_of(script.args, script.world_size)
    known = {message for _, message in layout_before.problems}
    problems = [message for _, message in layout.problems if message not in known]
    if problems:
        raise InputError(str(before.path), f"the change would break the job: {problems[0]}")
    notes = _layout_notes(layout_before, layout)
    flags = megatron_flags()
    relayout = sorted(set(touched) & flags.checkpoint_layout)
    if relayout:
        converts = before.args.get(flags.converts_from_hf) is True
        notes.append(
            f"--{', --'.join(relayout)} change the checkpoint layout: "
            + (
                f"the script converts from Hugging Face at start (--{flags.converts_from_hf}), "
                "so no re-conversion is needed"
                if converts
                else "re-convert the checkpoint in CKPT_LOAD_DIR for the new layout first"
            )
        )
    return after, tuple(notes)
