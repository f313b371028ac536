"""Bash words expanded the way bash expands them, each character remembering where it came from.

Enough of bash for launch scripts that build argument groups in variables: quotes, escapes,
`$V` / `${V}` / `${V:-x}`, arrays (`${A[@]}`, `${A[*]}`, `${A[N]}`), `$((...))` integer arithmetic, field splitting of unquoted expansions
and line continuations. What cannot be known without running the script (`$(...)`, backticks,
positional parameters, other `${...}` forms) becomes an opaque character, so a field holding one
has an unknown value. Knowing the file offset of every character is what lets an edit change
the one place a value comes from: the flag's text in its group string, or the knob variable
`TP=8` when the flag reads `${TP}`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from advisor.shell.words import double_quoted_end, group_end

OPAQUE = "\x00"  # stands for text only running the script would produce
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ELEMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\[(@|\*|[0-9]+)\]")
_DEFAULT_FORM = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(:?[-=])(.*)$", re.DOTALL)


@dataclass(frozen=True)
class Char:
    ch: str
    pos: int | None  # offset in the file of the literal this character is; None: computed
    var: str | None = None  # the innermost variable whose literal value holds it
    ref: tuple[int, int] | None = None  # span of the `$var` reference that brought it there
    sure: bool = True  # False: assigned inside a conditional block, the value may differ
    split: bool = False  # from an unquoted expansion: whitespace here separates fields


Value = tuple[Char, ...]


@dataclass(frozen=True)
class Field:
    """One argument after expansion and field splitting."""

    chars: Value

    @property
    def text(self) -> str:
        return "".join(c.ch for c in self.chars)

    @property
    def opaque(self) -> bool:
        return any(c.ch == OPAQUE for c in self.chars)

    @property
    def sure(self) -> bool:
        return all(c.sure for c in self.chars)

    def span(self) -> tuple[int, int] | None:
        """The file span the field's text is a copy of, when it is one contiguous literal."""
        positions = [c.pos for c in self.chars]
        if not positions or any(p is None for p in positions):
            return None
        first = positions[0]
        assert first is not None
        if positions != list(range(first, first + len(positions))):
            return None
        return first, first + len(positions)

    @property
    def variable(self) -> str | None:
        """The variable whose whole literal value this field is (a knob such as TP), if any."""
        names = {c.var for c in self.chars}
        refs = {c.ref for c in self.chars}
        if len(names) == 1 and len(refs) == 1 and None not in names:
            return names.pop()
        return None


def split_fields(chars: Value) -> list[Field]:
    """Field splitting: unquoted-expansion whitespace separates fields; empty fields vanish."""
    fields: list[Field] = []
    current: list[Char] = []
    for c in chars:
        if c.split and c.ch in " \t\n":
            if current:
                fields.append(Field(tuple(current)))
            current = []
            continue
        current.append(c)
    if current:
        fields.append(Field(tuple(current)))
    return fields


Lookup = Callable[[str], Value | None]
# an array variable's elements (None: not an array, or not set)
ArrayLookup = Callable[[str], tuple[Value, ...] | None]


class ShellError(ValueError):
    """Text bash itself would reject (an unterminated quote or substitution)."""

    def __init__(self, offset: int, message: str) -> None:
        super().__init__(message)
        self.offset = offset


def _arith(expression: str) -> int | None:
    """Integer arithmetic of + - * / % and parentheses (bash semantics for / and %)."""
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError:
        return None

    def value(node: ast.AST) -> int | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return int(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            inner = value(node.operand)
            return None if inner is None else (-inner if isinstance(node.op, ast.USub) else inner)
        if isinstance(node, ast.BinOp):
            a, b = value(node.left), value(node.right)
            if a is None or b is None:
                return None
            if isinstance(node.op, ast.Add):
                return a + b
            if isinstance(node.op, ast.Sub):
                return a - b
            if isinstance(node.op, ast.Mult):
                return a * b
            if isinstance(node.op, ast.Div | ast.FloorDiv | ast.Mod) and b != 0:
                quotient = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)  # truncates
                return quotient if not isinstance(node.op, ast.Mod) else a - b * quotient
        return None

    return value(tree.body)


