"""Mutations of profile files, by family, for the fuzz suite.

Each mutation takes the bytes of one input file and returns the bytes to write instead (or None:
delete the file). The families are those a hostile or unlucky user produces: cut files, empty
files, garbage, other encodings, BOM and CRLF, missing, renamed and duplicated columns,
impossible numbers (NaN, infinities, huge, negative), deep nesting, values of the wrong type.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

Mutation = Callable[[bytes, random.Random], bytes | None]

BAD_NUMBERS = ("nan", "NaN", "inf", "-inf", "1e308", "1e400", "-5", "-1e308", "abc", "", "1e-320")


def truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(0, max(1, len(data)))]


def empty(data: bytes, rng: random.Random) -> bytes:
    return b""


def delete(data: bytes, rng: random.Random) -> None:
    return None


def garbage(data: bytes, rng: random.Random) -> bytes:
    return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 2048)))


def flip_bytes(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randrange(1, 20)):
        if out:
            out[rng.randrange(len(out))] = rng.randrange(256)
    return bytes(out)


def latin1(data: bytes, rng: random.Random) -> bytes:
    """Non-UTF-8 bytes inside otherwise valid text."""
    text = data.decode("utf-8", "replace")
    cut = rng.randrange(0, max(1, len(text)))
    return (text[:cut] + "caf\xe9 \xff" + text[cut:]).encode("latin-1", "replace")


def bom_crlf(data: bytes, rng: random.Random) -> bytes:
    return b"\xef\xbb\xbf" + data.replace(b"\n", b"\r\n")


# --- CSV --------------------------------------------------------------------------------------


def _rows(data: bytes) -> list[list[str]]:
    return [line.split(",") for line in data.decode("utf-8", "replace").splitlines()]


def _join(rows: list[list[str]]) -> bytes:
    return ("\n".join(",".join(r) for r in rows) + "\n").encode()


def csv_drop_column(data: bytes, rng: random.Random) -> bytes:
    rows = _rows(data)
    if not rows or not rows[0]:
        return data
    i = rng.randrange(len(rows[0]))
    return _join([r[:i] + r[i + 1 :] for r in rows])


def csv_rename_column(data: bytes, rng: random.Random) -> bytes:
    rows = _rows(data)
    if not rows or not rows[0]:
        return data
    rows[0][rng.randrange(len(rows[0]))] = "Renamed"
    return _join(rows)


def csv_duplicate_column(data: bytes, rng: random.Random) -> bytes:
    rows = _rows(data)
    if not rows or not rows[0]:
        return data
    i = rng.randrange(len(rows[0]))
    return _join([[*r, r[i]] if i < len(r) else r for r in rows])


def csv_bad_cell(data: bytes, rng: random.Random) -> bytes:
    rows = _rows(data)
    if len(rows) < 2:
        return data
    for _ in range(rng.randrange(1, 4)):
        r = rows[rng.randrange(1, len(rows))]
        if r:
            r[rng.randrange(len(r))] = rng.choice(BAD_NUMBERS)
    return _join(rows)


def csv_short_row(data: bytes, rng: random.Random) -> bytes:
    rows = _rows(data)
    if len(rows) < 2:
        return data
    i = rng.randrange(1, len(rows))
    rows[i] = rows[i][: rng.randrange(0, max(1, len(rows[i])))]
    return _join(rows)


# --- JSON -------------------------------------------------------------------------------------


def json_deep(data: bytes, rng: random.Random) -> bytes:
    depth = rng.choice((200, 5000, 100000))
    return b"[" * depth + b"]" * depth


def _walk_values(node: Any, rng: random.Random, replace: Callable[[Any], Any], p: float) -> Any:
    if isinstance(node, dict):
        return {k: _walk_values(v, rng, replace, p) for k, v in node.items()}
    if isinstance(node, list):
        return [_walk_values(v, rng, replace, p) for v in node]
    return replace(node) if rng.random() < p else node


def json_wrong_types(data: bytes, rng: random.Random) -> bytes:
    try:
        doc = json.loads(data)
    except ValueError:
        return data
    choices: list[Any] = [None, "abc", [], {}, -1, 1e308, True, [1, 2]]
    doc = _walk_values(doc, rng, lambda _: rng.choice(choices), 0.05)
    return json.dumps(doc).encode()


def json_bad_numbers(data: bytes, rng: random.Random) -> bytes:
    try:
        doc = json.loads(data)
    except ValueError:
        return data

    def bad(value: Any) -> Any:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return rng.choice((float("nan"), float("inf"), -1e308, 1e308, -value - 1))
        return value

    doc = _walk_values(doc, rng, bad, 0.1)
    return json.dumps(doc).encode()  # NaN / Infinity literals, as Python writes them


def json_shape(data: bytes, rng: random.Random) -> bytes:
    """The top level replaced by another shape."""
    return json.dumps(rng.choice(([], {}, "text", 3, None, [[]], {"traceEvents": {}}))).encode()


COMMON: dict[str, Mutation] = {
    "truncate": truncate,
    "empty": empty,
    "delete": delete,
    "garbage": garbage,
    "flip_bytes": flip_bytes,
    "latin1": latin1,
    "bom_crlf": bom_crlf,
}
CSV: dict[str, Mutation] = {
    **COMMON,
    "drop_column": csv_drop_column,
    "rename_column": csv_rename_column,
    "duplicate_column": csv_duplicate_column,
    "bad_cell": csv_bad_cell,
    "short_row": csv_short_row,
}
JSON: dict[str, Mutation] = {
    **COMMON,
    "deep": json_deep,
    "wrong_types": json_wrong_types,
    "bad_numbers": json_bad_numbers,
    "shape": json_shape,
}


def families(name: str) -> dict[str, Mutation]:
    return CSV if name.endswith(".csv") else JSON


# --- PyTorch profiler traces: one event's fields -------------------------------------------

_EVENT_VALUES: tuple[Any, ...] = (
    None,
    "abc",
    float("nan"),
    float("inf"),
    -float("inf"),
    -5.0,
    1e308,
    [1, 2],
    {"x": 1},
    True,
)


def kineto_event(data: bytes, rng: random.Random) -> bytes:
    """One event's ts, dur, args, name or cat replaced by a value of the wrong kind."""
    try:
        doc = json.loads(data)
    except ValueError:
        return data
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(events, list) or not events:
        return data
    for _ in range(rng.randrange(1, 4)):
        event = events[rng.randrange(len(events))]
        if isinstance(event, dict):
            key = rng.choice(("ts", "dur", "args", "name", "cat", "ph"))
            event[key] = rng.choice(_EVENT_VALUES)
    return json.dumps(doc).encode()


