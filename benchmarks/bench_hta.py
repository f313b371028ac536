"""Cross-check advisor's PyTorch-trace facts against Holistic Trace Analysis (HTA).

HTA is not a dependency of advisor: this script installs it (PyPI `traceinsight`, import name
`hta`) into its own virtual environment and runs it on every trace under ../shared/real/kineto*.
For each trace it prints HTA's temporal breakdown (idle, compute, non-compute share of the
kernel span) and its communication/computation overlap, advisor's numbers on the same window,
and the difference in percentage points; a difference above the tolerance fails the run.

The window is HTA's: the device operations launched before the last ProfilerStep began (all
of them without two steps), from the first one's start to the last one's end. advisor's own
step facts use a different window (device-paced steady steps, the warm-up step and a cut last
step left out, the host preparation before the first kernel counted); they are printed beside
for reference, with the reason they differ. Usage:

    python -m benchmarks.bench_hta [--venv bench-out/hta-venv] [--tolerance-pp 1.5]

With `--size-mb N` it instead generates a PyTorch profiler trace of N MiB (the same writer as
bench_facts) and times HTA loading and analysing it against `advisor facts` on it, with the
peak resident memory of each.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from advisor.app.pipeline import profile_facts
from advisor.inputs.taxonomy import default_taxonomy
from advisor.parsers.bounds import BadValues
from advisor.parsers.kineto.columns import COMMUNICATION, COMPUTE, MEMORY, LaunchIndex
from advisor.parsers.kineto.extract import extract
from advisor.parsers.kineto.stream import KinetoStream
from advisor.parsers.traces.intervals import Intervals, clipped_sum, merge_unsorted, overlap_sum
from benchmarks.bench_facts import _generate_kineto
from benchmarks.peers import HTA_SCRIPT, hta_python, tree_rss_kb

REAL = Path(__file__).resolve().parents[2] / "shared" / "real"


def _advisor_same_window(path: Path) -> dict[str, float | None]:
    """HTA's selection and arithmetic, on the device operations advisor's reader extracts."""
    events = extract(KinetoStream(path).blocks(), default_taxonomy(), path, BadValues(skip=True))
    ops = events.ops
    rows: list[int] = list(range(len(ops)))
    if len(events.steps) >= 2:
        last_start = events.steps[-1].start
        launches = LaunchIndex(events.launch_keys, events.launch_ts)
        rows = [
            i
            for i in rows
            if (launch := launches.get(ops.correlation[i])) is not None and launch < last_start
        ]
    if not rows:
        return {"idle": None, "compute": None, "non_compute": None, "overlap": None}

    op_kinds = ops.kinds()

    def union(kinds: tuple[int, ...]) -> Intervals:
        chosen = [i for i in rows if op_kinds[i] in kinds]
        return merge_unsorted([ops.start[i] for i in chosen], [ops.end[i] for i in chosen])

    span = max(ops.end[i] for i in rows) - min(ops.start[i] for i in rows)
    everything = union((COMPUTE, COMMUNICATION, MEMORY))
    compute = union((COMPUTE,))
    comm = union((COMMUNICATION,))
    busy = clipped_sum(everything, float("-inf"), float("inf"))
    compute_us = clipped_sum(compute, float("-inf"), float("inf"))
    comm_us = clipped_sum(comm, float("-inf"), float("inf"))
    overlap = (
        100.0 * overlap_sum(comm, compute, float("-inf"), float("inf")) / comm_us
        if comm_us
        else None
    )
    return {
        "idle": 100.0 * (span - busy) / span,
        "compute": 100.0 * compute_us / span,
        "non_compute": 100.0 * (busy - compute_us) / span,
        "overlap": overlap,
    }


def _timed(command: list[str]) -> tuple[float, float, str]:
    """Wall seconds, peak resident MiB (the process and its children) and stdout."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        # files, not pipes: a child writing more than a pipe holds would block while polled
        started = time.perf_counter()
        proc = subprocess.Popen(command, stdout=out, stderr=err, text=True)
        peak_kb = 0
        while proc.poll() is None:
            peak_kb = max(peak_kb, tree_rss_kb(proc.pid))
            time.sleep(0.05)
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"{command[0]} failed: {err.read().strip().splitlines()[-1:]}")
        return wall, peak_kb / 1024, out.read()


