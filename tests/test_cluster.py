"""Cluster profiles: several rank directories, or msprof-analyze's cluster step trace."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from advisor.app.pipeline import profile_facts
from advisor.model import InputError
from tests.synth import PRESETS, write_cluster, write_profile


def test_slow_rank_is_found(tmp_path: Path):
    written = write_cluster(tmp_path, PRESETS["healthy"], ranks=4, slow_rank=2, slow_factor=1.5)
    facts = profile_facts(tmp_path)
    assert facts.value("profile.ranks") == 4
    assert facts.value("ranks.count") == 4
    assert facts.value("ranks.slowest") == 2
    # synchronous collectives equalise wall time: the step times do not tell the slow rank apart
    assert facts.value("ranks.step_time_spread_ratio") == pytest.approx(0.0, abs=1e-9)
    busy = [(w.truths[1].total - w.truths[1].exposed) for w in written]
    median_busy = sorted(busy)[1:3]
    expected = (max(busy) - sum(median_busy) / 2) / (sum(median_busy) / 2)
    assert facts.value("ranks.busy_spread_ratio") == pytest.approx(expected, rel=1e-6)
    # every per-rank fact is also reported with its rank scope
    for rank in range(4):
        fact = facts.get("step.time_ms", f"rank:{rank}")
        assert fact is not None
        assert fact.value == pytest.approx(written[rank].truths[1].total / 1e6)
    # job-level step time is the slowest rank's, and says so
    job = facts.get("step.time_ms")
    assert job.value == pytest.approx(max(w.truths[1].total for w in written) / 1e6)
    assert "max over 4 ranks" in job.note
    # the others wait for rank 2: their exposed communication is higher
    exposed = {r: facts.value("step.comm_exposed_ratio", f"rank:{r}") for r in range(4)}
    assert exposed[2] < min(exposed[r] for r in (0, 1, 3))


def test_rank_dirs_found_below_node_folders(tmp_path: Path):
    write_cluster(tmp_path / "node0", PRESETS["healthy"], ranks=2)
    facts = profile_facts(tmp_path)
    assert facts.value("ranks.count") == 2


def test_output_dir_as_path(tmp_path: Path):
    (w,) = write_cluster(tmp_path, PRESETS["healthy"], ranks=1)
    facts = profile_facts(w.directory / "ASCEND_PROFILER_OUTPUT")
    assert facts.value("profile.level") == "Level1"
    assert facts.value("step.time_ms") == pytest.approx(w.truths[1].total / 1e6)


def test_duplicate_rank_is_an_error(tmp_path: Path):
    from advisor.model import InputError

    (w,) = write_cluster(tmp_path / "a", PRESETS["healthy"], ranks=1)
    shutil.copytree(w.directory, tmp_path / "b" / w.directory.name)
    with pytest.raises(InputError, match="rank 0 appears twice"):
        profile_facts(tmp_path)


def _sixteen_ranks_two_stages(tmp_path: Path) -> Path:
    from tests.synth.cluster_file import StageSpec, write_cluster_analysis

    base = PRESETS["healthy"]
    write_cluster_analysis(
        tmp_path,
        [
            # the first stage waits for the second: a large bubble
            StageSpec(list(range(8)), base.with_(world_size=16), bubble_us=3000.0),
            StageSpec(list(range(8, 16)), base.with_(world_size=16, compute_scale=1.4), 400.0),
        ],
    )
    return tmp_path


def test_cluster_output_alone_gives_every_rank_and_each_stage_its_bubble(tmp_path: Path):
    root = _sixteen_ranks_two_stages(tmp_path)
    for path in (root, root / "cluster_analysis_output"):  # the folder itself is accepted too
        facts = profile_facts(path)
        assert facts.value("ranks.count") == 16
        assert facts.value("profile.ranks") == 16
        assert facts.value("pipeline.stages") == 2
        assert facts.value("pipeline.stage_ranks") == [list(range(8)), list(range(8, 16))]
        first, second = facts.value("pipeline.stage_bubble_ratio")
        assert first > 3 * second > 0
        # the job's bubble is the worst stage's, not a median across stages
        assert facts.value("step.bubble_ratio") == pytest.approx(first, abs=1e-4)
        assert "no median across them" in facts.get("step.bubble_ratio").note
        for rank in (0, 15):
            assert facts.value("step.time_ms", f"rank:{rank}") > 0


def test_rank_directories_beside_the_cluster_output_add_detail_for_their_ranks(tmp_path: Path):
    root = _sixteen_ranks_two_stages(tmp_path)
    base = PRESETS["healthy"]
    for rank in (0, 9):
        scale = 1.4 if rank >= 8 else 1.0
        write_profile(root, base.with_(rank=rank, world_size=16, compute_scale=scale))
    facts = profile_facts(root)
    assert facts.value("profile.ranks") == 16
    assert "2 rank directories" in facts.get("profile.ranks").note
    assert facts.value("ops.kernels_per_step", "rank:0") is not None  # from the trace
    assert facts.value("ops.kernels_per_step", "rank:5") is None  # cluster row only
    assert facts.value("step.time_ms", "rank:5") > 0
    assert facts.value("pipeline.stages") == 2


def test_rank_directory_that_disagrees_with_the_cluster_output_is_named(tmp_path: Path):
    root = _sixteen_ranks_two_stages(tmp_path)
    slow = PRESETS["healthy"].with_(rank=3, world_size=16, compute_scale=3.0)
    write_profile(root, slow)
    write_profile(root, PRESETS["healthy"].with_(rank=20, world_size=16))
    facts = profile_facts(root)
    text = "\n".join(facts.warnings)
    assert "rank 3: its rank directory gives" in text and "cluster_step_trace_time.csv" in text
    assert "rank 20 has a rank directory but no row" in text


def test_cluster_database_gives_the_facts_of_the_cluster_csv(tmp_path: Path):
    from tests.synth.cluster_file import StageSpec, write_cluster_analysis_db

    base = PRESETS["healthy"]
    specs = [
        StageSpec(list(range(8)), base.with_(world_size=16), bubble_us=3000.0),
        StageSpec(list(range(8, 16)), base.with_(world_size=16, compute_scale=1.4), 400.0),
    ]
    folder = write_cluster_analysis_db(tmp_path / "db", specs)
    text = profile_facts(tmp_path / "db" / "text")
    database = profile_facts(folder)
    values = {(f.id, f.scope): f.value for f in text.facts}
    assert {(f.id, f.scope): f.value for f in database.facts} == values
    assert database.get("step.time_ms").source.startswith(
        "cluster_analysis.db:ClusterStepTraceTime"
    )
    assert database.value("pipeline.stages") == 2


def test_cluster_database_without_its_tables_is_named(tmp_path: Path):
    import sqlite3

    folder = tmp_path / "cluster_analysis_output"
    folder.mkdir()
    sqlite3.connect(folder / "cluster_analysis.db").execute(
        "CREATE TABLE Other (x)"
    ).connection.commit()
    with pytest.raises(InputError, match=r"cluster_analysis\.db: no table ClusterStepTraceTime"):
        profile_facts(folder)


def _matrix(slow: str | None) -> dict:
    links = {}
    for src in range(4):
        for dst in range(4):
            bandwidth = 2.0 if f"{src}-{dst}" == slow else 18.0
            links[f"{src}-{dst}"] = {
                "Transport Type": "LOCAL" if src == dst else "HCCS",
                "Transit Size(MB)": 360.0,
                "Transit Time(ms)": 360.0 / bandwidth,
                "Bandwidth(GB/s)": bandwidth,
                "Op Name": "hcom_allReduce__1_0_1",
            }
    return {"0@1234": {"step5": {"hcom_allReduce__1_0_1@1234": links}}}


@pytest.mark.parametrize("slow", ["2-1", None])
def test_the_cluster_matrix_names_a_slow_link(tmp_path: Path, slow: str | None):
    import json

    root = _sixteen_ranks_two_stages(tmp_path)
    matrix = root / "cluster_analysis_output" / "cluster_communication_matrix.json"
    matrix.write_text(json.dumps(_matrix(slow)), encoding="utf-8")
    facts = profile_facts(root)
    link = facts.value("comm.slowest_link")
    if slow is None:
        assert facts.value("comm.slow_link_ratio") == pytest.approx(0.0)
        return
    assert link["link"] == slow and link["transport"] == "HCCS"
    assert link["bandwidth_gbps"] == pytest.approx(2.0)
    assert link["median_gbps"] == pytest.approx(18.0)
    assert facts.value("comm.slow_link_ratio") == pytest.approx(1 - 2.0 / 18.0)
    from advisor.app.diagnose import run_diagnose
    from advisor.app.job import JobOptions

    run = run_diagnose(JobOptions(profile=root))
    fired = {s.id: s for s in run.diagnosis.symptoms}
    assert "link 2-1" in fired["symptom.slow-link"].message
