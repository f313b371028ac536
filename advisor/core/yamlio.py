"""The only module importing ruamel.yaml: loading YAML data files and locating user documents.

Config edits are made on the original text, at the positions ruamel reports, and verified by
parsing the result again: ruamel's own dump would rewrite `True` as `true` and reflow comments,
so a dump-based round trip cannot keep upstream configs byte for byte.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError

from advisor.core import limits
from advisor.core.text import read_text
from advisor.model import InputError


def load_data(path: Path) -> Any:
    """Load a YAML file into plain Python objects (dicts, lists, scalars)."""
    return _parse(YAML(typ="safe"), read_text(path), str(path))


def _flow_depth(text: str) -> int:
    """The deepest nesting of [ and { outside quotes and comments (the parser recurses per
    level: a 50,000-deep document crashes it before it can report anything)."""
    depth = deepest = 0
    quote = ""
    comment = False
    for ch in text:
        if comment:
            comment = ch != "\n"
        elif quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            comment = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}" and depth:
            depth -= 1
    return deepest


def _data_depth(data: Any, limit: int) -> int:
    """How deep mappings and lists nest (block style as well as flow), counted without
    recursion; stops past `limit` (everything that reads the data afterwards recurses)."""
    deepest = 0
    pending: list[tuple[Any, int]] = [(data, 1)]
    seen: set[int] = set()
    while pending:
        node, depth = pending.pop()
        if not isinstance(node, dict | list) or id(node) in seen:
            continue
        seen.add(id(node))  # an alias is visited once
        deepest = max(deepest, depth)
        if deepest > limit:
            break
        children = node.values() if isinstance(node, dict) else node
        pending.extend((child, depth + 1) for child in children)
    return deepest


def _expanded_size(data: Any, limit: int) -> int:
    """How many values `data` holds once every alias is expanded, counted without expanding
    (a shared node is counted once per reference from its memoised size); stops past `limit`."""
    sizes: dict[int, int] = {}

    def size(node: Any) -> int:
        if not isinstance(node, dict | list):
            return 1
        known = sizes.get(id(node))
        if known is not None:
            return known
        sizes[id(node)] = 1  # a cycle counts once
        children = list(node.values()) if isinstance(node, dict) else node
        total = 1
        for child in children:
            total += size(child)
            if total > limit:
                break
        sizes[id(node)] = total
        return total

    return size(data)


def _check_limits(text: str, where: str) -> None:
    longest = max((len(line) for line in text.splitlines()), default=0)
    if longest > limits.text_max_line():
        raise InputError(
            where,
            f"a line of {longest:,} characters is longer than {limits.text_max_line():,} "
            "(ADVISOR_MAX_LINE_CHARS)",
        )
    depth = _flow_depth(text)
    if depth > limits.yaml_max_depth():
        raise InputError(
            where,
            f"nested {depth:,} levels deep, more than {limits.yaml_max_depth()} "
            "(ADVISOR_YAML_MAX_DEPTH)",
        )


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
    _check_limits(text, where)
    try:
        data = loader.load(text)
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise InputError(where, f"{getattr(exc, 'problem', None) or 'invalid YAML'}{at}") from None
    except RecursionError:
        raise InputError(where, "nested too deeply to parse") from None
    except ValueError as exc:  # an integer of more digits than Python converts (4,300)
        digits = re.search(r"value has (\d+) digits", str(exc))
        size = f" of {int(digits.group(1)):,} digits" if digits else ""
        raise InputError(where, f"holds an integer{size}, too long to be a setting") from None
    depth = _data_depth(data, limits.yaml_max_depth())
    if depth > limits.yaml_max_depth():
        raise InputError(
            where,
            f"nested more than {limits.yaml_max_depth()} levels deep (ADVISOR_YAML_MAX_DEPTH)",
        )
    if "*" in text:  # aliases: refuse a document that expands beyond the limit
        nodes = _expanded_size(data, limits.yaml_max_nodes())
        if nodes > limits.yaml_max_nodes():
            raise InputError(
                where,
                f"its aliases expand to more than {limits.yaml_max_nodes():,} values "
                "(ADVISOR_YAML_MAX_NODES): an alias bomb?",
            )
    return data


def locate(text: str, where: str) -> LocatedDocument:
    """Plain data now (the C-accelerated safe loader when available), positions when asked."""
    return LocatedDocument(text, _parse(YAML(typ="safe"), text, where), where)
