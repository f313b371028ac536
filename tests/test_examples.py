"""The bundled example profiles are exactly what the writer produces, and the tool reads them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from advisor.app.job import JobOptions
from advisor.app.pipeline import profile_facts
from advisor.app.suggest import SuggestOptions, run_suggest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
sys.path.insert(0, str(EXAMPLES))

import make_profiles  # noqa: E402


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_committed_examples_are_reproducible(tmp_path: Path):
    make_profiles.generate(tmp_path)
    assert _tree(tmp_path) == _tree(make_profiles.ROOT), "run: python examples/make_profiles.py"


@pytest.mark.parametrize(
    "name",
    [
        *make_profiles.SINGLE_RANK,
        "slow-rank",
        "pipeline-bubble",
        *make_profiles.GPU_TRACES,
        *make_profiles.DATABASE,
    ],
)
def test_every_example_reads(name: str):
    facts = profile_facts(make_profiles.ROOT / name)
    assert facts.value("step.time_ms") > 0
    assert not facts.warnings


def test_the_all_to_all_example_is_read_as_all_to_all():
    facts = profile_facts(make_profiles.ROOT / "all-to-all")
    assert facts.value("comm.alltoall_share") == 1.0
    assert facts.value("job.pipeline_parallel") is False
    assert facts.value("job.expert_parallel") is True


def test_the_blocking_copy_example_idles_for_the_host():
    facts = profile_facts(make_profiles.ROOT / "blocking-copy")
    assert facts.value("host.sync_calls_per_step") == 1
    # the device waits for launches the blocked host makes late: the wait's time, once
    assert facts.value("attrib.idle_blocked_ms") > 3.0
    assert facts.value("attrib.idle_host_ms") < 0.1
    assert facts.value("attrib.idle_dependency_ms") == 0.0


def test_the_blocking_copy_example_names_the_blocking_call():
    facts = profile_facts(make_profiles.ROOT / "blocking-copy")
    calls = facts.value("host.blocking_calls")
    copy = next(c for c in calls if c["call"] == "cudaMemcpyAsync")
    assert copy["memory"] == "Memcpy DtoH (Device -> Pageable)"
    assert copy["bytes"] == 268435456
    assert copy["range"] == "## sparse_data_dist ##"
    assert {c["call"] for c in calls} == {"cudaMemcpyAsync", "cudaStreamSynchronize"}
    # copy (2.19 ms) and synchronisation (3.805 ms) back to back: 5.995 ms of a 10.4 ms step
    assert facts.value("host.blocking_ms_per_step") == pytest.approx(5.995)
    assert facts.value("host.blocking_ratio") == pytest.approx(5.995 / 10.4)
    assert 0.5 < facts.value("host.blocking_idle_share") <= 1.0
    # the device idles during most of the wait: that part is the step time it costs
    assert 0.3 < facts.value("host.blocking_idle_ratio") < facts.value("host.blocking_ratio")


def test_the_all_to_all_example_blocks_nowhere():
    facts = profile_facts(make_profiles.ROOT / "all-to-all")
    assert facts.value("host.blocking_ms_per_step") == 0.0
    assert facts.value("host.blocking_calls") == []


def test_the_ascend_blocking_example_names_the_read_and_proposes_unblocking():
    folder = make_profiles.ROOT / "ascend-blocking-sync"
    facts = profile_facts(folder)
    # aten::item holds the synchronous copy: one wait, named as the code called it, where
    calls = facts.value("host.blocking_calls")
    assert [(c["call"], c["range"]) for c in calls] == [("aten::item", "## log_loss ##")]
    # the NPU idles 3 ms a step while the host waits: the wait's time, not dispatch's
    assert facts.value("attrib.idle_blocked_ms") == pytest.approx(3.0, abs=0.01)
    assert facts.value("host.launch_gap_ms_per_step") < 0.1
    job = JobOptions(
        profile=folder,
        config=EXAMPLES / "fsdp2" / "config.yaml",
        launch=EXAMPLES / "fsdp2" / "run.sh",
    )
    result = run_suggest(job, options=SuggestOptions(use_ledger=False))
    assert result.diagnosis.bottlenecks[0].id == "bottleneck.host-dispatch"
    chosen = result.suggestion.recommendation
    assert chosen is not None
    assert chosen.feature == "feature.npu-unblock-host"
    # its ceiling is the blocked idle time, not the whole idle or launch-gap time
    assert chosen.ceiling_ms == pytest.approx(3.0, abs=0.01)


def test_the_analyzer_examples_show_what_their_scenarios_wrote():
    conversions = profile_facts(make_profiles.ROOT / "format-conversions")
    # two TransData of 100 us per layer against 2620 us of the layer's other kernels
    assert conversions.value("ops.format_conversion_share") == pytest.approx(200 / 2820, abs=1e-3)
    assert conversions.value("ops.format_conversion_ms_per_step") == pytest.approx(0.4)
    unaligned = profile_facts(make_profiles.ROOT / "unaligned-transfers")
    assert unaligned.value("comm.unaligned_ratio") == pytest.approx(0.6)
    link = profile_facts(make_profiles.ROOT / "slow-link")
    assert link.value("comm.links_compared") == 7
    assert link.value("comm.slowest_link")["link"] == "0-5"
    assert link.value("comm.slow_link_ratio") == pytest.approx(0.55)
    clock = profile_facts(make_profiles.ROOT / "aicore-freq-drop")
    assert clock.value("ops.aicore_freq_min_ratio") == pytest.approx(1300 / 1800)


def test_a_named_slow_link_is_checked_before_more_ranks_are_profiled():
    job = JobOptions(
        profile=make_profiles.ROOT / "slow-link",
        config=EXAMPLES / "fsdp2" / "config.yaml",
        launch=EXAMPLES / "fsdp2" / "run.sh",
    )
    result = run_suggest(job, options=SuggestOptions(use_ledger=False))
    chosen = result.suggestion.recommendation
    assert chosen is not None and chosen.feature == "feature.check-slow-link"
    assert "Link 0-5 over HCCS moves 8.1 GB/s against a median of 18 GB/s" in chosen.advice
    # the rank that cannot be named is not the question once the link is named
    later = {r.feature for r in result.suggestion.rejected}
    assert "feature.widen-profile-ranks" in later
