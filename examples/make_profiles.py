"""Regenerate the bundled example profiles under examples/profiles/ with the synthetic writer.

    python examples/make_profiles.py

Each example is one situation the advisor must recognise; the writer is deterministic, so the
committed files are exactly what this script produces (a test checks it).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.synth import PRESETS, Scenario, write_cluster, write_pipeline, write_profile
from tests.synth.cluster_file import StageSpec, write_cluster_analysis
from tests.synth.db_file import write_profile_db
from tests.synth.kineto_jobs import (
    all_to_all_trace,
    blocking_copy_trace,
    phases_trace,
    write_trace,
)

ROOT = Path(__file__).resolve().parent / "profiles"
SMALL = {"steps": 4, "layers": 2}
SINGLE_RANK = (
    "healthy",
    "host-bound",
    "comm-bound",
    "unfused-attention",
    "small-ops",
    "aicpu",
    "slow-dataloader",
    "fragmentation",
    "memory-pressure",
    "level0",
    "launch-blocking",
    "mte2-bound",
    "ascend-blocking-sync",
    "rdma-retransmission",
    "unfused-norm",
    "low-block-dim",
    "format-conversions",
    "unaligned-transfers",
    "slow-link",
)


def scenario(name: str) -> Scenario:
    return PRESETS[name].with_(**SMALL)


def generate(root: Path = ROOT) -> list[Path]:
    if root.exists():
        shutil.rmtree(root)
    made = []
    for name in SINGLE_RANK:
        write_profile(root / name, scenario(name))
        made.append(root / name)
    write_cluster(root / "slow-rank", PRESETS["healthy"].with_(**SMALL), ranks=4, slow_rank=2)
    made.append(root / "slow-rank")
    made.append(pipeline_bubble(root / "pipeline-bubble"))
    # PyTorch profiler traces from GPUs
    for name, trace in GPU_TRACES.items():
        write_trace(root / name, trace())
        made.append(root / name)
    made += analyzer_examples(root)
    for name in DATABASE:
        write_profile_db(root / name, scenario(name))
        made.append(root / name)
    return made


# database exports (export_type db): what only the database records (AICORE_FREQ)
DATABASE = ("aicore-freq-drop",)


# an all-to-all whose SendRecv kernel NCCL names like pipeline send/recv; a step stalled by a
# device-to-host copy into pageable memory and a stream synchronisation; an annotated step whose
# unfused optimizer, data loading and a garbage collection take a large share of it
GPU_TRACES = {
    "all-to-all": all_to_all_trace,
    "blocking-copy": blocking_copy_trace,
    "step-phases": phases_trace,
}


def pipeline_bubble(folder: Path) -> Path:
    """msprof-analyze's cluster output of a two-stage pipeline with too few micro-batches: both
    stages wait in receive (Bubble) for about half of the step, and that wait sits inside their
    exposed communication; the second stage computes a little more and sets the pace."""
    base = scenario("healthy").with_(world_size=8)
    write_cluster_analysis(
        folder,
        [
            StageSpec([0, 1, 2, 3], base, bubble_us=5000.0),
            StageSpec([4, 5, 6, 7], base.with_(compute_scale=1.1), bubble_us=6000.0),
        ],
    )
    return folder


def analyzer_examples(root: Path) -> list[Path]:
    """The operator analyzers' situations: a two-stage pipeline whose last stage runs the
    unfused fp32 cross-entropy (the slow-vs-fast diff names it and proposes a fused loss)."""
    loss = root / "loss-on-last-stage"
    base = PRESETS["healthy"].with_(**SMALL)
    # eight ranks, as the bundled FSDP2 config (fsdp_size 8) the golden suggest output reads
    write_pipeline(
        loss, base, ranks_per_stage=4, stage_factor=1.0, last_stage={"loss_chain_us": 2500.0}
    )
    return [loss]


if __name__ == "__main__":
    for path in generate():
        print(path)
