"""Rows of a database export whose times cannot be right.

A task, communication op or step must be an interval of the session: integer nanoseconds, an
end not before its start, shorter than an hour, within a day of the session start. Other rows
are corruption: they refuse the file (one line naming the table, how many rows and the first),
or under --skip-bad-files they are left out of every query and counted in a warning.
"""

from __future__ import annotations

from pathlib import Path

from advisor.parsers.ascend_db.sqlite import Database
from advisor.parsers.bounds import BadValues

MAX_INTERVAL_NS = 3_600 * 10**9  # an hour: longer than any task, op or step
MAX_OFFSET_NS = 86_400 * 10**9  # a day from the session start
TIMED_TABLES = (("TASK", "globalTaskId"), ("COMMUNICATION_OP", "opId"), ("STEP_TIME", "id"))


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
