"""Which step each device operation belongs to, and the device windows of the steps.

Steps are device-paced. The host runs ahead of the device, so a ProfilerStep window on the host
is not the time the device spent on that step: each device operation belongs to the step whose
host window launched it (runtime call and operation share a `correlation` id), and step k on the
device starts when the host has started it and the device has finished the earlier steps' work.

Both functions here take the operations a slice at a time, in time order, so the whole trace or
one group of it after another (grouped.py) gives the same result.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from advisor.model import InputError
from advisor.parsers.kineto.columns import MEMORY, NAN, LaunchIndex
from advisor.parsers.profile_data import RankProfile

STEPLESS_NUMBER = 0
NO_STEP = -1  # a device operation no profiled step launched (else its window's index)
INF = float("inf")
# operations whose correlation ids are tried as one run of consecutive ids (launch_times_in_place)
RUN = 256


@dataclass
class HostWindow:
    """A ProfilerStep range on the host."""

    number: int
    start: float
    end: float


@dataclass(frozen=True)
class DeviceWindow:
    """A step's time on the device."""

    number: int
    start: float
    end: float


def distinct_steps(windows: list[HostWindow]) -> list[HostWindow]:
    """One window per step number (nested or repeated markers: the widest), in time order."""
    best: dict[int, HostWindow] = {}
    for w in windows:
        known = best.get(w.number)
        if known is None or w.end - w.start > known.end - known.start:
            best[w.number] = w
    return sorted(best.values(), key=lambda w: w.start)


def launch_times_in_place(correlation: array[int], launches: LaunchIndex) -> memoryview[float]:
    """Each operation's host launch time (NaN: none in the trace), written over its correlation
    key (both 8 bytes a row, each key read before its row is written): the keys are not needed
    once the launches are found. A run of RUN operations whose ids are consecutive and launched
    once each, as a trace of launches and kernels alone holds them, is copied from the launch
    times at C speed; other runs are looked up key by key."""
    launch_at: memoryview[float] = memoryview(correlation).cast("B").cast("d")
    cursor = -1  # keys sorted: operations come mostly in key order, the next key tried first
    for lo in range(0, len(correlation), RUN):
        hi = min(len(correlation), lo + RUN)
        copied = _copy_run(correlation, launch_at, lo, hi, launches)
        if copied >= 0:
            cursor = copied
        elif launches.table is not None:
            _by_table(correlation, launch_at, lo, hi, launches)
        else:
            cursor = _by_keys(correlation, launch_at, lo, hi, launches, cursor)
    return launch_at


def _copy_run(
    correlation: array[int], launch_at: memoryview[float], lo: int, hi: int, launches: LaunchIndex
) -> int:
    """Rows [lo, hi) copied from the launch times when their ids are consecutive and each was
    launched: the cursor after them in the sorted keys (-1: not copied, look them up)."""
    first, n = correlation[lo], hi - lo
    if correlation[hi - 1] - first != n - 1 or first < 0:  # most runs that are not: in O(1)
        return -1
    table = launches.table
    if table is None:
        # sorted and distinct: keys from `first` to `first + n - 1` are n consecutive ids, and
        # the rows equal to them (compared at C speed) are the same ids
        keys = launches.keys
        at = bisect_left(keys, first)
        if at + n > len(keys) or keys[at + n - 1] != first + n - 1:
            return -1
        if correlation[lo:hi] != keys[at : at + n]:
            return -1
        launch_at[lo:hi] = memoryview(launches.times)[at : at + n]
        return at + n - 1
    at = first - launches.base
    if at < 0 or at + n > len(table):
        return -1
    if correlation[lo:hi] != array("q", range(first, first + n)):
        return -1
    launch_at[lo:hi] = memoryview(table)[at : at + n]
    return 0  # no cursor over a table


def _by_table(
    correlation: array[int], launch_at: memoryview[float], lo: int, hi: int, launches: LaunchIndex
) -> None:
    table, base = launches.table, launches.base
    assert table is not None
    size = len(table)
    for i in range(lo, hi):
        offset = correlation[i] - base  # NO_CORRELATION (-1) is below every key
        launch_at[i] = table[offset] if 0 <= offset < size else NAN


def _by_keys(
    correlation: array[int],
    launch_at: memoryview[float],
    lo: int,
    hi: int,
    launches: LaunchIndex,
    cursor: int,
) -> int:
    keys, times = launches.keys, launches.times
    found = len(keys)
    for i in range(lo, hi):
        key = correlation[i]
        j = cursor + 1
        if not (j < found and keys[j] == key):
            j = bisect_left(keys, key)
            if j >= found or keys[j] != key:
                launch_at[i] = NAN
                continue
        cursor = j
        launch_at[i] = times[j]
    return cursor


