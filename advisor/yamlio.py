"""The only module importing ruamel.yaml: loading YAML data files and user documents."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from advisor.model import InputError


def load_data(path: Path) -> Any:
    """Load a YAML file into plain Python objects (dicts, lists, scalars)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(str(path), f"cannot read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise InputError(str(path), "not UTF-8 text") from None
    loader = YAML(typ="safe", pure=True)
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
