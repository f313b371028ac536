"""The one writer of the user's files: atomic, and never over a file that changed since it was
read."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

from advisor.core.text import read_text
from advisor.model import Applicability, FileChange, InputError, Patch


def write_patch(patch: Patch) -> list[str]:
    """`--write`: only safe changes are written without a person reading the diff."""
    if patch.applicability is not Applicability.safe:
        raise InputError(
            patch.file or "patch",
            f"a {patch.applicability} change is not written automatically: apply the diff by hand",
        )
    return write_changes(patch.changes)


def write_changes(changes: Iterable[FileChange]) -> list[str]:
    """Write each change in place (temp file in the same folder, fsync, rename; the original's
    mode kept). Every file is checked before any is written."""
    changes = list(changes)
    for change in changes:
        if read_text(Path(change.path)) != change.before:
            raise InputError(change.path, "changed on disk since it was read: not written")
    written = []
    for change in changes:
        _replace(Path(change.path), change.after)
        written.append(change.path)
    return written


def write_file(path: Path, text: str) -> None:
    """Create or replace a file the tool owns (a baseline, a report) atomically."""
    _replace(path, text)


def _replace(path: Path, text: str) -> None:
    """Atomic replace of the file `path` names. A symlink is followed (the target is edited and
    the link kept); a file with several hard links is refused (a rename would split them)."""
    shown = str(path)
    if path.is_symlink():
        path = path.resolve()
    if path.exists():
        info = path.stat()
        if not info.st_mode & 0o222:
            # a rename would replace it anyway: honour the user's protection instead
            raise InputError(shown, "read-only: not written (make it writable to apply)")
        if info.st_nlink > 1:
            raise InputError(
                shown,
                f"has {info.st_nlink} hard links: an atomic replace would split them; not "
                "written (apply the diff by hand)",
            )
    import tempfile  # on a write only: `check` without --fix writes nothing (~1.5 ms to import)

    try:
        mode = path.stat().st_mode if path.exists() else 0o644
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise InputError(str(path), f"cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise InputError(str(path), f"cannot write: {exc.strerror or exc}") from None