def assign_steps(
    starts: Sequence[float],
    op_sigs: Sequence[int],
    sig_stream: Sequence[int],
    launch_at: Sequence[float],
    windows: list[HostWindow],
    last_on_stream: dict[int, int],
) -> array[int]:
    """Each operation's step, as the index of its host window (NO_STEP: none): the window
    holding its launch (a gap between windows belongs to the earlier); an operation without a
    launch follows the one before it on its stream (`last_on_stream`, carried from slice to
    slice)."""
    n = len(starts)
    steps_of = array("i", [0]) * n  # one allocation (from bytes: two)
    host_starts = [w.start for w in windows]
    last = len(windows) - 1
    last_end = windows[-1].end if windows else 0.0
    cur = -1  # the window found last: launches come mostly in time order
    # [cur_lo, cur_hi): the host times window `cur` holds (none before the first lookup)
    cur_lo, cur_hi = INF, INF
    for i, (launch, sig) in enumerate(zip(launch_at, op_sigs, strict=True)):
        stream = sig_stream[sig]
        if launch == launch:  # not NaN: launched from the host
            at = launch
        else:
            known = last_on_stream.get(stream)
            if known is not None:
                steps_of[i] = known
                continue
            at = starts[i]
        if not cur_lo <= at < cur_hi:
            cur = bisect_right(host_starts, at) - 1
            cur_lo = host_starts[cur] if cur >= 0 else -INF
            cur_hi = host_starts[cur + 1] if cur < last else INF
        step = NO_STEP if cur < 0 or (cur == last and at > last_end) else cur
        last_on_stream[stream] = step
        steps_of[i] = step
    return steps_of


@dataclass
class StepBounds:
    """Per host window: the last end of its operations and its first non-memory start; and
    the last end of work no window launched, by how many windows start at or before it
    (`before[j]`: starting before window j, for whichever window turns out first)."""

    host_starts: list[float]
    last_end: list[float]
    first_kernel: list[float]
    before: list[float]

    @classmethod
    def of(cls, windows: list[HostWindow]) -> StepBounds:
        n = len(windows)
        return cls(
            [w.start for w in windows],
            [float("-inf")] * n,
            [float("inf")] * n,
            [float("-inf")] * (n + 1),
        )

    def add(
        self,
        starts: Sequence[float],
        ends: Sequence[float],
        kinds: Sequence[int],
        steps_of: Sequence[int],
    ) -> None:
        last_end, first_kernel = self.last_end, self.first_kernel
        host_starts, before = self.host_starts, self.before
        for start, end, kind, step in zip(starts, ends, kinds, steps_of, strict=True):
            if step == NO_STEP:
                j = bisect_right(host_starts, start)
                if end > before[j]:
                    before[j] = end
                continue
            if end > last_end[step]:
                last_end[step] = end
            if kind != MEMORY and start < first_kernel[step]:
                first_kernel[step] = start

    def launched(self) -> list[int]:
        """The windows that launched an operation."""
        return [i for i, end in enumerate(self.last_end) if end != float("-inf")]

    def device_windows(self, windows: list[HostWindow], kept: list[int]) -> list[DeviceWindow]:
        """Step k on the device (of the `kept` windows): from when the host started it and the
        device finished the work of the steps before (at the latest, its own first kernel), to
        the start of step k+1 (the last step: to its last operation)."""
        starts: list[float] = []
        # work launched before the first kept step: it starts before that step's host start
        done = max(self.before[: kept[0] + 1]) if kept else float("-inf")
        for i in kept:
            # never after the step's own first kernel: an earlier step's straggler on another
            # stream does not hold the step back (a prefetched batch's copies may run early)
            starts.append(max(windows[i].start, min(done, self.first_kernel[i])))
            done = max(done, self.last_end[i])
        out = []
        for k, i in enumerate(kept):
            w = windows[i]
            # the last step runs to its last operation (or its host window, if later)
            end = starts[k + 1] if k + 1 < len(kept) else max(w.end, self.last_end[i])
            out.append(DeviceWindow(w.number, starts[k], max(starts[k], end)))
        return out


def kept_steps(rank: RankProfile, windows: list[HostWindow], launched: list[int]) -> list[int]:
    """The steps that launched device work. The others: at the end, the profiler stopped
    during them; elsewhere the trace lost their launches. Neither is a step the device ran."""
    if len(launched) == len(windows):
        return launched
    empty = [w.number for i, w in enumerate(windows) if i not in set(launched)]
    numbers = ", ".join(str(n) for n in empty)
    rank.warnings.append(
        f"{rank.path}: step(s) {numbers} launched no device work (the profiler stopped during "
        "them, or their launches are missing) and are left out"
    )
    if not launched:
        raise InputError(str(rank.path), "no ProfilerStep#N step launched any device work")
    return launched


def stepless(
    rank: RankProfile, path: Path, first: float, last_end: float, latest: float
) -> list[DeviceWindow]:
    """No ProfilerStep markers: the whole trace is one window (`stepless`), every operation in
    it (`last_end`: the end of the last operation to start; `latest`: the latest end); no
    per-step claims."""
    rank.stepless = True
    rank.warnings.append(
        f"{path}: no ProfilerStep#N markers: the trace is analysed as one window "
        f"({(last_end - first) / 1000.0:.2f} ms of device activity); "
        "per-step facts are withheld (profile with torch.profiler.schedule and prof.step())"
    )
    return [DeviceWindow(STEPLESS_NUMBER, first, latest)]
