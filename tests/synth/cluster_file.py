"""msprof-analyze's cluster output (cluster_analysis_output/cluster_step_trace_time.csv) for a
pipeline-parallel job, in the tool's column layout: one Type=rank row per rank and step, one
Type=stage row per stage with its ranks as the Index ("(0, 1, 2, 3)")."""

from __future__ import annotations

import csv
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from tests.synth.layout import us
from tests.synth.scenario import Scenario
from tests.synth.timeline import NS, StepTruth, plan_steps

HEADER = (
    "Step,Type,Index,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,"
    "Bubble,Communication(Not Overlapped and Exclude Receive),Preparing\n"
)


@dataclass(frozen=True)
class StageSpec:
    ranks: list[int]
    scenario: Scenario
    bubble_us: float  # receive wait per step (part of the exposed communication)


def _cells(t: StepTruth, bubble: int) -> list[str]:
    # msprof's Stage is the device's time in the step: computing + exposed communication + free
    # (the receive wait inside the exposed part); Preparing, before the first kernel, is apart
    total = t.total - t.preparing + bubble
    exposed = t.exposed + bubble
    return [
        us(t.computing),
        us(exposed),
        us(t.communication - t.exposed),
        us(t.communication + bubble),
        us(t.free),
        us(total),
        us(bubble),
        us(t.exposed),
        us(t.preparing),
    ]


def write_cluster_analysis(parent: Path, stages: list[StageSpec]) -> Path:
    """Write `parent`/cluster_analysis_output/cluster_step_trace_time.csv; returns the folder."""
    folder = parent / "cluster_analysis_output"
    folder.mkdir(parents=True, exist_ok=True)
    lines = [HEADER]
    for spec in stages:
        plans = plan_steps(spec.scenario)
        bubble = round(spec.bubble_us * NS)
        for rank in spec.ranks:
            for plan in plans:
                cells = _cells(plan.truth, bubble)
                lines.append(",".join([str(plan.number), "rank", str(rank), *cells]) + "\n")
        middle = plans[len(plans) // 2].truth
        index = '"(' + ", ".join(str(r) for r in spec.ranks) + ')"'
        lines.append(",".join(["", "stage", index, *_cells(middle, bubble)]) + "\n")
    (folder / "cluster_step_trace_time.csv").write_text("".join(lines), encoding="utf-8")
    return folder


def write_cluster_analysis_db(parent: Path, stages: list[StageSpec]) -> Path:
    """The same rows in database mode: cluster_analysis_output/cluster_analysis.db with the
    ClusterStepTraceTime table (msprof-analyze's column names, times in microseconds)."""
    text_folder = write_cluster_analysis(parent / "text", stages)
    folder = parent / "cluster_analysis_output"
    folder.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(folder / "cluster_analysis.db")
    conn.execute(
        'CREATE TABLE ClusterStepTraceTime (step TEXT, type TEXT, "index" TEXT, computing NUMERIC, '
        "communication_not_overlapped NUMERIC, overlapped NUMERIC, communication NUMERIC, "
        "free NUMERIC, stage NUMERIC, bubble NUMERIC, "
        "communication_not_overlapped_and_exclude_receive NUMERIC, preparing NUMERIC)"
    )
    with (text_folder / "cluster_step_trace_time.csv").open(encoding="utf-8") as f:
        reader = csv.reader(f)
        next(reader)
        rows = [
            [row[0], row[1], row[2].strip("()") if row[1] == "rank" else row[2]]
            + [float(v) for v in row[3:]]
            for row in reader
        ]
    conn.executemany(f"INSERT INTO ClusterStepTraceTime VALUES ({', '.join('?' * 12)})", rows)
    conn.commit()
    conn.close()
    return folder
