"""Load rule files (one graph node per YAML file), validate them, apply the user's settings.

A broken rule file is a fatal error naming the file and the JSON path; nothing is skipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.inputs.resources import rules_dir
from advisor.inputs.validation import schema_errors
from advisor.inputs.yamlio import load_data
from advisor.model import DataError, InputError

KIND_FOLDERS = {
    "symptom": "symptoms",
    "bottleneck": "bottlenecks",
    "feature": "features",
    "policy": "policies",
}
KINDS = tuple(KIND_FOLDERS)
LEVELS = ("note", "warning", "error")


@dataclass(frozen=True)
class Rule:
    id: str
    kind: str
    path: Path
    data: Mapping[str, Any]
    params: Mapping[str, Any]  # effective values: defaults overridden by settings
    enabled: bool = True
    severity: str | None = None  # policies: overridden severity

    @property
    def title(self) -> str:
        return str(self.data["title"])

    @property
    def tags(self) -> list[str]:
        return [str(t) for t in self.data.get("tags", [])]

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)


@dataclass
class RuleSet:
    rules: dict[str, Rule] = field(default_factory=dict)
    sources: list[Path] = field(default_factory=list)

    def of_kind(self, kind: str, enabled_only: bool = True) -> list[Rule]:
        return [
            r for r in self.rules.values() if r.kind == kind and (r.enabled or not enabled_only)
        ]

    def __getitem__(self, rule_id: str) -> Rule:
        return self.rules[rule_id]

    def __contains__(self, rule_id: object) -> bool:
        return rule_id in self.rules


@dataclass(frozen=True)
class RuleSettings:
    enabled: bool | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    severity: str | None = None


@dataclass(frozen=True)
class Settings:
    path: Path | None = None
    rules: Mapping[str, RuleSettings] = field(default_factory=dict)
    rules_dirs: tuple[Path, ...] = ()


def load_settings(path: Path) -> Settings:
    if not path.is_file():
        raise InputError(str(path), "settings file not found")
    raw = load_data(path)
    if raw is None:
        return Settings(path=path)
    errors = schema_errors(raw, "settings.schema.json")
    if errors:
        raise InputError(str(path), errors[0])
    rules = {
        rule_id: RuleSettings(
            enabled=entry.get("enabled"),
            params=dict(entry.get("params", {})),
            severity=entry.get("severity"),
        )
        for rule_id, entry in (raw.get("rules") or {}).items()
    }
    dirs = tuple((path.parent / d).resolve() for d in raw.get("rules_dirs", []) or [])
    return Settings(path=path, rules=rules, rules_dirs=dirs)


def _rule_files(folder: Path, builtin: bool) -> list[Path]:
    if not folder.is_dir():
        raise InputError(str(folder), "rules folder not found")
    if builtin:
        return sorted(
            p
            for sub in KIND_FOLDERS.values()
            for p in (folder / sub).rglob("*.yaml")
            if p.is_file()
        )
    return sorted(p for p in folder.rglob("*.yaml") if p.is_file())


def _load_file(path: Path, builtin: bool) -> dict[str, Any]:
    try:
        raw = load_data(path)
    except InputError as exc:
        raise DataError(str(exc)) from None
    errors = schema_errors(raw, "rule.schema.json")
    if errors:
        rule_id = raw.get("id") if isinstance(raw, dict) else None
        where = f" ({rule_id})" if rule_id else ""
        raise DataError(f"{path}{where}: {errors[0]}")
    kind = raw["kind"]
    if not str(raw["id"]).startswith(f"{kind}."):
        raise DataError(f"{path}: $.id: '{raw['id']}' must start with '{kind}.'")
    expected_stem = str(raw["id"]).split(".", 1)[1]
    if path.stem != expected_stem:
        raise DataError(f"{path}: file name must be {expected_stem}.yaml to match id {raw['id']}")
    if builtin and path.parent.name != KIND_FOLDERS[kind]:
        raise DataError(f"{path}: a {kind} rule belongs in rules/{KIND_FOLDERS[kind]}/")
    return dict(raw)


def _params(raw: Mapping[str, Any], override: Mapping[str, Any], where: str) -> dict[str, Any]:
    declared = raw.get("params", {}) or {}
    values = {name: spec["default"] for name, spec in declared.items()}
    for name, value in override.items():
        if name not in declared:
            known = ", ".join(sorted(declared)) or "none"
            raise InputError(where, f"rule {raw['id']} has no param '{name}' (params: {known})")
        default = declared[name]["default"]
        numeric = isinstance(default, int | float) and not isinstance(default, bool)
        if numeric and (not isinstance(value, int | float) or isinstance(value, bool)):
            raise InputError(where, f"{raw['id']}.params.{name} must be a number, got {value!r}")
        if isinstance(default, bool) and not isinstance(value, bool):
            raise InputError(where, f"{raw['id']}.params.{name} must be true or false")
        values[name] = value
    return values


def load_rules(extra_dirs: Iterable[Path] = (), settings: Settings | None = None) -> RuleSet:
    """Built-in rules plus extra folders (a team's own rules), with settings applied."""
    settings = settings or Settings()
    ruleset = RuleSet()
    folders = [(rules_dir(), True)] + [(d, False) for d in [*extra_dirs, *settings.rules_dirs]]
    raw_rules: dict[str, tuple[Path, dict[str, Any]]] = {}
    for folder, builtin in folders:
        ruleset.sources.append(folder)
        for path in _rule_files(folder, builtin):
            raw = _load_file(path, builtin)
            if raw["id"] in raw_rules:
                other = raw_rules[raw["id"]][0]
                raise DataError(f"{path}: duplicate rule id {raw['id']} (also in {other})")
            raw_rules[raw["id"]] = (path, raw)
    where = str(settings.path) if settings.path else ".advisor.yaml"
    for rule_id in settings.rules:
        if rule_id not in raw_rules:
            raise InputError(where, f"unknown rule id {rule_id} (see: advisor rules list)")
    for rule_id, (path, raw) in raw_rules.items():
        override = settings.rules.get(rule_id, RuleSettings())
        if override.severity and raw["kind"] != "policy":
            raise InputError(where, f"{rule_id}: severity can only be set for policies")
        ruleset.rules[rule_id] = Rule(
            id=rule_id,
            kind=raw["kind"],
            path=path,
            data=raw,
            params=_params(raw, override.params, where),
            enabled=override.enabled if override.enabled is not None else True,
            severity=override.severity,
        )
    return ruleset
