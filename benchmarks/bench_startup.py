"""Start-up time of the commands people run most, next to the bare interpreter in the same run.

    python -m benchmarks.bench_startup [--runs 15] [--root DIR]

Targets (issue 28): `advisor --help` within 0.15 s of `python -c pass`, `advisor check` of one
config within 0.25 s of it. Each command runs from compiled bytecode, once to warm the caches
and then --runs times; the median and the minimum are printed, of the wall time and of the CPU
time the process used (user + system). On a machine shared with other work the wall time
swings with the load while the CPU time stays put, so both are shown side by side.

--root also runs another checkout's package (say, an export of main) with this interpreter,
"before" beside this checkout's "after": the two alternate run by run, so both see the same
load.
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


def _time(cmd: list[str], cwd: Path) -> tuple[float, float]:
    """One run's wall and CPU seconds."""
    cpu_before = _children_cpu()
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, cwd=cwd)
    return time.perf_counter() - start, _children_cpu() - cpu_before


def _cases(advisor: list[str]) -> dict[str, list[str]]:
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "advisor --help": [*advisor, "--help"],
        "advisor check config.yaml": [*advisor, "check", str(CONFIG)],
    }


def _report(label: str, wall: dict[str, list[float]], cpu: dict[str, list[float]]) -> None:
    if label:
        print(label)
    print(f"{'command':<28} {'wall median':>11} {'wall min':>9} {'cpu median':>11} {'cpu min':>8}")
    for name in wall:
        print(
            f"{name:<28} {statistics.median(wall[name]):>11.3f} {min(wall[name]):>9.3f} "
            f"{statistics.median(cpu[name]):>11.3f} {min(cpu[name]):>8.3f}"
        )
    for name, target in TARGETS.items():
        wall_gap = statistics.median(wall[name]) - statistics.median(wall["python -c pass"])
        cpu_gap = statistics.median(cpu[name]) - statistics.median(cpu["python -c pass"])
        print(
            f"{name} over bare start-up: wall {wall_gap:.3f} s, cpu {cpu_gap:.3f} s "
            f"(target <= {target:.3f})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--root", type=Path, help="a checkout whose advisor package to run too")
    args = parser.parse_args()
    as_installed()
    # (label, command line, working folder): a checkout given by --root runs from its folder
    sides: list[tuple[str, dict[str, list[str]], Path]] = []
    if args.root:
        root = args.root.resolve()
        as_installed(root / "advisor")
        sides.append((f"before: {root}", _cases(_advisor(root)), root))
        # this checkout the same way, so that only the package differs
        sides.append((f"after: {ROOT}", _cases(_advisor(ROOT)), ROOT))
    else:
        sides.append(("", _cases(_advisor(None)), Path.cwd()))
    wall: list[dict[str, list[float]]] = [{name: [] for name in cases} for _, cases, _ in sides]
    cpu: list[dict[str, list[float]]] = [{name: [] for name in cases} for _, cases, _ in sides]
    for _, cases, cwd in sides:
        for cmd in cases.values():
            _time(cmd, cwd)  # warm: the data files' cache, the OS's file cache
    for _ in range(args.runs):
        for side, (_, cases, cwd) in enumerate(sides):
            for name, cmd in cases.items():
                run_wall, run_cpu = _time(cmd, cwd)
                wall[side][name].append(run_wall)
                cpu[side][name].append(run_cpu)
    for side, (label, _, _) in enumerate(sides):
        _report(label, wall[side], cpu[side])
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
