"""advisor's findings against msprof-analyze's advisor on the same real profiles.

    python -m benchmarks.bench_msprof_advisor [--out bench-out] [--real ../shared/real]

Installs msprof-analyze (PyPI, not a dependency) into its own venv under --out, copies each
profile folder into a scratch folder (msprof-analyze writes its cluster output beside the
ranks), runs `msprof-analyze advisor all -l en` and `advisor diagnose --format json` on it, and
prints, per folder, the problems msprof-analyze lists (category and description) beside
advisor's symptoms, with the wall time of each. msprof-analyze's own test inputs
(../shared/real/ascend) are placed in rank folders as its advisor reads them: a kernel table
with the trace. Timings on a shared machine are noisy.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.peers import msprof_advisor_command, msprof_exe

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("ascend-qwen3-pp2-4rank", "ascend-ddp-2rank-text", "ascend-ddp-2rank-db")
# msprof-analyze's test inputs: (folder name, kernel table) with its trace_view.json
STAGED = (
    (
        "msprof-tests-aicpu",
        "test__ut__advisor__advisor_backend__compute_advice__kernel_details.csv",
    ),
    ("msprof-tests-dynamic", "test__ut__advisor__compute_advice__data__kernel_details.csv"),
)
TRACE = "test__ut__advisor__timeline_advice__trace_view.json"
ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*([^|]*?)\s*\|\s*([^|]*?)\s*\|")


def msprof_venv(out: Path) -> Path:
    return msprof_exe(out / "msprof-venv")


def stage(real: Path, scratch: Path) -> list[Path]:
    folders = []
    for name in FOLDERS:
        if (real / name).is_dir():
            shutil.copytree(real / name, scratch / name)
            folders.append(scratch / name)
    for name, kernels in STAGED:
        source = real / "ascend"
        if not (source / kernels).is_file():
            continue
        output = scratch / name / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
        output.mkdir(parents=True)
        shutil.copy(source / kernels, output / "kernel_details.csv")
        shutil.copy(source / TRACE, output / "trace_view.json")
        folders.append(scratch / name)
    return folders


def run_msprof(exe: Path, folder: Path, out: Path) -> tuple[float, list[tuple[str, str]]]:
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    ran = subprocess.run(
        msprof_advisor_command(exe, folder, out),
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
        # msprof-analyze writes an operator_tuning_file_*.cfg into its working folder
        cwd=out,
    )
    took = time.perf_counter() - start
    problems = []
    for line in ran.stdout.splitlines():
        m = ROW.match(line)
        if m:
            problems.append((m.group(2), m.group(3)))
    if not problems:
        errors = [line for line in ran.stdout.splitlines() if "[ERROR]" in line]
        problems.append(("(no result)", errors[-1][-200:] if errors else f"exit {ran.returncode}"))
    return took, problems


def run_advisor(folder: Path) -> tuple[float, str, list[str]]:
    start = time.perf_counter()
    ran = subprocess.run(
        [sys.executable, "-m", "advisor", "diagnose", str(folder), "--format", "json", "-q"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    took = time.perf_counter() - start
    if ran.returncode != 0:
        return took, "(failed)", [ran.stderr.strip()[:200]]
    data = json.loads(ran.stdout)
    bottlenecks = data.get("bottlenecks") or []
    main = str(bottlenecks[0].get("id")) if bottlenecks else "none"
    symptoms = [f"{s['id']} ({s['level']})" for s in data.get("symptoms", [])]
    return took, main, symptoms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bench-out")
    parser.add_argument("--real", type=Path, default=ROOT.parent / "shared" / "real")
    parser.add_argument("--only", nargs="*", default=None, help="folder names to compare")
    args = parser.parse_args()
    if not args.real.is_dir():
        sys.exit(f"{args.real} is absent: nothing to compare")
    args.out.mkdir(parents=True, exist_ok=True)
    exe = msprof_venv(args.out)
    with tempfile.TemporaryDirectory(prefix="advisor-vs-msprof-") as tmp:
        scratch = Path(tmp)
        for folder in stage(args.real, scratch / "in"):
            if args.only is not None and folder.name not in args.only:
                continue
            msprof_s, problems = run_msprof(exe, folder, scratch / "out" / folder.name)
            ours_s, main_bottleneck, symptoms = run_advisor(folder)
            print(f"\n## {folder.name}")
            print(f"msprof-analyze advisor all: {msprof_s:.1f} s")
            for category, description in problems:
                print(f"  - {category}: {description}")
            print(f"advisor diagnose: {ours_s:.1f} s, main {main_bottleneck}")
            for symptom in symptoms:
                print(f"  - {symptom}")


if __name__ == "__main__":
    main()
