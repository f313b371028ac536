"""Memory pressure: the per-rank peak against the device's memory, from every input that measures
either, and unknown (never zero) when one of them is missing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.app.diagnose import run_diagnose
from advisor.app.job import JobOptions, load_job
from advisor.parsers.ascend.memory import read_memory_record, read_operator_memory
from advisor.parsers.memory_summary import live_at
from tests.cli_run import run_cli
from tests.synth import PRESETS, write_profile
from tests.synth.db_file import write_profile_db

GIB = 1024**3
PRESSURE = PRESETS["memory-pressure"].with_(steps=4, layers=2)


def _main(options: JobOptions) -> tuple[str | None, list[str]]:
    run = run_diagnose(options)
    bottlenecks = run.diagnosis.bottlenecks
    symptoms = [s.id for s in run.diagnosis.symptoms]
    return (bottlenecks[0].id if bottlenecks else None), symptoms


def test_61_of_64_gib_on_910b_named_on_the_command_line_is_memory_pressure(tmp_path: Path):
    write_profile(tmp_path / "prof", PRESSURE)
    main, symptoms = _main(JobOptions(profile=tmp_path / "prof", device="910B"))
    assert main == "bottleneck.memory"
    assert "symptom.memory-pressure" in symptoms


def test_the_device_the_database_export_records_needs_no_option(tmp_path: Path):
    write_profile_db(tmp_path / "prof", PRESSURE.with_(device="Ascend910B"))
    job = load_job(JobOptions(profile=tmp_path / "prof"))
    assert job.facts.value("profile.device") == "Ascend910B"
    assert job.facts.get("memory.device_bytes").source.endswith(":NPU_INFO")  # type: ignore[union-attr]
    # the whole process (NPU_MODULE_MEM's APP): the allocator's 61 GiB and 1200 MB outside it
    assert job.facts.value("memory.pressure_ratio") == pytest.approx((61 * 1024 + 1200) / 65536)
    main, _ = _main(JobOptions(profile=tmp_path / "prof"))
    assert main == "bottleneck.memory"


def test_without_the_device_the_pressure_is_unknown_not_zero(tmp_path: Path):
    write_profile(tmp_path / "prof", PRESSURE)
    job = load_job(JobOptions(profile=tmp_path / "prof"))
    assert job.facts.get("memory.pressure_ratio") is None
    missing = {m.id: m.reason for m in job.facts.missing}
    assert "--device" in missing["memory.device_bytes"]
    run = run_diagnose(JobOptions(profile=tmp_path / "prof"))
    assert "symptom.memory-pressure" in {u.rule for u in run.diagnosis.unknown}


def test_a_healthy_step_with_room_left_has_no_pressure(tmp_path: Path):
    write_profile(tmp_path / "prof", PRESETS["healthy"].with_(steps=4, layers=2))
    job = load_job(JobOptions(profile=tmp_path / "prof", device="910B"))
    assert job.facts.value("memory.footprint") == "fits"
    main, _ = _main(JobOptions(profile=tmp_path / "prof", device="910B"))
    assert main is None


LOG = (
    " [2026-01-01 10:00:0{n}] iteration {n}/ 100 | consumed samples: {n}0 | elapsed time per "
    "iteration (ms): 1000.0 | learning rate: 1.0E-05 | lm loss: 5.0 | "
    "max_memory_allocated(GB): 55.0 | max_memory_reserved(GB): 61.0 |\n"
)


def test_the_log_max_memory_reserved_against_the_device(tmp_path: Path):
    log = tmp_path / "train.log"
    log.write_text("".join(LOG.format(n=n) for n in range(1, 6)))
    ran = run_cli("facts", "--log", str(log), "--device", "910B", "--format", "json")
    facts = {f["id"]: f for f in json.loads(ran.stdout)["facts"]}
    assert facts["memory.peak_bytes"]["value"] == 61 * GIB
    assert facts["memory.pressure_ratio"]["value"] == pytest.approx(61 / 64)


def test_an_out_of_memory_error_in_the_log_is_full_pressure(tmp_path: Path):
    log = tmp_path / "train.log"
    text = LOG.format(n=1).replace("61.0", "40.0")
    text += "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB\n"
    log.write_text(text)
    ran = run_cli("facts", "--log", str(log), "--device", "910B", "--format", "json")
    facts = {f["id"]: f for f in json.loads(ran.stdout)["facts"]}
    assert facts["log.out_of_memory_errors"]["value"] == 1
    assert facts["memory.pressure_ratio"]["value"] >= 1.0
    assert "train.log:2" in facts["memory.pressure_ratio"]["note"]


def test_the_curve_attributes_the_peak(tmp_path: Path):
    write_profile(tmp_path / "dyn", PRESSURE)
    write_profile(tmp_path / "static", PRESETS["memory-pressure-static"].with_(steps=4, layers=2))
    dynamic = load_job(JobOptions(profile=tmp_path / "dyn", device="910B")).facts
    static = load_job(JobOptions(profile=tmp_path / "static", device="910B")).facts
    assert dynamic.value("memory.attribution") == "dynamic"
    assert dynamic.value("memory.footprint") == "dynamic"
    assert static.value("memory.attribution") == "static"
    # the operators holding the most at the peak, from operator_memory.csv
    holders = dynamic.value("memory.peak_holders")
    assert list(holders) == ["aten::mul", "npu_fusion_attention"]


def test_a_resident_part_that_alone_fills_the_device_asks_for_a_layout(tmp_path: Path):
    write_profile(
        tmp_path / "prof",
        PRESETS["memory-pressure-static"].with_(steps=4, layers=2, allocated_floor_share=0.97),
    )
    facts = load_job(JobOptions(profile=tmp_path / "prof", device="910B")).facts
    assert facts.value("memory.footprint") == "layout"


def test_operator_memory_live_at_the_peak(tmp_path: Path):
    path = tmp_path / "operator_memory.csv"
    path.write_text(
        "Name,Size(KB),Allocation Time(us),Release Time(us)\n"
        "a,1024,10\t,20\t\n"  # released before the peak
        "b,2048,10\t,\n"  # never released: held at the peak
        "c,1024,12\t,40\t\n"
        "c,1024,14\t,50\t\n"
    )
    blocks = read_operator_memory(path)
    assert live_at(blocks, 30.0) == (("b", 2.0), ("c", 2.0))


def test_memory_record_floor_and_peak_time(tmp_path: Path):
    path = tmp_path / "memory_record.csv"
    path.write_text(
        "Component,Timestamp(us),Total Allocated(MB),Total Reserved(MB)\n"
        "PTA,1.0\t,100,200\n"
        "PTA,2.0\t,300,400\n"
        "PTA,3.0\t,120,400\n"
        "APP,2.0\t,,900\n"
    )
    summary = read_memory_record(path)
    assert summary.allocated_floor_mb == 100
    assert summary.peak_time_us == 2.0
    assert summary.allocated_peak_mb == 300


def test_a_device_the_table_does_not_know_is_one_line(tmp_path: Path):
    write_profile(tmp_path / "prof", PRESSURE)
    for command in ("facts", "diagnose"):
        ran = run_cli(command, str(tmp_path / "prof"), "--device", "K80")
        assert ran.exit_code == 2 and "unknown device 'K80'" in ran.output, ran.output
        assert "Traceback" not in ran.output
