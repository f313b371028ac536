"""The user's settings file (.advisor.yaml): rules enabled or disabled, params, severities."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from advisor.engine.conditions import Scalar
from advisor.model import InputError, Severity


@dataclass(frozen=True)
class RuleSettings:
    """A user's settings of one rule: on or off, params, severity."""

    enabled: bool | None = None
    params: Mapping[str, Scalar] = field(default_factory=dict)
    severity: Severity | None = None


@dataclass(frozen=True)
class Settings:
    """A settings file (.advisor.yaml): per-rule settings and extra rule folders."""

    path: Path | None = None
    rules: Mapping[str, RuleSettings] = field(default_factory=dict)
    rules_dirs: tuple[Path, ...] = ()

    @property
    def where(self) -> str:
        return str(self.path) if self.path else ".advisor.yaml"


@dataclass(frozen=True)
class RuleOptions:
    """Where a command's rules come from: a settings file and extra rule folders."""

    settings: Path | None = None
    rules_dirs: tuple[Path, ...] = ()


def _scalar(value: object) -> Scalar:
    return value if isinstance(value, str | int | float | bool) else None


def load_settings(path: Path) -> Settings:
    if not path.is_file():
        raise InputError(str(path), "settings file not found")
    # imported here: the settings file is rare, and the parser and validator slow to import
    from advisor.core.validation import schema_errors
    from advisor.core.yamlio import load_data

    raw = load_data(path)
    if raw is None:
        return Settings(path=path)
    errors = schema_errors(raw, "settings.schema.json")
    if errors:
        raise InputError(str(path), errors[0])
    assert isinstance(raw, dict)  # the schema says so
    rules: dict[str, RuleSettings] = {}
    for rule_id, entry in (raw.get("rules") or {}).items():
        severity = entry.get("severity")
        rules[str(rule_id)] = RuleSettings(
            enabled=entry.get("enabled"),
            params={str(k): _scalar(v) for k, v in (entry.get("params") or {}).items()},
            severity=Severity(severity) if severity else None,
        )
    dirs = tuple((path.parent / str(d)).resolve() for d in raw.get("rules_dirs", []) or [])
    return Settings(path=path, rules=rules, rules_dirs=dirs)
