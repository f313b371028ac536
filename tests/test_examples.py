"""The bundled example profiles are exactly what the writer produces, and the tool reads them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from advisor.app.pipeline import profile_facts

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
sys.path.insert(0, str(EXAMPLES))

import make_profiles  # noqa: E402


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_committed_examples_are_reproducible(tmp_path: Path):
    make_profiles.generate(tmp_path)
    assert _tree(tmp_path) == _tree(make_profiles.ROOT), "run: python examples/make_profiles.py"


@pytest.mark.parametrize("name", [*make_profiles.SINGLE_RANK, "slow-rank", "pipeline-bubble"])
def test_every_example_reads(name: str):
    facts = profile_facts(make_profiles.ROOT / name)
    assert facts.value("step.time_ms") > 0
    assert not facts.warnings
