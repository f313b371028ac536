"""Values outside their range: a step row whose columns contradict the step model, a training
log's value past any real measurement. Each is left out with a warning that names the file, the
row and the column, and no fact is derived from it (no share above 1, no negative time)."""

from __future__ import annotations

import csv
import gzip
import json
import sqlite3
from pathlib import Path

import pytest

from advisor.app.pipeline import log_facts, profile_facts
from advisor.model import InputError
from advisor.parsers.bounds import step_model_breach
from tests.fuzz.harness import insane
from tests.synth import PRESETS, write_profile
from tests.synth.db_file import write_profile_db
from tests.synth.kineto_file import kineto_trace
from tests.test_bad_input import assert_one_line_error, run

OUT = "ASCEND_PROFILER_OUTPUT"
STEPS = "step_trace_time.csv"


@pytest.fixture
def profile(tmp_path: Path) -> Path:
    scenario = PRESETS["comm-bound"].with_(steps=4, layers=2)
    return write_profile(tmp_path / "prof", scenario).directory


def _set_cells(path: Path, row: int, **cells: str) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    header = lines[0].split(",")
    values = lines[row - 1].split(",")
    for column, value in cells.items():
        values[header.index(column.replace("_", " "))] = value
    lines[row - 1] = ",".join(values)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _step_rows(profile: Path) -> int:
    facts = profile_facts(profile)
    steps = facts.value("profile.steps")
    assert isinstance(steps, int)
    return steps


@pytest.mark.parametrize(
    ("cells", "column"),
    [
        # the repro: an overlapped time 40x the step (comm_overlapped_ratio 11.47 before)
        ({"Overlapped": "90000"}, "Communication"),
        # communication consistent, but the overlapped part longer than the computing it hides in
        (
            {"Overlapped": "9000", "Communication": "11400", "Computing": "5240"},
            "Overlapped",
        ),
        # Stage given and not computing + exposed communication + free
        ({"Stage": "900000"}, "Stage"),
    ],
)
def test_a_row_that_breaks_the_step_model_is_left_out(
    profile: Path, cells: dict[str, str], column: str
):
    before = _step_rows(profile)
    path = profile / OUT / STEPS
    for row in range(2, 6):
        _set_cells(path, row, Stage="7640")  # 5240 + 2400 + 0: a consistent stage column
    _set_cells(path, 3, **cells)
    facts = profile_facts(profile)
    assert insane(facts) is None
    (warning,) = [w for w in facts.warnings if STEPS in w]
    assert "1 row(s)" in warning and "row 3" in warning and column in warning
    assert _step_rows(profile) == before - 1
    overlapped = facts.value("step.comm_overlapped_ratio")
    assert isinstance(overlapped, float) and 0.0 <= overlapped <= 1.0


def test_every_row_breaking_the_model_refuses_the_file(profile: Path):
    path = profile / OUT / STEPS
    for row in range(2, 6):
        _set_cells(path, row, Overlapped="90000")
    with pytest.raises(InputError) as caught:
        profile_facts(profile)
    assert STEPS in str(caught.value) and "no usable step rows" in str(caught.value)


def test_the_real_profiles_hold_the_identities():
    # rows copied from real msprof exports (an Atlas DDP rank, a PP2 rank, a cluster rank):
    # their rounding must stay inside the slack
    rows = [
        (8873.756, 101963.203, 4028.675, 105991.878, 25744.05, 136581.0, 0.0),
        (231290.1, 420174.26, 0.0, 420174.26, 158558.0, 810022.25, 0.0),
        (80309.687, 683731.290, 5524.545, 689255.834, 990605.104, 1754645.75, 0.0),
    ]
    names = ("Computing", "Communication(Not Overlapped)", "Overlapped", "Communication")
    for row in rows:
        values: dict[str, float | None] = dict(zip(names, row[:4], strict=True))
        values.update(Free=row[4], Stage=row[5], Bubble=row[6])
        assert step_model_breach(values) is None


LOG_LINE = (
    " [2026-01-01 00:00:00] iteration {n:8d}/     100 | consumed samples: 8 | "
    "elapsed time per iteration (ms): {ms} | mfu: {mfu} | lm loss: 5.0 | grad norm: 1.0 |\n"
)


@pytest.mark.parametrize(
    ("ms", "mfu", "column"),
    [("1e308", "40.0", "elapsed time per iteration (ms)"), ("1500.0", "250", "mfu")],
)
def test_a_log_value_past_its_range_is_dropped_with_a_warning(
    tmp_path: Path, ms: str, mfu: str, column: str
):
    path = tmp_path / "train.log"
    lines = [LOG_LINE.format(n=1, ms=ms, mfu=mfu)]
    lines += [LOG_LINE.format(n=n, ms="1500.0", mfu="40.0") for n in range(2, 5)]
    path.write_text("".join(lines), encoding="utf-8")
    facts = log_facts([path])
    (warning,) = facts.warnings
    assert str(path) in warning and "line 1" in warning and column in warning
    assert facts.value("log.step_time_ms") == pytest.approx(1500.0)
    mfu_fact = facts.value("log.mfu")
    assert mfu_fact is None or float(mfu_fact) <= 100.0


