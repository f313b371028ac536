"""The FSDP2 key schema a checked repository defines itself: the sections and keys of the
argument dataclasses in its `mindspeed_llm/fsdp2/utils/arguments.py`, read with `ast` (never
imported). The schema follows the code, not a version string: upstream moved the fused-op
switches from `training` to a new `optimization` section (MindSpeed-LLM 7e46b9b1, 2026-03-13)
while setup.py still said 26.0.0dev0, so a fork pinned before the move is judged by its own
dataclasses."""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from advisor.core.resources import schemas_dir

ARGUMENTS = "mindspeed_llm/fsdp2/utils/arguments.py"
BUNDLED = "config/mindspeed-fsdp2.schema.json"
_SUFFIX = "Arguments"  # ModelArguments -> the YAML section `model`
_MAX_BYTES = 2_000_000


@dataclass(frozen=True)
class KeySchema:
    """Section -> key -> its JSON schema (with `description` and `default` where known), the
    whole JSON schema, and where it came from (`source`: None for the bundled one)."""

    keys: dict[str, dict[str, dict[str, Any]]]
    document: dict[str, Any]
    source: str | None = None

    @property
    def text(self) -> str:
        """The schema's identity for cached verdicts."""
        return json.dumps(self.document, sort_keys=True)


@cache
def bundled_schema() -> KeySchema:
    document = json.loads((schemas_dir() / BUNDLED).read_text(encoding="utf-8"))
    keys = {s: dict(body["properties"]) for s, body in document["properties"].items()}
    return KeySchema(keys, document)


def repository_schema(root: Path | None) -> KeySchema | None:
    """The schema of the repository at `root` (None: it holds no readable arguments.py with
    argument dataclasses, so the bundled schema applies)."""
    if root is None:
        return None
    path = root / ARGUMENTS
    try:
        stat = path.stat()
    except OSError:
        return None
    if not path.is_file() or stat.st_size > _MAX_BYTES:
        return None
    return _read(str(path.resolve()), stat.st_mtime_ns, stat.st_size)


