"""The facts' text tables: what a reader needs to tell the rows apart, and no column of unknowns."""

from __future__ import annotations

import re

import pytest

from advisor.model import JOB_SCOPE, Fact, FactSet
from advisor.render.facts import facts_text
from tests.cli_run import run_cli
from tests.conftest import REAL


def _top(rows: list[dict[str, object]]) -> str:
    fact = Fact("ops.top", rows, "", JOB_SCOPE, "kernel_details.csv:Type")
    return facts_text(FactSet(facts=[fact]))


def _row(name: str, bound: str) -> dict[str, object]:
    return {
        "type": name,
        "share": 0.5,
        "per_step_ms": 1.0,
        "count": 2,
        "mean_us": 500.0,
        "bound": bound,
    }


def test_operator_names_are_whole_and_an_all_unknown_bound_column_is_a_note():
    a = "split_embedding_backward_codegen_rowwise_adagrad_unweighted_kernel_cta_per_row_1"
    b = "split_embedding_backward_codegen_rowwise_adagrad_unweighted_kernel_warp_per_row_1"
    text = _top([_row(a, "unknown"), _row(b, "unknown")])
    assert a in text and b in text
    header = text.splitlines()[2]
    assert header.split() == ["share", "ms/step", "count", "mean", "us", "type"]
    assert not re.search(r"\bunknown\s*$", text, re.MULTILINE)
    assert "bound: unknown for every operator" in text


def test_a_known_bound_keeps_its_column():
    text = _top([_row("MatMulV2", "compute"), _row("Cast", "unknown")])
    assert "bound" in text and "compute" in text
    assert "bound: unknown for every operator" not in text


@pytest.mark.skipif(not REAL.is_dir(), reason="../shared/real is not beside the checkout")
def test_the_real_recommendation_model_trace_names_its_kernels_apart():
    out = run_cli("facts", str(REAL / "kineto/trace_filter__sampled_rank-0.json.gz")).output
    table = out[out.index("ops.top") : out.index("ops.attention_share")]
    names = [line.split()[-1] for line in table.splitlines()[2:] if "%" in line]
    assert len(names) == len(set(names)) == 10