def _spoil_device_event(path: Path, key: str, value: object) -> None:
    """Give the fifth device-lane complete event (no category, not a runtime call) `value`."""
    data = json.loads(path.read_text(encoding="utf-8"))
    events = data if isinstance(data, list) else data["traceEvents"]
    device = [
        e
        for e in events
        if e.get("ph") == "X" and not e.get("cat") and not e["name"].startswith("AscendCL@")
    ]
    device[4][key] = value
    path.write_text(json.dumps(data), encoding="utf-8")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("dur", "abc"),
        ("dur", -5.0),
        ("dur", "1e400"),
        ("ts", "1.7e15x"),
        ("ts", "9e18"),  # a float string where an integer part is parsed
        ("ts", "nan"),
    ],
)
def test_a_trace_view_event_that_is_no_time_is_one_input_error(
    profile: Path, key: str, value: object
):
    path = profile / OUT / "trace_view.json"
    _spoil_device_event(path, key, value)
    proc = run("facts", str(profile))
    assert_one_line_error(proc, "trace_view.json", repr(value))


def test_a_damaged_gzip_trace_names_its_file(tmp_path: Path):
    packed = bytearray(gzip.compress(json.dumps(kineto_trace()).encode()))
    for i in range(30, len(packed) - 20, 7):
        packed[i] ^= 0x5A  # the deflate stream damaged, the gzip header intact
    path = tmp_path / "rank0.pt.trace.json.gz"
    path.write_bytes(bytes(packed))
    assert_one_line_error(run("facts", str(path)), str(path), "gzip")


def _set_kernel_cell(profile: Path, line: int, column: str, value: str) -> None:
    path = next(profile.rglob("kernel_details.csv"))
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    rows[line - 1][rows[0].index(column)] = value
    with path.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows(rows)


@pytest.mark.parametrize("value", ["1.7", "-0.2", "nan", "inf", "abc"])
def test_a_pmu_ratio_outside_its_range_is_left_out_with_a_warning(tmp_path: Path, value: str):
    scenario = PRESETS["mte2-bound"].with_(steps=4, layers=2)
    profile = write_profile(tmp_path / "prof", scenario).directory
    _set_kernel_cell(profile, 3, "aiv_mte2_ratio", value)
    facts = profile_facts(profile)
    [warning] = [w for w in facts.warnings if "aiv_mte2_ratio" in w]
    assert "kernel_details.csv" in warning and "row 3, aiv_mte2_ratio" in warning
    assert repr(value) in warning and "not a ratio in [0, 1]" in warning
    share = facts.value("ops.mte2_bound_share")
    assert isinstance(share, float) and 0.0 <= share <= 1.0
    # the kernel itself still counts: only its pipe data is left out, no row is dropped
    fact = facts.get("ops.mte2_bound_share")
    assert fact is not None and "of kernel_details.csv dropped" not in fact.note


def test_a_pmu_cell_that_is_not_available_is_no_warning(tmp_path: Path):
    scenario = PRESETS["mte2-bound"].with_(steps=4, layers=2)
    profile = write_profile(tmp_path / "prof", scenario).directory
    _set_kernel_cell(profile, 3, "aiv_mte2_ratio", "N/A")
    assert not [w for w in profile_facts(profile).warnings if "kernel_details.csv" in w]


def test_a_database_pmu_ratio_outside_its_range_is_left_out_with_a_warning(tmp_path: Path):
    written = write_profile_db(tmp_path, PRESETS["mte2-bound"].with_(steps=4, layers=2))
    path = next(written.directory.rglob("ascend_pytorch_profiler_*.db"))
    with sqlite3.connect(path) as conn:
        [(metric,)] = conn.execute("SELECT id FROM STRING_IDS WHERE value = 'aiv_mte2_ratio'")
        [(task,)] = conn.execute(
            "SELECT MIN(globalTaskId) FROM TASK_PMU_INFO WHERE name = ? AND value > 0", (metric,)
        )
        conn.execute(
            "UPDATE TASK_PMU_INFO SET value = 1.7 WHERE globalTaskId = ? AND name = ?",
            (task, metric),
        )
    facts = profile_facts(tmp_path)
    [warning] = [w for w in facts.warnings if "TASK_PMU_INFO" in w]
    assert path.name in warning
    assert f"globalTaskId {task}, aiv_mte2_ratio: 1.7 is not a ratio in [0, 1]" in warning
    share = facts.value("ops.mte2_bound_share")
    assert isinstance(share, float) and 0.0 <= share <= 1.0
