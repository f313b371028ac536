"""Load rule files (one graph node per YAML file), validate them, compile them into typed rules.

A broken rule file is a fatal error naming the file and the JSON path; nothing is skipped. After
schema validation each file becomes a frozen dataclass of its kind (engine/rule_model.py) with
its conditions compiled and its params bound to the effective values (defaults < settings), so
no other module reads raw rule data.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict, TypeVar

from advisor.core.resources import rules_dir
from advisor.engine.conditions import Condition, Scalar, compile_condition, param_name
from advisor.engine.rule_checks import check_rule_data
from advisor.engine.rule_files import KIND_FOLDERS, load_rule_file, rule_files
from advisor.engine.rule_model import (
    Address,
    BottleneckRule,
    Ceiling,
    Change,
    ChangeOp,
    Compare,
    Conflict,
    Cost,
    Docs,
    Effect,
    Efficacy,
    Evidence,
    Example,
    FeatureRule,
    Levels,
    Location,
    Param,
    PolicyRule,
    Reference,
    Requirement,
    Rule,
    SymptomRule,
    VerifyItem,
)
from advisor.engine.settings import RuleSettings, Settings, load_settings
from advisor.model import Applicability, DataError, Direction, InputError, PatchTarget, Severity

__all__ = ["KINDS", "RuleSet", "Settings", "load_rules", "load_settings"]

KINDS = tuple(KIND_FOLDERS)
R = TypeVar("R", bound=Rule)


@dataclass
class RuleSet:
    """The rules loaded, by id, and the folders they came from."""

    rules: dict[str, Rule] = field(default_factory=dict)
    sources: list[Path] = field(default_factory=list)

    def of_kind(self, kind: str, enabled_only: bool = True) -> list[Rule]:
        return [
            r for r in self.rules.values() if r.kind == kind and (r.enabled or not enabled_only)
        ]

    def of_type(self, cls: type[R], enabled_only: bool = True) -> list[R]:
        return [
            r for r in self.rules.values() if isinstance(r, cls) and (r.enabled or not enabled_only)
        ]

    def feature(self, rule_id: str) -> FeatureRule | None:
        rule = self.rules.get(rule_id)
        return rule if isinstance(rule, FeatureRule) else None

    def __getitem__(self, rule_id: str) -> Rule:
        return self.rules[rule_id]

    def __contains__(self, rule_id: object) -> bool:
        return rule_id in self.rules


# ---------------------------------------------------------------- typed reads of validated YAML


class _Node:
    """A schema-valid YAML mapping read with types (the schema guarantees the shapes)."""

    def __init__(self, data: object, rule: _Compiler) -> None:
        self.data: Mapping[str, object] = data if isinstance(data, Mapping) else {}
        self.rule = rule

    def __contains__(self, key: str) -> bool:
        return key in self.data

    def text(self, key: str, default: str = "") -> str:
        value = self.data.get(key)
        return default if value is None else str(value)

    def opt_text(self, key: str) -> str | None:
        value = self.data.get(key)
        return None if value is None else str(value)

    def items(self, key: str) -> list[object]:
        value = self.data.get(key)
        return list(value) if isinstance(value, Sequence) and not isinstance(value, str) else []

    def texts(self, key: str) -> tuple[str, ...]:
        return tuple(str(v) for v in self.items(key))

    def flag(self, key: str) -> bool:
        return self.data.get(key) is True

    def node(self, key: str) -> _Node:
        return _Node(self.data.get(key), self.rule)

    def nodes(self, key: str) -> list[_Node]:
        return [_Node(item, self.rule) for item in self.items(key)]

    def scalar(self, key: str) -> Scalar:
        value = self.data.get(key)
        return value if isinstance(value, str | int | float | bool) else None

    def number(self, key: str) -> float | None:
        """A number or a `{param: NAME}` bound to the param's effective value."""
        value = self.data.get(key)
        if param_name(value) is not None:
            value = self.rule.param(str(param_name(value)))
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return float(value)

    def condition(self, key: str) -> Condition | None:
        if self.data.get(key) is None:
            return None
        return compile_condition(self.data[key], self.rule.param)


class _Compiler:
    def __init__(self, path: Path, raw: Mapping[str, object], values: Mapping[str, Scalar]):
        self.path = path
        self.id = str(raw["id"])
        self.values = values

    def param(self, name: str) -> Scalar:
        if name not in self.values:
            raise DataError(f"{self.path}: uses param '{name}' that it does not declare")
        return self.values[name]


