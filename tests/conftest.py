from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from advisor.app.pipeline import profile_facts
from advisor.model import FactSet
from tests.synth import PRESETS, Scenario, Written, write_profile

# the cache of validated data files: one per test run, never the user's (subprocesses inherit it)
_CACHE = tempfile.mkdtemp(prefix="advisor-cache-")
os.environ["ADVISOR_CACHE_DIR"] = _CACHE
atexit.register(shutil.rmtree, _CACHE, True)

SHARED = Path(__file__).resolve().parents[2] / "shared"
REAL = SHARED / "real"


def steady(written: Written) -> list:
    """Ground truth of the steady steps (the writer makes every step identical)."""
    return written.truths[1:]


@pytest.fixture
def make_profile(tmp_path: Path) -> Callable[..., tuple[Written, FactSet]]:
    counter = {"n": 0}

    def make(preset: str | Scenario = "healthy", **changes: object) -> tuple[Written, FactSet]:
        scenario = PRESETS[preset] if isinstance(preset, str) else preset
        if changes:
            scenario = scenario.with_(**changes)
        counter["n"] += 1
        parent = tmp_path / f"p{counter['n']}"
        written = write_profile(parent, scenario)
        return written, profile_facts(parent)

    return make


@pytest.fixture
def real_ascend() -> Path:
    folder = REAL / "ascend"
    if not folder.is_dir():
        pytest.skip(
            f"real Ascend data not available ({folder} is absent: ../shared is not beside the checkout)"
        )
    return folder
