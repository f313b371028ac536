"""The job's parallel layout: communication groups per collective, parallel sizes from the
profile, the training log and the config, the pipeline's micro-batches and schedule bubble, and
candidates ranked by the step time they can recover."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.app.job import JobOptions, load_job
from advisor.app.pipeline import collect_facts, profile_facts
from advisor.app.suggest import SuggestOptions, run_suggest
from advisor.model import RejectCode
from advisor.parsers.trainlog.log import read_logs
from tests.conftest import REAL
from tests.synth import PRESETS, write_pipeline, write_profile

ITERATIONS = "".join(
    f" iteration {n:>8}/      20 | consumed samples: {4 * n:>8} | elapsed time per iteration "
    f"(ms): {810 + n % 2:.1f} | learning rate: 1.0E-05 | global batch size:     4 | "
    "lm loss: 2.5E+00 | loss scale: 1.0 | grad norm: 1.2 | number of skipped iterations:   0 | "
    "number of nan iterations:   0 |\n"
    for n in range(10, 14)
)


def _megatron_log(path: Path, **args: object) -> Path:
    lines = ["------------------------ arguments ------------------------"]
    lines += [f"  {name} {'.' * (40 - len(name))} {value}" for name, value in sorted(args.items())]
    lines.append("-------------------- end of arguments ---------------------")
    path.write_text("\n".join(lines) + "\n" + ITERATIONS)
    return path


def _real(name: str) -> Path:
    folder = REAL / name
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent: ../shared is not beside the checkout")
    return folder


def _group(rows: list[dict[str, object]], kind: str) -> list[dict[str, object]]:
    return [row for row in rows if kind in row["kinds"]]  # type: ignore[operator]


def test_real_pipeline_job_names_each_collectives_group():
    facts = collect_facts(_real("ascend-qwen3-pp2-4rank"), None)
    assert facts.value("job.parallel_sizes") == {"tp": 1, "pp": 2, "dp": 2, "cp": 1, "ep": 1}
    assert facts.value("job.tensor_parallel") is False
    assert facts.value("job.context_parallel") is False
    rows = facts.value("comm.groups")
    # send/recv pairs a rank with its peer in the other stage; its group is matched by members
    p2p = _group(rows, "batchsendrecv")
    assert sorted(tuple(r["ranks"]) for r in p2p) == [(0, 2), (1, 3)]
    assert all("pp" in str(r["name"]).split("|") for r in p2p)
    # the distributed optimizer gathers and scatters within each stage's data-parallel pair
    sharded = [r for r in _group(rows, "reducescatter") if "allgather" in r["kinds"]]
    assert sorted(tuple(r["ranks"]) for r in sharded) == [(0, 1), (2, 3)]
    assert all("dp_cp" in str(r["name"]).split("|") for r in sharded)
    world = [r for r in rows if r["ranks"] == [0, 1, 2, 3]]
    assert [r["name"] for r in world] == ["default_group"]
    # per rank: the keys as the profile spells them, with ms per step by kind
    rank0 = facts.value("comm.groups", "rank:0")
    assert sum(r["ms_per_step"] for r in rank0) == pytest.approx(
        facts.value("comm.time_ms_per_step", "rank:0"), rel=1e-6
    )


def test_real_kineto_trace_names_its_process_group():
    trace = _real("kineto") / "nccl_parser_config__nccl_data.json.gz"
    facts = profile_facts(trace)
    (row,) = facts.value("comm.groups")
    assert row["name"] == "default_pg" and row["ranks"] == [0, 1]
    assert set(row["kinds"]) == {"allreduce", "broadcast"}
    missing = {m.id: m.reason for m in facts.missing}
    assert "record no parallel degrees" in missing["job.parallel_sizes"]


def test_a_profile_without_group_keys_says_so(tmp_path: Path):
    write_profile(tmp_path / "prof", PRESETS["comm-bound"])
    facts = profile_facts(tmp_path / "prof")
    rows = facts.value("comm.groups")
    assert rows and all(r["name"] is None for r in rows)  # no parallel_group_info recorded
    assert sum(r["ms_per_step"] for r in rows) == pytest.approx(
        facts.value("comm.time_ms_per_step"), rel=1e-6
    )


def test_log_argument_dump_is_read(tmp_path: Path):
    log = _megatron_log(
        tmp_path / "train.log",
        global_batch_size=64,
        micro_batch_size=2,
        data_parallel_size=4,
        pipeline_model_parallel_size=4,
        tensor_model_parallel_size=2,
        virtual_pipeline_model_parallel_size="None",
    )
    parsed = read_logs([log])
    assert parsed.arguments["global_batch_size"] == "64"
    assert len(parsed.iterations) == 4
    facts = collect_facts(None, [log])
    assert facts.value("log.parallel_sizes") == {
        "tp": 2,
        "pp": 4,
        "dp": 4,
        "global_batch": 64,
        "micro_batch": 2,
    }
    sizes = facts.value("job.parallel_sizes")
    assert sizes["pp"] == 4 and "vpp" not in sizes  # "None" is not a size
    assert facts.value("job.tensor_parallel") is True
    assert facts.value("pipeline.microbatches") == 8  # 64 / (2 x 4)
    assert facts.value("pipeline.bubble_expected_ratio") == pytest.approx(3 / 11)


def test_interleaving_divides_the_bubble(tmp_path: Path):
    log = _megatron_log(
        tmp_path / "train.log",
        global_batch_size=64,
        micro_batch_size=2,
        data_parallel_size=4,
        pipeline_model_parallel_size=4,
        virtual_pipeline_model_parallel_size=2,
    )
    facts = collect_facts(None, [log])
    assert facts.value("pipeline.bubble_expected_ratio") == pytest.approx(3 / (2 * 8 + 3))


def test_uneven_batch_arithmetic_is_not_guessed(tmp_path: Path):
    log = _megatron_log(
        tmp_path / "train.log",
        global_batch_size=10,
        micro_batch_size=4,
        data_parallel_size=1,
        pipeline_model_parallel_size=2,
    )
    facts = collect_facts(None, [log])
    missing = {m.id: m.reason for m in facts.missing}
    assert "does not divide" in missing["pipeline.microbatches"]
    assert "micro-batches unknown" in missing["pipeline.bubble_expected_ratio"]


def test_config_states_the_layout_when_nothing_else_does(tmp_path: Path):
    config = tmp_path / "config.yaml"
    config.write_text("parallel:\n  tp_size: 2\n  cp_size: 4\n  ep_size: 1\n")
    job = load_job(JobOptions(profile=None, config=config, logs=(_plain_log(tmp_path),)))
    fact = job.facts.get("job.parallel_sizes")
    assert fact is not None and fact.value == {"tp": 2, "cp": 4, "ep": 1}
    assert fact.source == "config.yaml"
    assert job.facts.value("job.context_parallel") is True
    assert job.facts.value("job.expert_parallel") is False


def test_mindformers_config_gives_the_pipeline_arithmetic(tmp_path: Path):
    config = _real("mindformers-configs") / "pretrain_qwen3_32b_4k.yaml"
    job = load_job(JobOptions(profile=None, config=config, logs=(_plain_log(tmp_path),)))
    sizes = job.facts.value("job.parallel_sizes")
    assert sizes["tp"] == 4 and sizes["pp"] == 4 and sizes["microbatches"] == 4
    # p=4, m=4: (4-1)/(4+4-1)
    assert job.facts.value("pipeline.bubble_expected_ratio") == pytest.approx(3 / 7)


def test_what_ran_comes_before_what_the_config_says(tmp_path: Path):
    write_profile(tmp_path / "prof", PRESETS["comm-bound"])
    config = tmp_path / "config.yaml"
    config.write_text("parallel:\n  tp_size: 2\n  fsdp_size: 8\n")
    job = load_job(JobOptions(profile=tmp_path / "prof", config=config))
    fact = job.facts.get("job.parallel_sizes")
    assert fact is not None and fact.value["tp"] == 1  # distributed_args of the run
    assert "profiler_metadata.json" in fact.source


def _plain_log(tmp_path: Path) -> Path:
    path = tmp_path / "plain.log"
    path.write_text(ITERATIONS)
    return path


def test_real_pipeline_job_with_its_log_shows_the_schedule_bubble(tmp_path: Path):
    profile = _real("ascend-qwen3-pp2-4rank")
    # the run's stated batch sizes (SOURCES.txt: MBS=1 GBS=4, DP=2, PP=2): m = 2
    log = _megatron_log(
        tmp_path / "train.log",
        global_batch_size=4,
        micro_batch_size=1,
        data_parallel_size=2,
        pipeline_model_parallel_size=2,
    )
    config = tmp_path / "config.yaml"
    config.write_text("model:\n  model_id: qwen3\n")
    job = JobOptions(profile=profile, config=config, logs=(log,))
    run = run_suggest(job, options=SuggestOptions(use_ledger=False))
    facts = run.facts
    assert facts.value("pipeline.microbatches") == 2
    assert facts.value("pipeline.bubble_expected_ratio") == pytest.approx(1 / 3)
    # the slowest stage waits ~9% in send/recv: the most more micro-batches can recover
    assert facts.value("pipeline.slowest_stage_p2p_ratio") == pytest.approx(0.091, abs=0.005)
    suggestion = run.suggestion
    assert suggestion.recommendation is not None
    # the last stage's extra time is mostly its unfused loss: fused before layers move
    assert suggestion.recommendation.feature == "feature.fused-loss"
    reasons = {r.feature: r.code for r in suggestion.rejected}
    assert reasons["feature.pipeline-balance-stages"] is RejectCode.after
    assert reasons["feature.pipeline-more-microbatches"] is RejectCode.lower_ceiling
    assert run.diagnosis.main is not None
    assert "micro-batches per step: 2" in run.diagnosis.main.message


def test_the_candidate_that_recovers_most_is_chosen(tmp_path: Path):
    # stages 25% apart, but every rank waits 6 ms in send/recv: the schedule's bubble, not the
    # imbalance, is where the time goes
    base = PRESETS["healthy"].with_(comm_overlapped_us=0.0)
    write_pipeline(tmp_path / "prof", base, stages=2, stage_factor=1.25, p2p_us=6000.0)
    config = tmp_path / "config.yaml"
    config.write_text("model:\n  model_id: qwen3\n")
    run = run_suggest(
        JobOptions(profile=tmp_path / "prof", config=config),
        options=SuggestOptions(use_ledger=False),
    )
    suggestion = run.suggestion
    assert suggestion.recommendation is not None
    assert suggestion.recommendation.feature == "feature.pipeline-more-microbatches"
    chosen = suggestion.recommendation.ceiling_ratio
    reasons = {r.feature: r.code for r in suggestion.rejected}
    assert reasons["feature.pipeline-balance-stages"] is RejectCode.lower_ceiling
    imbalance = run.facts.value("pipeline.stage_imbalance_ratio")
    assert chosen is not None and chosen > imbalance > 0.02
