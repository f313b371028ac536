"""The whole process's device memory and its modules outside the allocator: memory_record.csv's
APP rows (reserved only), the database's NPU_MEM app rows (the same samples), else the modules of
npu_module_mem.csv / NPU_MODULE_MEM added up at one sample; the pressure is the process's peak
against the device."""

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
    modules = read_module_memory(path)
    assert modules.peaks == {"APP": 1200, "HCCL": 400, "SLOG": 0.0}
    assert modules.total_peak_mb == 1600  # at t=2.0: the modules added up at one sample


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
    assert "NPU_MODULE_MEM" in (facts.get("memory.module_peaks") or ()).source
    assert "HCCL" in facts.value("memory.module_peaks")


def _real(name: str) -> Path:
    real = Path("../shared/real") / name
    if not real.is_dir():
        pytest.skip("../shared/real is not beside the repository")
    return real


def test_the_text_and_database_exports_of_one_job_agree_on_the_process_peak() -> None:
    """The database's MEMORY_RECORD leaves out the APP component the text export's
    memory_record.csv holds; its NPU_MEM app rows are the same samples (2113.7 MB on both ranks of
    the DDP job), not NPU_MODULE_MEM's APP module, which is only the allocator's pool (1452 MB)."""
    text = load_job(JobOptions(profile=_real("ascend-ddp-2rank-text"))).facts
    db = load_job(JobOptions(profile=_real("ascend-ddp-2rank-db"))).facts
    for rank in ("rank:0", "rank:1"):
        peak = text.value("memory.process_peak_bytes", rank)
        assert peak == pytest.approx(2113.73 * 2**20, rel=1e-4)
        assert db.value("memory.process_peak_bytes", rank) == pytest.approx(peak, rel=1e-5)
    assert db.get("memory.process_peak_bytes").source.endswith(":NPU_MEM:app hbm")
    assert db.value("memory.peak_bytes") == db.value("memory.process_peak_bytes")
    # far above the allocator's reserved pool: the communication buffers and the runtime too
    assert db.value("memory.process_peak_bytes") > 1.4 * db.value("memory.reserved_peak_bytes")


@pytest.mark.parametrize("export", ["text", "db"])
def test_without_an_app_record_the_modules_added_up_are_the_process(
    tmp_path: Path, export: str
) -> None:
    """A profile whose memory record lacks the process (no APP rows, no NPU_MEM): the highest
    sum of the modules at one sample, ~1.98 GiB on the DDP job, not the APP module alone."""
    import shutil
    import sqlite3

    job = tmp_path / "job"
    shutil.copytree(_real(f"ascend-ddp-2rank-{export}"), job)
    for rank in (0, 1):
        out = job / f"rank{rank}_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
        if export == "text":
            record = out / "memory_record.csv"
            lines = record.read_text().splitlines(keepends=True)
            record.write_text("".join(x for x in lines if not x.startswith("APP,")))
        else:
            db = sqlite3.connect(out / f"ascend_pytorch_profiler_{rank}.db")
            db.execute("DROP TABLE NPU_MEM")
            db.commit()
            db.close()
    facts = load_job(JobOptions(profile=job)).facts
    fact = facts.get("memory.process_peak_bytes")
    assert fact is not None
    assert fact.source.endswith(("NPU_MODULE_MEM", "npu_module_mem.csv"))
    assert fact.value == pytest.approx(1.9769 * GIB, rel=1e-3)
