"""Start-up time of the commands people run most, next to the bare interpreter in the same run.

    python -m benchmarks.bench_startup [--runs 15] [--root DIR]

Targets (issue 28): `advisor --help` within 0.15 s of `python -c pass`, `advisor check` of one
config within 0.25 s of it. Each command runs from compiled bytecode, once to warm the caches
and then --runs times; the median and the minimum are printed, of the wall time and of the CPU
time the process used (user + system). On a machine shared with other work the wall time
swings with the load while the CPU time stays put, so both are shown side by side.

--root runs another checkout's package (say, an export of main) with this interpreter, to
measure before and after in the same run of the same machine.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.installed import as_installed

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "examples" / "fsdp2" / "config.yaml"
TARGETS = {"advisor --help": 0.150, "advisor check config.yaml": 0.250}


def _advisor(root: Path | None) -> list[str]:
    if root is not None:
        return [sys.executable, "-m", "advisor"]  # run with the checkout first on the path
    script = Path(sys.executable).parent / "advisor"
    found = script if script.is_file() else shutil.which("advisor")
    return [str(found)] if found else [sys.executable, "-m", "advisor"]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _times(cmd: list[str], runs: int, cwd: Path) -> tuple[list[float], list[float]]:
    wall, cpu = [], []
    for _ in range(runs):
        cpu_before = _children_cpu()
        start = time.perf_counter()
        subprocess.run(
            cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, cwd=cwd
        )
        wall.append(time.perf_counter() - start)
        cpu.append(_children_cpu() - cpu_before)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--root", type=Path, help="a checkout whose advisor package to run")
    args = parser.parse_args()
    root = args.root.resolve() if args.root else None
    as_installed(root / "advisor" if root else None)
    advisor = _advisor(root)
    cases = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "advisor --help": [*advisor, "--help"],
        "advisor check config.yaml": [*advisor, "check", str(CONFIG)],
    }
    wall_median: dict[str, float] = {}
    cpu_median: dict[str, float] = {}
    print(f"{'command':<28} {'wall median':>11} {'wall min':>9} {'cpu median':>11} {'cpu min':>8}")
    for name, cmd in cases.items():
        _times(cmd, 1, root or Path.cwd())  # warm: the data files' cache, the OS's file cache
        wall, cpu = _times(cmd, args.runs, root or Path.cwd())
        wall_median[name], cpu_median[name] = statistics.median(wall), statistics.median(cpu)
        print(
            f"{name:<28} {wall_median[name]:>11.3f} {min(wall):>9.3f} "
            f"{cpu_median[name]:>11.3f} {min(cpu):>8.3f}"
        )
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for name, target in TARGETS.items():
        wall_gap = wall_median[name] - wall_median["python -c pass"]
        cpu_gap = cpu_median[name] - cpu_median["python -c pass"]
        print(
            f"{name} over bare start-up: wall {wall_gap:.3f} s, cpu {cpu_gap:.3f} s "
            f"(target <= {target:.3f})"
        )


if __name__ == "__main__":
    main()