@cache
def _read(path: str, mtime_ns: int, size: int) -> KeySchema | None:
    """Keyed on the file's time and size: an edited arguments.py is read again."""
    try:
        tree = ast.parse(Path(path).read_bytes(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return None
    keys = sections(tree)
    if not keys:
        return None
    base = bundled_schema().document
    document = {
        "$schema": base["$schema"],
        "type": "object",
        "additionalProperties": False,
        "properties": {
            section: {"type": "object", "additionalProperties": False, "properties": body}
            for section, body in keys.items()
        },
        "$defs": base["$defs"],
    }
    return KeySchema(keys, document, ARGUMENTS)


def sections(tree: ast.Module) -> dict[str, dict[str, dict[str, Any]]]:
    """Each `@dataclass class XArguments` of the module as section `x`: its fields with their
    JSON schema (class variables and methods are not keys)."""
    found: dict[str, dict[str, dict[str, Any]]] = {}
    for node in tree.body:
        if not (isinstance(node, ast.ClassDef) and node.name.endswith(_SUFFIX)):
            continue
        if not any(_is_dataclass(d) for d in node.decorator_list):
            continue
        section = node.name[: -len(_SUFFIX)].lower()
        if not section:
            continue
        body: dict[str, dict[str, Any]] = {}
        for item in node.body:
            if not isinstance(item, ast.AnnAssign) or not isinstance(item.target, ast.Name):
                continue
            if _is_classvar(item.annotation) or not _init_field(item.value):
                continue
            spec = dict(annotation_schema(item.annotation))
            spec["description"] = " ".join(ast.unparse(item.annotation).split())
            known, default = _default(item.value)
            if known:
                spec["default"] = default
            body[item.target.id] = spec
        found[section] = body
    return found


def _name(node: ast.expr) -> str:
    """`Optional` of `Optional`, `typing.Optional`, `t.Optional`."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _is_dataclass(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return _name(target) == "dataclass"


def _is_classvar(annotation: ast.expr) -> bool:
    target = annotation.value if isinstance(annotation, ast.Subscript) else annotation
    return _name(target) == "ClassVar"


def _field_call(value: ast.expr | None) -> ast.Call | None:
    if isinstance(value, ast.Call) and _name(value.func) == "field":
        return value
    return None


def _init_field(value: ast.expr | None) -> bool:
    """A field the dataclass's __init__ takes (`field(init=False)` is no argument)."""
    call = _field_call(value)
    if call is None:
        return True
    for kw in call.keywords:
        if kw.arg == "init" and isinstance(kw.value, ast.Constant):
            return bool(kw.value.value)
    return True


def _default(value: ast.expr | None) -> tuple[bool, Any]:
    """(whether the default is a literal, the default)."""
    call = _field_call(value)
    if call is None:
        return _literal(value) if value is not None else (False, None)
    for kw in call.keywords:
        if kw.arg == "default":
            return _literal(kw.value)
        if kw.arg == "default_factory":
            body = kw.value.body if isinstance(kw.value, ast.Lambda) else None
            if body is not None:
                return _literal(body)
            if _name(kw.value) in ("list", "dict"):
                return True, [] if _name(kw.value) == "list" else {}
    return False, None


def _literal(node: ast.expr) -> tuple[bool, Any]:
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False, None
    return True, value


_SCALARS = {
    "str": {"$ref": "#/$defs/str"},
    "int": {"$ref": "#/$defs/int"},
    "float": {"$ref": "#/$defs/float"},
    "bool": {"$ref": "#/$defs/bool"},
}
_NULL = {"type": "null"}


def annotation_schema(node: ast.expr) -> dict[str, Any]:
    """The JSON schema of the values argparse accepts for a field of this annotation, written
    as the bundled schema writes them (a list also takes one item; a type the reader does not
    know accepts anything: unknown is not wrong)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return annotation_schema(ast.parse(node.value, mode="eval").body)
        except SyntaxError:
            return {}
    if isinstance(node, ast.Constant) and node.value is None:
        return dict(_NULL)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _union([node.left, node.right])
    if isinstance(node, ast.Subscript):
        return _generic(_name(node.value), node.slice)
    name = _name(node)
    if name in _SCALARS:
        return dict(_SCALARS[name])
    if name in ("dict", "Dict"):
        return {"type": "object"}
    if name in ("list", "List"):
        return {"anyOf": [{"type": "array"}, {}]}
    return {}


def _args(node: ast.expr) -> list[ast.expr]:
    return list(node.elts) if isinstance(node, ast.Tuple) else [node]


def _union(parts: list[ast.expr]) -> dict[str, Any]:
    non_null = [p for p in parts if not (isinstance(p, ast.Constant) and p.value is None)]
    has_null = len(non_null) < len(parts)
    inner = [annotation_schema(p) for p in non_null]
    if any(not s for s in inner):
        return {}  # one alternative accepts anything
    body = inner[0] if len(inner) == 1 else {"anyOf": inner}
    return {"anyOf": [body, dict(_NULL)]} if has_null else body


def _generic(name: str, index: ast.expr) -> dict[str, Any]:
    args = _args(index)
    if name == "Optional":
        return _union([args[0], ast.Constant(None)])
    if name == "Union":
        return _union(args)
    if name == "Literal":
        values = [a.value for a in args if isinstance(a, ast.Constant)]
        return {"enum": values} if len(values) == len(args) else {}
    if name in ("List", "list", "Sequence", "Tuple", "tuple"):
        item = annotation_schema(args[0]) if args else {}
        return {"anyOf": [{"type": "array", "items": item}, item]} if item else {}
    if name in ("Dict", "dict", "Mapping"):
        return {"type": "object"}
    return {}
