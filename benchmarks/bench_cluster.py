"""Benchmark reading clusters: `advisor facts` over N ranks of generated torch_npu profiles.

Prints, per cluster size, the total size, the wall time (min / median / max of --runs), the
throughput, the parallel efficiency against one rank read alone, and the peak resident memory
of the whole process tree. Optional parts:

    python -m benchmarks.bench_cluster [--ranks 8 32 128] [--rank-mb 10] [--runs 3]
        [--cheap 4096]      # step models only, read through the two-tier path
        [--dask]            # the 32-rank (or first) cluster through a Dask LocalCluster
        [--msprof]          # msprof-analyze cluster -m all on the same profiles, in its own venv

Each size is also read with `--deep 0` (every rank's step model and communication summaries,
no trace: what msprof-analyze's cluster analysis of a text export reads).
        [--out bench-cluster] [--keep]

Ranks are copies of one generated rank (the synthetic writer) with their rank ids rewritten:
the same bytes to decode per rank, as in a data-parallel job.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.installed import as_installed
from benchmarks.peers import tree_rss_kb
from tests.synth import PRESETS, write_profile

OUTPUT = "ASCEND_PROFILER_OUTPUT"


def _template(out: Path, rank_mb: float) -> Path:
    """One rank whose trace_view.json is about `rank_mb` MiB."""
    base = PRESETS["healthy"].with_(name="bench", layers=64, host_ops_per_kernel=8)
    probe = write_profile(out / "probe", base.with_(steps=2)).directory
    per_step = (probe / OUTPUT / "trace_view.json").stat().st_size / 2
    shutil.rmtree(out / "probe")
    steps = max(2, round(rank_mb * 2**20 / per_step))
    return write_profile(out / "template", base.with_(steps=steps, world_size=1)).directory


def _replicate(template: Path, target: Path, ranks: int, cheap: bool = False) -> Path:
    """`ranks` rank directories copied from the template, each with its own rank id."""
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    info = next(template.glob("profiler_info*.json"))
    info_data = json.loads(info.read_text())
    meta_data = json.loads((template / "profiler_metadata.json").read_text())
    for rank in range(ranks):
        rank_dir = target / f"node{rank // 8}_{20000 + rank}_20260101093000000_ascend_pt"
        if cheap:
            (rank_dir / OUTPUT).mkdir(parents=True)
            shutil.copy(template / OUTPUT / "step_trace_time.csv", rank_dir / OUTPUT)
        else:
            shutil.copytree(template / OUTPUT, rank_dir / OUTPUT)
        info_data["rank_id"] = rank
        (rank_dir / f"profiler_info_{rank}.json").write_text(json.dumps(info_data))
        meta = dict(meta_data)
        args = dict(meta.get("distributed_args", {}))
        args.update({"rank": rank, "world_size": ranks})
        meta["distributed_args"] = args
        (rank_dir / "profiler_metadata.json").write_text(json.dumps(meta))
    return target


def _size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20


def _measure(command: list[str], cwd: Path | None = None) -> tuple[float, float]:
    """(wall seconds, peak MiB of the process tree)."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=cwd
    )
    peak = 0
    while proc.poll() is None:
        peak = max(peak, tree_rss_kb(proc.pid))
        time.sleep(0.02)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        print(proc.stderr.read() if proc.stderr else "", file=sys.stderr)
        raise SystemExit(f"failed: {' '.join(command)}")
    return wall, peak / 1024


def _advisor(profile: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "advisor.cli", "facts", str(profile), "-f", "json", *extra]


def _runs(command: list[str], runs: int) -> tuple[list[float], float]:
    walls, peaks = [], []
    for _ in range(runs):
        wall, peak = _measure(command)
        walls.append(wall)
        peaks.append(peak)
    return walls, max(peaks)


def _spread(walls: list[float]) -> str:
    return f"{min(walls):6.2f} / {statistics.median(walls):6.2f} / {max(walls):6.2f} s"


def _msprof_venv(out: Path) -> Path:
    venv = out / "msprof-venv"
    exe = venv / "bin" / "msprof-analyze"
    if not exe.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run(
            [str(venv / "bin" / "pip"), "install", "--quiet", "msprof-analyze"], check=True
        )
    return exe


def _msprof(exe: Path, profile: Path, runs: int) -> tuple[list[float], float]:
    walls, peaks = [], []
    for _ in range(runs):
        shutil.rmtree(profile / "cluster_analysis_output", ignore_errors=True)
        wall, peak = _measure([str(exe), "cluster", "-d", str(profile), "-m", "all"])
        walls.append(wall)
        peaks.append(peak)
    shutil.rmtree(profile / "cluster_analysis_output", ignore_errors=True)
    return walls, max(peaks)


