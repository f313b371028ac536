"""The trace engine's grouped reduction on its own, whatever the format: every window is handed
every row that overlaps it, in start order, however small the groups."""

from __future__ import annotations

import os
import random
from array import array
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

from advisor.parsers.traces import budget, ordered, workers

Row = tuple[float, float, int]


@dataclass(frozen=True)
class Window:
    number: int
    start: float
    end: float


def _rows(seed: int, count: int) -> list[Row]:
    """Rows in (start, end) order: short ones, a few long ones spanning many windows, some
    of zero length and some sharing a start."""
    rng = random.Random(seed)
    out = []
    t = 0.0
    for tag in range(count):
        t += rng.choice([0.0, 0.5, 1.0, 3.0])
        length = rng.choice([0.0, 1.0, 2.0, 5.0]) if rng.random() > 0.03 else 400.0
        out.append((t, t + length, tag))
    return sorted(out, key=lambda r: (r[0], r[1]))


def _windows(rows: list[Row], seed: int) -> list[Window]:
    rng = random.Random(seed)
    windows, t, number = [], -5.0, 1
    last = max(end for _, end, _ in rows)
    while t < last:
        length = rng.choice([3.0, 10.0, 40.0, 200.0])
        windows.append(Window(number, t, t + length))
        t += length + rng.choice([0.0, 0.0, 2.0])
        number += 1
    return windows


def _written(tmp_path: Path, rows: list[Row]) -> tuple[ordered.OrderedWriter, list[float]]:
    cuts = ordered.start_cuts(ordered.sample_of([s for s, _, _ in rows]))
    writer = ordered.OrderedWriter(tmp_path / "ordered")
    for lo, hi in ordered.time_ranges(cuts):
        group = [r for r in rows if lo <= r[0] < hi]
        writer.append(
            ordered.Rows(
                array("d", (r[0] for r in group)),
                array("d", (r[1] for r in group)),
                array("i", (r[2] for r in group)),
                array("d", (r[0] - 1.0 for r in group)),
            )
        )
    writer.close()
    return writer, cuts


def _overlapping(rows: Iterable[Row], w: Window) -> list[Row]:
    return [r for r in rows if r[0] < w.end and r[1] > w.start]


Measured = tuple[list[tuple[int, list[Row]]], list[bool]]  # windows' rows, cuts between rows


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("pieces", [False, True])
@pytest.mark.parametrize("processes", [1, 3])
def test_every_window_gets_every_row_that_overlaps_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, pieces: bool, processes: int
) -> None:
    monkeypatch.setattr(budget, "GROUP_ROWS", 7)
    monkeypatch.setattr(budget, "SAMPLE_EVERY", 1)
    monkeypatch.setattr(workers, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(workers.os, "cpu_count", lambda: processes)
    rows = _rows(seed, 600)
    windows = _windows(rows, seed)
    writer, cuts = _written(tmp_path, rows)
    assert len(cuts) > 20
    groups = ordered.window_groups(windows, cuts)
    assert len(groups) > 5

    def measure(group: list[Window], got: ordered.Rows) -> Measured:
        assert list(got.start) == sorted(got.start)
        held = list(zip(got.start, got.end, got.tag, strict=True))
        assert all(t == s - 1.0 for s, t in zip(got.start, got.launch_at, strict=True))
        return [(w.number, _overlapping(held, w)) for w in group], []

    def resumable(w: Window):  # type: ignore[no-untyped-def]
        def measure_pieces(parts: Iterable[ordered.Rows]) -> Measured:
            held: list[Row] = []
            cuts_clean: list[bool] = []
            top = float("-inf")
            for part in parts:
                if len(part) and held:  # a cut where every row before has ended
                    cuts_clean.append(part.start[0] > top)
                held.extend(zip(part.start, part.end, part.tag, strict=True))
                top = max([top, *part.end])
            return [(w.number, _overlapping(held, w))], [True, *cuts_clean]

        return measure_pieces

    results = ordered.measure_in_groups(groups, writer, measure, resumable if pieces else None)
    seen = dict(pair for found, _ in results for pair in found)
    cut_flags = [flag for _, flags in results for flag in flags]
    assert list(seen) == [w.number for w in windows]  # in order
    for w in windows:
        assert seen[w.number] == _overlapping(rows, w), f"window {w.number}"
    assert all(cut_flags)
    assert bool(cut_flags) == pieces  # long windows a piece at a time when the measure can


def test_workers_measure_runs_of_groups(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(budget, "GROUP_ROWS", 7)
    monkeypatch.setattr(budget, "SAMPLE_EVERY", 1)
    monkeypatch.setattr(workers, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(workers.os, "cpu_count", lambda: 3)
    rows = _rows(0, 300)
    writer, cuts = _written(tmp_path, rows)
    groups = ordered.window_groups(_windows(rows, 0), cuts)
    firsts = ordered.measure_in_groups(groups, writer, lambda group, got: (os.getpid(), group[0]))
    assert [first for _, first in firsts] == [group[0] for group in groups]  # in group order
    assert os.getpid() not in {pid for pid, _ in firsts}  # measured in worker processes
