"""Whether a command's words start a distributed training launcher, and where its own
arguments end: one answer for every reader of launch scripts."""

from __future__ import annotations

import re
from collections.abc import Sequence

# words that run the command after them (with options of their own: env, stdbuf)
PREFIXES = {"exec", "nohup", "time", "env", "stdbuf"}
MODULES = ("torch.distributed.run", "torch.distributed.launch")
# torchrun, and MindSpore's msrun (MindSpeed-LLM's MindSpore backend, MindFormers)
LAUNCHERS = ("torchrun", "msrun")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
# the options of prefix commands that take a value as the next word
_VALUED = {
    "env": {"-u", "--unset", "-C", "--chdir", "-S", "--split-string"},
    "stdbuf": {"-i", "-o", "-e"},
}


def env_unsets(words: Sequence[str]) -> list[str]:
    """The variables `env -u NAME` / `--unset=NAME` removes from the command's environment."""
    out = []
    for i, word in enumerate(words):
        if word in ("-u", "--unset") and i + 1 < len(words):
            out.append(words[i + 1])
        elif word.startswith("--unset="):
            out.append(word.partition("=")[2])
        elif word.startswith("-u") and len(word) > 2:
            out.append(word[2:])
    return out


def command_start(words: Sequence[str]) -> int:
    """The index of the command word: past leading `NAME=v` assignments, exec/nohup/time/env
    and env's own options (`env -u NAME -i`)."""
    i = 0
    valued: set[str] | None = None  # the options of the prefix command being read
    while i < len(words):
        word = words[i]
        name = word.rsplit("/", 1)[-1]
        if _ASSIGNMENT.match(word):
            i += 1
        elif name in PREFIXES:
            valued = _VALUED.get(name)
            i += 1
        elif valued is not None and word.startswith("-"):
            i += 2 if word in valued else 1
        else:
            break
    return i


def launcher_end(words: Sequence[str]) -> int | None:
    """The index just past the launcher when the command word is one (after leading `NAME=v`
    assignments and exec/nohup/time/env with env's options): `torchrun` or `msrun`, or python with `-m
    torch.distributed.run|launch` (an option such as `-u` may come first). None otherwise."""
    i = command_start(words)
    if i >= len(words):
        return None
    command = words[i].rsplit("/", 1)[-1]
    if command in LAUNCHERS:
        return i + 1
    if command.startswith("python") and "-m" in words[i + 1 : i + 3]:
        j = words.index("-m", i + 1)
        if j + 1 < len(words) and words[j + 1] in MODULES:
            return j + 2
    return None
