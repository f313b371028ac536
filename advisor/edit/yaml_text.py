"""Minimal text edits of a YAML config at the positions ruamel reports.

Only the edited line changes (or one line is added): comments, key order, quotes, the file's
boolean spelling (`True` vs `true`), blank lines and CRLF endings stay as they were. Every edit
is verified by parsing the result: the data must equal the original plus exactly the change.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

from advisor.core.values import YAML_SPECIAL_WORDS
from advisor.core.yamlio import LocatedDocument, locate
from advisor.model import InputError

_BOOL_TOKEN = re.compile(r":\s+(True|False|true|false)\s*(#.*)?$", re.MULTILINE)
_PLAIN_SAFE = re.compile(r"^[A-Za-z0-9_./@+-][A-Za-z0-9_./@+:, -]*$")


def _scalar_end(line: str, start: int) -> int:
    if start < len(line) and line[start] in "\"'":
        quote = line[start]
        i = start + 1
        while i < len(line):
            if quote == "'" and line[i] == "'" and i + 1 < len(line) and line[i + 1] == "'":
                i += 2
                continue
            if quote == '"' and line[i] == "\\":
                i += 2
                continue
            if line[i] == quote:
                return i + 1
            i += 1
        return len(line)
    comment = line.find(" #", start)
    end = comment if comment >= 0 else len(line)
    return len(line[:end].rstrip())


class YamlTextEditor:
    """Applies set/remove edits to a config's text; `result()` gives the new text."""

    def __init__(self, path: Path, raw: str) -> None:
        """`raw` is the config's text exactly as read (the edits and the diff start from it)."""
        self.path = path
        crlf = raw.count("\r\n")
        lone_cr, lone_lf = raw.count("\r") - crlf, raw.count("\n") - crlf
        if sum(1 for n in (crlf, lone_cr, lone_lf) if n) > 1:
            raise InputError(str(path), "mixed line endings (CRLF, LF, CR): refusing to edit it")
        # the file's own line ending is kept: CRLF (Windows), CR alone (classic Mac) or LF
        self.newline = "\r\n" if crlf else "\r" if lone_cr else "\n"
        self.original = raw
        normalized = raw.replace("\r\n", "\n").replace("\r", "\n")
        self.final_newline = normalized.endswith("\n")
        self.lines = normalized.split("\n")
        if self.final_newline:
            self.lines.pop()
        self.doc = self._parse()
        if not isinstance(self.doc.data, dict):
            raise InputError(str(path), "a training config must be a YAML mapping")
        self.expected: dict[str, Any] = copy.deepcopy(self.doc.data)
        styles = [m.group(1) for m in _BOOL_TOKEN.finditer(normalized)]
        self.title_bools = sum(s[0].isupper() for s in styles) > len(styles) / 2

    def _text(self) -> str:
        body = "\n".join(self.lines) + ("\n" if self.final_newline else "")
        return body

    def _parse(self) -> LocatedDocument:
        return locate(self._text(), str(self.path))

    def _indent(self) -> int:
        for section in self.doc.children():
            entry = self.doc.entry(section)
            if entry and entry.kind == "mapping" and not entry.flow:
                first = self.doc.children(section)
                if first:
                    child = self.doc.entry(section, first[0])
                    if child:
                        return child.key_col
        return 2

    def _format(self, value: Any, old: str | None) -> str:
        if isinstance(value, bool):
            title = (
                old[0].isupper() if old and old.lower() in ("true", "false") else self.title_bools
            )
            word = "true" if value else "false"
            return word.capitalize() if title else word
        if isinstance(value, int | float):
            return str(value)
        text = str(value)
        if old and old[:1] in "\"'":
            return json.dumps(text) if old[0] == '"' else "'" + text.replace("'", "''") + "'"
        plain = (
            _PLAIN_SAFE.match(text) and text.lower() not in YAML_SPECIAL_WORDS and ": " not in text
        )
        numeric = re.fullmatch(r"[+-]?[0-9.]+([eE][+-]?[0-9]+)?", text)
        return text if plain and not numeric else json.dumps(text)

    def _where(self, dotted: str) -> list[str]:
        keys = dotted.split(".")
        if not all(keys):
            raise InputError(str(self.path), f"'{dotted}' is not a dotted key path")
        return keys

    def _expect(self, keys: list[str]) -> dict[str, Any]:
        """The expected data's mapping that holds the last key (created as needed)."""
        node = self.expected
        for key in keys[:-1]:
            if not isinstance(node.get(key), dict):
                node[key] = {}
            node = node[key]
        return node

    def set(self, dotted: str, value: Any) -> None:
        keys = self._where(dotted)
        entry = self.doc.entry(*keys)
        if entry is not None:
            self._replace(dotted, entry.kind, entry.value_line, entry.value_col, value)
        else:
            self._insert(keys, value)
        self._expect(keys)[keys[-1]] = value
        self.doc = self._parse()

    def remove(self, dotted: str) -> None:
        keys = self._where(dotted)
        entry = self.doc.entry(*keys)
        if entry is None:
            return
        if entry.kind != "scalar" or entry.value_line != entry.key_line:
            raise InputError(str(self.path), f"{dotted} spans several lines: remove it by hand")
        del self.lines[entry.key_line]
        holder = self._expect(keys)
        holder.pop(keys[-1], None)
        if len(keys) == 2:
            section = keys[0]
            sec = self.doc.entry(section)
            header_only = (
                sec is not None and self.lines[sec.key_line].strip().rstrip(":") == section
            )
            if not holder and sec is not None and not sec.flow and header_only:
                # the section is now empty: drop its header too, rather than leave a null section
                del self.lines[sec.key_line]
                self.expected.pop(section)
        self.doc = self._parse()

    def _replace(self, dotted: str, kind: str, line_no: int, col: int, value: Any) -> None:
        if kind != "scalar":
            raise InputError(
                str(self.path), f"{dotted} holds a {kind}; only single values are edited"
            )
        line = self.lines[line_no]
        if line[col : col + 1] in ("|", ">"):
            raise InputError(str(self.path), f"{dotted} is a block scalar: edit it by hand")
        if col >= len(line.rstrip()):  # an empty value (`key:`)
            self.lines[line_no] = line.rstrip() + " " + self._format(value, None)
            return
        end = _scalar_end(line, col)
        old = line[col:end]
        self.lines[line_no] = line[:col] + self._format(value, old) + line[end:]

    def _insert(self, keys: list[str], value: Any) -> None:
        *parent, key = keys
        if not parent:  # a top-level key: appended at the end of the file
            if self.lines and not self.lines[-1].strip():
                self.lines.pop()
            self.lines.append(f"{key}: {self._format(value, None)}")
            self.final_newline = True
            return
        indent = self._indent()
        sec = self.doc.entry(*parent)
        if sec is None:
            if len(parent) > 1:
                raise InputError(
                    str(self.path), f"{'.'.join(parent)} does not exist: add {key} by hand"
                )
            if self.lines and self.lines[-1].strip():
                self.lines.append("")
            self.lines.extend(
                [f"{parent[0]}:", " " * indent + f"{key}: {self._format(value, None)}"]
            )
            self.final_newline = True
            return
        section = ".".join(parent)
        if sec.flow:
            raise InputError(
                str(self.path), f"section {section} is written in flow style: edit it by hand"
            )
        depth_indent = sec.key_col + indent
        new_line = " " * depth_indent + f"{key}: {self._format(value, None)}"
        if sec.kind == "scalar":
            holder: Any = self.doc.data
            for part in parent:
                holder = holder.get(part) if isinstance(holder, dict) else None
            if holder is not None:
                raise InputError(str(self.path), f"{section} is not a mapping")
            self.lines.insert(sec.key_line + 1, new_line)
            return
        children = self.doc.children(*parent)
        first = self.doc.entry(*parent, children[0]) if children else None
        if first is not None:
            new_line = " " * first.key_col + f"{key}: {self._format(value, None)}"
        self.lines.insert(sec.last_line + 1, new_line)

    def result(self) -> str:
        """The edited text in the file's own newline style, verified by parsing it."""
        text = self._text()
        data = locate(text, str(self.path)).data
        if data != self.expected:
            raise InputError(
                str(self.path), "the edit would change more than the intended keys: refusing it"
            )
        return text.replace("\n", self.newline) if self.newline != "\n" else text
