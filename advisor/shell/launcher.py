"""Whether a command's words start a distributed training launcher, and where its own
arguments end: one answer for every reader of launch scripts."""

from __future__ import annotations

import re
from collections.abc import Sequence

PREFIXES = {"exec", "nohup", "time", "env"}  # words that run the command after them
MODULES = ("torch.distributed.run", "torch.distributed.launch")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def launcher_end(words: Sequence[str]) -> int | None:
    """The index just past the launcher when the command word is one (after leading `NAME=v`
    assignments and exec/nohup/time/env): `torchrun`, or python with `-m
    torch.distributed.run|launch` (an option such as `-u` may come first). None otherwise."""
    i = 0
    while i < len(words) and (
        _ASSIGNMENT.match(words[i]) or words[i].rsplit("/", 1)[-1] in PREFIXES
    ):
        i += 1
    if i >= len(words):
        return None
    command = words[i].rsplit("/", 1)[-1]
    if command == "torchrun":
        return i + 1
    if command.startswith("python") and "-m" in words[i + 1 : i + 3]:
        j = words.index("-m", i + 1)
        if j + 1 < len(words) and words[j + 1] in MODULES:
            return j + 2
    return None
