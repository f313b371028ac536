"""Rows of a database export whose times cannot be right.

A task, communication op or step must be an interval of the session: integer nanoseconds, an
end not before its start, shorter than an hour, within a day of the session start. Other rows
are corruption: they refuse the file (one line naming the table, how many rows and the first),
or under --skip-bad-files they are left out of every query and counted in a warning.

A PMU pipe ratio outside [0, 1] is left out of its task (which still counts, without pipe
data) with a warning naming the table, the task and the metric.
"""

from __future__ import annotations

from pathlib import Path

from advisor.parsers.ascend_db.sqlite import Database
from advisor.parsers.bounds import BadValues

MAX_INTERVAL_NS = 3_600 * 10**9  # an hour: longer than any task, op or step
MAX_OFFSET_NS = 86_400 * 10**9  # a day from the session start
TIMED_TABLES = (("TASK", "globalTaskId"), ("COMMUNICATION_OP", "opId"), ("STEP_TIME", "id"))
PMU_RATIOS = ("aic_mac_ratio", "aic_mte2_ratio", "aiv_vec_ratio", "aiv_mte2_ratio")
# the SQL condition a usable TASK_PMU_INFO ratio meets (a NULL is not available, never a warning;
# SQLite stores NaN as NULL)
PMU_RATIO_OK = "(typeof(value) IN ('integer', 'real') AND value BETWEEN 0 AND 1)"


def valid_interval(origin: int, prefix: str = "") -> str:
    """The SQL condition a usable row meets (only integers are formatted in)."""
    a, b = f"{prefix}startNs", f"{prefix}endNs"
    return (
        f"(typeof({a}) = 'integer' AND typeof({b}) = 'integer' AND {b} >= {a} "
        f"AND {b} - {a} <= {int(MAX_INTERVAL_NS)} AND abs({a} - {int(origin)}) <= {int(MAX_OFFSET_NS)})"
    )


def check_intervals(db: Database, origin: int, bad: BadValues) -> None:
    for table, key in TIMED_TABLES:
        if not db.has(table, "startNs", "endNs", key):
            continue
        sql = f"SELECT COUNT(*), MIN({key}) FROM {table} WHERE NOT {valid_interval(origin)}"
        for count, first in db.rows(table, sql):
            if not count:
                continue
            example = next(
                db.rows(table, f"SELECT startNs, endNs FROM {table} WHERE {key} = ?", (first,)),
                (None, None),
            )
            bad.reject(
                Path(db.path),
                f"table {table}: {count} row(s) that are not an interval of the session "
                f"(first: {key} {first})",
                f"startNs={example[0]!r}, endNs={example[1]!r}",
                "not an interval (integer ns, end >= start, under an hour, within a day)",
                count=count,
            )


def check_pmu_ratios(db: Database, strings: dict[int, str], bad: BadValues) -> None:
    """Warn about the pipe ratios that are no ratio; the kernel query leaves them out."""
    ids = {key: value for key, value in strings.items() if value in PMU_RATIOS}
    if not ids or not db.has("TASK_PMU_INFO", "globalTaskId", "name", "value"):
        return
    wanted = ", ".join(str(int(key)) for key in ids)
    sql = (
        "SELECT COUNT(*), MIN(globalTaskId) FROM TASK_PMU_INFO "
        f"WHERE name IN ({wanted}) AND value IS NOT NULL AND NOT {PMU_RATIO_OK}"
    )
    for count, first in db.rows("TASK_PMU_INFO", sql):
        if not count:
            continue
        name, value = next(
            db.rows(
                "TASK_PMU_INFO",
                "SELECT name, value FROM TASK_PMU_INFO WHERE globalTaskId = ? "
                f"AND name IN ({wanted}) AND value IS NOT NULL AND NOT {PMU_RATIO_OK}",
                (first,),
            ),
            (None, None),
        )
        bad.ignore(
            Path(db.path),
            f"table TASK_PMU_INFO, globalTaskId {first}, {ids.get(name, name)}",
            value,
            "not a ratio in [0, 1]",
            "the kernel counts without pipe data",
            count=count,
        )
