"""The fast indented JSON is json.dumps(indent=2)'s text byte for byte, at any size."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from advisor.app.pipeline import profile_facts
from advisor.core.json_text import indented_json
from advisor.model import FactSet
from advisor.render.facts import facts_json

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "profiles"


def _slow(payload: object) -> str:
    return json.dumps(payload, indent=2, ensure_ascii=False)


def _value(rng: random.Random, depth: int) -> object:
    pick = rng.randrange(9 if depth < 4 else 6)
    if pick == 0:
        return rng.choice([0.1, 1e-05, 1e16, 1.5e300, -0.0, 123456789.123, 5e-324, 2.0])
    if pick == 1:
        return rng.random() * 10 ** rng.randrange(-12, 25)
    if pick == 2:
        return rng.randrange(-(2**70), 2**70)
    if pick == 3:
        return rng.choice(["", "é", "\u2028", "\x7f\x01", '"\\/', " \t\n", "ascii", "名字"])
    if pick == 4:
        return rng.choice([True, False, None])
    if pick == 5:
        return rng.choice([[], {}, [[]], [{}]])
    if pick in (6, 7):
        return [_value(rng, depth + 1) for _ in range(rng.randrange(6))]
    return {f"k{rng.randrange(50)}": _value(rng, depth + 1) for _ in range(rng.randrange(6))}


def test_large_payloads_of_every_json_value_kind_are_indented_as_json_does():
    rng = random.Random(7)
    for _ in range(5):
        payload = {"rows": [_value(rng, 0) for _ in range(8000)], 3: "an int key"}
        text = indented_json(payload)
        assert len(text) > 256 * 1024  # the path through msgspec
        assert text == _slow(payload)


def test_a_nan_is_written_as_json_writes_it():
    payload = {"rows": [{"x": i / 7} for i in range(40000)] + [{"x": math.nan}]}
    assert indented_json(payload) == _slow(payload)


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir()))
def test_every_example_facts_json_is_unchanged(name: str):
    facts: FactSet = profile_facts(EXAMPLES / name)
    rows = [f.to_json() for f in facts.facts]
    payload = {"facts": rows * (1 + 300_000 // len(json.dumps(rows)))}  # past msgspec's size
    assert indented_json(payload) == _slow(payload)
    assert json.loads(facts_json(facts)) is not None
