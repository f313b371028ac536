"""Benchmark `advisor facts` on a large generated single-rank profile.

Prints the trace size, wall time and peak memory (max RSS of the child process). Usage:

    python benchmarks/bench_facts.py [--size-mb 1024] [--export text|db|kineto] [--out bench-out] [--keep] [--phases]
    python benchmarks/bench_facts.py --profile bench-out/profile [--root OTHER_CHECKOUT] [--peer]

--peer runs the peer tool on the same profile in the same run, after advisor, stopped after
--peer-limit seconds (600): Holistic Trace Analysis on a PyTorch trace, msprof-analyze's advisor
on a torch_npu export, each installed on first use into a venv of its own under --peer-venv
(bench-venvs). Both lines are printed together: wall, CPU, peak memory, or how far the peer got.

--profile reads a profile kept by an earlier run (--keep) instead of generating one, and --root
runs another checkout's advisor package on it: before and after on the same file, in the same
hour of the same machine.

The profile is written with the project's synthetic writer (64 layers, eight host operators per
kernel launch, as real traces are dominated by host events), sized by the number of steps: the
text export's trace_view.json, or the database export's ascend_pytorch_profiler_0.db. --phases
adds the framework ranges of forward, backward and the optimizer step (and the database's links
from each task's enqueueing operator), so the step phases are measured too.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.peers import (
    HTA_SCRIPT,
    Run,
    hta_python,
    msprof_advisor_command,
    msprof_exe,
    run_limited,
)
from tests.synth import PRESETS, write_profile
from tests.synth.db_file import write_profile_db

MAIN_FILE = {
    "text": "trace_view.json",
    "db": "ascend_pytorch_profiler_0.db",
    "kineto": "rank0.pt.trace.json",
}


def _generate_kineto(out: Path, size_mb: float, host_ops: int = 0) -> Path:
    """A PyTorch profiler trace (the synthetic Kineto writer), written a piece at a time.
    `host_ops`: CPU operators per kernel (real traces: ~230-440 kernels per MiB, which 8 gives;
    0 gives ~2,800, every event a launch or a kernel)."""
    from tests.synth.kineto_file import kineto_trace

    probe = json.dumps(
        kineto_trace(steps=4, kernels_per_step=200, host_ops_per_kernel=host_ops)["traceEvents"]
    )
    per_step = len(probe) / 4
    steps = max(2, round(size_mb * 1024 * 1024 / per_step))
    folder = out / "profile"
    folder.mkdir(parents=True)
    started = time.perf_counter()
    with (folder / MAIN_FILE["kineto"]).open("w", encoding="utf-8") as handle:
        handle.write(
            '{"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": 0, '
            '"world_size": 1}, "traceEvents": ['
        )
        written = 0
        end = 0.0
        while written < steps:
            chunk = min(200, steps - written)
            events = kineto_trace(steps=chunk, kernels_per_step=200, host_ops_per_kernel=host_ops)[
                "traceEvents"
            ]
            # each piece follows the last on the timeline, with its own correlation ids
            first = min(e["ts"] for e in events if "ts" in e)
            shift = end - first + 1000.0 if written else 0.0
            for event in events:
                if "ts" in event:
                    event["ts"] += shift
                    end = max(end, event["ts"] + event.get("dur", 0.0))
                args = event.get("args")
                if isinstance(args, dict) and "correlation" in args:
                    args["correlation"] += written * 1_000_000
                if event.get("name", "").startswith("ProfilerStep#"):
                    number = int(event["name"].split("#")[1]) + written
                    event["name"] = f"ProfilerStep#{number}"
            text = json.dumps(events)[1:-1]
            handle.write(("," if written else "") + text)
            written += chunk
        handle.write("]}")
    print(f"generated {steps} steps in {time.perf_counter() - started:.1f} s")
    return folder


def _generate(
    out: Path, size_mb: float, export: str, host_ops: int = 8, phases: bool = False
) -> Path:
    if export == "kineto":
        return _generate_kineto(out, size_mb, host_ops)
    base = PRESETS["healthy"].with_(
        name="benchmark", layers=64, host_ops_per_kernel=8, phase_ranges=phases
    )
    write = write_profile if export == "text" else write_profile_db
    probe = out / "probe"
    trial = write(probe, base.with_(steps=4))
    output = trial.directory / "ASCEND_PROFILER_OUTPUT"
    per_step = (output / MAIN_FILE[export]).stat().st_size / 4
    shutil.rmtree(probe)
    steps = max(2, round(size_mb * 1024 * 1024 / per_step))
    started = time.perf_counter()
    written = write(out / "profile", base.with_(steps=steps))
    print(f"generated {steps} steps in {time.perf_counter() - started:.1f} s")
    return written.directory


def _race_peer(args: argparse.Namespace, directory: Path, ours: Run) -> None:
    """The peer tool on the same profile, in the same run, stopped at --peer-limit seconds."""
    with tempfile.TemporaryDirectory(prefix="bench-peer-") as scratch:
        if args.export == "kineto":
            name = "HTA (load + 2 analyses)"
            python = hta_python(args.peer_venv / "hta")
            command = [str(python), "-c", HTA_SCRIPT, str(directory.resolve())]
        else:
            name = "msprof-analyze advisor all"
            exe = msprof_exe(args.peer_venv / "msprof")
            command = msprof_advisor_command(exe, directory, Path(scratch))
        print(f"peer: {name}, stopped after {args.peer_limit:.0f} s")
        peer = run_limited(command, args.peer_limit, cwd=Path(scratch))
    print(peer.line(name))
    print(ours.line("advisor facts"))
    if peer.finished and not peer.returncode:
        print(f"advisor is {peer.wall_s / ours.wall_s:.1f}x faster in wall time")
    else:
        print(f"advisor is over {peer.wall_s / ours.wall_s:.0f}x faster in wall time")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size-mb", type=float, default=1024.0, help="target main file size")
    parser.add_argument("--export", choices=sorted(MAIN_FILE), default="text")
    parser.add_argument("--out", type=Path, default=Path("bench-out"))
    parser.add_argument("--keep", action="store_true", help="keep the generated profile")
    parser.add_argument("--profile", type=Path, help="read this kept profile, generate none")
    parser.add_argument("--root", type=Path, help="a checkout whose advisor package to run")
    parser.add_argument(
        "--host-ops",
        type=int,
        default=8,
        help="kineto: CPU operators per kernel (8: the kernel density of real traces; 0: dense)",
    )
    parser.add_argument(
        "--peer",
        action="store_true",
        help="also run the peer on the same profile: HTA (kineto) or msprof-analyze (text, db)",
    )
    parser.add_argument(
        "--peer-venv",
        type=Path,
        default=Path("bench-venvs"),
        help="where the peers' virtual environments are (installed there on first use)",
    )
    parser.add_argument(
        "--peer-limit", type=float, default=600.0, help="stop the peer after this many seconds"
    )
    parser.add_argument(
        "--phases",
        action="store_true",
        help="text/db: with forward/backward/optimizer ranges and operator links (step phases)",
    )
    args = parser.parse_args()
    if args.profile is not None:
        directory = args.profile
    else:
        if args.out.exists():
            shutil.rmtree(args.out)
        # generated in a process of its own: a child forked from this one, had it built the
        # trace, would start with this one's gigabyte in its peak (ru_maxrss)
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            directory = pool.apply(
                _generate, (args.out, args.size_mb, args.export, args.host_ops, args.phases)
            )
    output = directory / "ASCEND_PROFILER_OUTPUT"
    output = output if output.is_dir() else directory
    env = dict(os.environ)
    where = None
    if args.root is not None:
        env["PYTHONPATH"] = str(args.root.resolve())
        # `python -m` puts its working directory first on sys.path: run from the other
        # checkout, else the package of the checkout this script runs from is the one timed
        where = args.root.resolve()
    load_before = os.getloadavg()[0]
    ours = run_limited(
        [
            sys.executable,
            "-m",
            "advisor.cli",
            "facts",
            str(directory.resolve()),
            "--format",
            "json",
        ],
        cwd=where,
        env=env,
    )
    if ours.returncode != 0:
        print(ours.stderr_tail, file=sys.stderr)
        sys.exit(ours.returncode or 1)
    for file in sorted(output.iterdir()):
        print(f"{file.name:28} {file.stat().st_size / 2**20:10.1f} MiB")
    print(f"advisor facts wall  {ours.wall_s:10.2f} s")
    # the CPU time of the process and the workers it waited for: on a shared machine the wall
    # time says as much of the others' load as of the reader, this much less
    print(f"advisor facts CPU   {ours.cpu_s:10.2f} s (user + system, process and workers)")
    print(
        f"machine load        {load_before:10.2f} -> {os.getloadavg()[0]:.2f}"
        f" (1-minute load average on {os.cpu_count()} cores, before -> after)"
    )
    print(
        f"advisor facts peak  {ours.peak_mib:10.1f} MiB (sum of RSS over the process and its workers)"
    )
    print(
        f"advisor facts PSS   {ours.peak_pss_mib:10.1f} MiB"
        " (sum of PSS: the pages forked workers share with the parent counted once)"
    )
    print(f"largest process     {ours.largest_mib:10.1f} MiB (max RSS of one process)")
    if args.peer:
        _race_peer(args, directory, ours)
    if not args.keep and args.profile is None:
        shutil.rmtree(args.out)


if __name__ == "__main__":
    main()
