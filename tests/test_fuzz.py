"""Hostile and damaged inputs: never a traceback, never a wrong number.

Every input file the profile readers take is mutated by the families of tests/fuzz/mutations.py
(cut, empty, garbage, other encodings, BOM/CRLF, columns dropped, renamed or named twice, NaN,
infinities, huge and negative values, deep nesting, wrong types, broken events). Each case must
end with sane facts or the one-line input error, with and without --skip-bad-files. The corpus
is fixed (derandomized), so CI runs the same cases every time; a longer run:

    ADVISOR_FUZZ_EXAMPLES=5000 python -m pytest tests/test_fuzz.py
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz.harness import run_case
from tests.fuzz.mutations import DATABASE, KINETO, families
from tests.synth import PRESETS, write_profile
from tests.synth.kineto_file import write_kineto

EXAMPLES = int(os.environ.get("ADVISOR_FUZZ_EXAMPLES", "150"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
ASCEND_FILES = (
    "ASCEND_PROFILER_OUTPUT/step_trace_time.csv",
    "ASCEND_PROFILER_OUTPUT/kernel_details.csv",
    "ASCEND_PROFILER_OUTPUT/op_statistic.csv",
    "ASCEND_PROFILER_OUTPUT/memory_record.csv",
    "ASCEND_PROFILER_OUTPUT/communication.json",
    "ASCEND_PROFILER_OUTPUT/communication_matrix.json",
    "ASCEND_PROFILER_OUTPUT/trace_view.json",
    "profiler_info_0.json",
    "profiler_metadata.json",
)


@pytest.fixture(scope="module")
def ascend_profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    scenario = PRESETS["comm-bound"].with_(steps=4, layers=2, with_memory=True)
    return write_profile(tmp_path_factory.mktemp("ascend"), scenario).directory


@pytest.fixture(scope="module")
def kineto_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_kineto(tmp_path_factory.mktemp("kineto") / "rank0.pt.trace.json")


def _check(outcome_kind: str, detail: str, case: object) -> None:
    assert outcome_kind in ("ok", "error"), f"{outcome_kind}: {detail} ({case})"


@FUZZ
@given(
    relative=st.sampled_from(ASCEND_FILES),
    family=st.integers(0, 1000),
    seed=st.integers(0, 2**16),
    skip=st.booleans(),
)
def test_ascend_text_export_mutations(
    ascend_profile: Path, tmp_path: Path, relative: str, family: int, seed: int, skip: bool
):
    table = families(relative)
    name = sorted(table)[family % len(table)]
    work = tmp_path / f"case{seed}"
    work.mkdir(exist_ok=True)
    outcome = run_case(ascend_profile, relative, table[name], seed, work, skip_bad_files=skip)
    _check(outcome.kind, outcome.detail, (relative, name, seed, skip))


@FUZZ
@given(family=st.sampled_from(sorted(KINETO)), seed=st.integers(0, 2**16), skip=st.booleans())
def test_pytorch_trace_mutations(
    kineto_file: Path, tmp_path: Path, family: str, seed: int, skip: bool
):
    work = tmp_path / f"case{seed}"
    work.mkdir(exist_ok=True)
    outcome = run_case(kineto_file, "", KINETO[family], seed, work, skip_bad_files=skip)
    _check(outcome.kind, outcome.detail, (family, seed, skip))


@pytest.fixture(scope="module")
def database_profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.synth.db_file import write_profile_db

    scenario = PRESETS["comm-bound"].with_(steps=4, layers=2, with_memory=True)
    return write_profile_db(tmp_path_factory.mktemp("db"), scenario).directory


@FUZZ
@given(
    relative=st.sampled_from(
        (
            "ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_0.db",
            "ASCEND_PROFILER_OUTPUT/analysis.db",
        )
    ),
    family=st.sampled_from(sorted(DATABASE)),
    seed=st.integers(0, 2**16),
    skip=st.booleans(),
)
def test_database_export_mutations(
    database_profile: Path, tmp_path: Path, relative: str, family: str, seed: int, skip: bool
):
    work = tmp_path / f"case{seed}"
    work.mkdir(exist_ok=True)
    outcome = run_case(
        database_profile, relative, DATABASE[family], seed, work, skip_bad_files=skip
    )
    _check(outcome.kind, outcome.detail, (relative, family, seed, skip))
