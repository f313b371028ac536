"""Where the time of reading one large trace goes: wall and CPU time per phase of the reader.

On a shared machine the wall time says as much of the other users as of the reader; the CPU
time (user + system, of this process and of the worker processes it waited for) is the
reader's. Each phase is timed by wrapping the function that runs it, in this process:

    python -m benchmarks.bench_phases bench-out/profile            # a kept bench_facts profile
    python -m benchmarks.bench_phases bench-out/profile --cprofile  # and the parent's hot spots

PyTorch traces: decoding (byte-range workers), the launch join (pass 1), sorting the start-time
groups (pass 2), measuring the windows (pass 3). torch_npu text exports: the decoding workers
(waited for after the CSV files are read), kernel_details.csv, the merge and step reduction.
The rest of `advisor facts` (facts, rendering) is the line "facts and rendering". For a
torch_npu export or a PyTorch trace it also prints the wall time two idle cores would take, from
the CPU seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import os
import pstats
import resource
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


class Phases:
    def __init__(self) -> None:
        self.rows: list[tuple[str, float, float, float]] = []
        # the parent's CPU seconds when it began to wait for the decoding workers: all it did
        # before (the CSV and JSON files of the export) ran while they decoded
        self.parent_before_wait: float | None = None

    @contextlib.contextmanager
    def timed(self, label: str) -> Iterator[None]:
        started, (own, children) = time.perf_counter(), _cpu()
        try:
            yield
        finally:
            now_own, now_children = _cpu()
            wall = time.perf_counter() - started
            self.rows.append((label, wall, now_own - own, now_children - children))

    def wrap(self, owner: Any, name: str, label: str) -> None:
        real = getattr(owner, name)

        def timed_call(*args: Any, **kwargs: Any) -> Any:
            with self.timed(label):
                return real(*args, **kwargs)

        setattr(owner, name, timed_call)

    def wrap_collector(self, owner: Any, name: str, label: str) -> None:
        """A function that returns a collector: the collector's wait is the phase."""
        real = getattr(owner, name)

        def started(*args: Any, **kwargs: Any) -> Callable[[], Any]:
            collect = real(*args, **kwargs)

            def timed_collect() -> Any:
                if self.parent_before_wait is None:
                    self.parent_before_wait = _cpu()[0]
                with self.timed(label):
                    return collect()

            return timed_collect

        setattr(owner, name, started)

    def wrap_aside(self, owner: Any, name: str, label: str) -> None:
        """Work started aside in a process of its own: the wait for its result is the phase
        (its wall time, on idle cores the part of the work the parent did not cover; its
        CPU, the aside process's, reaped then)."""
        real = getattr(owner, name)

        def started(*args: Any, **kwargs: Any) -> Callable[[], Any]:
            collect = real(*args, **kwargs)

            def timed_collect() -> Any:
                with self.timed(label):
                    return collect()

            return timed_collect

        setattr(owner, name, started)


_ASIDE = "npu: waiting for the phases (aside)"


def _instrument(phases: Phases) -> None:
    from advisor.parsers.ascend import rank
    from advisor.parsers.kineto import grouped, reader, start_groups
    from advisor.parsers.trace_view import parallel
    from advisor.parsers.traces import workers

    phases.wrap(reader, "extract_in_parallel", "kineto: decoding (workers)")
    phases.wrap(grouped, "_join", "kineto: launch join (pass 1)")
    phases.wrap(start_groups.GroupSorter, "sort_all", "kineto: start-time groups (pass 2)")
    phases.wrap(grouped, "measure_in_groups", "kineto: windows measured (pass 3)")
    phases.wrap(rank, "read_kernels", "npu: kernel_details.csv (parent)")
    phases.wrap_collector(parallel, "start_parts", "npu: waiting for the decoding workers")
    phases.wrap(parallel, "_reduce_parts", "npu: merge and step reduction")
    phases.wrap_aside(workers, "aside", _ASIDE)