def _dask(profile: Path) -> None:
    try:
        from distributed import LocalCluster
    except ImportError:
        print("dask: the distributed package is not installed (pip install 'advisor[dask]')")
        return
    workers = os.cpu_count() or 1
    with LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        host="127.0.0.1",
        dashboard_address=None,
        silence_logs=50,
    ) as cluster:
        started = time.perf_counter()
        remote = subprocess.run(
            _advisor(profile, "--scheduler", cluster.scheduler_address),
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        wall = time.perf_counter() - started
    local = subprocess.run(_advisor(profile), capture_output=True, text=True, check=True).stdout
    same = "identical" if remote == local else "DIFFERENT"
    print(f"dask LocalCluster ({workers} workers): {wall:6.2f} s; facts {same} to the local run")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--ranks", type=int, nargs="+", default=[8, 32, 128])
    parser.add_argument("--rank-mb", type=float, default=10.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cheap", type=int, default=0, help="ranks of step models only")
    parser.add_argument("--dask", action="store_true")
    parser.add_argument("--msprof", action="store_true")
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "bench-cluster")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    as_installed()
    args.out.mkdir(parents=True, exist_ok=True)
    cores = os.cpu_count() or 1
    template = _template(args.out, args.rank_mb)
    one = _replicate(template, args.out / "ranks-1", 1)
    one_walls, one_peak = _runs(_advisor(one), args.runs)
    startup = statistics.median(
        _measure([sys.executable, "-m", "advisor.cli", "--version"])[0] for _ in range(3)
    )
    rank_mb = _size_mb(one)
    print(
        f"{cores} cores; start-up {startup:.2f} s; one rank: {rank_mb:.1f} MiB, "
        f"{_spread(one_walls)}, {one_peak:.0f} MiB"
    )
    exe = _msprof_venv(args.out) if args.msprof else None
    for ranks in args.ranks:
        profile = _replicate(template, args.out / f"ranks-{ranks}", ranks)
        # every rank read in full, in parallel; then the same work in one process
        walls, peak = _runs(_advisor(profile, "--deep", "all"), args.runs)
        wall = statistics.median(walls)
        serial, serial_peak = _measure(_advisor(profile, "--deep", "all", "--jobs", "1"))
        # the ideal: the one-process work spread over the cores (start-up once)
        efficiency = (serial - startup) / ((wall - startup) * min(cores, ranks))
        total = _size_mb(profile)
        line = (
            f"{ranks:5d} ranks {total:8.0f} MiB  advisor {_spread(walls)}  "
            f"{total / wall:6.0f} MiB/s  --jobs 1 {serial:6.2f} s  efficiency {efficiency:4.0%}  "
            f"peak {peak:6.0f} MiB (--jobs 1: {serial_peak:4.0f} MiB)"
        )
        if ranks > 64:
            tiered, tiered_peak = _runs(_advisor(profile), args.runs)
            line += f"  two tiers (--deep auto) {_spread(tiered)} peak {tiered_peak:4.0f} MiB"
        # the scope of msprof-analyze's cluster analysis: step model and communication, no trace
        scan, scan_peak = _runs(_advisor(profile, "--deep", "0"), args.runs)
        line += f"  cheap tier (--deep 0) {_spread(scan)} peak {scan_peak:4.0f} MiB"
        if exe is not None:
            m_walls, m_peak = _msprof(exe, profile, args.runs)
            m_wall = statistics.median(m_walls)
            line += (
                f"  | msprof-analyze {_spread(m_walls)} peak {m_peak:6.0f} MiB "
                f"({m_wall / wall:.1f}x; --deep 0: {m_wall / statistics.median(scan):.1f}x)"
            )
        print(line, flush=True)
        if args.dask and (ranks == 32 or (ranks == args.ranks[0] and 32 not in args.ranks)):
            _dask(profile)
        if not args.keep:
            shutil.rmtree(profile)
    if args.cheap:
        profile = _replicate(template, args.out / f"cheap-{args.cheap}", args.cheap, cheap=True)
        walls, peak = _runs(_advisor(profile), args.runs)
        print(
            f"{args.cheap:5d} ranks, step models only (two tiers): {_spread(walls)}  "
            f"peak {peak:6.0f} MiB"
        )
        if not args.keep:
            shutil.rmtree(profile)
    if not args.keep:
        shutil.rmtree(args.out)


if __name__ == "__main__":
    main()
