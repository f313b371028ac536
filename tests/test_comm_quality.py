"""Communication quality on the real 2-card DDP job: the achieved HCCS bandwidth against
the link peak, and the all-reduce transfers that are not 512-byte aligned (what msprof-analyze's
advisor reports on the same profiles)."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.app.diagnose import run_diagnose
from advisor.app.job import JobOptions
from advisor.app.pipeline import profile_facts
from advisor.facts.base import Recorder
from advisor.facts.links import slowest_link
from advisor.inputs.taxonomy import default_taxonomy
from advisor.inputs.thresholds import fact_thresholds
from advisor.parsers.ascend.files import read_communication
from advisor.parsers.profile_data import LinkStat
from tests.conftest import REAL

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "fsdp2"


def _real(name: str) -> Path:
    folder = REAL / name
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent: ../shared is not beside the checkout")
    return folder


def test_the_ddp_job_s_links_against_their_peak_and_its_unaligned_all_reduce():
    facts = profile_facts(_real("ascend-ddp-2rank-text"))
    by_link = facts.value("comm.link_peak_ratio_by_link")
    # 15.5 GB/s achieved over HCCS (msprof-analyze: 15.6) of a 56 GB/s link
    assert by_link["HCCS"] == pytest.approx(15.5 / 56, abs=0.01)
    assert facts.value("comm.unaligned_ratio") == pytest.approx(0.015, abs=0.002)
    assert facts.value("comm.small_transfer_ratio") == 0.0
    run = run_diagnose(JobOptions(profile=_real("ascend-ddp-2rank-text")))
    main = run.diagnosis.main
    assert main is not None and main.id == "bottleneck.communication"
    assert "of the link peak" in main.message and "512 bytes" in main.message
    fired = {s.id for s in run.diagnosis.symptoms}
    assert {"symptom.link-below-peak", "symptom.unaligned-transfers"} <= fired
    assert "symptom.small-transfers" not in fired


def test_the_database_export_names_its_chip_and_so_its_peaks():
    facts = profile_facts(_real("ascend-ddp-2rank-db"))
    assert facts.value("profile.device") == "Ascend910B"
    note = next(f.note for f in facts.facts if f.id == "comm.link_peak_ratio")
    assert "Ascend 910B link peaks" in note


def test_the_communication_reader_keeps_each_op_s_transfers_and_sizes():
    path = _real("ascend-ddp-2rank-text") / "rank0_ascend_pt/ASCEND_PROFILER_OUTPUT"
    (step,) = read_communication(path / "communication.json", default_taxonomy())
    assert len(step.transfers["SDMA"]) == 4  # four all-reduce ops, Total Op Info left out
    assert step.packets["HCCS"][1.937312] == pytest.approx([2.0, 0.2379], abs=1e-4)


def test_the_ddp_job_s_collective_time_split_and_its_largest_all_reduce():
    """communication.json's Transit / Wait / Idle per kind and group; the largest collective's
    count x data type (trace_view.json's hcom args in the text export, COMMUNICATION_OP in the
    database export): 37752832 FP32 elements = 144 MB, under the default 200 MB HCCL_BUFFSIZE,
    so the buffer advice is not indicated."""
    text = profile_facts(_real("ascend-ddp-2rank-text"))
    split = text.value("comm.time_split_by_kind")["allreduce"]
    # the first bucket's all-reduce waits for the backward pass inside the op: mostly idle
    assert split["transit"] < 0.1 and split["idle"] > 0.8
    assert split["transit"] + split["wait"] + split["idle"] == pytest.approx(1.0, abs=0.001)
    [group] = text.value("comm.time_split_by_group")
    assert group["share"] == 1.0
    assert text.value("comm.rdma_retransmission_ops") == 0  # one node: no RDMA at all
    # the text export's hcom tasks carry count and data_type in trace_view.json: the same
    # largest all-reduce as the database export's COMMUNICATION_OP
    largest = text.get("comm.largest_collective_mb")
    assert largest is not None and largest.source == "trace_view.json:hcom args count,data_type"
    assert largest.value == pytest.approx(37752832 * 4 / 2**20, abs=0.01)
    assert "37752832 x FP32" in largest.note
    db = profile_facts(_real("ascend-ddp-2rank-db"))
    assert db.value("comm.largest_collective_mb") == pytest.approx(largest.value, abs=0.01)
    assert db.get("comm.largest_collective_mb").source == "COMMUNICATION_OP:count,dataType"
    run = run_diagnose(JobOptions(profile=_real("ascend-ddp-2rank-db")))
    assert "symptom.group-wait-high" not in {s.id for s in run.diagnosis.symptoms}


def test_the_report_shows_where_collective_time_goes(tmp_path: Path):
    from tests.cli_run import run_cli

    page = tmp_path / "ddp.html"
    assert run_cli("report", str(_real("ascend-ddp-2rank-db")), "-o", str(page)).exit_code == 0
    section = page.read_text(encoding="utf-8")
    section = section[section.index("Collective time by kind and group") :]
    assert "<td>allreduce</td><td>98.59 ms</td><td>4.1%</td><td>3.9%</td>" in section
    assert "largest collective: 144.0 MB" in section


def test_the_buffer_size_advice_is_decided_on_the_text_export(tmp_path: Path):
    """The largest collective read from trace_view.json lets feature.hccl-buffsize be judged
    on a text export: 144 MB under the 200 MB default is not met (it was unknown before);
    a launch that sets the buffer to 100 MB meets it."""
    import json

    from tests.cli_run import run_cli

    def verdict(launch: Path) -> str:
        ran = run_cli(
            "suggest",
            str(_real("ascend-ddp-2rank-text")),
            str(EXAMPLE / "config.yaml"),
            "--launch",
            str(launch),
            "--format",
            "json",
        )
        result = json.loads(ran.stdout)
        chosen = (result.get("recommendation") or {}).get("feature")
        if chosen == "feature.hccl-buffsize":
            return "chosen"
        found = {r["feature"]: r["code"] for r in result["rejected"]}
        return found.get("feature.hccl-buffsize", "not considered")

    assert verdict(EXAMPLE / "run.sh") == "prerequisite-false"
    small = tmp_path / "run.sh"
    script = (EXAMPLE / "run.sh").read_text(encoding="utf-8")
    small.write_text(
        script.replace(
            "export TASK_QUEUE_ENABLE=2", "export TASK_QUEUE_ENABLE=2\nexport HCCL_BUFFSIZE=100"
        ),
        encoding="utf-8",
    )
    # a candidate now, behind the try order's earlier communication remedy
    assert verdict(small) == "try-order"


@pytest.mark.parametrize("job", ["ascend-ddp-2rank-text", "ascend-ddp-2rank-db"])
def test_sdma_is_the_copy_engine_s_total_not_a_link(job: str):
    """communication.json's SDMA entry repeats the HCCS transfers (the copy engine moved them over
    HCCS): it is not a link, so it has no bandwidth or peak share of its own."""
    facts = profile_facts(_real(job))
    assert set(facts.value("comm.bandwidth_gbps_by_link")) == {"HCCS"}
    assert set(facts.value("comm.link_peak_ratio_by_link")) == {"HCCS"}
    assert facts.get("comm.link_peak_ratio").source.endswith(":HCCS")


def test_an_sdma_entry_in_a_matrix_is_never_judged_a_slow_link():
    # three HCCS links at 18 GB/s, and SDMA "links" far slower that are no network link
    links = [LinkStat(0, d, "HCCS", 180.0, 10.0) for d in (1, 2, 3)]
    links += [LinkStat(0, d, "SDMA", 20.0, 10.0) for d in (1, 2, 3)]
    links.append(LinkStat(0, 4, "SDMA", 200.0, 10.0))
    out = Recorder("job")
    slowest_link(links, out, "communication_matrix.json", fact_thresholds())
    assert out.facts["comm.links_compared"].value == 3
    assert out.facts["comm.slowest_link"].value["transport"] == "HCCS"
    assert out.facts["comm.slow_link_ratio"].value == 0.0


@pytest.mark.parametrize("job", ["ascend-qwen3-pp2-4rank", "ascend-ddp-2rank-db"])
def test_the_link_peak_share_is_the_representative_rank_s_and_says_which(job: str):
    """The job's link peak share is one rank's, the rank its per-link shares and bandwidths
    describe, never a median or the maximum over ranks: the symptom quotes them side by side."""
    facts = profile_facts(_real(job))
    ratio = facts.get("comm.link_peak_ratio")
    by_link = facts.get("comm.link_peak_ratio_by_link")
    assert ratio is not None and by_link is not None
    rank = by_link.note.split(" ")[1]
    assert ratio.note.startswith(f"rank {rank} ")
    assert ratio.value == min(by_link.value.values())
    assert ratio.value == facts.value("comm.link_peak_ratio", scope=f"rank:{rank}")
