"""PyTorch traces kept one folder per node or rank are found below the folder given (as deep as
Ascend rank folders), and the run says how many were found where."""

from __future__ import annotations

import json
from pathlib import Path

from advisor.parsers.kineto.files import kineto_files
from tests.cli_run import run_cli
from tests.synth.kineto_file import kineto_trace, write_kineto


def test_traces_two_levels_down_are_found_and_named(tmp_path: Path) -> None:
    for rank in (0, 1):
        folder = tmp_path / "job" / "node0" / f"rank{rank}"
        folder.mkdir(parents=True)
        trace = json.loads(json.dumps(kineto_trace()))
        trace["distributedInfo"]["rank"] = rank
        (folder / f"rank{rank}.pt.trace.json").write_text(json.dumps(trace))
    found = kineto_files(tmp_path / "job")
    assert [p.parent.name for p in found] == ["rank0", "rank1"]
    ran = run_cli("facts", str(tmp_path / "job"))
    assert ran.exit_code == 0, ran.output
    assert "2 PyTorch trace(s) found in sub-folders" in ran.stderr
    assert "node0/rank0" in ran.stderr


def test_traces_in_the_folder_itself_win_over_deeper_ones(tmp_path: Path) -> None:
    write_kineto(tmp_path / "top.pt.trace.json")
    (tmp_path / "old").mkdir()
    write_kineto(tmp_path / "old" / "stale.pt.trace.json")
    assert [p.name for p in kineto_files(tmp_path)] == ["top.pt.trace.json"]


def test_nothing_below_four_levels(tmp_path: Path) -> None:
    deep = tmp_path / "a" / "b" / "c" / "d"
    deep.mkdir(parents=True)
    write_kineto(deep / "x.pt.trace.json")
    assert kineto_files(tmp_path) == []
