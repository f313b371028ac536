"""The whole process's device memory (component APP) and its modules outside the allocator:
memory_record.csv's APP rows (reserved only), torch_npu's npu_module_mem.csv and the database's
NPU_MODULE_MEM; the pressure is the process's peak against the device."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.app.job import JobOptions, load_job
from advisor.parsers.ascend.memory import read_memory_record, read_module_memory
from tests.synth import PRESETS, write_profile

GIB = 1024**3
HEADER = (
    "Component,Timestamp(us),Total Allocated(MB),Total Reserved(MB),Total Active(MB),"
    "Stream Ptr,Device Type"
)


def test_app_rows_record_reserved_only_and_give_the_process_peak(tmp_path: Path) -> None:
    path = tmp_path / "memory_record.csv"
    rows = [HEADER, "PTA,1.0\t,100,200,100,0,NPU:0", "PTA,2.0\t,150,200,150,0,NPU:0"]
    rows += ["APP,1.5\t,,260,,,NPU:0", "APP,2.5\t,,300,,,NPU:0"]
    path.write_text("\n".join(rows) + "\n")
    summary = read_memory_record(path)
    assert summary.component == "PTA" and summary.reserved_peak_mb == 200
    assert summary.process_peak_mb == 300


@pytest.mark.parametrize("device_column", [True, False])
def test_npu_module_mem_peaks_per_module(tmp_path: Path, device_column: bool) -> None:
    lead = "Device_id," if device_column else ""
    first = "0," if device_column else ""
    rows = [f"{lead}Component,Timestamp(us),Total Reserved(MB),Device"]
    for t, app, hccl in ((1.0, 900, 100), (2.0, 1200, 400), (3.0, 1000, 400)):
        rows += [f"{first}APP,{t}\t,{app},NPU:0", f"{first}HCCL,{t}\t,{hccl},NPU:0"]
        rows += [f"{first}SLOG,{t}\t,0.0,NPU:0"]
    path = tmp_path / "npu_module_mem.csv"
    path.write_text("\n".join(rows) + "\n")
    assert read_module_memory(path) == {"APP": 1200, "HCCL": 400, "SLOG": 0.0}


def test_the_process_peak_is_what_the_pressure_is_read_from(tmp_path: Path) -> None:
    write_profile(tmp_path / "prof", PRESETS["memory-pressure"].with_(steps=4, layers=2))
    facts = load_job(JobOptions(profile=tmp_path / "prof", device="910B")).facts
    process = facts.value("memory.process_peak_bytes")
    reserved = facts.value("memory.reserved_peak_bytes")
    assert process > reserved  # the pool plus what lives outside the allocator
    assert facts.value("memory.peak_bytes") == process
    assert facts.value("memory.pressure_ratio") == pytest.approx(process / (64 * GIB))


def test_real_module_memory_names_the_communication_buffers() -> None:
    real = Path("../shared/real/ascend-qwen3-pp2-4rank")
    if not real.is_dir():
        pytest.skip("../shared/real is not beside the repository")
    facts = load_job(JobOptions(profile=real)).facts
    modules = facts.value("memory.module_peaks")
    assert next(iter(modules)) == "HCCL"  # the largest part outside the allocator
    assert facts.value("memory.process_peak_bytes") > facts.value("memory.reserved_peak_bytes")


def test_the_database_export_reads_npu_module_mem() -> None:
    real = Path("../shared/real/ascend-ddp-2rank-db")
    if not real.is_dir():
        pytest.skip("../shared/real is not beside the repository")
    facts = load_job(JobOptions(profile=real)).facts
    assert "NPU_MODULE_MEM" in (facts.get("memory.process_peak_bytes") or ()).source
    assert "HCCL" in facts.value("memory.module_peaks")
