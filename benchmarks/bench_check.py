"""Benchmark `advisor check` on 40 config files: start-up and checking time, printed separately.

    python benchmarks/bench_check.py [--files 40]

The configs are variations of examples/fsdp2/config.yaml (some with problems to report), plus
the example launch script.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

started = time.perf_counter()
from advisor.app.check import run_check  # noqa: E402
from advisor.app.rulesets import load_policies  # noqa: E402

imported = time.perf_counter()
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "fsdp2"
VARIANTS = (
    "",
    "  indexer_loss_coeff: 0.01\n",  # appended to optimization: a misplaced key
    "  use_flash_attn: true\n",  # not read by qwen3_moe
    "  chunk_loss_size: 1024\n",
)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=40)
    args = parser.parse_args()
    base = (EXAMPLE / "config.yaml").read_text()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        configs = []
        for i in range(args.files):
            path = folder / f"config_{i:02d}.yaml"
            path.write_text(base + VARIANTS[i % len(VARIANTS)])
            configs.append(path)
        t0 = time.perf_counter()
        rules = load_policies()
        t1 = time.perf_counter()
        result = run_check(rules, configs=configs, launches=[EXAMPLE / "run.sh"])
        t2 = time.perf_counter()
    print(f"python start-up + imports {imported - started:8.3f} s")
    print(f"load {len(rules.rules)} policy rules    {t1 - t0:8.3f} s")
    print(
        f"check {args.files} configs + 1 script {t2 - t1:8.3f} s  ({len(result.findings)} findings)"
    )


if __name__ == "__main__":
    main()
