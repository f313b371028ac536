"""Read-only access to a profiler's SQLite export, with errors that name the file and table."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from advisor.model import InputError


class Database:
    """One SQLite file opened read-only; a missing table or column is an input error."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            # immutable: profiles often sit on read-only shares, and nothing writes them meanwhile
            self._conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
            rows = self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            self.tables = {str(name) for (name,) in rows}
        except sqlite3.Error as exc:
            raise InputError(str(path), f"not a readable SQLite database ({exc})") from None
        except UnicodeDecodeError:
            raise InputError(str(path), "damaged: a table name is not UTF-8 text") from None
        self._columns: dict[str, set[str]] = {}

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def has(self, table: str, *columns: str) -> bool:
        return table in self.tables and set(columns) <= self.columns(table)

    def columns(self, table: str) -> set[str]:
        if table not in self._columns:
            try:
                info = self._conn.execute(f'PRAGMA table_info("{table}")').fetchall()
            except sqlite3.Error as exc:
                raise InputError(str(self.path), f"table {table}: {exc}") from None
            except UnicodeDecodeError:
                raise InputError(
                    str(self.path), f"table {table}: a column name is not UTF-8"
                ) from None
            self._columns[table] = {str(row[1]) for row in info}
        return self._columns[table]

    def require(self, table: str, *columns: str) -> None:
        if table not in self.tables:
            raise InputError(str(self.path), f"table {table} is missing")
        lacking = [c for c in columns if c not in self.columns(table)]
        if lacking:
            raise InputError(
                str(self.path),
                f"table {table} lacks column(s) {', '.join(lacking)} (a newer export schema?)",
            )

    def rows(
        self, table: str, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()
    ) -> Iterator[tuple[Any, ...]]:
        """Stream the rows of `sql`; `table` names what is read for error messages."""
        try:
            cursor = self._conn.execute(sql, params)
            while batch := cursor.fetchmany(65536):
                yield from batch
        except sqlite3.Error as exc:
            raise InputError(str(self.path), f"table {table}: {exc}") from None
        except UnicodeDecodeError:
            raise InputError(
                str(self.path), f"table {table}: text that is not UTF-8 (damaged)"
            ) from None

    def temp_table(self, name: str, columns: list[str], index: str) -> None:
        """A scratch table beside the (read-only) export, e.g. step windows to join against."""
        try:
            self._conn.execute(f"DROP TABLE IF EXISTS temp.{name}")
            self._conn.execute(f"CREATE TEMP TABLE {name} ({', '.join(columns)})")
            self._conn.execute(f"CREATE INDEX temp.{name}_{index} ON {name} ({index})")
        except sqlite3.Error as exc:
            raise InputError(str(self.path), f"cannot create a scratch table: {exc}") from None

    def insert(self, name: str, rows: list[tuple[Any, ...]]) -> None:
        if rows:
            marks = ", ".join("?" for _ in rows[0])
            self._conn.executemany(f"INSERT INTO temp.{name} VALUES ({marks})", rows)

    def strings(self) -> dict[int, str]:
        """STRING_IDS: the export stores every name once and refers to it by id."""
        self.require("STRING_IDS", "id", "value")
        return {
            int(i): str(v) for i, v in self.rows("STRING_IDS", "SELECT id, value FROM STRING_IDS")
        }
