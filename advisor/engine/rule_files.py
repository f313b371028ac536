"""Where the rule files are and one file read: schema-checked, its id tied to its kind, its
file name and (built in) its folder. Compiling the rule is rules.py's job."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from advisor.core.checked_data import load_checked
from advisor.model import DataError, InputError

KIND_FOLDERS = {
    "symptom": "symptoms",
    "bottleneck": "bottlenecks",
    "feature": "features",
    "policy": "policies",
}


def rule_files(folder: Path, builtin: bool, kinds: Iterable[str]) -> list[Path]:
    if not folder.is_dir():
        raise InputError(str(folder), "rules folder not found")
    if builtin:
        return sorted(
            p
            for kind in kinds
            for p in (folder / KIND_FOLDERS[kind]).rglob("*.yaml")
            if p.is_file()
        )
    return sorted(p for p in folder.rglob("*.yaml") if p.is_file())


def load_rule_file(path: Path, builtin: bool) -> Mapping[str, object]:
    try:
        raw, errors = load_checked(path, "rule.schema.json")
    except InputError as exc:
        raise DataError(str(exc)) from None
    if errors:
        rule_id = raw.get("id") if isinstance(raw, dict) else None
        where = f" ({rule_id})" if rule_id else ""
        raise DataError(f"{path}{where}: {errors[0]}")
    assert isinstance(raw, dict)  # the schema requires an object
    kind = str(raw["kind"])
    rule_id = str(raw["id"])
    if not rule_id.startswith(f"{kind}."):
        raise DataError(f"{path}: $.id: '{rule_id}' must start with '{kind}.'")
    expected_stem = rule_id.split(".", 1)[1]
    if path.stem != expected_stem:
        raise DataError(f"{path}: file name must be {expected_stem}.yaml to match id {rule_id}")
    if builtin and path.parent.name != KIND_FOLDERS[kind]:
        raise DataError(f"{path}: a {kind} rule belongs in rules/{KIND_FOLDERS[kind]}/")
    return {str(k): v for k, v in raw.items()}
