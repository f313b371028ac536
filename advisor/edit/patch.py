"""Place a chosen change where its effective value comes from, and produce the file edits.

Config keys are edited in the YAML unless the launch command overrides them (then the flag in
the script is edited, since the YAML value would be ignored); environment variables are edited
in the launch script (or printed as lines to add when no script was given). Results are
validated before anything is shown or written.
"""

from __future__ import annotations

import difflib
import os
import tempfile
from pathlib import Path

from advisor.edit.launch_text import LaunchTextEditor, shell_value
from advisor.edit.yaml_text import YamlTextEditor
from advisor.inputs.configs import LaunchScript, config_problems, effective_config
from advisor.inputs.yamlio import locate
from advisor.model import FileChange, InputError, Patch, PatchOp


def _label(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path).lstrip("/")


def unified_diff(changes: tuple[FileChange, ...]) -> str:
    """A patch `git apply` accepts (paths relative to the working directory)."""
    out: list[str] = []
    for change in changes:
        label = _label(Path(change.path))
        before = change.before.splitlines(keepends=True)
        after = change.after.splitlines(keepends=True)
        for line in difflib.unified_diff(before, after, f"a/{label}", f"b/{label}"):
            out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _config_patch(
    feature: str,
    applicability: str,
    ops: tuple[PatchOp, ...],
    config_path: Path,
    launch: LaunchScript | None,
) -> Patch:
    overridden = {o.path for o in launch.overrides if o.value is not None} if launch else set()
    if launch is not None and any(op.path in overridden for op in ops):
        editor = LaunchTextEditor(launch)
        for op in ops:
            if op.op != "set":
                raise InputError(
                    str(launch.path), f"cannot remove the CLI override of {op.path} automatically"
                )
            editor.set_flag(op.path, op.value)
        changes = tuple(FileChange(str(p), a, b) for p, (a, b) in editor.results().items())
        return Patch(feature, "cli", str(launch.path), ops, applicability, changes)
    editor_yaml = YamlTextEditor(config_path)
    for op in ops:
        if op.op == "set":
            editor_yaml.set(op.path, op.value)
        else:
            editor_yaml.remove(op.path)
    after = editor_yaml.result()
    problems = config_problems(effective_config(locate(after, str(config_path)).data, launch))
    if problems:
        raise InputError(
            str(config_path),
            f"the change would make the config invalid ({problems[0]}): not proposed",
        )
    changes = (
        (FileChange(str(config_path), editor_yaml.original, after),)
        if after != editor_yaml.original
        else ()
    )
    return Patch(feature, "config", str(config_path), ops, applicability, changes)


def _env_patch(
    feature: str, applicability: str, ops: tuple[PatchOp, ...], launch: LaunchScript | None
) -> Patch:
    if launch is None:
        lines = tuple(
            f"export {op.path}={shell_value(op.value)}"
            if op.op == "set"
            else f"unset {op.path}   # and delete its export"
            for op in ops
        )
        return Patch(feature, "env", None, ops, applicability, (), lines)
    editor = LaunchTextEditor(launch)
    for op in ops:
        if op.op == "set":
            editor.set_env(op.path, op.value)
        else:
            editor.remove_env(op.path)
    changes = tuple(FileChange(str(p), a, b) for p, (a, b) in editor.results().items())
    file = changes[0].path if changes else str(launch.path)
    return Patch(feature, "env", file, ops, applicability, changes)


def build_patch(
    feature: str,
    target: str,
    applicability: str,
    ops: tuple[PatchOp, ...],
    config_path: Path,
    launch: LaunchScript | None,
) -> Patch:
    if target == "env":
        return _env_patch(feature, applicability, ops, launch)
    return _config_patch(feature, applicability, ops, config_path, launch)


def write_changes(patch: Patch) -> list[str]:
    """Write a safe patch's files in place; refuse if a file changed since it was read."""
    if patch.applicability != "safe":
        raise InputError(
            patch.file or "patch",
            f"a {patch.applicability} change is not written automatically: apply the diff by hand",
        )
    written = []
    for change in patch.changes:
        path = Path(change.path)
        current = path.read_bytes().decode("utf-8")
        if current != change.before:
            raise InputError(change.path, "changed on disk since it was read: not written")
        mode = path.stat().st_mode
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(change.after)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
        written.append(change.path)
    return written
