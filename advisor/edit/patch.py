"""Place a change where its effective value comes from, and turn patch ops into file edits.

One module serves `suggest` (one recommended patch), `check --fix` (every safe fix of a
document, applied in order) and SARIF `fixes` (each finding's own edit); which of these a
document's change becomes is its dialect's choice. Config keys are edited
in the YAML unless the launch command overrides them (then the flag in the script is edited,
since the YAML value would be ignored); environment variables are edited in the launch script
(or printed as lines to add when no script was given). Editors start from the text that was
read, never from a second read, and every result is validated before it is shown or written.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from advisor.core.yamlio import locate
from advisor.edit.launch_text import LaunchTextEditor, shell_value
from advisor.edit.yaml_text import YamlTextEditor
from advisor.model import FileChange, InputError, Patch, PatchOp, PatchTarget
from advisor.shell.launch import LaunchScript
from advisor.shell.overrides import effective_config


def _label(path: Path) -> str:
    """The diff's name of a file: relative to the working folder when below it, else its whole
    path (a file given as ../x is never shown as a/../x, which reads as a folder named a)."""
    resolved = path.resolve()
    try:
        return resolved.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return resolved.as_posix().lstrip("/")


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


def place_env(patch: Patch, launch: LaunchScript | None) -> Patch:
    """An environment change: edited in the launch script (or lines to add without one)."""
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


def _place_override(patch: Patch, launch: LaunchScript) -> Patch:
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


def place_yaml(
    patch: Patch,
    path: Path,
    text: str,
    launch: LaunchScript | None,
    problems: Callable[[dict[str, object]], Sequence[object]],
) -> Patch:
    """A config change to a YAML file, or to the launch command's flag when the command
    overrides the key (the YAML value would be ignored); refused when `problems` finds the
    config the change makes invalid."""
    overridden = {o.path for o in launch.overrides if o.value is not None} if launch else set()
    if launch is not None and any(op.path in overridden for op in patch.ops):
        return _place_override(patch, launch)
    yaml_editor = YamlTextEditor(path, text)
    _apply_yaml(yaml_editor, patch.ops)
    after = yaml_editor.result()
    found = problems(effective_config(locate(after, str(path)).data, launch))
    if found:
        raise InputError(
            str(path), f"the change would make the config invalid ({found[0]}): not proposed"
        )
    changes = (
        (FileChange(str(path), yaml_editor.original, after),)
        if after != yaml_editor.original
        else ()
    )
    return dataclasses.replace(patch, file=str(path), changes=changes)


def yaml_fix_changes(path: Path, text: str, patches: Iterable[Patch]) -> list[FileChange]:
    """The edits of several patches to one YAML file, applied in order on one editor."""
    editor = YamlTextEditor(path, text)
    for patch in patches:
        _apply_yaml(editor, patch.ops)
    after = editor.result()
    return [FileChange(str(path), editor.original, after)] if after != editor.original else []


def env_fix_changes(script: LaunchScript, patches: Iterable[Patch]) -> list[FileChange]:
    """The environment edits of several patches to one launch script, applied in order."""
    editor = LaunchTextEditor(script)
    for patch in patches:
        if patch.target is PatchTarget.env:
            _apply_env(editor, patch.ops)
    return list(_launch_changes(editor))