def _excluding(cost: _Node) -> tuple[str, ...]:
    one = cost.data.get("excluding")  # one fact or a list: the parts others explain
    return (str(one),) if isinstance(one, str) else cost.texts("excluding")


def _change(node: _Node) -> Change:
    ops = tuple(
        ChangeOp(
            op=op.text("op"),
            path=op.text("path"),
            value=op.scalar("value"),
            # bounds and steps: numbers or {param: NAME}
            **{k: op.number(k) for k in ("default", "by", "max", "min")},
            near=op.texts("near"),
            unless=op.condition("unless"),
        )
        for op in node.nodes("ops")
    )
    return Change(
        target=PatchTarget(node.text("target")),
        applicability=Applicability(node.text("applicability")),
        ops=ops,
        advice=node.opt_text("advice"),
    )


class _Common(TypedDict):
    id: str
    kind: str
    title: str
    docs: Docs
    references: tuple[Reference, ...]
    status: str
    tags: tuple[str, ...]
    params: Mapping[str, Param]
    path: Path
    enabled: bool
    platforms: tuple[str, ...]


def _compile(path: Path, raw: Mapping[str, object], settings: RuleSettings, where: str) -> Rule:
    raw_params = raw.get("params")
    declared: Mapping[str, object] = raw_params if isinstance(raw_params, Mapping) else {}
    values = _param_values(str(raw["id"]), declared, settings.params, where)
    compiler = _Compiler(path, raw, values)
    top = _Node(raw, compiler)
    docs = top.node("docs")
    example = docs.node("example")
    specs = {str(name): _Node(spec, compiler) for name, spec in declared.items()}
    params = {
        name: Param(spec.scalar("default"), spec.text("unit"), spec.text("doc"), values[name])
        for name, spec in specs.items()
    }
    base: _Common = {
        "id": compiler.id,
        "kind": top.text("kind"),
        "title": top.text("title"),
        "docs": Docs(
            docs.text("why"),
            Example(example.text("before"), example.text("after")),
            docs.opt_text("notes"),
        ),
        "references": tuple(
            Reference(r.text("source"), r.text("section")) for r in top.nodes("references")
        ),
        "status": top.text("status"),
        "tags": top.texts("tags"),
        "params": params,
        "path": path,
        "enabled": settings.enabled if settings.enabled is not None else True,
        "platforms": top.texts("platforms"),
    }
    kind = base["kind"]
    if kind == "symptom":
        levels = top.node("levels")
        cost = top.node("cost")
        return SymptomRule(
            **base,
            measure=top.text("measure"),
            compare=Compare(top.text("compare")),
            fine=top.number("fine") or 0.0,
            levels=Levels(levels.number("note"), levels.number("warning"), levels.number("error")),
            message=top.text("message"),
            when=top.condition("when"),
            cost=Cost(cost.opt_text("scale"), cost.data.get("none") is True, _excluding(cost)),
        )
    if kind == "bottleneck":
        evidence = top.node("evidence")
        return BottleneckRule(
            **base,
            evidence=Evidence(evidence.texts("any"), evidence.texts("all")),
            message=top.text("message"),
            needs_level=top.opt_text("needs_level"),
        )
    if kind == "feature":
        effect = top.node("effect")
        return FeatureRule(
            **base,
            addresses=tuple(
                Address(
                    a.text("bottleneck"),
                    int(a.number("order") or 0),
                    a.condition("when"),
                    a.opt_text("otherwise"),
                )
                for a in top.nodes("addresses")
            ),
            change=_change(top.node("change")),
            effect=Effect(
                effect.text("gain"),
                effect.text("risk"),
                effect.opt_text("memory"),
                effect.flag("changes_numerics"),
                effect.flag("changes_work"),
                effect.opt_text("device_memory"),
            ),
            verify=tuple(
                VerifyItem(v.text("fact"), Direction(v.text("direction")))
                for v in top.nodes("verify")
            ),
            requires=tuple(
                Requirement(_required(r.condition("condition")), r.text("reason"))
                for r in top.nodes("requires")
            ),
            conflicts=tuple(
                Conflict(c.text("reason"), c.opt_text("feature"), c.condition("condition"))
                for c in top.nodes("conflicts")
            ),
            after=top.texts("after"),
            applied_when=top.condition("applied_when"),
            collects=top.texts("collects"),
            applies_to=top.texts("applies_to"),
            ceiling=_ceiling(top.node("ceiling")) if "ceiling" in top else None,
        )
    location = top.node("location") if "location" in top else None
    return PolicyRule(
        **base,
        applies_to=top.texts("applies_to"),
        severity=Severity(top.text("severity")),
        message=top.text("message"),
        when=top.condition("when"),
        check=top.opt_text("check"),
        location=Location(*(location.opt_text(k) for k in ("config", "env", "value")))
        if location
        else None,
        change=_change(top.node("change")) if "change" in top else None,
        aggregate=top.scalar("aggregate") is True,
        targets=top.texts("targets"),
        severity_override=settings.severity,
    )