def _idle_estimate(
    measured: list[tuple[str, float, float, float]],
    total: tuple[str, float, float, float],
    before_wait: float | None,
) -> None:
    """The wall time two idle cores would take, from CPU seconds (the wall time of a loaded
    machine measures its other users). torch_npu text exports: the CSV files the parent reads
    while the workers decode share the two cores with them; the rest of the parent's work
    (merge, reduction, facts, rendering) comes after, alone. `before_wait`: the parent's CPU
    seconds until it waited for the workers (kernel_details.csv and the export's other files).
    Start-up (interpreter and imports, ~0.3 s) is not in these figures."""
    by_label = {label: (own, children) for label, _, own, children in measured}
    if "kineto: decoding (workers)" in by_label:
        _kineto_idle_estimate(measured, total)
        return
    csv = by_label.get("npu: kernel_details.csv (parent)")
    if csv is None:
        return
    waits = {label: wall for label, wall, _, _ in measured}
    aside_wait = waits.get(_ASIDE, 0.0)
    workers = sum(children for label, _, _, children in measured if label != _ASIDE)
    concurrent = csv[0] if before_wait is None else before_wait
    serial = total[2] - concurrent
    parallel = max((workers + concurrent) / 2, workers / 2, concurrent)
    print(
        f"on two idle cores: ~{parallel + serial + aside_wait:.2f} s after start-up"
        f" ((workers {workers:.2f} + the parent's reading meanwhile {concurrent:.2f}) / 2"
        f" + the parent's serial {serial:.2f} + its wait for the phases measured aside"
        f" {aside_wait:.2f} (wall); CPU seconds, inflated by the machine's load)"
    )


def _kineto_idle_estimate(
    measured: list[tuple[str, float, float, float]], total: tuple[str, float, float, float]
) -> None:
    """PyTorch traces: each phase's two workers share the two cores while the parent waits, so
    the workers' CPU halves; the parent's own CPU (its part of each phase, facts, rendering)
    runs alone. Start-up (~0.3 s) is not in these figures."""
    workers = sum(children for _, _, _, children in measured)
    parent = total[2]
    print(
        f"on two idle cores: ~{workers / 2 + parent:.2f} s after start-up"
        f" (workers {workers:.2f} / 2 + the parent's {parent:.2f};"
        " CPU seconds, inflated by the machine's load)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("profile", type=Path, help="a profile folder or trace")
    parser.add_argument("--cprofile", action="store_true", help="also the parent's hot spots")
    args = parser.parse_args()
    phases = Phases()
    _instrument(phases)
    from advisor.cli import main as advisor

    sys.argv = ["advisor", "facts", str(args.profile), "--format", "json"]
    profiler = cProfile.Profile() if args.cprofile else None
    load_before = os.getloadavg()[0]
    cpu_before = _cpu()[0]
    with phases.timed("advisor facts, in all"), contextlib.redirect_stdout(io.StringIO()):
        if profiler is not None:
            profiler.enable()
        try:
            advisor()
        except SystemExit as exit_:
            if exit_.code:
                raise
        finally:
            if profiler is not None:
                profiler.disable()
    total = phases.rows[-1]
    measured = phases.rows[:-1]
    print(f"{'phase':44} {'wall s':>8} {'CPU s':>8} {'workers s':>10}")
    for label, wall, own, children in measured:
        print(f"{label:44} {wall:8.2f} {own:8.2f} {children:10.2f}")
    print(
        f"{'facts and rendering (the rest)':44} "
        f"{total[1] - sum(r[1] for r in measured):8.2f} "
        f"{total[2] - sum(r[2] for r in measured):8.2f} "
        f"{total[3] - sum(r[3] for r in measured):10.2f}"
    )
    print(f"{total[0]:44} {total[1]:8.2f} {total[2]:8.2f} {total[3]:10.2f}")
    # the wall times measure the other users of the cores as much as the reader: say how many
    print(
        f"machine load {load_before:.2f} -> {os.getloadavg()[0]:.2f} (1-minute load average on "
        f"{os.cpu_count()} cores, before -> after; CPU seconds are the reader's, wall seconds noisy)"
    )
    before_wait = phases.parent_before_wait
    _idle_estimate(measured, total, None if before_wait is None else before_wait - cpu_before)
    if profiler is not None:
        # forked workers inherit the profiler: only this process's numbers are read here
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(20)
        print(out.getvalue())


if __name__ == "__main__":
    main()
