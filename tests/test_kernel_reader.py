"""kernel_details.csv's per-row shortcuts give what the plain per-row work gives: a kernel's
start cut as trace_view.json's reader cuts it, and the ratio cells' values remembered."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from advisor.inputs.thresholds import reader_thresholds
from advisor.parsers.ascend import kernels
from advisor.parsers.ascend.kernel_starts import add_type
from advisor.parsers.ascend.kernels import read_kernels
from advisor.parsers.bounds import BadValues
from advisor.parsers.trace_view.timestamps import KEPT_INTEGER_DIGITS


def _cut_as_before(cell: str) -> float | None:
    """The start as the reader cut it: stripped, split at the point, the integer part's last
    KEPT_INTEGER_DIGITS digits kept."""
    integer, _, fraction = cell.strip().partition(".")
    try:
        return float(integer[-KEPT_INTEGER_DIGITS:] + ("." + fraction if fraction else ""))
    except ValueError:
        return None


def test_a_start_cell_is_cut_as_the_trace_reader_cuts_it() -> None:
    rng = random.Random(4)
    cells = ["1700000000000205.000\t", " 1700000000000205.5 ", "205.25", "205", ".5", "1.", "."]
    cells += ["1700000000000205", "abc", "1.2.3", "", " \t", "12 .5", "1e5", "-1700000000000205.5"]
    for _ in range(500):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(0, 18)))
        fraction = "".join(rng.choice("0123456789") for _ in range(rng.randint(0, 4)))
        point = rng.choice(["", ".", "." + fraction]) if fraction else rng.choice(["", "."])
        cells.append(rng.choice(["", " ", "\t"]) + digits + point + rng.choice(["", "\t", " "]))
    for cell in cells:
        found = add_type({}, cell, "MatMul")
        assert found is not None
        expected = _cut_as_before(cell)
        assert found == ({} if expected is None else {expected: "MatMul"}), repr(cell)


_HEADER = "Step Id,Name,Type,Accelerator Core,Start Time(us),Duration(us),"
_HEADER += "aic_mac_ratio,aic_mte2_ratio,aiv_vec_ratio,aiv_mte2_ratio\n"


def test_remembered_ratio_cells_count_as_read_row_by_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same cells on many rows; a ratio out of range is reported on each row holding it.
    Reading with nothing remembered (no cell cached) is the row-by-row reference."""
    rows = [
        "1,mm,MatMul,AI_CORE,100.0,10.0,0.8,0.1,N/A,N/A",
        "1,mm,MatMul,AI_CORE,120.0,12.0,0.1,0.9,N/A,N/A",
        "1,add,Add,AI_VECTOR_CORE,130.0,3.0,0,0,0.2,0.7",
        "1,add,Add,AI_VECTOR_CORE,140.0,4.0,0,0,1.7,0.7",
        "1,cast,Cast,AI_CPU,150.0,5.0,N/A,N/A,N/A,N/A",
    ]
    path = tmp_path / "kernel_details.csv"
    path.write_text(_HEADER + "\n".join(rows * 3) + "\n")
    bad = BadValues()
    table = read_kernels(path, reader_thresholds(), bad)
    monkeypatch.setattr(kernels, "_CELLS_MAX", 0)
    bad_reference = BadValues()
    reference = read_kernels(path, reader_thresholds(), bad_reference)
    assert table.groups == reference.groups
    assert bad.warnings() == bad_reference.warnings() and bad.by_name() == bad_reference.by_name()
    by_type = {g.op_type: g for g in table.groups}
    assert by_type["MatMul"].pmu_us == 66.0
    assert by_type["Add"].pmu_us == 9.0  # the rows with 1.7 count without pipe data
    assert by_type["Cast"].pmu_us == 0.0
    assert any("1.7" in w for w in bad.warnings())
