"""How values read from configs, command lines and facts compare: the one place for boolean
words, number coercion and dotted-path lookups."""

from __future__ import annotations

from collections.abc import Mapping

# argparse-style switch words (`--flag true`) and the YAML 1.1 spellings people write in configs
TRUE_WORDS = frozenset({"true", "yes", "on", "t", "y"})
FALSE_WORDS = frozenset({"false", "no", "off", "f", "n"})
# words a YAML 1.1 reader turns into booleans or null: quoted when written as strings
YAML_SPECIAL_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "y", "n", "null", "~"})


def bool_word(text: str, on_off: bool = True) -> bool | None:
    """True/False for a boolean word, None for anything else. The backend's command-line
    parser (`str2bool`) does not know on/off: `on_off=False` reads flags the way it does."""
    lowered = text.lower()
    if not on_off and lowered in ("on", "off"):
        return None
    if lowered in TRUE_WORDS:
        return True
    if lowered in FALSE_WORDS:
        return False
    return None


def as_number(value: object, strings: bool = False) -> float | None:
    """A finite-or-not float for int/float (bools count as 0/1 only with `strings`), else None.

    With `strings`, numeric text ("2") is a number too: environment values are always text.
    """
    if isinstance(value, bool):
        return float(value) if strings else None
    if isinstance(value, int | float):
        return float(value)
    if strings and isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _normalised(value: object) -> object:
    if isinstance(value, str):
        word = bool_word(value)
        if word is not None:
            return word
    return value


def values_equal(a: object, b: object) -> bool:
    """Equality across spellings: "true" == True, "2" == 2, 2.0 == 2."""
    a, b = _normalised(a), _normalised(b)
    if isinstance(a, bool) and isinstance(b, bool):
        return a == b
    na, nb = as_number(a, strings=True), as_number(b, strings=True)
    if na is not None and nb is not None:
        return na == nb
    return str(a) == str(b)


def get_path(data: Mapping[str, object] | None, dotted: str) -> object:
    """The value at `section.key`, or None when any part is missing."""
    node: object = data or {}
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node
