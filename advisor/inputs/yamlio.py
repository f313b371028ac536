"""The only module importing ruamel.yaml: loading YAML data files and locating user documents.

Config edits are made on the original text, at the positions ruamel reports, and verified by
parsing the result again: ruamel's own dump would rewrite `True` as `true` and reflow comments,
so a dump-based round trip cannot keep upstream configs byte for byte.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError

from advisor.inputs.text import read_text
from advisor.model import InputError


def load_data(path: Path) -> Any:
    """Load a YAML file into plain Python objects (dicts, lists, scalars)."""
    text = read_text(path)
    loader = YAML(typ="safe")
    try:
        return loader.load(text)
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise InputError(str(path), f"{problem}{where}") from None


def dump_data(data: Any) -> str:
    """Plain data as block-style YAML (for showing rule fragments to people)."""
    out = io.StringIO()
    dumper = YAML(typ="safe", pure=True)
    dumper.default_flow_style = False
    dumper.sort_base_mapping_type_on_output = False  # type: ignore[assignment]
    dumper.dump(data, out)
    return out.getvalue()


@dataclass(frozen=True)
class Entry:
    """Where a mapping entry sits in the text (0-based lines and columns)."""

    key_line: int
    key_col: int
    value_line: int
    value_col: int
    kind: str  # "scalar", "mapping", "sequence"
    flow: bool  # a {flow} or [flow] collection
    last_line: int  # the last line holding the entry's content


def _last_line(node: Any, fallback: int) -> int:
    if isinstance(node, CommentedMap) and len(node):
        last = list(node.keys())[-1]
        key_line, _, value_line, _ = node.lc.data[last]
        return _last_line(node[last], max(key_line, value_line))
    if isinstance(node, CommentedSeq) and len(node):
        line, _ = node.lc.data[len(node) - 1]
        return _last_line(node[-1], line)
    return fallback


def _kind(node: Any) -> tuple[str, bool]:
    if isinstance(node, CommentedMap):
        return "mapping", bool(node.fa.flow_style())
    if isinstance(node, CommentedSeq):
        return "sequence", bool(node.fa.flow_style())
    return "scalar", False


class LocatedDocument:
    """A YAML document: its plain data at once, its positions (round-trip parse) on first use.

    Most checked files have nothing to report, so the slower round-trip parse that gives line and
    column numbers only runs for the files that need them.
    """

    def __init__(self, text: str, data: Any, where: str) -> None:
        self.text = text
        self.data = data
        self.where = where
        self._roundtrip: Any = None

    @property
    def roundtrip(self) -> Any:
        if self._roundtrip is None:
            self._roundtrip = _parse(YAML(typ="rt", pure=True), self.text, self.where)
        return self._roundtrip

    def entry(self, *keys: str) -> Entry | None:
        node = self.roundtrip
        for key in keys[:-1]:
            if not isinstance(node, CommentedMap) or key not in node:
                return None
            node = node[key]
        last = keys[-1]
        if not isinstance(node, CommentedMap) or last not in node:
            return None
        key_line, key_col, value_line, value_col = node.lc.data[last]
        kind, flow = _kind(node[last])
        return Entry(
            key_line, key_col, value_line, value_col, kind, flow, _last_line(node[last], value_line)
        )

    def children(self, *keys: str) -> list[str]:
        node = self.roundtrip
        for key in keys:
            node = node[key]
        return [str(k) for k in node] if isinstance(node, CommentedMap) else []


def _parse(loader: YAML, text: str, where: str) -> Any:
    try:
        return loader.load(text)
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise InputError(where, f"{getattr(exc, 'problem', None) or 'invalid YAML'}{at}") from None


def locate(text: str, where: str) -> LocatedDocument:
    """Plain data now (the C-accelerated safe loader when available), positions when asked."""
    return LocatedDocument(text, _parse(YAML(typ="safe"), text, where), where)
