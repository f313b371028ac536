"""The benchmarks' runner of peer tools: a finished run's numbers, a stopped run said so."""

from __future__ import annotations

import sys
from pathlib import Path

from benchmarks.peers import msprof_advisor_command, run_limited


def test_a_finished_command_reports_its_output_and_exit_code():
    run = run_limited([sys.executable, "-c", "print('done')"])
    assert run.finished and run.returncode == 0
    assert run.stdout.strip() == "done"
    assert "s wall" in run.line("python")


def test_a_command_past_its_limit_is_stopped_with_its_children_and_said_so():
    # the child starts a grandchild that would outlive it: the whole session is stopped
    script = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
    run = run_limited([sys.executable, "-c", script], limit_s=0.5)
    assert not run.finished and run.returncode is None
    assert "did not finish" in run.line("peer")


def test_a_failing_command_is_reported_with_its_last_error_line():
    run = run_limited([sys.executable, "-c", "import sys; sys.exit('broken input')"])
    assert run.finished and run.returncode == 1
    assert "broken input" in run.line("peer")


def test_msprof_analyze_is_given_the_rank_folder_of_a_one_rank_job(tmp_path: Path):
    # given a job folder its advisor runs the cluster analyses only
    (tmp_path / "one" / "rank0_ascend_pt").mkdir(parents=True)
    for rank in (0, 1):
        (tmp_path / "two" / f"rank{rank}_ascend_pt").mkdir(parents=True)
    one = msprof_advisor_command(Path("msprof-analyze"), tmp_path / "one", tmp_path / "out")
    two = msprof_advisor_command(Path("msprof-analyze"), tmp_path / "two", tmp_path / "out")
    assert one[one.index("-d") + 1] == str((tmp_path / "one" / "rank0_ascend_pt").resolve())
    assert two[two.index("-d") + 1] == str((tmp_path / "two").resolve())
