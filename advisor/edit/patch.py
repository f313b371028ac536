"""Place a change where its effective value comes from, and turn patch ops into file edits.

One module serves `suggest` (one recommended patch), `check --fix` (every safe fix of a
document, applied in order) and SARIF `fixes` (each finding's own edit). Config keys are edited
in the YAML unless the launch command overrides them (then the flag in the script is edited,
since the YAML value would be ignored); environment variables are edited in the launch script
(or printed as lines to add when no script was given). Editors start from the text that was
read, never from a second read, and every result is validated before it is shown or written.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterable
from pathlib import Path

from advisor.edit.launch_text import LaunchTextEditor, shell_value
from advisor.edit.yaml_text import YamlTextEditor
from advisor.inputs.configs import dialect_problems
from advisor.inputs.documents import Document
from advisor.inputs.launch import LaunchScript, effective_config
from advisor.inputs.yamlio import locate
from advisor.model import FileChange, InputError, Patch, PatchOp, PatchTarget


def _label(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path).lstrip("/")


def unified_diff(changes: Iterable[FileChange]) -> str:
    """A patch `git apply` accepts (paths relative to the working directory)."""
    out: list[str] = []
    for change in changes:
        label = _label(Path(change.path))
        before = change.before.splitlines(keepends=True)
        after = change.after.splitlines(keepends=True)
        for line in difflib.unified_diff(before, after, f"a/{label}", f"b/{label}"):
            out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _launch_changes(editor: LaunchTextEditor) -> tuple[FileChange, ...]:
    return tuple(FileChange(str(p), a, b) for p, (a, b) in editor.results().items())


def _apply_yaml(editor: YamlTextEditor, ops: Iterable[PatchOp]) -> None:
    for op in ops:
        if op.op == "set":
            editor.set(op.path, op.value)
        else:
            editor.remove(op.path)


def _apply_env(editor: LaunchTextEditor, ops: Iterable[PatchOp]) -> None:
    for op in ops:
        if op.op == "set":
            editor.set_env(op.path, op.value)
        else:
            editor.remove_env(op.path)


def _place_megatron(patch: Patch, config: Document) -> Patch:
    from advisor.edit.megatron_args import megatron_changes

    after, notes = megatron_changes(config, patch.ops)
    changes = (FileChange(str(config.path), config.text, after),) if after != config.text else ()
    return dataclasses.replace(patch, file=str(config.path), changes=changes, notes=notes)


def _place_config(patch: Patch, config: Document, launch: LaunchScript | None) -> Patch:
    if config.megatron is not None:
        return _place_megatron(patch, config)
    overridden = {o.path for o in launch.overrides if o.value is not None} if launch else set()
    if launch is not None and any(op.path in overridden for op in patch.ops):
        editor = LaunchTextEditor(launch)
        for op in patch.ops:
            if op.op != "set":
                raise InputError(
                    str(launch.path), f"cannot remove the CLI override of {op.path} automatically"
                )
            editor.set_flag(op.path, op.value)
        changes = _launch_changes(editor)
        return dataclasses.replace(
            patch, target=PatchTarget.cli, file=str(launch.path), changes=changes
        )
    yaml_editor = YamlTextEditor(config.path, config.text)
    _apply_yaml(yaml_editor, patch.ops)
    after = yaml_editor.result()
    problems = dialect_problems(
        effective_config(locate(after, str(config.path)).data, launch), config.kind
    )
    if problems:
        raise InputError(
            str(config.path),
            f"the change would make the config invalid ({problems[0]}): not proposed",
        )
    changes = (
        (FileChange(str(config.path), yaml_editor.original, after),)
        if after != yaml_editor.original
        else ()
    )
    return dataclasses.replace(patch, file=str(config.path), changes=changes)


def _place_env(patch: Patch, launch: LaunchScript | None) -> Patch:
    if launch is None:
        lines = tuple(
            f"export {op.path}={shell_value(op.value)}"
            if op.op == "set"
            else f"unset {op.path}   # and delete its export"
            for op in patch.ops
        )
        return dataclasses.replace(patch, file=None, lines_to_add=lines)
    editor = LaunchTextEditor(launch)
    _apply_env(editor, patch.ops)
    changes = _launch_changes(editor)
    file = changes[0].path if changes else str(launch.path)
    return dataclasses.replace(patch, file=file, changes=changes)


def place(patch: Patch, config: Document, launch: LaunchScript | None) -> Patch:
    """The patch with its file edits: where the effective value comes from."""
    if patch.target is PatchTarget.env:
        return _place_env(patch, launch)
    return _place_config(patch, config, launch)


def document_changes(doc: Document, patches: Iterable[Patch]) -> list[FileChange]:
    """The edits of several patches to one checked document, applied in order on one editor."""
    patches = list(patches)
    if not patches:
        return []
    if doc.script is None:
        editor = YamlTextEditor(doc.path, doc.text)
        for patch in patches:
            _apply_yaml(editor, patch.ops)
        after = editor.result()
        return (
            [FileChange(str(doc.path), editor.original, after)] if after != editor.original else []
        )
    launch = LaunchTextEditor(doc.script)
    for patch in patches:
        if patch.target is PatchTarget.env:
            _apply_env(launch, patch.ops)
    return list(_launch_changes(launch))
