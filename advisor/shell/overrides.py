"""The config a job runs with: the YAML, then the launch command's `--section.key` flags as
the backend's argparse reads them."""

from __future__ import annotations

import copy
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

from advisor.core.values import bool_word, get_path

if TYPE_CHECKING:
    # an annotation only: a YAML config reads its own keys without the script reader
    from advisor.shell.launch import LaunchScript


def cli_value(text: str | None) -> object:
    """Turn a CLI token into the value argparse would produce for the common key types."""
    if text is None:
        return None
    word = bool_word(text, on_off=False)
    if word is not None:
        return word
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def _full_key(key: str, known: Collection[str] | None) -> str | None:
    """The key argparse takes a flag's name for: itself, or the one key it is a unique prefix
    of; None when argparse rejects or ignores it (ambiguous, or no such key)."""
    if known is None or key in known:
        return key
    longer = [k for k in known if k.startswith(key)]
    return longer[0] if len(longer) == 1 else None


def effective_config(
    config: Mapping[str, object],
    launch: LaunchScript | None,
    keys: Mapping[str, Collection[str]] | None = None,
) -> dict[str, object]:
    """The config the backend runs with: the YAML, then the command line's `--section.key`
    flags as argparse reads them (a unique prefix names its key, a bare flag is true). The
    backend appends the YAML's values after the command line for every key not written there
    by its full name, so an abbreviated flag, or a bare flag at the very end, loses to a key
    the YAML sets. `keys` (section -> its keys) resolves prefixes; without it flags are taken
    as written."""
    merged = copy.deepcopy(dict(config))
    if launch is None:
        return merged
    overrides = launch.overrides
    for i, override in enumerate(overrides):
        section, _, key = override.path.partition(".")
        known = None if keys is None else keys.get(section, ())
        full = _full_key(key, known)
        if full is None:
            continue
        in_yaml = get_path(config, f"{section}.{full}") is not None
        bare_last = override.value is None and i == len(overrides) - 1
        if in_yaml and (full != key or bare_last):
            continue  # the YAML's value, appended after the command line, wins
        node = merged.setdefault(section, {})
        if isinstance(node, dict):
            node[full] = True if override.value is None else cli_value(override.value)
    return merged
