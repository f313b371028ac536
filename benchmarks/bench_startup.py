"""Start-up time of the commands people run most, next to the bare interpreter in the same run.

    python -m benchmarks.bench_startup [--runs 15]

Targets: `advisor --help` within 0.15 s of `python -c pass`; `advisor check` on one config
within 0.35 s in all. The median of the runs is printed (the minimum too: the machine's noise
shows in the gap).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.installed import as_installed

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "examples" / "fsdp2" / "config.yaml"


def _advisor() -> list[str]:
    script = Path(sys.executable).parent / "advisor"
    found = script if script.is_file() else shutil.which("advisor")
    return [str(found)] if found else [sys.executable, "-m", "advisor"]


def _times(cmd: list[str], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        out.append(time.perf_counter() - start)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    as_installed()
    advisor = _advisor()
    cases = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "advisor --help": [*advisor, "--help"],
        "advisor check config.yaml": [*advisor, "check", str(CONFIG)],
    }
    medians = {}
    print(f"{'command':<28} {'median s':>9} {'min s':>7}")
    for name, cmd in cases.items():
        _times(cmd, 1)  # warm: the data files' validation cache, the OS's file cache
        times = _times(cmd, args.runs)
        medians[name] = statistics.median(times)
        print(f"{name:<28} {medians[name]:>9.3f} {min(times):>7.3f}")
    bare = medians["python -c pass"]
    help_gap = medians["advisor --help"] - bare
    check = medians["advisor check config.yaml"]
    print(f"--help over bare start-up: {help_gap:.3f} s (target <= 0.150)")
    print(f"check on one config:       {check:.3f} s (target <= 0.350)")


if __name__ == "__main__":
    main()
