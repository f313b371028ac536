"""The hypothesis profiles the fuzz suites run under (tests/conftest.py): a fixed corpus in CI,
new and many more cases at night, chosen by ADVISOR_HYPOTHESIS_PROFILE."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROBE = (
    "import json; from tests.conftest import fuzz_settings; s = fuzz_settings(ci_examples=150); "
    "print(json.dumps({'n': s.max_examples, 'fixed': s.derandomize, "
    "'deadline': s.deadline.total_seconds()}))"
)


def _settings(**env: str) -> dict[str, object]:
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in ("ADVISOR_HYPOTHESIS_PROFILE", "ADVISOR_FUZZ_EXAMPLES")
    }
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env={**clean, "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    loaded: dict[str, object] = json.loads(result.stdout)
    return loaded


def test_ci_runs_each_suites_fixed_corpus_by_default():
    assert _settings() == {"n": 150, "fixed": True, "deadline": 20.0}
    assert _settings(ADVISOR_HYPOTHESIS_PROFILE="ci")["n"] == 150


def test_nightly_draws_new_and_more_cases():
    nightly = _settings(ADVISOR_HYPOTHESIS_PROFILE="nightly")
    assert nightly["fixed"] is False
    assert isinstance(nightly["n"], int) and nightly["n"] > 150


def test_the_count_can_be_set_in_either_profile():
    assert _settings(ADVISOR_FUZZ_EXAMPLES="7")["n"] == 7
    assert _settings(ADVISOR_HYPOTHESIS_PROFILE="nightly", ADVISOR_FUZZ_EXAMPLES="7")["n"] == 7


def test_an_unknown_profile_is_refused():
    with pytest.raises(AssertionError, match="expected 'ci' or 'nightly'"):
        _settings(ADVISOR_HYPOTHESIS_PROFILE="weekly")
