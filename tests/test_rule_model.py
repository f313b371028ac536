"""The typed rule model and the rule schema describe the same thing: every property the schema
allows is a field of the dataclass that holds it, and every field (but the loader's) is a
property of the schema."""

from __future__ import annotations

import dataclasses
import json

import pytest

from advisor.core.resources import schemas_dir
from advisor.engine import rule_model as m

SCHEMA = json.loads((schemas_dir() / "rule.schema.json").read_text(encoding="utf-8"))
DEFS = SCHEMA["$defs"]
PROPS = SCHEMA["properties"]


def _fields(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls) if not f.metadata.get("loaded")}


def _kind_properties(kind: str) -> set[str]:
    for branch in SCHEMA["allOf"]:
        if branch["if"]["properties"]["kind"]["const"] == kind:
            return set(branch["then"]["propertyNames"]["enum"])
    raise AssertionError(f"no schema branch for {kind}")


@pytest.mark.parametrize(
    ("kind", "cls"),
    [
        ("symptom", m.SymptomRule),
        ("bottleneck", m.BottleneckRule),
        ("feature", m.FeatureRule),
        ("policy", m.PolicyRule),
    ],
)
def test_each_kind_has_exactly_the_schema_properties(kind: str, cls: type) -> None:
    assert _fields(cls) == _kind_properties(kind)


def _object_properties(schema: dict) -> set[str]:
    return set(schema["properties"])


@pytest.mark.parametrize(
    ("schema", "cls"),
    [
        (PROPS["docs"], m.Docs),
        (PROPS["docs"]["properties"]["example"], m.Example),
        (PROPS["references"]["items"], m.Reference),
        (PROPS["params"]["additionalProperties"], m.Param),
        (PROPS["levels"], m.Levels),
        (PROPS["cost"], m.Cost),
        (PROPS["evidence"], m.Evidence),
        (PROPS["addresses"]["items"], m.Address),
        (PROPS["requires"]["items"], m.Requirement),
        (PROPS["conflicts"]["items"], m.Conflict),
        (PROPS["effect"], m.Effect),
        (PROPS["verify"]["items"], m.VerifyItem),
        (PROPS["location"], m.Location),
        (PROPS["ceiling"], m.Ceiling),
        (DEFS["change"], m.Change),
        (DEFS["change"]["properties"]["ops"]["items"], m.ChangeOp),
    ],
)
def test_each_part_has_exactly_the_schema_properties(schema: dict, cls: type) -> None:
    assert _fields(cls) == _object_properties(schema)


def test_enums_match_the_schema() -> None:
    assert {c.value for c in m.Compare} == set(PROPS["compare"]["enum"])
    directions = set(PROPS["verify"]["items"]["properties"]["direction"]["enum"])
    # back-to-baseline is the planner's own check after an undo, never written in a rule
    assert {d.value for d in m.Direction} - {"back-to-baseline"} == directions
    change = DEFS["change"]["properties"]
    assert {t.value for t in m.PatchTarget} == set(change["target"]["enum"])
    assert {a.value for a in m.Applicability} == set(change["applicability"]["enum"])
    assert {s.value for s in m.Severity} == set(PROPS["severity"]["enum"])


def test_every_shipped_schema_is_valid_against_its_meta_schema() -> None:
    from jsonschema.validators import validator_for

    schemas = sorted(schemas_dir().rglob("*.json"))
    assert len(schemas) >= 10
    for path in schemas:
        schema = json.loads(path.read_text(encoding="utf-8"))
        validator_for(schema).check_schema(schema)
