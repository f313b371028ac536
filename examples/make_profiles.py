"""Regenerate the bundled example profiles under examples/profiles/ with the synthetic writer.

    python examples/make_profiles.py

Each example is one situation the advisor must recognise; the writer is deterministic, so the
committed files are exactly what this script produces (a test checks it).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.synth import PRESETS, Scenario, write_cluster, write_pipeline, write_profile

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
    "level0",
    "launch-blocking",
    "mte2-bound",
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
    made += analyzer_examples(root)
    return made


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
