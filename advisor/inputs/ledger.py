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

from advisor.model import InputError, PatchOp

LEDGER_SCHEMA = "advisor/ledger@1"
STATUSES = ("proposed", "applied", "kept", "reverted", "rejected")
FINAL_NO = ("reverted", "rejected")


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
        )


def _text(value: object) -> str | None:
    return None if value is None else str(value)


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
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise InputError(str(path), f"cannot read the ledger: {exc}") from None
            lines = text.splitlines()
            for number, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                try:
                    entry = json.loads(line)
                except RecursionError:
                    raise InputError(f"{path}:{number}", "JSON nested too deeply") from None
                except json.JSONDecodeError as exc:
                    if number == len(lines) and not text.endswith("\n"):
                        # a write cut by a crash or a full disk: the entry never happened
                        warnings.append(f"{path}:{number}: an incomplete last line is ignored")
                        continue
                    raise InputError(f"{path}:{number}", f"not a JSON line ({exc.msg})") from None
                if (
                    not isinstance(entry, dict)
                    or entry.get("event") not in STATUSES
                    or "feature" not in entry
                ):
                    raise InputError(
                        f"{path}:{number}", "not a ledger entry (needs 'event' and 'feature')"
                    )
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
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # one write of the whole line on an O_APPEND descriptor, under an exclusive lock:
            # concurrent runs never interleave or tear each other's lines
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
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
