"""Device idle time between the kernels of a window, by what the device waited for: the host's
launch of the next kernel (split into the part the host spent blocked in a call that waits for
the device, and the rest: dispatch), another dependency, or unknown (no launch linked). Each
microsecond of a gap lands in exactly one of the four."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field

from advisor.parsers.traces.intervals import Intervals, clipped_sum


@dataclass(frozen=True)
class Gaps:
    """Device idle time between the kernels of a window, by what the device waited for."""

    host: float  # the host launched the next kernel only after the device ran out of work
    dependency: float  # launched in time, yet the device waited (another stream, event, rank)
    unlinked: float  # no launch flow for the next kernel: cannot tell
    # the part of a late launch's gap the host spent inside a blocking call (not in `host`)
    blocked: float = 0.0


def idle_gaps(
    starts: Sequence[float],
    ends: Sequence[float],
    lo: float,
    hi: float,
    launch_at: Sequence[float],
    blocking: Intervals | None = None,
) -> Gaps:
    """Idle gaps between the kernels of [lo, hi) (parallel start/end sequences sorted by
    start), attributed by the next kernel's launch time (`launch_at`, aligned with the
    kernels; NaN where the trace links no launch); a late launch's gap less the time the host
    was inside a blocking call (`blocking`, merged) is dispatch, that time is blocked.

    Gaps before the step's first kernel belong to the step's preparation, not to dispatch.
    """
    sweep = IdleSweep(blocking=blocking or Intervals())
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
    blocked: float = 0.0
    blocking: Intervals = field(default_factory=Intervals)  # the host's blocking calls, merged

    def add(
        self,
        starts: Sequence[float],
        ends: Sequence[float],
        lo: float,
        hi: float,
        launch_at: Sequence[float],
    ) -> None:
        first = bisect_left(starts, lo)
        busy_until = self.busy_until
        host, dependency, unlinked = self.host, self.dependency, self.unlinked
        blocked, blocking = self.blocked, self.blocking
        waits = len(blocking) > 0
        # the kernels starting in [lo, hi) (sorted by start), walked in pairs, not by index
        stop = bisect_left(starts, hi, first)
        pairs = zip(starts[first:stop], ends[first:stop], strict=True)
        for i, (start, end) in enumerate(pairs, first):
            if busy_until is not None and start > busy_until:
                launch = launch_at[i]
                if launch != launch:  # NaN: no launch linked
                    unlinked += start - busy_until
                elif launch >= busy_until:
                    held = clipped_sum(blocking, busy_until, start) if waits else 0.0
                    blocked += held
                    host += start - busy_until - held
                else:
                    dependency += start - busy_until
            if busy_until is None or end > busy_until:  # max() without a call per kernel
                busy_until = end
        self.busy_until = busy_until
        self.host, self.dependency, self.unlinked = host, dependency, unlinked
        self.blocked = blocked

    def gaps(self) -> Gaps:
        return Gaps(self.host, self.dependency, self.unlinked, self.blocked)
