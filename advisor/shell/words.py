"""Shell words as bash reads them: where a word ends, and whether its value is static.

A word runs until unquoted whitespace or an operator (; & | < > ( )); quotes, escapes, `$(...)`
(nested), backticks and `${...}` are part of it. An edit replaces a whole word, so a value such
as `$(echo 1)`, `"1 "` or the `1` of `A=1; B=2` is never cut in the middle.
"""

from __future__ import annotations

import shlex

_OPERATORS = set(";&|<>()")


def _skip_quoted(text: str, i: int) -> int | None:
    """If `text[i]` opens an escape, a quote, a backtick or `$(`/`${`, the index past it (None
    when it is not closed); else `i` itself."""
    ch = text[i]
    if ch == "\\":
        return i + 2
    if ch in "'`":
        close = text.find(ch, i + 1)
        return close + 1 if close >= 0 else None
    if ch == '"':
        return double_quoted_end(text, i + 1)
    if ch == "$" and text[i + 1 : i + 2] in ("(", "{"):
        return group_end(text, i + 1)
    return i


def word_end(text: str, start: int) -> int | None:
    """The index just past the word starting at `start`; None when a quote or substitution is
    not closed on this line."""
    i = start
    while i < len(text):
        if text[i] in " \t\n" or text[i] in _OPERATORS:
            return i
        skipped = _skip_quoted(text, i)
        if skipped is None:
            return None
        i = skipped if skipped > i else i + 1
    return i


def array_elements(text: str, i: int) -> tuple[int, list[tuple[int, int]]] | None:
    """`text[i]` is the `(` of an array assignment `NAME=(...)`: the index past its `)` and the
    spans of its element words (blanks, newlines and comments between them); None when it is
    not closed, or holds an operator bash would refuse there."""
    spans: list[tuple[int, int]] = []
    j = i + 1
    while j < len(text):
        ch = text[j]
        if ch in " \t\r\n":
            j += 1
        elif ch == "\\" and text[j + 1 : j + 2] == "\n":
            j += 2
        elif ch == "#":  # a comment runs to the end of its line
            newline = text.find("\n", j)
            if newline < 0:
                return None
            j = newline
        elif ch == ")":
            return j + 1, spans
        else:
            end = word_end(text, j)
            if end is None or end == j:
                return None
            spans.append((j, end))
            j = end
    return None


def double_quoted_end(text: str, i: int) -> int | None:
    while i < len(text):
        ch = text[i]
        if ch == '"':
            return i + 1
        if ch in "\\$":
            skipped = _skip_quoted(text, i)
            if skipped is None:
                return None
            i = skipped if skipped > i else i + 1
        else:
            i += 1
    return None


def group_end(text: str, i: int) -> int | None:
    """`text[i]` is '(' or '{': the index past its matching close, quotes respected."""
    opening = text[i]
    closing = ")" if opening == "(" else "}"
    depth = 0
    while i < len(text):
        ch = text[i]
        if ch == opening:
            depth += 1
        elif ch == closing:
            depth -= 1
            if depth == 0:
                return i + 1
        elif ch in "\\'\"`$":
            skipped = _skip_quoted(text, i)
            if skipped is None:
                return None
            if skipped > i:
                i = skipped
                continue
        i += 1
    return None


def is_static(word: str) -> bool:
    """True when the word's value needs no expansion: no `$` or backtick outside single quotes."""
    i = 0
    while i < len(word):
        ch = word[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "'":
            close = word.find("'", i + 1)
            i = close + 1 if close >= 0 else len(word)
            continue
        if ch in "$`":
            return False
        i += 1
    return True


def value_of(word: str) -> str | None:
    """The static value of a word (quotes removed); None when it must be expanded."""
    if not is_static(word):
        return None
    try:
        parts = shlex.split(word, posix=True)
    except ValueError:
        return None
    return parts[0] if len(parts) == 1 else ("" if not parts else None)


_OPENERS = {"if", "for", "while", "until", "case", "select"}
_CLOSERS = {"fi", "done", "esac"}


def block_depths(lines: list[str]) -> list[int]:
    """How deep inside if/for/while/case blocks and { } bodies each line starts (0: top level).
    Comments and quoted text are ignored; a block opened and closed on one line counts 0."""
    depths = []
    depth = 0
    for line in lines:
        depths.append(depth)
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            continue
        for word in words:
            if word in _OPENERS or word == "{" or word.endswith("{"):
                depth += 1
            elif word in _CLOSERS or word == "}":
                depth = max(0, depth - 1)
    return depths
