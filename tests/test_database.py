"""The torch_npu database export (export_type db) yields the facts of the text export."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from advisor.app.pipeline import profile_facts
from advisor.model import FactSet, InputError
from tests.conftest import REAL
from tests.synth import PRESETS, write_profile
from tests.synth.db_file import write_profile_db

PARITY_PRESETS = (
    "healthy",
    "comm-bound",
    "host-bound",
    "mte2-bound",
    "slow-dataloader",
    "allocator-storm",
    "ddp-allreduce",
    "small-ops",
    "fragmentation",
)
# facts whose source is a different kind of record in the two exports, checked separately
NOT_COMPARED = {"profile.framework", "comm.groups", "trace.step_cross_check"}
# the database export records no OP State (static / dynamic) of its kernels
TEXT_ONLY = {"ops.dynamic_shape_share"}


def _scalars(facts: FactSet) -> dict[tuple[str, str], object]:
    return {(f.id, f.scope): f.value for f in facts.facts if f.id not in NOT_COMPARED}


def _assert_close(fact: tuple[str, str], text: object, db: object, unit: str) -> None:
    if isinstance(text, bool) or not isinstance(text, int | float):
        if isinstance(text, dict) and isinstance(db, dict):
            assert set(text) == set(db), fact
            for key in text:
                _assert_close((f"{fact[0]}[{key}]", fact[1]), text[key], db[key], unit)
        elif not isinstance(text, list):
            assert text == db, fact
        return
    assert isinstance(db, int | float), fact
    if unit == "ratio":
        assert db == pytest.approx(text, abs=0.005), fact
    else:
        assert db == pytest.approx(text, rel=0.01, abs=1e-6), fact


@pytest.mark.parametrize("preset", PARITY_PRESETS)
def test_database_export_has_the_facts_of_the_text_export(tmp_path: Path, preset: str):
    scenario = PRESETS[preset]
    write_profile(tmp_path / "text", scenario)
    write_profile_db(tmp_path / "db", scenario)
    text, db = profile_facts(tmp_path / "text"), profile_facts(tmp_path / "db")
    text_values, db_values = _scalars(text), _scalars(db)
    units = {(f.id, f.scope): f.unit for f in text.facts}
    # op_statistic-only and trace-only details aside, the database answers everything the text does
    assert {k for k in set(text_values) - set(db_values) if k[0] not in TEXT_ONLY} == set()
    for key, value in text_values.items():
        if key[0] not in TEXT_ONLY:
            _assert_close(key, value, db_values[key], units[key])
    sources = {f.id: f.source for f in db.facts}
    assert sources["step.time_ms"].startswith("analysis.db:StepTraceTime")
    assert "ascend_pytorch_profiler_0.db" in sources["ops.kernels_per_step"]


def test_without_analysis_db_the_timeline_tables_carry_the_step(tmp_path: Path):
    scenario = PRESETS["comm-bound"]
    written = write_profile_db(tmp_path, scenario, analysis=False)
    facts = profile_facts(tmp_path)
    truth = written.truths[1]
    assert facts.value("step.comm_exposed_ratio") == pytest.approx(
        truth.exposed / truth.total, abs=0.005
    )
    assert "Overlap Analysis" in facts.get("step.time_ms").source
    assert facts.get("comm.time_ms_per_step").source.endswith(":COMMUNICATION_OP:Elapse Time(ms)")
    assert facts.value("comm.allgather_share") > 0


def _db(directory: Path) -> Path:
    return next((directory / "ASCEND_PROFILER_OUTPUT").glob("ascend_pytorch_profiler_*.db"))


def test_missing_table_names_file_and_table(tmp_path: Path):
    written = write_profile_db(tmp_path, PRESETS["healthy"])
    path = _db(written.directory)
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE COMPUTE_TASK_INFO")
    with pytest.raises(InputError) as exc:
        profile_facts(tmp_path)
    assert exc.value.path == str(path)
    assert "table COMPUTE_TASK_INFO is missing" in exc.value.problem


def test_newer_schema_is_refused_with_its_version(tmp_path: Path):
    written = write_profile_db(tmp_path, PRESETS["healthy"])
    path = _db(written.directory)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE META_DATA SET value = '3' WHERE name = 'SCHEMA_VERSION_MAJOR'")
    with pytest.raises(InputError, match="schema version 3 is newer"):
        profile_facts(tmp_path)


def test_a_file_that_is_not_sqlite_is_named(tmp_path: Path):
    written = write_profile_db(tmp_path, PRESETS["healthy"])
    path = _db(written.directory)
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(InputError) as exc:
        profile_facts(tmp_path)
    assert exc.value.path == str(path)
    assert "SQLite" in exc.value.problem


def test_bad_database_is_skipped_with_a_warning_when_asked(tmp_path: Path):
    write_profile_db(tmp_path / "a", PRESETS["healthy"])
    good = write_profile_db(tmp_path / "b", PRESETS["healthy"].with_(rank=1, world_size=2))
    path = _db(good.directory)
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE TASK")
    with pytest.raises(InputError, match="table TASK is missing"):
        profile_facts(tmp_path)
    facts = profile_facts(tmp_path, skip_bad_files=True)
    assert facts.value("profile.ranks") == 1
    assert any("table TASK is missing" in w and "skipped" in w for w in facts.warnings)


def _real(name: str) -> Path:
    folder = REAL / name
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent: ../shared is not beside the checkout")
    return folder


def test_real_database_export_reads_like_the_text_export():
    # the two shared copies are two recordings of the same 2-card job: step times differ by a
    # few percent between runs, the job's shape does not
    db = profile_facts(_real("ascend-ddp-2rank-db"))
    text = profile_facts(_real("ascend-ddp-2rank-text"))
    assert db.value("profile.ranks") == 2
    assert db.value("profile.level") == "Level1"
    assert db.value("ops.kernels_per_step") == text.value("ops.kernels_per_step") == 187
    assert db.value("job.data_parallel") == "all-reduce"
    assert db.value("comm.allreduce_share") == 1.0
    for rank in (0, 1):
        scope = f"rank:{rank}"
        assert db.value("step.time_ms", scope) == pytest.approx(
            text.value("step.time_ms", scope), rel=0.05
        )
        for ratio in ("step.comm_exposed_ratio", "step.free_ratio", "ops.mte2_bound_share"):
            assert db.value(ratio, scope) == pytest.approx(text.value(ratio, scope), abs=0.02)
    # the attribution adds up from the database's tables too
    parts = [
        "attrib.compute_ms",
        "attrib.comm_exposed_ms",
        "attrib.idle_host_ms",
        "attrib.idle_dependency_ms",
        "attrib.idle_unattributed_ms",
        "attrib.preparing_dataloader_ms",
        "attrib.preparing_allocator_ms",
        "attrib.preparing_sync_ms",
        "attrib.preparing_other_ms",
    ]
    for rank in (0, 1):
        scope = f"rank:{rank}"
        total = sum(db.value(p, scope) for p in parts)
        assert total == pytest.approx(db.value("attrib.step_ms", scope), rel=0.01)
    assert db.value("host.launch_gap_ms_per_step") == pytest.approx(
        text.value("host.launch_gap_ms_per_step"), rel=0.15
    )


def test_kernels_aggregated_in_a_worker_process_equal_the_in_process_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from advisor.parsers.ascend_db import kernels as db_kernels

    write_profile_db(tmp_path, PRESETS["mte2-bound"])
    in_process = profile_facts(tmp_path)
    monkeypatch.setattr(db_kernels, "PARALLEL_MIN_BYTES", 0)
    in_worker = profile_facts(tmp_path)
    assert [f.to_json() for f in in_worker.facts] == [f.to_json() for f in in_process.facts]
    assert in_worker.value("ops.mte2_bound_share") > 0.3


def test_input_errors_cross_process_boundaries_intact():
    import pickle

    error = pickle.loads(pickle.dumps(InputError("x.db", "table TASK is missing")))
    assert (error.path, error.problem, str(error)) == (
        "x.db",
        "table TASK is missing",
        str(InputError("x.db", "table TASK is missing")),
    )


def test_mindspore_database_export_reads_like_torch_npus(tmp_path: Path):
    scenario = PRESETS["comm-bound"]
    write_profile_db(tmp_path / "pt", scenario)
    written = write_profile_db(tmp_path / "ms", scenario.with_(framework="mindspore"))
    output = written.directory / "ASCEND_PROFILER_OUTPUT"
    assert (output / "communication_analyzer.db").is_file()
    assert (output / "ascend_mindspore_profiler_0.db").is_file()
    pt, ms = profile_facts(tmp_path / "pt"), profile_facts(tmp_path / "ms")
    assert ms.value("profile.framework") == "mindspore"
    assert ms.get("step.time_ms").source.startswith("communication_analyzer.db:StepTraceTime")
    skip = {"profile.framework", "profile.framework_version", "profile.torch_npu_version"}
    assert {k: v for k, v in _scalars(ms).items() if k[0] not in skip} == {
        k: v for k, v in _scalars(pt).items() if k[0] not in skip
    }


def test_a_layout_without_the_step_model_names_what_is_missing(tmp_path: Path):
    output = tmp_path / "x_ascend_ms" / "ASCEND_PROFILER_OUTPUT"
    output.mkdir(parents=True)
    (output / "dataset.csv").write_text("Operation,Duration\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"none of step_trace_time\.csv, trace_view\.json") as err:
        profile_facts(tmp_path / "x_ascend_ms")
    assert "it holds: dataset.csv" in str(err.value)
    raw = tmp_path / "y_ascend_ms"
    (raw / "PROF_000001_20260101").mkdir(parents=True)
    with pytest.raises(InputError, match=r"only raw data .*parse it first"):
        profile_facts(raw)


def test_the_cheap_tier_reads_the_step_table_and_communication_summaries(tmp_path: Path):
    from advisor.inputs.taxonomy import default_taxonomy
    from advisor.parsers.ascend.rank import read_rank

    taxonomy = default_taxonomy()
    written = write_profile_db(tmp_path / "with", PRESETS["comm-bound"])
    full = read_rank(written.directory, taxonomy, False, [])
    cheap = read_rank(written.directory, taxonomy, False, [], shallow=True)
    assert cheap.step_rows == full.step_rows and cheap.step_rows
    assert cheap.rank == full.rank
    # the analysis database's communication summaries, as a full read takes them
    assert cheap.comm == full.comm and cheap.comm
    assert cheap.links == full.links
    assert cheap.sources["communication.json"] == full.sources["communication.json"]
    # no task table scanned: neither kernels nor the timeline
    assert cheap.kernels is None and cheap.trace is None
    # without msprof-analyze's step table the tasks hold the steps: read in full
    bare = write_profile_db(tmp_path / "bare", PRESETS["comm-bound"], analysis=False)
    fallback = read_rank(bare.directory, taxonomy, False, [], shallow=True)
    assert fallback.trace is not None and fallback.trace.steps
