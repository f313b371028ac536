"""Cluster profiles: several rank directories, or msprof-analyze's cluster step trace."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from advisor.app.pipeline import profile_facts
from tests.synth import PRESETS, write_cluster


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