def kineto_step_markers(data: bytes, rng: random.Random) -> bytes:
    """ProfilerStep markers with impossible windows (negative, huge, overlapping, repeated)."""
    try:
        doc = json.loads(data)
    except ValueError:
        return data
    steps = [
        e
        for e in doc.get("traceEvents", [])
        if isinstance(e, dict) and str(e.get("name", "")).startswith("ProfilerStep#")
    ]
    for event in steps:
        choice = rng.randrange(4)
        if choice == 0:
            event["dur"] = -abs(float(event.get("dur", 1.0)))
        elif choice == 1:
            event["dur"] = 1e300
        elif choice == 2:
            event["name"] = "ProfilerStep#1"
        else:
            event["ts"] = float(event.get("ts", 0.0)) - 1e6
    return json.dumps(doc).encode()


KINETO: dict[str, Mutation] = {
    **JSON,
    "event_fields": kineto_event,
    "step_markers": kineto_step_markers,
}


# --- database export: the SQLite file itself and the values in its tables -----------------

_DB_TABLES = (
    "TASK",
    "COMPUTE_TASK_INFO",
    "TASK_PMU_INFO",
    "COMMUNICATION_OP",
    "STEP_TIME",
    "STRING_IDS",
    "CANN_API",
    "PYTORCH_API",
    "MEMORY_RECORD",
    "META_DATA",
)
_DB_VALUES: tuple[Any, ...] = (None, -1, 2**62, "abc", 1e308, -(2**62), 0)


def _sql(
    data: bytes, rng: random.Random, statements: Callable[[random.Random], list[str]]
) -> bytes:
    import sqlite3
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.db"
        path.write_bytes(data)
        conn = sqlite3.connect(path)
        for statement in statements(rng):
            try:
                conn.execute(statement)
            except sqlite3.Error:
                continue
        conn.commit()
        conn.close()
        return path.read_bytes()


