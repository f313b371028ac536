"""suggest on MindSpore Transformers configs: seed 003's remedies as YAML edits from MindSpore
profiles, validated against the MindFormers sections' schema, and the loop on the real config."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from advisor.app.compare import Side, run_compare
from advisor.app.job import JobOptions
from advisor.app.suggest import SuggestOptions, run_suggest
from advisor.core.yamlio import load_data
from advisor.edit.writer import write_changes
from advisor.engine.compare import Verdict
from advisor.model import InputError, RejectCode
from tests.synth import PRESETS, write_pipeline, write_profile

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "mindformers" / "config.yaml"
REAL = Path(__file__).resolve().parents[2] / "shared" / "real" / "mindformers-configs"
MS = {"framework": "mindspore", "steps": 4, "layers": 2}
DDP = {"comm_overlapped_us": 0.0, "comm_exposed_us": 2400.0, "exposed_comm": "allreduce"}
# 61 of 64 GiB (the device is given to suggest): the peak held through the step is parameters
# and optimizer states, the one raised within it activations
STATIC_PRESSURE = {
    "allocated_peak_mb": 58000.0,
    "reserved_peak_mb": 61.0 * 1024,
    "allocated_floor_share": 0.8,
}
DYNAMIC_PRESSURE = {**STATIC_PRESSURE, "allocated_floor_share": 0.35}


def config(tmp_path: Path, **edits: object) -> Path:
    """The bundled example with `section__key=value` replacements of whole lines."""
    text = EXAMPLE.read_text()
    for dotted, value in edits.items():
        key = dotted.split("__")[-1]
        lines = text.split("\n")
        hits = [i for i, line in enumerate(lines) if line.strip().startswith(f"{key}:")]
        assert len(hits) == 1, key
        indent = lines[hits[0]][: len(lines[hits[0]]) - len(lines[hits[0]].lstrip())]
        lines[hits[0]] = f"{indent}{key}: {value}"
        text = "\n".join(lines)
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return path


def suggest(prof: Path, cfg: Path, ledger: Path | None = None):
    options = SuggestOptions(ledger=ledger) if ledger else SuggestOptions(use_ledger=False)
    # the device: how much memory the generated profiles' peaks leave (the text export records none)
    job = JobOptions(profile=prof, config=cfg, device="910B")
    return run_suggest(job, options=options)


CASES = [
    # (profile changes, config edits, feature, key written)
    (DDP, {}, "feature.mf-parallel-optimizer", "parallel.enable_parallel_optimizer"),
    (
        DDP,
        {"enable_parallel_optimizer": "True"},
        "feature.mf-gradient-accumulation",
        "runner_config.gradient_accumulation_steps",
    ),
    (
        DDP,
        {"enable_parallel_optimizer": "True", "data_parallel": 2, "model_parallel": 4},
        "feature.mf-micro-batch-interleave",
        "micro_batch_interleave_num",
    ),
    (
        {"dataloader_us": 2500.0},
        {},
        "feature.mf-dataset-workers",
        "train_dataset.num_parallel_workers",
    ),
    (
        {"dataloader_us": 2500.0},
        {"num_parallel_workers": 32},
        "feature.mf-dataset-prefetch",
        "train_dataset.prefetch_size",
    ),
    (
        {"unfused_attention": True, "attention_us": 900.0},
        {},
        "feature.mf-flash-attention",
        "model.model_config.use_flash_attention",
    ),
    (STATIC_PRESSURE, {}, "feature.mf-parallel-optimizer", "parallel.enable_parallel_optimizer"),
    (
        DYNAMIC_PRESSURE,
        {"enable_parallel_optimizer": "True"},
        "feature.mf-select-recompute",
        "recompute_config.select_recompute",
    ),
]


def _value(data: dict, dotted: str) -> object:
    for key in dotted.split("."):
        data = data.get(key) if isinstance(data, dict) else None
    return data


@pytest.mark.parametrize(
    ("changes", "edits", "feature", "written"),
    CASES,
    ids=[f"{c[2].removeprefix('feature.')}-{i}" for i, c in enumerate(CASES)],
)
def test_each_mindformers_feature_from_a_mindspore_profile(
    tmp_path: Path, changes, edits, feature, written
):
    write_profile(tmp_path / "prof", PRESETS["healthy"].with_(**MS, **changes))
    cfg = config(tmp_path, **edits)
    run = suggest(tmp_path / "prof", cfg)
    rec = run.suggestion.recommendation
    assert rec is not None, run.suggestion.reason
    assert rec.feature == feature, [(r.feature, r.code) for r in run.suggestion.rejected]
    before = load_data(cfg)
    text = cfg.read_text()
    write_changes(rec.patch.changes)  # what --write does (or the user, for a review change)
    after = load_data(cfg)
    assert _value(after, written) != _value(before, written)
    changed = [
        (a, b)
        for a, b in zip(text.split("\n"), cfg.read_text().split("\n"), strict=False)
        if a != b
    ]
    assert len(changed) <= 1  # one line edited (or one appended), comments kept
    assert "  mode: 0  # graph mode\n" in cfg.read_text()


def test_more_micro_batches_under_pipeline_stages(tmp_path: Path):
    base = PRESETS["healthy"].with_(
        comm_overlapped_us=0.0, framework="mindspore", steps=4, layers=2
    )
    write_pipeline(tmp_path / "prof", base, stages=2, stage_factor=1.0, p2p_us=2000.0)
    cfg = config(tmp_path, data_parallel=2, pipeline_stage=2, micro_batch_num=2)
    rec = suggest(tmp_path / "prof", cfg).suggestion.recommendation
    assert rec is not None and rec.feature == "feature.mf-more-micro-batches"
    assert "-  micro_batch_num: 2\n+  micro_batch_num: 4\n" in rec.diff
    assert "batch_size" not in rec.diff  # batch_size is 1: it cannot shrink (the risk says so)


def test_a_config_of_another_job_or_with_unknown_keys_is_refused(tmp_path: Path):
    write_profile(tmp_path / "prof", PRESETS["healthy"].with_(**MS))
    with pytest.raises(InputError, match="16 devices"):
        suggest(tmp_path / "prof", config(tmp_path, data_parallel=16))
    with pytest.raises(InputError, match="unknown key of parallel_config"):
        suggest(tmp_path / "prof", config(tmp_path, use_seq_parallel="False\n  data_paralel: 8"))


@pytest.mark.skipif(
    not REAL.is_dir(), reason="../shared/real/mindformers-configs is not beside the checkout"
)
def test_the_loop_on_the_real_mindformers_config(tmp_path: Path):
    cfg = tmp_path / "pretrain_qwen3_32b_4k.yaml"
    shutil.copy(REAL / "pretrain_qwen3_32b_4k.yaml", cfg)
    cfg.chmod(0o644)
    ledger = tmp_path / "ledger.jsonl"
    # dp 1, mp 4, pp 4: 16 devices; the model-parallel all-reduces wait
    job = PRESETS["healthy"].with_(world_size=16, jitter=0.01, **{**MS, "steps": 6}, **DDP)
    write_profile(tmp_path / "base", job)
    first = suggest(tmp_path / "base", cfg, ledger).suggestion.recommendation
    assert first.feature == "feature.mf-micro-batch-interleave"
    rejected = {r.feature: r for r in suggest(tmp_path / "base", cfg).suggestion.rejected}
    optimizer = rejected["feature.mf-parallel-optimizer"]
    accumulation = rejected["feature.mf-gradient-accumulation"]
    assert optimizer.code is RejectCode.prerequisite_false
    assert "data_parallel 1" in str(optimizer.values["requirement"])
    assert accumulation.code is RejectCode.prerequisite_false
    assert "pipeline stages" in str(accumulation.values["requirement"])
    write_changes(first.patch.changes)
    assert "micro_batch_interleave_num: 2\n" in cfg.read_text()
    write_profile(tmp_path / "cand", job.with_(comm_exposed_us=1200.0))
    result, _ = run_compare(Side(tmp_path / "base"), Side(tmp_path / "cand"), ledger_path=ledger)
    assert result.verdict is Verdict.keep, result.reason
    events = [json.loads(line)["event"] for line in ledger.read_text().splitlines()]
    assert events == ["proposed", "kept"]


@pytest.mark.parametrize(
    ("mode", "allowed"),
    [("SEMI_AUTO_PARALLEL", True), ("AUTO_PARALLEL", True), (1, True), ("STAND_ALONE", False)],
)
def test_accumulation_follows_mindformers_parallel_mode_names(mode: object, allowed: bool):
    # MindFormers' PARALLEL_MODE table names the modes in upper case
    from advisor.app.rulesets import load_graph
    from advisor.engine.candidates import unmet_requirement
    from advisor.engine.conditions import Context
    from advisor.engine.rule_model import FeatureRule

    rule = load_graph().ruleset["feature.mf-gradient-accumulation"]
    assert isinstance(rule, FeatureRule)
    ctx = Context(config={"parallel": {"parallel_mode": mode}})
    assert (unmet_requirement(rule, ctx) is None) is allowed
