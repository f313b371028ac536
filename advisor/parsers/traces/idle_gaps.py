"""Device idle time between the kernels of a window, by what the device waited for: the host's
launch of the next kernel, another dependency, or unknown (no launch linked)."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Gaps:
    """Device idle time between the kernels of a window, by what the device waited for."""

    host: float  # the host launched the next kernel only after the device ran out of work
    dependency: float  # launched in time, yet the device waited (another stream, event, rank)
    unlinked: float  # no launch flow for the next kernel: cannot tell


def idle_gaps(
    starts: Sequence[float],
    ends: Sequence[float],
    lo: float,
    hi: float,
    launch_at: Sequence[float],
) -> Gaps:
    """Idle gaps between the kernels of [lo, hi) (parallel start/end sequences sorted by
    start), attributed by the next kernel's launch time (`launch_at`, aligned with the
    kernels; NaN where the trace links no launch).

    Gaps before the step's first kernel belong to the step's preparation, not to dispatch.
    """
    sweep = IdleSweep()
    sweep.add(starts, ends, lo, hi, launch_at)
    return sweep.gaps()


@dataclass
class IdleSweep:
    """idle_gaps over consecutive slices of the kernels (in start order), resumed from one
    slice to the next: the same additions in the same order as one pass."""

    host: float = 0.0
    dependency: float = 0.0
    unlinked: float = 0.0
    busy_until: float | None = None

    def add(
        self,
        starts: Sequence[float],
        ends: Sequence[float],
        lo: float,
        hi: float,
        launch_at: Sequence[float],
    ) -> None:
        i = bisect_left(starts, lo)
        busy_until = self.busy_until
        host, dependency, unlinked = self.host, self.dependency, self.unlinked
        n = len(starts)
        while i < n and starts[i] < hi:
            start, end = starts[i], ends[i]
            if busy_until is not None and start > busy_until:
                launch = launch_at[i]
                if launch != launch:  # NaN: no launch linked
                    unlinked += start - busy_until
                elif launch >= busy_until:
                    host += start - busy_until
                else:
                    dependency += start - busy_until
            busy_until = end if busy_until is None else max(busy_until, end)
            i += 1
        self.busy_until = busy_until
        self.host, self.dependency, self.unlinked = host, dependency, unlinked

    def gaps(self) -> Gaps:
        return Gaps(self.host, self.dependency, self.unlinked)