class Expander:
    """Expands words of one file's text against the variables seen so far."""

    def __init__(self, text: str, lookup: Lookup, elements: ArrayLookup | None = None) -> None:
        self.text = text
        self.lookup = lookup
        self.elements = elements
        self.undefined: set[str] = set()  # variables read but never assigned

    def word(self, start: int, end: int, *, quoted: bool = False) -> Value:
        return tuple(self._walk(start, end, quoted))

    def _walk(self, i: int, end: int, quoted: bool) -> list[Char]:
        text = self.text
        out: list[Char] = []
        while i < end:
            ch = text[i]
            if ch == "\\":
                following = text[i + 1 : i + 2]
                if following == "\n":  # a line continuation disappears, quoted or not
                    i += 2
                    continue
                if not quoted or (following and following in '$`"\\'):
                    if following:
                        out.append(Char(following, i + 1))
                    i += 2
                    continue
            if not quoted and ch == "'":
                close = text.find("'", i + 1, end)
                if close < 0:
                    raise ShellError(i, "unterminated single quote")
                out.extend(Char(text[k], k) for k in range(i + 1, close))
                i = close + 1
                continue
            if not quoted and ch == '"':
                closing = double_quoted_end(text, i + 1)
                if closing is None or closing > end:
                    raise ShellError(i, "unterminated double quote")
                out.extend(self._walk(i + 1, closing - 1, quoted=True))
                i = closing
                continue
            if ch == "`":
                close = text.find("`", i + 1, end)
                if close < 0:
                    raise ShellError(i, "unterminated backtick substitution")
                out.append(Char(OPAQUE, None, split=not quoted))
                i = close + 1
                continue
            if ch == "$":
                i = self._dollar(i, end, quoted, out)
                continue
            out.append(Char(ch, i))
            i += 1
        return out

    def _dollar(self, i: int, end: int, quoted: bool, out: list[Char]) -> int:
        text = self.text
        nxt = text[i + 1 : i + 2]
        if nxt == "(" or nxt == "{":
            close = group_end(text, i + 1)
            if close is None or close > end:
                raise ShellError(i, f"unterminated ${nxt} substitution")
            if text.startswith("$((", i) and text[close - 2 : close] == "))":
                out.extend(self._arithmetic(text[i + 3 : close - 2], quoted))
            elif nxt == "{":
                out.extend(self._braced(i, close, quoted))
            else:
                out.append(Char(OPAQUE, None, split=not quoted))
            return close
        m = _NAME.match(text, i + 1)
        if m is not None and m.end() <= end:
            out.extend(self._variable(m.group(0), (i, m.end()), quoted))
            return m.end()
        if nxt and nxt in "0123456789@*#?$!-":
            out.append(Char(OPAQUE, None, split=not quoted))
            return i + 2
        out.append(Char("$", i))
        return i + 1

    def _variable(self, name: str, ref: tuple[int, int], quoted: bool) -> list[Char]:
        value = self.lookup(name)
        if value is None:
            self.undefined.add(name)
            return []
        return self._brought(name, value, ref, quoted)

    @staticmethod
    def _brought(name: str, value: Value, ref: tuple[int, int], quoted: bool) -> list[Char]:
        """A variable's value where `ref` expands it (its characters remember both)."""
        return [
            replace(
                c,
                var=c.var if c.var is not None else name,
                ref=c.ref if c.var is not None else ref,
                split=not quoted,
            )
            for c in value
        ]

    def _element(self, name: str, index: str, ref: tuple[int, int], quoted: bool) -> list[Char]:
        """`${A[@]}` (each element its own field, quoted or not), `${A[*]}` (joined by a
        space: one field when quoted), `${A[N]}`; a plain string is an array of one element."""
        items = self.elements(name) if self.elements is not None else None
        if items is None:
            if index in ("@", "*", "0"):
                return self._variable(name, ref, quoted)
            return [Char(OPAQUE, None, split=not quoted)]
        if index.isdigit():
            k = int(index)
            return self._brought(name, items[k], ref, quoted) if k < len(items) else []
        out: list[Char] = []
        for k, item in enumerate(items):
            if k:
                out.append(Char(" ", None, split=index == "@" or not quoted))
            out.extend(self._brought(name, item, ref, quoted))
        return out

    def _braced(self, start: int, close: int, quoted: bool) -> list[Char]:
        inner = self.text[start + 2 : close - 1]
        if _NAME.fullmatch(inner):
            return self._variable(inner, (start, close), quoted)
        element = _ELEMENT.fullmatch(inner)
        if element is not None:
            return self._element(element.group(1), element.group(2), (start, close), quoted)
        m = _DEFAULT_FORM.match(inner)
        if m is None:
            return [Char(OPAQUE, None, split=not quoted)]
        value = self.lookup(m.group(1))
        empty_counts = m.group(2).startswith(":")
        if value is not None and (value or not empty_counts):
            return self._variable(m.group(1), (start, close), quoted)
        default_start = start + 2 + len(m.group(1)) + len(m.group(2))
        return self._walk(default_start, close - 1, quoted)

    def _arithmetic(self, expression: str, quoted: bool) -> list[Char]:
        sure = True

        def substitute(m: re.Match[str]) -> str:
            nonlocal sure
            name = m.group(1) or m.group(2) or m.group(3)
            value = self.lookup(name)
            if value is None:
                self.undefined.add(name)
                return "0"
            sure = sure and all(c.sure for c in value)
            return "".join(c.ch for c in value) or "0"

        plain = re.sub(
            r"\$\{([A-Za-z_]\w*)\}|\$([A-Za-z_]\w*)|\b([A-Za-z_]\w*)\b", substitute, expression
        )
        result = _arith(plain) if OPAQUE not in plain else None
        if result is None:
            return [Char(OPAQUE, None, split=not quoted)]
        return [Char(ch, None, sure=sure, split=not quoted) for ch in str(result)]
