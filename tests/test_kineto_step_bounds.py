"""The step of each PyTorch device operation and the window bounds, against their definitions
written out naively: the window holding the launch (a launch on a window's start belongs to
it, one after the last window's end to none), each stream's last step carried; the last end,
the first non-memory start, and the last end of work no window launched by the windows
starting before it."""

from __future__ import annotations

import random
from array import array
from bisect import bisect_right

from advisor.parsers.kineto.columns import COMMUNICATION, MEMORY
from advisor.parsers.kineto.device_steps import NO_STEP, HostWindow, StepBounds, assign_steps

KINDS = (0, COMMUNICATION, MEMORY)


def _one_by_one(
    bounds: StepBounds,
    starts: array[float],
    ends: array[float],
    kinds: bytearray,
    steps_of: array[int],
) -> None:
    for start, end, kind, step in zip(starts, ends, kinds, steps_of, strict=True):
        if step == NO_STEP:
            j = bisect_right(bounds.host_starts, start)
            bounds.before[j] = max(bounds.before[j], end)
            continue
        bounds.last_end[step] = max(bounds.last_end[step], end)
        if kind != MEMORY:
            bounds.first_kernel[step] = min(bounds.first_kernel[step], start)


def _windows(count: int) -> list[HostWindow]:
    return [HostWindow(number=k, start=100.0 * k, end=100.0 * k + 90.0) for k in range(count)]


def test_runs_give_the_bounds_of_one_by_one() -> None:
    rng = random.Random(7)
    windows = _windows(6)
    for _ in range(200):
        n = rng.randint(0, 60)
        starts = array("d", sorted(rng.uniform(-50, 650) for _ in range(n)))
        ends = array("d", (s + rng.uniform(0, 80) for s in starts))
        kinds = bytearray(rng.choice(KINDS) for _ in range(n))
        # runs of one step, as operations sorted by start mostly come
        steps_of, step = array("i"), NO_STEP
        for _ in range(n):
            if rng.random() < 0.2:
                step = rng.choice([NO_STEP, *range(len(windows))])
            steps_of.append(step)
        fast, slow = StepBounds.of(windows), StepBounds.of(windows)
        fast.add(starts, ends, kinds, steps_of)
        _one_by_one(slow, starts, ends, kinds, steps_of)
        assert (fast.last_end, fast.first_kernel, fast.before) == (
            slow.last_end,
            slow.first_kernel,
            slow.before,
        )


def test_a_run_of_memory_operations_sets_no_first_kernel() -> None:
    bounds = StepBounds.of(_windows(2))
    bounds.add(
        array("d", [5.0, 6.0]), array("d", [9.0, 7.0]), bytearray([MEMORY] * 2), array("i", [1, 1])
    )
    assert bounds.first_kernel[1] == float("inf")
    assert bounds.last_end[1] == 9.0


def _step_of(launch: float, windows: list[HostWindow]) -> int:
    """The window holding a launch, as the docstring of assign_steps defines it."""
    holding = [k for k, w in enumerate(windows) if w.start <= launch]
    if not holding or (holding[-1] == len(windows) - 1 and launch > windows[-1].end):
        return NO_STEP
    return holding[-1]


def test_operations_all_launched_take_their_launchs_window() -> None:
    rng = random.Random(11)
    windows = _windows(5)
    sig_stream = [0, 0, 1, 2]
    for _ in range(200):
        n = rng.randint(0, 40)
        launch_at = array("d", (rng.uniform(-30, 560) for _ in range(n)))
        if rng.random() < 0.3:
            launch_at.extend(w.start for w in windows)  # on a window's start: that window
        sigs = array("i", (rng.randrange(len(sig_stream)) for _ in launch_at))
        carry: dict[int, int] = {9: 3}
        steps_of = assign_steps(launch_at, sigs, sig_stream, launch_at, windows, carry)
        assert list(steps_of) == [_step_of(t, windows) for t in launch_at]
        last = {sig_stream[s]: step for s, step in zip(sigs, steps_of, strict=True)}
        assert carry == {9: 3, **last}