def db_drop_table(data: bytes, rng: random.Random) -> bytes:
    return _sql(data, rng, lambda r: [f"DROP TABLE {r.choice(_DB_TABLES)}"])


def db_bad_times(data: bytes, rng: random.Random) -> bytes:
    def statements(r: random.Random) -> list[str]:
        table = r.choice(("TASK", "COMMUNICATION_OP", "STEP_TIME"))
        column = r.choice(("startNs", "endNs"))
        value = r.choice(_DB_VALUES)
        literal = "NULL" if value is None else repr(value)
        return [
            f"UPDATE {table} SET {column} = {literal} WHERE rowid IN "
            f"(SELECT rowid FROM {table} ORDER BY random() LIMIT {r.randrange(1, 20)})"
        ]

    return _sql(data, rng, statements)


def db_empty_table(data: bytes, rng: random.Random) -> bytes:
    return _sql(data, rng, lambda r: [f"DELETE FROM {r.choice(_DB_TABLES)}"])


def db_bad_pmu(data: bytes, rng: random.Random) -> bytes:
    value = rng.choice(("NULL", "-5", "1e308", "'x'"))
    return _sql(
        data, rng, lambda r: [f"UPDATE TASK_PMU_INFO SET value = {value} WHERE rowid % 7 = 0"]
    )


DATABASE: dict[str, Mutation] = {
    **COMMON,
    "drop_table": db_drop_table,
    "bad_times": db_bad_times,
    "empty_table": db_empty_table,
    "bad_pmu": db_bad_pmu,
}


# --- text inputs: training logs, configs, launch scripts -----------------------------------


def text_bad_numbers(data: bytes, rng: random.Random) -> bytes:
    """Numbers in the text replaced by impossible ones."""
    import re

    text = data.decode("utf-8", "replace")
    numbers = list(re.finditer(r"\d+(\.\d+)?(E[+-]?\d+)?", text))
    for m in rng.sample(numbers, min(len(numbers), rng.randrange(1, 6))):
        start, end = m.span()
        bad = rng.choice(("nan", "inf", "1e400", "-5", "99999999999999999999999", "1e308", "abc"))
        text = text[:start] + bad.ljust(end - start)[: max(end - start, len(bad))] + text[end:]
    return text.encode()


def text_long_line(data: bytes, rng: random.Random) -> bytes:
    return data + b"# " + b"x" * rng.choice((1_000, 200_000)) + b"\n"


def text_nul(data: bytes, rng: random.Random) -> bytes:
    cut = rng.randrange(0, max(1, len(data)))
    return data[:cut] + b"\0" * rng.randrange(1, 64) + data[cut:]


def yaml_alias_bomb(data: bytes, rng: random.Random) -> bytes:
    bomb = 'z0: &z0 ["x","x","x","x","x","x","x","x","x","x"]\n'
    for i in range(1, rng.randrange(4, 9)):
        bomb += f"z{i}: &z{i} [" + ",".join([f"*z{i - 1}"] * 10) + "]\n"
    return bomb.encode() + data


def yaml_tags(data: bytes, rng: random.Random) -> bytes:
    tag = rng.choice(("!!python/object/apply:os.system ['true']", "!!binary AAAA", "!custom 3"))
    return data + f"\nextra: {tag}\n".encode()


def yaml_duplicate_key(data: bytes, rng: random.Random) -> bytes:
    lines = data.decode("utf-8", "replace").splitlines()
    keyed = [i for i, line in enumerate(lines) if ":" in line and not line.lstrip().startswith("#")]
    if not keyed:
        return data
    i = rng.choice(keyed)
    lines.insert(i + 1, lines[i])
    return ("\n".join(lines) + "\n").encode()


def yaml_tabs(data: bytes, rng: random.Random) -> bytes:
    return data.replace(b"  ", b"\t", rng.randrange(1, 5))


TEXT: dict[str, Mutation] = {
    **COMMON,
    "bad_numbers": text_bad_numbers,
    "long_line": text_long_line,
    "nul": text_nul,
}
YAML_DOC: dict[str, Mutation] = {
    **TEXT,
    "alias_bomb": yaml_alias_bomb,
    "tags": yaml_tags,
    "duplicate_key": yaml_duplicate_key,
    "tabs": yaml_tabs,
}