def _race(python: Path, size_mb: float, out: Path) -> int:
    """HTA and advisor on the same generated trace: wall time and peak memory."""
    if out.exists():
        shutil.rmtree(out)
    folder = _generate_kineto(out, size_mb)
    trace = next(folder.iterdir())
    print(f"trace {trace.name}: {trace.stat().st_size / 2**20:.0f} MiB")
    hta_s, hta_mb, hta_out = _timed([str(python), "-c", HTA_SCRIPT, str(folder)])
    ours_s, ours_mb, _ = _timed(
        [sys.executable, "-m", "advisor.cli", "facts", str(trace), "--format", "json"]
    )
    hta = json.loads(hta_out.strip().splitlines()[-1])
    print(f"{'':28} {'wall s':>8} {'peak MiB':>9}")
    print(f"{'HTA (load + 2 analyses)':28} {hta_s:8.1f} {hta_mb:9.0f}")
    print(f"{'advisor facts (every fact)':28} {ours_s:8.1f} {ours_mb:9.0f}")
    print(
        f"advisor is {hta_s / ours_s:.1f}x faster (HTA's own load + analysis: {hta['seconds']:.1f} s)"
    )
    shutil.rmtree(out)
    return 0


def _traces() -> list[Path]:
    found = sorted(REAL.glob("kineto*/**/*.json.gz"))
    return [p for p in found if not p.name.startswith("cpu_only")]


def _fmt(value: float | None) -> str:
    return "   -  " if value is None else f"{value:6.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--venv", type=Path, default=Path("bench-out/hta-venv"))
    parser.add_argument("--tolerance-pp", type=float, default=1.5)
    parser.add_argument(
        "--size-mb",
        type=float,
        help="instead: time both on a generated trace of this size (speed and memory only)",
    )
    parser.add_argument("--out", type=Path, default=Path("bench-out/hta-trace"))
    args = parser.parse_args()
    if args.size_mb:
        return _race(hta_python(args.venv.resolve()), args.size_mb, args.out)
    if not REAL.is_dir():
        print(f"{REAL} is absent: ../shared is not beside the checkout", file=sys.stderr)
        return 2
    python = hta_python(args.venv.resolve())
    failures = 0
    header = f"{'trace':58} {'metric':12} {'HTA':>6} {'advisor':>7} {'diff pp':>7}"
    print(header)
    print("-" * len(header))
    timings = []
    for path in _traces():
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copy(path, Path(tmp) / path.name)
            run = subprocess.run(
                [python, "-c", HTA_SCRIPT, tmp], capture_output=True, text=True, timeout=900
            )
        if run.returncode != 0:
            last = (run.stderr.strip().splitlines() or ["no output"])[-1]
            print(f"{path.name[:58]:58} not compared: HTA cannot analyse it ({last[:80]})")
            continue
        hta = json.loads(run.stdout.strip().splitlines()[-1])
        mine = _advisor_same_window(path)
        started = time.perf_counter()
        facts = profile_facts(path)  # advisor's whole analysis, as `advisor facts` runs it
        timings.append((path.name, hta["seconds"], time.perf_counter() - started))
        for metric in ("idle", "compute", "non_compute", "overlap"):
            theirs, ours = hta.get(metric), mine.get(metric)
            diff = None if theirs is None or ours is None else ours - theirs
            bad = diff is not None and abs(diff) > args.tolerance_pp
            failures += bad
            print(
                f"{path.name[:58]:58} {metric:12} {_fmt(theirs)} {_fmt(ours):>7} "
                f"{_fmt(diff):>7}{'  FAIL' if bad else ''}"
            )
        steady = {
            k: facts.value(k)
            for k in ("step.free_ratio", "step.compute_ratio", "step.preparing_ratio")
        }
        print(
            f"{'':58} advisor's steady steps: "
            + ", ".join(
                f"{k.split('.')[1]} {100 * v:.1f}%"
                for k, v in steady.items()
                if isinstance(v, float)
            )
        )
    print()
    print("advisor's steady-step shares differ from HTA's by design: they cover the steady steps")
    print("only (warm-up and cut steps dropped), device-paced, and count the host preparation")
    print(
        "before a step's first kernel as Preparing, which HTA's span from the first kernel omits."
    )
    print()
    print("load + analyse, seconds (HTA: temporal breakdown and overlap; advisor: every fact)")
    print(f"{'trace':58} {'HTA s':>7} {'advisor s':>9}")
    for name, theirs, ours in timings:
        print(f"{name[:58]:58} {theirs:7.2f} {ours:9.2f}")
    print(f"\n{failures} metric(s) outside {args.tolerance_pp} pp")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
