"""A kernel's operator classes are matched once per (type, name) and remembered per taxonomy."""

from __future__ import annotations

import dataclasses
import re

from advisor.inputs.taxonomy import default_taxonomy


def test_a_remembered_pair_answers_as_a_fresh_match() -> None:
    taxonomy = dataclasses.replace(default_taxonomy())  # a memo of its own
    pairs = [("MatMulV2", "MatMulV2"), ("x", "ncclDevKernel_AllReduce_Sum_f32"), ("Cast", "")]
    first = [taxonomy.op_class(t, n) for t, n in pairs]
    assert "matmul" in first[0] and "communication" in first[1]
    again = [taxonomy.op_class(t, n) for t, n in pairs]
    assert again == first
    fresh = [
        {c for c, p in taxonomy.operator_classes.items() if p.fullmatch(t) or p.fullmatch(n)}
        for t, n in pairs
    ]
    assert first == fresh


def test_a_taxonomy_with_other_patterns_does_not_share_the_memo() -> None:
    taxonomy = default_taxonomy()
    assert taxonomy.op_class("MatMulV2", "MatMulV2") == {"matmul"}
    other = dataclasses.replace(taxonomy, operator_classes={"mine": re.compile("MatMulV2")})
    assert other.op_class("MatMulV2", "MatMulV2") == {"mine"}
    assert taxonomy.op_class("MatMulV2", "MatMulV2") == {"matmul"}
