"""The peer tools a benchmark runs beside advisor, each in a virtual environment of its own.

Neither is a dependency of advisor: Holistic Trace Analysis (PyPI `traceinsight`, import name
`hta`) reads PyTorch profiler traces, msprof-analyze reads torch_npu exports. A peer is run on
the same input in the same run as advisor, with a wall-time limit: a peer that does not finish
is stopped and reported as such, with the memory it held by then.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
import venv
from dataclasses import dataclass
from pathlib import Path

HTA_SCRIPT = """
import json, sys, logging, time
logging.disable(logging.CRITICAL)
from hta.trace_analysis import TraceAnalysis
started = time.perf_counter()
t = TraceAnalysis(trace_dir=sys.argv[1])
tb = t.get_temporal_breakdown(visualize=False).to_dict("records")[0]
try:
    ov = t.get_comm_comp_overlap(visualize=False).to_dict("records")[0]["comp_comm_overlap_pctg"]
except Exception:
    ov = None
print(json.dumps({"idle": tb["idle_time_pctg"], "compute": tb["compute_time_pctg"],
                  "non_compute": tb["non_compute_time_pctg"], "overlap": ov,
                  "seconds": time.perf_counter() - started}))
"""


# HTA 0.6.1 stores ids in int16 columns that pandas 3 refuses to widen ("Invalid value ... for
# dtype 'int16'") on any trace of more than 32k events: pandas 2 as HTA was released against
HTA_PACKAGES = ("traceinsight", "pandas<3")
_HTA_PROBE = "import hta, pandas, sys; sys.exit(int(pandas.__version__.split('.')[0]) >= 3)"


def hta_python(where: Path) -> Path:
    """The interpreter of a venv holding HTA, installed there first if it is not."""
    python = where / "bin" / "python"
    if python.exists():
        probe = subprocess.run([python, "-c", _HTA_PROBE], capture_output=True, check=False)
        if probe.returncode == 0:
            return python
    print(f"installing Holistic Trace Analysis into {where} ...", flush=True)
    venv.create(where, with_pip=True)
    subprocess.run([python, "-m", "pip", "install", "--quiet", *HTA_PACKAGES], check=True)
    return python


def msprof_exe(where: Path) -> Path:
    """msprof-analyze's command in a venv of its own, installed there first if it is not."""
    exe = where / "bin" / "msprof-analyze"
    if not exe.exists():
        print(f"installing msprof-analyze into {where} ...", flush=True)
        venv.create(where, with_pip=True)
        subprocess.run([where / "bin" / "pip", "install", "--quiet", "msprof-analyze"], check=True)
    return exe


def msprof_advisor_command(exe: Path, folder: Path, out: Path) -> list[str]:
    """msprof-analyze's `advisor all` on a job folder, its findings in English under `out`."""
    # a single rank is given as its own folder: msprof-analyze's advisor looks for the
    # operator files there (given the parent, it runs only its cluster analyses)
    ranks = sorted(folder.glob("*_ascend_pt"))
    target = ranks[0] if len(ranks) == 1 else folder
    return [str(exe), "advisor", "all", "-d", str(target.resolve()), "-o", str(out), "-l", "en"]


def tree_rss_kb(pid: int) -> int:
    """Resident memory of a process and all its descendants, from /proc (Linux)."""
    return tree_memory_kb(pid)[0]


def tree_memory_kb(pid: int) -> tuple[int, int]:
    """Resident memory of a process and all its descendants, from /proc (Linux): the sum of
    their RSS, and of their PSS (a page shared by n processes counts 1/n in each: forked
    workers share their parent's pages, which the RSS sum counts once per process; 0 where
    the kernel has no smaps_rollup)."""
    rss = pss = 0
    pending = [pid]
    while pending:
        current = pending.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
            rss += next(
                int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")
            )
            pss += _pss_kb(current)
            for task in Path(f"/proc/{current}/task").iterdir():
                pending.extend(int(c) for c in (task / "children").read_text().split())
        except (OSError, StopIteration, ValueError):
            continue
    return rss, pss


def _pss_kb(pid: int) -> int:
    try:
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0
    return next(
        (int(line.split()[1]) for line in rollup.splitlines() if line.startswith("Pss:")), 0
    )


@dataclass(frozen=True)
class Run:
    """One timed run of a command: wall and CPU seconds, the process tree's peak memory."""

    wall_s: float
    cpu_s: float
    peak_mib: float  # the largest sum of RSS over the process tree
    peak_pss_mib: float  # the largest sum of PSS over it (shared pages counted once)
    largest_mib: float  # max RSS of one process (the command or a child it waited for)
    finished: bool  # False: stopped at the limit
    returncode: int | None
    stdout: str
    stderr_tail: str

    def line(self, name: str) -> str:
        if not self.finished:
            return (
                f"{name:28} did not finish in {self.wall_s:.0f} s (stopped; "
                f"{self.cpu_s:.1f} s of CPU, {self.peak_mib:.0f} MiB by then)"
            )
        if self.returncode:
            return f"{name:28} failed (exit {self.returncode}): {self.stderr_tail}"
        return (
            f"{name:28} {self.wall_s:8.2f} s wall {self.cpu_s:8.2f} s CPU "
            f"{self.peak_mib:8.0f} MiB peak (process tree)"
        )


def run_limited(
    command: list[str],
    limit_s: float = float("inf"),
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> Run:
    """Run `command` in a session of its own, stopped (with its children) after `limit_s`."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        # files, not pipes: a child writing more than a pipe holds would block while polled
        started = time.perf_counter()
        proc = subprocess.Popen(
            command, stdout=out, stderr=err, text=True, cwd=cwd, env=env, start_new_session=True
        )
        peak_kb = peak_pss_kb = 0
        finished = True
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                proc.returncode = os.waitstatus_to_exitcode(status)
                break
            rss_kb, pss_kb = tree_memory_kb(proc.pid)
            peak_kb, peak_pss_kb = max(peak_kb, rss_kb), max(peak_pss_kb, pss_kb)
            if time.perf_counter() - started > limit_s:
                finished = False
                rss_kb, pss_kb = tree_memory_kb(proc.pid)
                peak_kb, peak_pss_kb = max(peak_kb, rss_kb), max(peak_pss_kb, pss_kb)
                os.killpg(proc.pid, signal.SIGKILL)
                _, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.05)
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        tail = err.read().strip().splitlines()[-1:] or [""]
        return Run(
            wall_s=wall,
            cpu_s=usage.ru_utime + usage.ru_stime,
            peak_mib=peak_kb / 1024,
            peak_pss_mib=peak_pss_kb / 1024,
            largest_mib=usage.ru_maxrss / 1024,
            finished=finished,
            returncode=proc.returncode if finished else None,
            stdout=out.read(),
            stderr_tail=tail[0][-200:],
        )
