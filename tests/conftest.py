from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from advisor.app.pipeline import profile_facts
from advisor.model import FactSet
from tests.synth import PRESETS, Scenario, Written, write_profile

# the cache of validated data files: one per test run, never the user's (subprocesses inherit it)
_CACHE = tempfile.mkdtemp(prefix="advisor-cache-")
os.environ["ADVISOR_CACHE_DIR"] = _CACHE
atexit.register(shutil.rmtree, _CACHE, True)

# Hypothesis profiles of the fuzz suites (tests/test_fuzz*.py), chosen by
# ADVISOR_HYPOTHESIS_PROFILE: `ci` (the default) runs a fixed corpus (derandomized: the same
# cases on every run, each suite at its own size) inside the CI budget; `nightly` draws new
# cases every run, 2,000 per test. ADVISOR_FUZZ_EXAMPLES overrides the count of either.
# Both fail a case that runs past its deadline: a hang is a failure, not a slow test.
_FUZZ_HEALTH = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
settings.register_profile(
    "ci",
    derandomize=True,
    deadline=timedelta(seconds=20),  # generous for slow CI machines
    suppress_health_check=_FUZZ_HEALTH,
    print_blob=True,
)
settings.register_profile(
    "nightly",
    max_examples=2000,
    derandomize=False,
    deadline=timedelta(seconds=60),
    suppress_health_check=_FUZZ_HEALTH,
    print_blob=True,  # a failure prints the blob that reproduces it (@reproduce_failure)
)
FUZZ_PROFILE = os.environ.get("ADVISOR_HYPOTHESIS_PROFILE", "ci")
if FUZZ_PROFILE not in ("ci", "nightly"):
    raise pytest.UsageError(
        f"ADVISOR_HYPOTHESIS_PROFILE={FUZZ_PROFILE!r}: expected 'ci' or 'nightly'"
    )


def fuzz_settings(ci_examples: int) -> settings:
    """A fuzz suite's settings: `ci_examples` cases under the ci profile, the nightly profile's
    count under it, ADVISOR_FUZZ_EXAMPLES's when set."""
    profile = settings.get_profile(FUZZ_PROFILE)
    count = os.environ.get("ADVISOR_FUZZ_EXAMPLES")
    if count is not None:
        examples = int(count)
    elif FUZZ_PROFILE == "ci":
        examples = ci_examples
    else:
        examples = profile.max_examples
    return settings(profile, max_examples=examples)


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