def _ceiling(node: _Node) -> Ceiling:
    key = node.opt_text("key") if isinstance(node.data.get("key"), str) else None
    keys = (key,) if key is not None else node.texts("key")
    bound = node.opt_text("at_most") if isinstance(node.data.get("at_most"), str) else None
    bounds = (bound,) if bound is not None else node.texts("at_most")
    efficacy = None
    if "efficacy" in node:
        prior = node.node("efficacy")
        efficacy = Efficacy(float(prior.number("low") or 0.0), float(prior.number("high") or 0.0))
    share = node.number("share") if "share" in node else None
    return Ceiling(
        node.text("fact"),
        keys,
        bounds,
        node.text("mechanism"),
        1.0 if share is None else float(share),
        node.opt_text("hides_under"),
        node.text("source"),
        efficacy,
        node.opt_text("missing_key") or "none",
    )


def _required(condition: Condition | None) -> Condition:
    if condition is None:
        raise DataError("a requirement needs a condition")
    return condition


def _param_values(
    rule_id: str, declared: Mapping[str, object], override: Mapping[str, Scalar], where: str
) -> dict[str, Scalar]:
    def default_of(name: str) -> Scalar:
        spec = declared[name]
        value = spec.get("default") if isinstance(spec, Mapping) else None
        return value if isinstance(value, str | int | float | bool) else None

    values = {str(name): default_of(str(name)) for name in declared}
    for name, value in override.items():
        if name not in declared:
            known = ", ".join(sorted(str(n) for n in declared)) or "none"
            raise InputError(where, f"rule {rule_id} has no param '{name}' (params: {known})")
        default = values[name]
        numeric = isinstance(default, int | float) and not isinstance(default, bool)
        if numeric and (not isinstance(value, int | float) or isinstance(value, bool)):
            raise InputError(where, f"{rule_id}.params.{name} must be a number, got {value!r}")
        if isinstance(default, bool) and not isinstance(value, bool):
            raise InputError(where, f"{rule_id}.params.{name} must be true or false")
        values[name] = value
    return values


def load_rules(
    extra_dirs: Iterable[Path] = (),
    settings: Settings | None = None,
    kinds: Iterable[str] = KINDS,
) -> RuleSet:
    """Built-in rules plus extra folders (a team's own rules), with settings applied.

    `kinds` limits what is compiled (check needs only policies): the other built-in files are
    not read, their ids come from their file names, which the loader ties to the id.
    """
    settings = settings or Settings()
    wanted = tuple(kinds)
    ruleset = RuleSet()
    builtin = rules_dir()
    folders = [(builtin, True)] + [(d, False) for d in [*extra_dirs, *settings.rules_dirs]]
    raw_rules: dict[str, tuple[Path, Mapping[str, object]]] = {}
    for folder, is_builtin in folders:
        ruleset.sources.append(folder)
        for path in rule_files(folder, is_builtin, wanted if is_builtin else KINDS):
            raw = load_rule_file(path, is_builtin)
            rule_id = str(raw["id"])
            if rule_id in raw_rules:
                other = raw_rules[rule_id][0]
                raise DataError(f"{path}: duplicate rule id {rule_id} (also in {other})")
            raw_rules[rule_id] = (path, raw)
    unread = [rule_id for rule_id in settings.rules if rule_id not in raw_rules]
    # the other kinds' ids are listed only when settings name a rule not read: `check` would
    # otherwise walk the folders of ~150 rules it does not run
    others = [kind for kind in KINDS if kind not in wanted] if unread else []
    skipped = {f"{kind}.{p.stem}" for kind in others for p in rule_files(builtin, True, (kind,))}
    for rule_id in unread:
        if rule_id not in skipped:
            raise InputError(settings.where, f"unknown rule id {rule_id} (see: advisor rules list)")
    for rule_id, (path, raw) in raw_rules.items():
        if raw["kind"] not in wanted:
            continue
        override = settings.rules.get(rule_id, RuleSettings())
        if override.severity and raw["kind"] != "policy":
            raise InputError(settings.where, f"{rule_id}: severity can only be set for policies")
        ruleset.rules[rule_id] = check_rule_data(_compile(path, raw, override, settings.where))
    return ruleset
