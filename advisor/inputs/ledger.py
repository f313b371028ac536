"""The experiment ledger: every suggested change, whether it was applied, kept or reverted.

An append-only JSON-lines file (default `.advisor/ledger.jsonl` next to the config): the advisor
never rewrites past entries, it adds events. The latest event of a feature is its status.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from advisor.core.text import require_regular
from advisor.model import InputError, PatchOp

# @2: a proposal may carry `predicted` (the suggestion's recommendation.predicted), a
# kept/reverted verdict `predicted` and `measured`; @1 lines (without them) read the same
LEDGER_SCHEMA = "advisor/ledger@2"
STATUSES = ("proposed", "applied", "kept", "reverted", "rejected", "failed")
# a feature whose latest event is one of these is not proposed again for this job; "failed":
# its run crashed or ran out of memory (the entry's `failure` says which), and it was reverted
FINAL_NO = ("reverted", "rejected", "failed")


def default_path(config: Path) -> Path:
    return config.resolve().parent / ".advisor" / "ledger.jsonl"


def file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def files_fingerprint(paths: list[str]) -> str:
    """Which profile this is: its files' names, sizes and modification times (not contents:
    a profile reaches gigabytes). A new profile, even in the same folder, changes it."""
    digest = hashlib.sha256()
    for name in sorted(set(paths)):
        try:
            stat = Path(name).stat()
        except OSError:
            continue
        digest.update(f"{Path(name).resolve()}|{stat.st_size}|{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class LedgerEvent:
    """One ledger line, typed: what happened to which feature, and the change it recorded."""

    event: str
    feature: str
    bottleneck: str | None = None
    note: str | None = None
    patch_target: str | None = None
    patch_ops: tuple[PatchOp, ...] = ()  # `expect` is the value before the change
    config_sha256: str | None = None
    profile_fingerprint: str | None = None
    # a proposal's: the run it was made on (leading bottleneck, costs, the feature's share)
    proposed_on: Mapping[str, Any] | None = None
    retry: bool = False  # a proposal made again after a revert for no measurable effect
    # a revert's: the bottleneck whose cost grew in the change's own run (where its gain went)
    masked_by: str | None = None
    failure: str | None = None  # a failed run's cause (out-of-memory, ...: rules/tune.yaml)

    @classmethod
    def of(cls, entry: Mapping[str, object]) -> LedgerEvent:
        patch = entry.get("patch")
        target: str | None = None
        ops: tuple[PatchOp, ...] = ()
        if isinstance(patch, Mapping):
            target = str(patch.get("target", "config"))
            raw_ops = patch.get("ops")
            ops = tuple(
                PatchOp(str(op.get("op")), str(op.get("path")), op.get("value"), op.get("before"))
                for op in (raw_ops if isinstance(raw_ops, list) else [])
                if isinstance(op, Mapping)
            )
        return cls(
            event=str(entry["event"]),
            feature=str(entry["feature"]),
            bottleneck=_text(entry.get("bottleneck")),
            note=_text(entry.get("note")),
            patch_target=target,
            patch_ops=ops,
            config_sha256=_text(entry.get("config_sha256")),
            profile_fingerprint=_text(entry.get("profile_fingerprint")),
            proposed_on=_mapping(entry.get("proposed_on")),
            retry=isinstance(entry.get("retry"), Mapping),
            masked_by=_masked_by(entry.get("masked_by")),
            failure=_text(entry.get("failure")),
        )


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _mapping(value: object) -> Mapping[str, Any] | None:
    return value if isinstance(value, Mapping) else None


def _masked_by(value: object) -> str | None:
    found = _mapping(value)
    return _text(found.get("bottleneck")) if found is not None else None


@dataclass
class Ledger:
    path: Path
    entries: list[dict[str, Any]]
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, path: Path) -> Ledger:
        entries: list[dict[str, Any]] = []
        warnings: list[str] = []
        if path.exists():
            require_regular(path, ", so it cannot be the ledger")
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise InputError(str(path), f"cannot read the ledger: {exc}") from None
            lines = text.splitlines()
            for number, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                entry = _entry(path, number, line, warnings, last=number == len(lines))
                if entry is not None:
                    entries.append(entry)
        return cls(path, entries, warnings)

    def events(self) -> list[LedgerEvent]:
        return [LedgerEvent.of(entry) for entry in self.entries]

    def status(self, feature: str) -> str | None:
        for entry in reversed(self.entries):
            if entry["feature"] == feature:
                return str(entry["event"])
        return None

    def rejected(self) -> set[str]:
        return {e["feature"] for e in self.entries if self.status(e["feature"]) in FINAL_NO}

    def last_proposed(self) -> dict[str, Any] | None:
        for entry in reversed(self.entries):
            if entry["event"] == "proposed":
                found: dict[str, Any] = entry
                return found
        return None

    def append(
        self, event: str, feature: str, *, in_memory: bool = False, **fields: Any
    ) -> dict[str, Any]:
        """Record an event; `in_memory` adds it to this reading only (a read-only view of the
        history as it would be, the file untouched)."""
        if event not in STATUSES:
            raise InputError(str(self.path), f"unknown ledger event {event}")
        entry = {
            "schema": LEDGER_SCHEMA,
            "time": datetime.now(UTC).isoformat(timespec="seconds"),
            "event": event,
            "feature": feature,
            **fields,
        }
        if in_memory:
            self.entries.append(entry)
            return entry
        line = (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8")
        self.check_writable()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # one write of the whole line on an O_APPEND descriptor, under an exclusive lock:
            # concurrent runs never interleave or tear each other's lines
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                torn = _set_aside_torn_tail(fd, self.path)
                if torn:
                    self.warnings.append(
                        f"{self.path}: its last line was incomplete ({torn} bytes, a write cut "
                        f"short); it was moved to {torn_path(self.path)} and the new entry "
                        "starts on a line of its own"
                    )
                written = os.write(fd, line)
                if written != len(line):
                    raise OSError(errno.ENOSPC, "short write")
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise InputError(str(self.path), f"cannot append: {exc.strerror or exc}") from None
        self.entries.append(entry)
        return entry

    def check_writable(self) -> None:
        """Every precondition of an append, checked before anything the user owns changes: the
        ledger's folder is a folder (or can be made), the ledger a regular file (or absent) that
        can be written. A command that edits a config checks this first, so an edit is never
        applied and left unrecorded."""
        folder = self.path.parent
        existing = next((p for p in (folder, *folder.parents) if os.path.lexists(p)), None)
        if existing is not None and not existing.is_dir():
            raise InputError(
                str(existing),
                f"is not a folder, so the ledger {self.path} cannot be written there "
                "(move it away, or give another place with --ledger)",
            )
        if (
            existing is not None
            and not os.access(existing, os.W_OK | os.X_OK)
            and existing != folder
        ):
            raise InputError(
                str(existing), f"cannot create the ledger's folder {folder}: permission denied"
            )
        if os.path.lexists(self.path):
            require_regular(self.path, ", so it cannot be the ledger")
            if not os.access(self.path, os.W_OK):
                raise InputError(str(self.path), "cannot append to the ledger: permission denied")
        elif folder.is_dir() and not os.access(folder, os.W_OK | os.X_OK):
            raise InputError(str(folder), "cannot create the ledger there: permission denied")


def torn_path(path: Path) -> Path:
    """Where incomplete last lines are kept: beside the ledger, never inside it."""
    return path.with_name(path.name + ".torn")


def _entry(
    path: Path, number: int, line: str, warnings: list[str], *, last: bool
) -> dict[str, Any] | None:
    """One ledger line as an entry. A line that is not JSON is a torn write: at the end it is
    skipped; inside the file it is a record appended onto a torn line by an older writer, and
    the complete record after the torn bytes is recovered."""
    try:
        entry = json.loads(line)
    except RecursionError:
        raise InputError(f"{path}:{number}", "JSON nested too deeply") from None
    except json.JSONDecodeError as exc:
        recovered = _recover(line)
        if recovered is not None:
            warnings.append(
                f"{path}:{number}: the line starts with an incomplete entry (a write cut "
                "short); the complete entry after it is read"
            )
            entry = recovered
        elif last:
            # a write cut by a crash or a full disk: the entry never happened
            warnings.append(f"{path}:{number}: an incomplete last line is ignored")
            return None
        else:
            raise InputError(f"{path}:{number}", f"not a JSON line ({exc.msg})") from None
    if not isinstance(entry, dict) or entry.get("event") not in STATUSES or "feature" not in entry:
        raise InputError(f"{path}:{number}", "not a ledger entry (needs 'event' and 'feature')")
    return entry


def _recover(line: str) -> dict[str, Any] | None:
    """The last complete entry in a line that begins with torn bytes (every entry this tool
    writes begins with its schema key)."""
    start = line.rfind('{"schema"')
    if start <= 0:
        return None
    try:
        entry = json.loads(line[start:])
    except (json.JSONDecodeError, RecursionError):
        return None
    return entry if isinstance(entry, dict) else None


def _set_aside_torn_tail(fd: int, path: Path) -> int:
    """If the ledger does not end with a newline (a killed writer, an editor, a torn copy), move
    the incomplete last line to `<ledger>.torn` and cut it from the ledger, so the next entry
    starts on a line of its own. Runs under the append lock. Returns the bytes moved."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return 0
    start = size
    while start > 0:
        block = os.pread(fd, min(65536, start), max(0, start - 65536))
        cut = block.rfind(b"\n")
        if cut >= 0:
            start = start - len(block) + cut + 1
            break
        start -= len(block)
    tail = os.pread(fd, size - start, start)
    aside = os.open(torn_path(path), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(aside, tail + b"\n")
        os.fsync(aside)
    finally:
        os.close(aside)
    os.ftruncate(fd, start)
    return len(tail)


LEDGER_DIR = ".advisor"
LEDGER_NAME = "ledger.jsonl"
_SEARCH_DEPTH = 4  # folders below the start searched for a ledger (a repository's job folders)
_SKIPPED = frozenset({".git", ".hg", ".venv", "venv", "node_modules", "__pycache__", ".tox"})


def find_ledgers(start: Path) -> list[Path]:
    """The ledgers a command run in `start` means, as git finds its repository: the nearest
    `.advisor/ledger.jsonl` in `start` or a folder above it; else every one below the
    repository's top (or `start` outside a repository), a few levels deep. Several found means
    the user must choose."""
    start = start.resolve()
    for folder in (start, *start.parents):
        candidate = folder / LEDGER_DIR / LEDGER_NAME
        if candidate.is_file():
            return [candidate]
    top = next((f for f in (start, *start.parents) if (f / ".git").exists()), start)
    return sorted(_below(top, _SEARCH_DEPTH))


def _below(folder: Path, depth: int) -> list[Path]:
    found: list[Path] = []
    try:
        children = sorted(folder.iterdir())
    except OSError:
        return found
    for child in children:
        if child.name == LEDGER_DIR and (child / LEDGER_NAME).is_file():
            found.append(child / LEDGER_NAME)
        elif depth > 0 and child.name not in _SKIPPED and child.is_dir() and not child.is_symlink():
            found.extend(_below(child, depth - 1))
    return found
