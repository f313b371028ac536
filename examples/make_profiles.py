"""Regenerate the bundled example profiles under examples/profiles/ with the synthetic writer.

    python examples/make_profiles.py

Each example is one situation the advisor must recognise; the writer is deterministic, so the
committed files are exactly what this script produces (a test checks it).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.synth import PRESETS, Scenario, write_cluster, write_profile

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
    return made


if __name__ == "__main__":
    for path in generate():
        print(path)
