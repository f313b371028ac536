"""Several ranks' PyTorch traces without step markers: compared on their one window, their
parallel layout read from the recorded process groups, and every hint naming the real gap (no
step markers), never activities the traces already hold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.app.diagnose import run_diagnose
from advisor.app.job import JobOptions
from advisor.app.pipeline import profile_facts
from tests.synth.kineto_file import kineto_trace

# DP2 x TP2 as PyTorch records it: each rank lists the groups it belongs to, unnamed
GROUPS = [[0, 1, 2, 3], [0, 2], [1, 3], [0, 1], [2, 3]]


def _write_job(root: Path, slow_rank: int = 3) -> Path:
    root.mkdir(parents=True)
    config = [
        {"pg_name": str(i), "pg_desc": "default_pg" if i == 0 else "undefined", "ranks": ranks}
        for i, ranks in enumerate(GROUPS)
    ]
    for rank in range(4):
        slow = rank == slow_rank
        # the others wait in their all-reduce for the slow rank: every window is as long
        trace = kineto_trace(
            steps=3,
            kernel_us=130.0 if slow else 100.0,
            comm_us=100.0 if slow else 100.0 + 21 * 30.0,
            step_markers=False,
            distributed={
                "backend": "nccl",
                "rank": rank,
                "world_size": 4,
                "pg_config": [g for g in config if rank in g["ranks"]],
            },
        )
        (root / f"rank{rank}.pt.trace.json").write_text(json.dumps(trace))
    return root


def test_ranks_are_compared_on_their_one_window(tmp_path: Path):
    facts = profile_facts(_write_job(tmp_path / "job"))
    assert facts.value("ranks.count") == 4
    assert facts.value("ranks.slowest") == 3
    assert facts.value("ranks.busy_spread_ratio") > 0.2
    assert "no ProfilerStep#N markers" in facts.get("ranks.busy_spread_ratio").note
    assert facts.value("trace.window_ms", "rank:0") == pytest.approx(
        facts.value("trace.window_ms", "rank:3"), rel=0.05
    )
    # stages need per-step compute: the reason is the missing markers, not missing ranks
    reasons = {m.id: m.reason for m in facts.missing}
    assert "no ProfilerStep#N markers" in reasons["pipeline.stages"]


def test_the_layout_is_read_from_the_process_groups(tmp_path: Path):
    facts = profile_facts(_write_job(tmp_path / "job"))
    assert facts.value("job.parallel_sizes") == {"tp": 2, "dp": 2}
    layout = {row["dim"]: row for row in facts.value("job.group_layout")}
    assert layout["tp"]["groups"] == [[0, 1], [2, 3]] and layout["tp"]["stride"] == 1
    assert layout["dp"]["groups"] == [[0, 2], [1, 3]]
    assert "consecutive ranks" in layout["tp"]["how"]


def test_hints_name_the_missing_step_markers_not_activities_the_trace_holds(tmp_path: Path):
    run = run_diagnose(JobOptions(profile=_write_job(tmp_path / "job")))
    hints = [way.hint for u in run.diagnosis.unknown for way in u.collect]
    assert hints, "the stepless job leaves per-step facts unknown"
    assert not [h for h in hints if h.startswith("record CPU and device activity")]
    assert any("prof.step()" in h for h in hints)
    # the wait for the slow rank is the slow rank's, not the collectives'
    costs = {b.id: b.cost_ratio for b in run.diagnosis.bottlenecks}
    assert run.diagnosis.main is not None and run.diagnosis.main.id == "bottleneck.slow-rank"
    assert costs.get("bottleneck.communication", 0.0) < 0.05
